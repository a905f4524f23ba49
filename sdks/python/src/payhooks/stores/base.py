"""What every store does (durations in seconds):

- ``claim(event, lease)``: the insert-or-ignore. Records the id and returns a Claim, or None when
  the id was seen (done, being processed under a live lease, or waiting for a retry). Concurrent
  identical calls get at most one claim.
- ``complete(claim)``: keeps the id as done for the retention period.
- ``retry_later(claim, delay, lease, error)``: keeps the id as seen while the work waits.
- ``release(claim)``: forgets the id, so the next delivery of the event is processed.
- ``durable``: a durable store also keeps the event with its id and hands due work back through
  ``claim_due(limit, lease)`` (retries, and work whose holder died), and keeps work that failed
  for good through ``mark_failed(claim, error)``.
- ``credit_once(payment_id, fn)``: runs ``fn`` at most once per payment id.
"""

import traceback
from dataclasses import dataclass
from typing import Any, List, Optional, Protocol, Tuple

from ..errors import ConfigurationError
from ..webhook import Event

#: Seen event ids are kept at least 30 days, in seconds.
DEDUP_RETENTION: int = 30 * 24 * 3600


@dataclass(frozen=True)
class Claim:
    """The right to process one event, handed by a store's claim to exactly one caller. ``token``
    fences a holder whose lease expired: its later writes are ignored."""

    event_id: str
    token: str
    attempt: int


@dataclass(frozen=True)
class CreditResult:
    """The outcome of credit_once: ``credited`` is True for the one call that ran the function,
    whose return value is ``value``."""

    credited: bool
    value: Any = None


class Store(Protocol):
    """What WebhookHandler needs of a store (MemoryStore, PostgresStore and RedisStore have it)."""

    def claim(self, event: Event, lease: float) -> Optional[Claim]: ...

    def complete(self, claim: Claim) -> None: ...

    def retry_later(self, claim: Claim, delay: float, lease: float, error: Optional[BaseException] = None) -> None: ...

    def release(self, claim: Claim) -> None: ...


class DurableStore(Store, Protocol):
    """A store that keeps the event with its id (PostgresStore): the handler's poller takes due
    retries and abandoned work back from it."""

    def claim_due(self, limit: int, lease: float) -> List[Tuple[Claim, Event]]: ...

    def mark_failed(self, claim: Claim, error: BaseException) -> None: ...


def check_retention(retention: float) -> float:
    """The retention in seconds; raises ConfigurationError below 30 days."""
    if isinstance(retention, bool) or not isinstance(retention, (int, float)) or retention < DEDUP_RETENTION:
        raise ConfigurationError(f"payhooks: seen ids must be kept at least 30 days ({DEDUP_RETENTION} s)")
    return retention


def check_payment_id(payment_id: Any) -> None:
    if not isinstance(payment_id, str) or not payment_id:
        raise ConfigurationError('payhooks: credit_once needs the payment id (payment["id"], pay_...)')


def error_text(error: Any) -> str:
    if not isinstance(error, BaseException):
        return str(error)[:4000]
    lines = traceback.format_exception(type(error), error, error.__traceback__)
    return "".join(lines[-20:])[:4000]
