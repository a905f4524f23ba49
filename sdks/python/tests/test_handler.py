"""Spec 6.2 in order: verify, record the evt_ id, acknowledge at once, then process."""

import json
import queue
import secrets
import threading

import pytest

import payhooks
from conftest import SECRET, delivery, payment_event, wait_until


@pytest.fixture()
def store():
    return payhooks.MemoryStore()


@pytest.fixture()
def make(store):
    made = []

    def make(on_event=None, **options):
        processed = options.pop("processed", None)
        options.setdefault("retry_delays", [0.01, 0.01])
        options.setdefault("on_error", lambda *a: None)
        options.setdefault("on_rejected", lambda *a: None)
        h = payhooks.WebhookHandler(secret=SECRET, store=store, on_event=on_event or (lambda e, c: processed.put(e["id"])), **options)
        made.append(h)
        return h

    yield make
    for h in made:
        h.close()


def test_spec_6_2_2_acknowledges_before_the_work_runs(make):
    release, processed = threading.Event(), queue.Queue()
    h = make(lambda e, c: (release.wait(), processed.put(e["id"])))
    event = payment_event()
    body, headers = delivery(event)
    answer = h.handle(body, headers)
    assert answer.status == 200
    assert json.loads(answer.body) == {"received": True}
    assert processed.empty(), "the work must not have run before the answer"
    release.set()
    assert processed.get(timeout=30) == event["id"]


def test_spec_6_2_1_a_duplicate_is_acknowledged_and_processed_once(make):
    processed = queue.Queue()
    h = make(processed=processed)
    body, headers = delivery(payment_event())
    answers = []
    threads = [threading.Thread(target=lambda: answers.append(h.handle(body, headers))) for _ in range(20)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(a.status == 200 for a in answers)
    assert sum(1 for a in answers if json.loads(a.body).get("duplicate")) == 19
    h.drain()
    assert processed.qsize() == 1


def test_spec_5_1_a_bad_signature_is_answered_400_with_the_reason_and_not_processed(make, store):
    rejected, processed = [], queue.Queue()
    h = make(processed=processed, on_rejected=lambda e: rejected.append(e.reason))
    body, headers = delivery(payment_event(), secret="whsec_other_" + secrets.token_hex(8))
    answer = h.handle(body, headers)
    assert answer.status == 400
    assert json.loads(answer.body)["error"] == "bad_signature"
    assert rejected == ["bad_signature"]
    h.drain()
    assert processed.empty()
    assert len(store) == 0, "nothing was recorded"


def test_spec_6_1_1_types_not_handled_are_acknowledged_and_ignored(make):
    processed = queue.Queue()
    h = make(processed=processed, types=["payment.succeeded"])
    body, headers = delivery(payment_event(type="payment.created"))
    answer = h.handle(body, headers)
    assert answer.status == 200 and json.loads(answer.body)["ignored"] is True
    body, headers = delivery(payment_event(type="payment.something_new"))
    assert h.handle(body, headers).status == 200
    h.drain()
    assert processed.empty()


def test_a_misspelt_type_is_refused_at_creation(make):
    with pytest.raises(ValueError, match="unknown event type"):
        make(types=["payment.succeded"])


def test_failed_work_is_retried_then_released_so_a_replay_is_processed(make, store):
    attempts, errors = queue.Queue(), []

    def fail(event, context):
        attempts.put(context.attempt)
        raise RuntimeError("boom")

    h = make(fail, on_error=lambda e, info: errors.append(info["will_retry"]))
    body, headers = delivery(payment_event())
    assert h.handle(body, headers).status == 200
    assert [attempts.get(timeout=30) for _ in range(3)] == [1, 2, 3]
    wait_until("the id to be released", lambda: len(errors) == 3 and len(store) == 0)
    assert errors == [True, True, False]
    # A replay after the work was given up is processed again, not acknowledged as a duplicate.
    answer = h.handle(body, headers)
    assert not json.loads(answer.body).get("duplicate")
    assert attempts.get(timeout=30) == 1


def test_the_store_down_answers_500_so_payhooks_retries():
    class Broken:
        def claim(self, *a):
            raise OSError("down")

        complete = retry_later = release = claim

    h = payhooks.WebhookHandler(secret=SECRET, store=Broken(), on_event=lambda e, c: None, on_error=lambda *a: None)
    try:
        body, headers = delivery(payment_event())
        answer = h.handle(body, headers)
        assert answer.status == 500
        assert json.loads(answer.body)["error"] == "store_unavailable"
    finally:
        h.close()


def test_after_close_deliveries_are_answered_503(make):
    h = make(processed=queue.Queue())
    h.close()
    body, headers = delivery(payment_event())
    assert h.handle(body, headers).status == 503


def test_spec_6_2_3_credit_once_in_memory_runs_once_under_concurrency(store):
    count = [0]
    lock = threading.Lock()
    results = []

    def credit():
        with lock:
            count[0] += 1

    threads = [threading.Thread(target=lambda: results.append(store.credit_once("pay_1", credit))) for _ in range(10)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert count[0] == 1
    assert sum(1 for r in results if r.credited) == 1

    def boom():
        raise RuntimeError("no")

    # A function that raises credits nothing: the next call credits.
    with pytest.raises(RuntimeError):
        store.credit_once("pay_2", boom)
    assert store.credit_once("pay_2", lambda: "ok").credited
