"""The receiver's own PostgreSQL database, created on first start when missing (as createdb would)."""

from urllib.parse import unquote, urlsplit, urlunsplit

import psycopg
from psycopg import sql

DEFAULT_URL = "postgres://postgres@127.0.0.1:5432/receiver_python"

LEDGER_SQL = """
CREATE TABLE IF NOT EXISTS ledger_entries (
  id          bigserial PRIMARY KEY,
  account     text NOT NULL,
  amount      numeric(20, 2) NOT NULL,
  asset_code  text NOT NULL,
  payment_id  text NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX IF NOT EXISTS ledger_entries_account_idx ON ledger_entries (account);
"""


def create_if_missing(url: str) -> None:
    try:
        psycopg.connect(url).close()
        return
    except psycopg.OperationalError as e:
        if "does not exist" not in str(e):
            raise
    parts = urlsplit(url)
    name = unquote(parts.path.lstrip("/"))
    maintenance = urlunsplit(parts._replace(path="/postgres"))
    with psycopg.connect(maintenance, autocommit=True) as admin:
        try:
            admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
            print(f"created database {name}", flush=True)
        except psycopg.errors.DuplicateDatabase:
            pass  # another process created it first


def migrate(url: str) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("SET client_min_messages = warning")
        conn.execute(LEDGER_SQL)


def balance(store, account: str):
    """One entry per asset, amounts with two decimals."""
    with store.connection() as conn:
        rows = conn.execute(
            """SELECT asset_code, sum(amount)::text AS balance FROM ledger_entries
               WHERE account = %s GROUP BY asset_code ORDER BY asset_code""",
            (account,),
        ).fetchall()
    return [{"asset_code": r[0], "balance": r[1]} for r in rows]
