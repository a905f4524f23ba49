import secrets
import threading
import time
from typing import Any, Callable, Dict, Optional

from ..webhook import Event
from .base import DEDUP_RETENTION, Claim, CreditResult, check_payment_id, check_retention


class MemoryStore:
    """In-memory store: tests, development, a single-process receiver. Lost on exit, not shared
    between processes. Safe under concurrent duplicates within the process."""

    durable = False

    def __init__(self, retention: float = DEDUP_RETENTION, clock: Callable[[], float] = time.monotonic) -> None:
        self._retention = check_retention(retention)
        self._clock = clock
        self._events: Dict[str, Dict[str, Any]] = {}
        self._credits: Dict[str, str] = {}
        self._lock = threading.Lock()
        self._credit_done = threading.Condition(self._lock)

    def claim(self, event: Event, lease: float) -> Optional[Claim]:
        """Records the id and returns a Claim, or None when it was seen and not expired."""
        with self._lock:
            now = self._clock()
            existing = self._events.get(event["id"])
            if existing and existing["expires_at"] > now:
                return None
            token = secrets.token_hex(16)
            self._events[event["id"]] = {"state": "processing", "token": token, "expires_at": now + lease}
            return Claim(event["id"], token, 1)

    def complete(self, claim: Claim) -> None:
        """Keeps the id as done for the retention period."""
        self._update(claim, lambda e: e.update(state="done", token=None, expires_at=self._clock() + self._retention))

    def retry_later(self, claim: Claim, delay: float, lease: float, error: Optional[BaseException] = None) -> None:
        """Keeps the id as seen while the work waits for its retry."""
        self._update(claim, lambda e: e.update(expires_at=self._clock() + delay + lease))

    def release(self, claim: Claim) -> None:
        """Forgets the id, so the next delivery of the event is processed."""
        with self._lock:
            entry = self._events.get(claim.event_id)
            if entry and entry["token"] == claim.token:
                del self._events[claim.event_id]

    def purge(self) -> int:
        """Deletes ids past retention and expired leases; returns how many."""
        with self._lock:
            now = self._clock()
            gone = [k for k, e in self._events.items() if e["expires_at"] <= now]
            for k in gone:
                del self._events[k]
            return len(gone)

    def __len__(self) -> int:
        with self._lock:
            return len(self._events)

    def credit_once(self, payment_id: str, fn: Callable[[], Any]) -> CreditResult:
        """Runs ``fn()`` once per payment id. Concurrent callers wait for the one running; if it
        raises, the next caller credits."""
        check_payment_id(payment_id)
        with self._lock:
            while True:
                state = self._credits.get(payment_id)
                if state == "done":
                    return CreditResult(False)
                if state == "running":
                    self._credit_done.wait()
                    continue
                self._credits[payment_id] = "running"
                break
        try:
            value = fn()
        except BaseException:
            with self._lock:
                self._credits.pop(payment_id, None)
                self._credit_done.notify_all()
            raise
        with self._lock:
            self._credits[payment_id] = "done"
            self._credit_done.notify_all()
        return CreditResult(True, value)

    def _update(self, claim: Claim, change: Callable[[Dict[str, Any]], None]) -> None:
        with self._lock:
            entry = self._events.get(claim.event_id)
            if entry and entry["token"] == claim.token:
                change(entry)
