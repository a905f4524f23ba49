import json
import queue
import re
import secrets
import threading
from contextlib import contextmanager
from typing import Any, Callable, Iterator, List, Optional, Sequence, Tuple

from .._generated import RECEIVER_CREDITS_TABLE, RECEIVER_EVENTS_TABLE, RECEIVER_MIGRATION_LOCK, receiver_tables_ddl
from ..errors import ConfigurationError
from ..webhook import Event
from .base import DEDUP_RETENTION, Claim, CreditResult, check_payment_id, check_retention, error_text

_IDENT = re.compile(r"\A[A-Za-z_][A-Za-z0-9_]{0,62}\Z")


def _quote(name: str) -> str:
    parts = name.split(".")
    if len(parts) > 2 or any(not _IDENT.match(p) for p in parts):
        raise ConfigurationError(f"payhooks: invalid table name {name!r}")
    return ".".join(f'"{p}"' for p in parts)


def _ms(seconds: float) -> float:
    return float(seconds) * 1000.0


class _SimplePool:
    """A fixed-size pool of psycopg connections, each used by one thread at a time. A connection
    whose socket broke (a restart, a failover) is replaced on its next checkout."""

    def __init__(self, size: int, connect: Callable[[], Any]) -> None:
        self._connect = connect
        self._free: "queue.LifoQueue[Any]" = queue.LifoQueue()
        self._size = size
        self._made = 0
        self._lock = threading.Lock()

    @contextmanager
    def connection(self) -> Iterator[Any]:
        conn = self._checkout()
        try:
            yield conn
        finally:
            self._free.put(conn)

    def _checkout(self) -> Any:
        with self._lock:
            fresh = self._free.empty() and self._made < self._size
            if fresh:
                self._made += 1
        if fresh:
            return self._new()
        conn = self._free.get()
        if not conn.closed and not getattr(conn, "broken", False):
            return conn
        try:
            conn.close()
        except Exception:  # noqa: BLE001 - it is being replaced
            pass
        return self._new()  # the slot is kept for the replacement

    def _new(self) -> Any:
        try:
            return self._connect()
        except BaseException:
            with self._lock:
                self._made -= 1
            raise

    def close(self) -> None:
        while not self._free.empty():
            self._free.get_nowait().close()


