"""Deduplication stores: PostgreSQL (durable), Redis, and in-memory (tests)."""

from typing import TYPE_CHECKING, Any

from .base import DEDUP_RETENTION, Claim, CreditResult, Store
from .memory import MemoryStore

__all__ = ["DEDUP_RETENTION", "Claim", "CreditResult", "MemoryStore", "PostgresStore", "RedisStore", "Store"]

if TYPE_CHECKING:  # for type checkers; at run time they are imported on first use, below
    from .postgres import PostgresStore
    from .redis import RedisStore


def __getattr__(name: str) -> Any:
    # Imported on first use: psycopg and redis are only needed by whoever uses their store.
    if name == "PostgresStore":
        from .postgres import PostgresStore

        return PostgresStore
    if name == "RedisStore":
        from .redis import RedisStore

        return RedisStore
    raise AttributeError(name)
