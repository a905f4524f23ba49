"""The receive pipeline, framework-free: verify -> acknowledge and ignore the types you don't
handle -> insert-or-ignore the evt_ id -> answer 200 at once -> run the work on a thread of the
handler's pool, retried when it raises. Adapters (payhooks.adapters.*) turn ``handle`` into a route.

    handler = WebhookHandler(secret=os.environ["PAYHOOKS_WEBHOOK_SECRET"], store=store,
                             types=["payment.succeeded"], on_event=credit)

The work is at-least-once: a retry after a failure, or a takeover after a crash, runs it again.
Make its effects idempotent and credit with the store's credit_once.
"""

import heapq
import itertools
import json
import os
import queue
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, FrozenSet, Iterable, List, Optional, Sequence, Tuple, cast

from .errors import ConfigurationError, WebhookVerificationError
from .event_types import EVENT_TYPES
from .stores.base import Claim, DurableStore, Store
from .webhook import DEFAULT_TOLERANCE, Event, PublicKeys, Secret, public_keys_of, secrets_of, tolerance_of, verify

#: Seconds between attempts at an event's work: six attempts in all.
DEFAULT_RETRY_DELAYS: Tuple[float, ...] = (1, 10, 60, 600, 3600)
JSON_HEADERS: Dict[str, str] = {"Content-Type": "application/json; charset=utf-8"}


@dataclass
class WebhookResponse:
    """The answer to send for one delivery."""

    status: int
    body: str
    headers: Dict[str, str] = field(default_factory=lambda: dict(JSON_HEADERS))


@dataclass(frozen=True)
class EventContext:
    """What on_event receives besides the event: ``attempt`` (1 for the first attempt at this
    event's work) and ``max_attempts``."""

    attempt: int
    max_attempts: int


def _answer(status: int, **body: Any) -> WebhookResponse:
    return WebhookResponse(status, json.dumps(body, separators=(",", ":")))


#: ``on_event(event, context)``: the work for one event; raise to have it retried.
OnEvent = Callable[[Event, EventContext], Any]
#: ``on_error(error, info)``: info has phase, event, attempt, will_retry.
OnError = Callable[[BaseException, Dict[str, Any]], Any]
#: ``on_rejected(error)``: a delivery answered 400.
OnRejected = Callable[[WebhookVerificationError], Any]
_Timer = Tuple[float, int, str, Any]