class PostgresStore:
    """PostgreSQL store (psycopg 3). Durable: the seen id and the event to process are one row,
    written by one statement, so an acknowledged event is never without its work. States:
    processing (leased to one worker), pending (waiting for a retry), done (kept 30 days, then
    purged), failed (every attempt failed; kept until requeued or replayed). The tables are the
    ones every payhooks receiver library uses (payhooks_events, payhooks_credits).

    ``credit_once(payment_id, fn)`` calls ``fn(conn)`` inside a transaction that also inserts the
    payment id into the credits table: write your ledger row with ``conn`` and both commit together.
    """

    durable = True

    def __init__(
        self,
        url: Optional[str] = None,
        connect: Optional[Callable[[], Any]] = None,
        pool_size: int = 5,
        table: str = RECEIVER_EVENTS_TABLE,
        credits_table: str = RECEIVER_CREDITS_TABLE,
        retention: float = DEDUP_RETENTION,
        auto_migrate: bool = True,
    ) -> None:
        """``url``: a PostgreSQL URL (the store keeps a small pool of its own), or ``connect``: a
        function returning a new psycopg connection in autocommit mode (your own settings)."""
        if connect is None:
            if url is None:
                raise ConfigurationError("payhooks: PostgresStore needs url= or connect=")
            dsn: str = url
            import psycopg

            def connect() -> Any:
                return psycopg.connect(dsn, autocommit=True)

        self._pool = _SimplePool(pool_size, connect)
        self.table = table
        self.credits_table = credits_table
        self._t = _quote(table)
        self._c = _quote(credits_table)
        self._base = table.split(".")[-1]
        self._retention = check_retention(retention)
        self._auto_migrate = auto_migrate
        self._ready = False
        self._ready_lock = threading.Lock()

    def schema_sql(self) -> str:
        """The tables' DDL, for your own migrations (the store runs it itself by default)."""
        return receiver_tables_ddl(self._t, self._c, self._base)

    def migrate(self) -> None:
        """Creates the tables if they do not exist (safe from several processes at once)."""
        with self._pool.connection() as conn:
            with conn.transaction():
                # Concurrent CREATE TABLE IF NOT EXISTS can still collide: serialise migrations.
                conn.execute(f"SELECT pg_advisory_xact_lock(hashtext('{RECEIVER_MIGRATION_LOCK}'))")
                conn.execute("SET LOCAL client_min_messages = warning")
                conn.execute(self.schema_sql())
        self._ready = True

    def claim(self, event: Event, lease: float) -> Optional[Claim]:
        """Inserts the event as processing and returns a Claim, or None when its id was seen."""
        self._ensure_ready()
        token = secrets.token_hex(16)
        # Insert-or-ignore. An existing row is taken over only when its work failed for good (a
        # replay re-runs it) or its holder's lease expired (the holder died).
        rows = self._rows(
            f"""
            INSERT INTO {self._t} AS e (event_id, event_type, state, payload, attempts, token, locked_until)
            VALUES (%s, %s, 'processing', %s::jsonb, 1, %s, now() + %s::float8 * interval '1 millisecond')
            ON CONFLICT (event_id) DO UPDATE SET
              state = 'processing', payload = EXCLUDED.payload, token = EXCLUDED.token,
              attempts = CASE WHEN e.state = 'failed' THEN 1 ELSE e.attempts + 1 END,
              locked_until = EXCLUDED.locked_until, next_attempt_at = NULL, updated_at = now()
            WHERE e.state = 'failed' OR (e.state = 'processing' AND e.locked_until < now())
            RETURNING attempts
            """,
            (event["id"], event["type"], json.dumps(event), token, _ms(lease)),
        )
        return Claim(event["id"], token, int(rows[0][0])) if rows else None

    def complete(self, claim: Claim) -> None:
        """Marks the event done (its id is kept for the retention period)."""
        self._exec(
            f"""UPDATE {self._t} SET state = 'done', payload = NULL, token = NULL, locked_until = NULL,
                next_attempt_at = NULL, last_error = NULL, updated_at = now()
                WHERE event_id = %s AND token = %s""",
            (claim.event_id, claim.token),
        )

    def retry_later(self, claim: Claim, delay: float, lease: float, error: Optional[BaseException] = None) -> None:
        """Puts the event back as pending, due after ``delay`` seconds, with the error."""
        self._exec(
            f"""UPDATE {self._t} SET state = 'pending', token = NULL, locked_until = NULL,
                next_attempt_at = now() + %s::float8 * interval '1 millisecond', last_error = %s, updated_at = now()
                WHERE event_id = %s AND token = %s""",
            (_ms(delay), error_text(error) if error is not None else None, claim.event_id, claim.token),
        )

    def release(self, claim: Claim) -> None:
        """Deletes the row, so the next delivery of the event is processed."""
        self._exec(f"DELETE FROM {self._t} WHERE event_id = %s AND token = %s", (claim.event_id, claim.token))

    def mark_failed(self, claim: Claim, error: BaseException) -> None:
        """Every attempt failed: keeps the event as failed, with its error, until requeued."""
        self._exec(
            f"""UPDATE {self._t} SET state = 'failed', token = NULL, locked_until = NULL, next_attempt_at = NULL,
                last_error = %s, updated_at = now()
                WHERE event_id = %s AND token = %s""",
            (error_text(error), claim.event_id, claim.token),
        )

    def claim_due(self, limit: int, lease: float) -> List[Tuple[Claim, Event]]:
        """Claims work that is due (retries) or abandoned (expired leases)."""
        if limit <= 0:
            return []
        self._ensure_ready()
        rows = self._rows(
            f"""
            UPDATE {self._t} AS e SET state = 'processing', attempts = e.attempts + 1,
              token = gen_random_uuid()::text, locked_until = now() + %s::float8 * interval '1 millisecond',
              next_attempt_at = NULL, updated_at = now()
            FROM (
              SELECT event_id FROM {self._t}
              WHERE (state = 'pending' AND next_attempt_at <= now())
                 OR (state = 'processing' AND locked_until < now())
              ORDER BY COALESCE(next_attempt_at, locked_until)
              LIMIT %s
              FOR UPDATE SKIP LOCKED
            ) due
            WHERE e.event_id = due.event_id
            RETURNING e.event_id, e.attempts, e.token, e.payload
            """,
            (_ms(lease), limit),
        )
        return [(Claim(r[0], r[2], int(r[1])), r[3] if isinstance(r[3], dict) else json.loads(r[3])) for r in rows]

    def requeue_failed(self, event_id: Optional[str] = None) -> int:
        """Puts failed events (all, or one) back in the queue; returns how many."""
        self._ensure_ready()
        sql = f"UPDATE {self._t} SET state = 'pending', attempts = 0, next_attempt_at = now(), updated_at = now() WHERE state = 'failed'"
        if event_id is None:
            return self._exec(sql, ())
        return self._exec(sql + " AND event_id = %s", (event_id,))

    def purge(self) -> int:
        """Deletes done ids older than the retention; returns how many."""
        self._ensure_ready()
        return self._exec(
            f"DELETE FROM {self._t} WHERE state = 'done' AND updated_at < now() - %s::float8 * interval '1 millisecond'",
            (_ms(self._retention),),
        )

    def credit_once(self, payment_id: str, fn: Callable[[Any], Any]) -> CreditResult:
        """Calls ``fn(conn)`` at most once per payment id, in one transaction with the marker."""
        import psycopg

        check_payment_id(payment_id)
        self._ensure_ready()
        credited, value = False, None
        with self._pool.connection() as conn:
            with conn.transaction():
                # The primary key makes a concurrent second insert wait for the first transaction:
                # it then conflicts (first committed: credited) or goes ahead (first rolled back).
                cur = conn.execute(
                    f"INSERT INTO {self._c} (payment_id) VALUES (%s) ON CONFLICT (payment_id) DO NOTHING", (payment_id,)
                )
                if cur.rowcount == 0:
                    raise psycopg.Rollback()
                value = fn(conn)
                credited = True
        return CreditResult(credited, value)

    @contextmanager
    def connection(self) -> Iterator[Any]:
        """One of the store's connections (autocommit), for your own queries (reading the ledger)."""
        with self._pool.connection() as conn:
            yield conn

    def close(self) -> None:
        """Closes the store's idle connections."""
        self._pool.close()

    def _ensure_ready(self) -> None:
        if self._ready or not self._auto_migrate:
            return
        with self._ready_lock:
            if not self._ready:
                self.migrate()

    def _rows(self, sql: str, params: Sequence[Any]) -> List[Any]:
        with self._pool.connection() as conn:
            rows: List[Any] = conn.execute(sql, params).fetchall()
            return rows

    def _exec(self, sql: str, params: Sequence[Any]) -> int:
        with self._pool.connection() as conn:
            count: int = conn.execute(sql, params).rowcount
            return count
