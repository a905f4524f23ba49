"""Deduplication stores: PostgreSQL (durable), Redis, and in-memory (tests)."""

from .base import DEDUP_RETENTION, Claim, CreditResult
from .memory import MemoryStore

__all__ = ["DEDUP_RETENTION", "Claim", "CreditResult", "MemoryStore", "PostgresStore", "RedisStore"]


def __getattr__(name):
    # Imported on first use: psycopg and redis are only needed by whoever uses their store.
    if name == "PostgresStore":
        from .postgres import PostgresStore

        return PostgresStore
    if name == "RedisStore":
        from .redis import RedisStore

        return RedisStore
    raise AttributeError(name)
