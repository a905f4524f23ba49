import math
import secrets
import time
from typing import Any, Callable, Optional

from ..errors import CreditInProgressError
from ..webhook import Event
from .base import DEDUP_RETENTION, Claim, CreditResult, check_payment_id, check_retention

# Compare-and-set on the holder's token, so a holder whose lease expired cannot undo a newer claim.
_COMPLETE = "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('SET', KEYS[1], 'done', 'PX', ARGV[2]) end return 0"
_EXTEND = "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end return 0"
_DELETE = "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0"


def _ms(seconds: float) -> int:
    return int(math.ceil(seconds * 1000))


class RedisStore:
    """Redis store (redis-py): SET key NX PX is the insert-or-ignore, atomic under concurrent
    duplicates and across processes. Keys expire by themselves: processing after the lease (so
    work lost with a dead process is not acknowledged as a duplicate forever), done after the
    retention. Not durable for the work itself: run Redis with persistence and a non-evicting
    policy, or seen ids may vanish early.

    credit_once marks the payment with SET NX (no expiry) before the function and done after it.
    The marker is not in your ledger's transaction: if the process dies inside the function, the
    payment stays pending and every later credit_once for it raises CreditInProgressError (never
    a second credit) until you check the ledger and delete or set ``credit_key(payment_id)`` by hand.
    """

    durable = False

    def __init__(self, client: Any, prefix: str = "payhooks:", retention: float = DEDUP_RETENTION, credit_wait: float = 10) -> None:
        """``client``: a ``redis.Redis`` (thread-safe: it pools connections)."""
        self._redis = client
        self._prefix = prefix
        self._retention = check_retention(retention)
        self._credit_wait = credit_wait

    def event_key(self, event_id: str) -> str:
        """The Redis key recording ``event_id``."""
        return f"{self._prefix}event:{event_id}"

    def credit_key(self, payment_id: str) -> str:
        """The Redis key marking ``payment_id`` as credited (or being credited)."""
        return f"{self._prefix}credit:{payment_id}"

    def claim(self, event: Event, lease: float) -> Optional[Claim]:
        """SET NX PX: records the id and returns a Claim, or None when it was seen."""
        claim = Claim(event["id"], secrets.token_hex(16), 1)
        ok = self._redis.set(self.event_key(claim.event_id), self._holding(claim), nx=True, px=_ms(lease))
        return claim if ok else None

    def complete(self, claim: Claim) -> None:
        """Keeps the id as done for the retention period."""
        self._redis.eval(_COMPLETE, 1, self.event_key(claim.event_id), self._holding(claim), _ms(self._retention))

    def retry_later(self, claim: Claim, delay: float, lease: float, error: Optional[BaseException] = None) -> None:
        """Keeps the id as seen while the work waits for its retry."""
        self._redis.eval(_EXTEND, 1, self.event_key(claim.event_id), self._holding(claim), _ms(delay + lease))

    def release(self, claim: Claim) -> None:
        """Forgets the id, so the next delivery of the event is processed."""
        self._redis.eval(_DELETE, 1, self.event_key(claim.event_id), self._holding(claim))

    def credit_once(self, payment_id: str, fn: Callable[[], Any]) -> CreditResult:
        """Runs ``fn()`` once per payment id; raises CreditInProgressError when another caller
        holds the payment longer than ``credit_wait``."""
        check_payment_id(payment_id)
        key = self.credit_key(payment_id)
        deadline = time.monotonic() + self._credit_wait
        pause = 0.01
        while True:
            mine = f"pending:{secrets.token_hex(16)}"
            if self._redis.set(key, mine, nx=True):
                try:
                    value = fn()
                except BaseException:
                    self._redis.eval(_DELETE, 1, key, mine)
                    raise
                self._redis.set(key, "done")
                return CreditResult(True, value)
            current = self._redis.get(key)
            if isinstance(current, bytes):
                current = current.decode()
            if current == "done":
                return CreditResult(False)
            if current is None:
                continue
            # Another caller is crediting this payment: wait for its outcome.
            if time.monotonic() >= deadline:
                raise CreditInProgressError(payment_id)
            time.sleep(pause)
            pause = min(pause * 2, 0.2)

    @staticmethod
    def _holding(claim: Claim) -> str:
        return f"processing:{claim.token}"