class WebhookHandler:
    """Verifies, deduplicates and acknowledges deliveries, and runs ``on_event`` for each new
    event on its own threads, retried when it raises."""

    def __init__(
        self,
        secret: Optional[Secret] = None,
        store: Optional[Store] = None,
        on_event: Optional[OnEvent] = None,
        types: Optional[Iterable[str]] = None,
        on_error: Optional[OnError] = None,
        on_rejected: Optional[OnRejected] = None,
        tolerance: float = DEFAULT_TOLERANCE,
        retry_delays: Sequence[float] = DEFAULT_RETRY_DELAYS,
        concurrency: int = 4,
        lease: float = 300,
        poll_interval: float = 5,
        purge_interval: float = 3600,
        clock: Callable[[], float] = time.time,
        public_keys: Optional[PublicKeys] = None,
    ) -> None:
        """``secret``: the endpoint's whsec_ secret, or a list during a rotation.
        ``public_keys``: the endpoint's whpk_ ed25519 public key(s), instead of or beside ``secret``
        (one valid signature of either kind is enough; needs the ``ed25519`` extra).
        ``store``: MemoryStore, PostgresStore or RedisStore.
        ``on_event(event, context)``: your work; raise to have it retried.
        ``types``: the event types you handle; others are answered 200 and ignored. A type outside
        the catalog raises ValueError (a typo would acknowledge and drop every payment).
        ``on_error(error, info)``: info has phase, event, attempt, will_retry.
        ``on_rejected(error)``: a delivery answered 400. Durations are in seconds.
        """
        # A missing or malformed secret or public key fails here, at start.
        secrets_of(secret, bool(public_keys_of(public_keys)))
        self._secrets: Optional[Secret] = secret if isinstance(secret, str) or secret is None else list(secret)
        self._public_keys: Optional[PublicKeys] = (
            public_keys if isinstance(public_keys, str) or public_keys is None else list(public_keys)
        )
        self._tolerance = tolerance_of(tolerance)
        if store is None or not all(hasattr(store, m) for m in ("claim", "complete", "retry_later", "release")):
            raise ConfigurationError("payhooks: store is required: MemoryStore, PostgresStore or RedisStore")
        if on_event is None or not callable(on_event):
            raise ConfigurationError("payhooks: on_event is required: the function that does the work for one event")
        self._store = store
        self._on_event = on_event
        self._types = self._check_types(types)
        self._on_error = on_error or self._default_on_error
        self._on_rejected = on_rejected or self._default_on_rejected
        self._delays = [float(d) for d in retry_delays]
        if any(d < 0 for d in self._delays):
            raise ConfigurationError("payhooks: retry_delays must be >= 0")
        self.max_attempts = len(self._delays) + 1
        if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
            raise ConfigurationError("payhooks: concurrency must be a positive integer")
        self._concurrency = concurrency
        self._lease = float(lease)
        self._poll_interval = float(poll_interval)
        self._purge_interval = float(purge_interval)
        self._clock = clock
        self._durable = bool(getattr(store, "durable", False)) and hasattr(store, "claim_due")
        self._durable_store: Optional[DurableStore] = cast(DurableStore, store) if self._durable else None
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)
        self._timer_wake = threading.Condition(self._lock)
        self._queue: "queue.Queue[Optional[Tuple[Event, Claim]]]" = queue.Queue()
        self._outstanding = 0  # queued or running
        self._timers: List[_Timer] = []  # (at, seq, kind, payload)
        self._seq = itertools.count()
        self._closed = False
        self._pid: Optional[int] = None
        self._threads: List[threading.Thread] = []

    def handle(self, body: Any, headers: Any) -> WebhookResponse:
        """Handles one delivery; returns a WebhookResponse. Never raises."""
        if self._closed:
            return _answer(503, error="receiver_closed")
        self._start_threads()
        try:
            event = verify(body, headers, self._secrets, self._tolerance, now=self._clock(), public_keys=self._public_keys)
        except WebhookVerificationError as e:
            # A failed verification is answered 400 and the event is not processed.
            self._safely(self._on_rejected, e)
            return _answer(400, error=e.reason, message=e.message)
        except ValueError as e:
            self._report(e, phase="receive", will_retry=True)
            return _answer(500, error="internal_error", message=str(e))
        # Acknowledge and ignore the types this receiver does not handle (the catalog grows).
        if self._types is not None and event["type"] not in self._types:
            return _answer(200, received=True, ignored=True)
        try:
            claim = self._store.claim(event, self._lease)
        except Exception as e:  # noqa: BLE001 - any store failure
            # Not recorded, not acknowledged: payhooks retries the delivery.
            self._report(e, phase="store", event=event, will_retry=True)
            return _answer(500, error="store_unavailable")
        if claim is None:
            return _answer(200, received=True, duplicate=True)
        # Acknowledge now; the work runs on the pool.
        self._enqueue(event, claim)
        return _answer(200, received=True)

    def drain(self, timeout: Optional[float] = None) -> bool:
        """Blocks until no work is queued or running (scheduled retries excluded)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._lock:
            while self._outstanding > 0:
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    return False
                self._idle.wait(left)
        return True

    def poll(self) -> int:
        """Durable stores: claims due retries and abandoned work now and queues it; returns how many."""
        if self._durable_store is None or self._closed:
            return 0
        self._start_threads()
        try:
            with self._lock:
                room = self._concurrency * 2 - self._outstanding
            due = self._durable_store.claim_due(room, self._lease)
        except Exception as e:  # noqa: BLE001
            self._report(e, phase="poll", will_retry=True)
            return 0
        for claim, event in due:
            self._enqueue(event, claim)
        return len(due)

    def close(self) -> None:
        """Stops the timers and waits for running work. Deliveries after this are answered 503.
        With a non-durable store, events waiting for an in-process retry are released, so a
        redelivery of them is processed; with a durable one they stay in the table."""
        with self._lock:
            self._closed = True
            waiting = [payload[1] for (_, _, kind, payload) in self._timers if kind == "retry"]
            self._timers.clear()
            self._timer_wake.notify_all()
        for claim in waiting:
            self._safely(self._store.release, claim)
        self.drain()
        for _ in self._threads:
            self._queue.put(None)
        for t in self._threads:
            if t is not threading.current_thread():
                t.join()
        self._threads = []

    # -- internals ---------------------------------------------------------------------------

    @staticmethod
    def _check_types(types: Optional[Iterable[str]]) -> Optional[FrozenSet[str]]:
        if types is None:
            return None
        if isinstance(types, str):
            raise ConfigurationError("payhooks: types must be a list of event types")
        listed = list(types)
        for t in listed:
            if t not in EVENT_TYPES:
                raise ConfigurationError(f"payhooks: unknown event type {t!r} in types; known types: {', '.join(EVENT_TYPES)}")
        return frozenset(listed)

    @staticmethod
    def _safely(fn: Callable[..., Any], *args: Any) -> None:
        try:
            fn(*args)
        except Exception:  # noqa: BLE001 - a hook that raises must not break the pipeline
            pass

    def _report(self, error: BaseException, **info: Any) -> None:
        self._safely(self._on_error, error, info)

    @staticmethod
    def _default_on_error(error: BaseException, info: Dict[str, Any]) -> None:
        event = info.get("event")
        where = f" for {event['id']} ({event['type']}), attempt {info.get('attempt') or '-'}" if event else ""
        retry = ", will retry" if info.get("will_retry") else ""
        print(f"[payhooks] {info.get('phase')} error{where}{retry}: {type(error).__name__}: {error}", file=sys.stderr, flush=True)

    @staticmethod
    def _default_on_rejected(error: WebhookVerificationError) -> None:
        hint = " If every delivery is rejected, check that secret is this endpoint's whsec_ signing secret." if error.reason == "bad_signature" else ""
        print(f"[payhooks] rejected a delivery with 400: {error.reason}: {error.message}.{hint}", file=sys.stderr, flush=True)

    def _start_threads(self) -> None:
        # Threads don't survive fork (gunicorn, uWSGI): they start in the process that handles
        # deliveries, on first use.
        if self._pid == os.getpid():
            return
        with self._lock:
            if self._pid == os.getpid():
                return
            self._pid = os.getpid()
            self._threads = [threading.Thread(target=self._work_loop, name="payhooks-work", daemon=True) for _ in range(self._concurrency)]
            self._threads.append(threading.Thread(target=self._timer_loop, name="payhooks-timers", daemon=True))
            for t in self._threads:
                t.start()
            if self._durable:
                self._add_timer(0, "poll", None)
                self._add_timer(self._poll_interval, "poll_every", None)
            if hasattr(self._store, "purge"):
                self._add_timer(self._purge_interval, "purge", None)

    def _enqueue(self, event: Event, claim: Claim) -> None:
        with self._lock:
            self._outstanding += 1
        self._queue.put((event, claim))

    def _work_loop(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            event, claim = item
            try:
                self._attempt(event, claim)
            finally:
                with self._lock:
                    self._outstanding -= 1
                    if self._outstanding == 0:
                        self._idle.notify_all()

    def _attempt(self, event: Event, claim: Claim) -> None:
        try:
            self._on_event(event, EventContext(claim.attempt, self.max_attempts))
        except Exception as e:  # noqa: BLE001 - the work failed: retry it
            self._after_failure(event, claim, e)
            return
        try:
            self._store.complete(claim)
        except Exception as e:  # noqa: BLE001
            # Done but not marked: after the lease it may run again (it must be idempotent).
            self._report(e, phase="store", event=event, attempt=claim.attempt, will_retry=self._durable)

    def _after_failure(self, event: Event, claim: Claim, error: BaseException) -> None:
        will_retry = claim.attempt < self.max_attempts
        self._report(error, phase="process", event=event, attempt=claim.attempt, will_retry=will_retry)
        try:
            if will_retry:
                delay = self._delays[claim.attempt - 1]
                self._store.retry_later(claim, delay, self._lease, error)
                if self._closed:
                    if not self._durable:
                        self._store.release(claim)
                elif self._durable:
                    # The retry lives in the store; any instance's poller picks it up when due.
                    self._schedule(delay + 0.01, "poll", None)
                else:
                    self._schedule(delay, "retry", (event, Claim(claim.event_id, claim.token, claim.attempt + 1)))
            elif self._durable_store is not None and hasattr(self._durable_store, "mark_failed"):
                self._durable_store.mark_failed(claim, error)
            else:
                # Given up: forget the id, so the next delivery of this event (a replay) is processed.
                self._store.release(claim)
        except Exception as e:  # noqa: BLE001
            self._report(e, phase="store", event=event, attempt=claim.attempt, will_retry=self._durable)

    def _schedule(self, delay: float, kind: str, payload: Any) -> None:
        with self._lock:
            self._add_timer(delay, kind, payload)

    def _add_timer(self, delay: float, kind: str, payload: Any) -> None:
        # Holding self._lock.
        if self._closed:
            return
        heapq.heappush(self._timers, (time.monotonic() + delay, next(self._seq), kind, payload))
        self._timer_wake.notify_all()

    def _timer_loop(self) -> None:
        while True:
            with self._lock:
                while True:
                    if self._closed:
                        return
                    now = time.monotonic()
                    if self._timers and self._timers[0][0] <= now:
                        _, _, kind, payload = heapq.heappop(self._timers)
                        break
                    wait = self._timers[0][0] - now if self._timers else None
                    self._timer_wake.wait(wait)
            self._fire(kind, payload)

    def _fire(self, kind: str, payload: Any) -> None:
        if kind == "retry":
            event, claim = payload
            self._enqueue(event, claim)
        elif kind == "poll":
            self.poll()
        elif kind == "poll_every":
            self.poll()
            self._schedule(self._poll_interval, "poll_every", None)
        elif kind == "purge":
            try:
                getattr(self._store, "purge")()
            except Exception as e:  # noqa: BLE001
                self._report(e, phase="store", will_retry=True)
            self._schedule(self._purge_interval, "purge", None)
