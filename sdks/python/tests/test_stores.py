"""The same store duties against the real PostgreSQL and Redis (spec 6.2.1, 6.2.3, 8)."""

import json
import queue
import secrets
import threading

import psycopg
import pytest

import payhooks
from payhooks.stores import PostgresStore, RedisStore
from conftest import REDIS_URL, SECRET, delivery, payment_event, wait_until


@pytest.fixture(params=["postgres", "redis"])
def store(request, pg_url):
    if request.param == "postgres":
        s = PostgresStore(url=pg_url)
        yield s
        s.close()
    else:
        import redis

        yield RedisStore(redis.Redis.from_url(REDIS_URL), prefix=f"payhooks-py-test:{secrets.token_hex(4)}:")


def run_threads(n, fn):
    results = []
    lock = threading.Lock()

    def one():
        r = fn()
        with lock:
            results.append(r)

    threads = [threading.Thread(target=one) for _ in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results


def test_spec_6_2_1_concurrent_identical_claims_get_one_claim(store):
    event = payment_event()
    claims = run_threads(12, lambda: store.claim(event, 60))
    assert len([c for c in claims if c is not None]) == 1


def test_a_done_id_stays_seen_and_a_released_one_is_forgotten(store):
    done = payment_event()
    store.complete(store.claim(done, 60))
    assert store.claim(done, 60) is None
    released = payment_event()
    store.release(store.claim(released, 60))
    assert store.claim(released, 60) is not None


def test_an_expired_lease_is_taken_over_and_the_first_holder_is_fenced(store):
    event = payment_event()
    first = store.claim(event, 0.05)
    assert first is not None
    second = wait_until("the lease to expire", lambda: store.claim(event, 60))
    # The first holder's late writes are fenced by its token: the id stays the second's.
    store.release(first)
    assert store.claim(event, 60) is None
    store.release(second)
    assert store.claim(event, 60) is not None


def test_spec_6_2_3_credit_once_runs_once_under_concurrency(store):
    payment_id = "pay_" + secrets.token_hex(6)
    ran = queue.Queue()

    def credit(*conn):
        ran.put(1)
        return "credited"

    results = run_threads(8, lambda: store.credit_once(payment_id, credit))
    assert ran.qsize() == 1
    assert [r.value for r in results if r.credited] == ["credited"]


def test_credit_once_after_a_failure_credits_on_the_next_call(store):
    payment_id = "pay_" + secrets.token_hex(6)

    def down(*conn):
        raise RuntimeError("ledger down")

    with pytest.raises(RuntimeError):
        store.credit_once(payment_id, down)
    assert store.credit_once(payment_id, lambda *c: "ok").credited
    assert not store.credit_once(payment_id, lambda *c: "again").credited


def test_retention_under_30_days_is_refused(pg_url):
    with pytest.raises(ValueError):
        PostgresStore(url=pg_url, retention=3600)
    with pytest.raises(ValueError):
        RedisStore(None, retention=3600)


def query(url, sql, params=()):
    with psycopg.connect(url, autocommit=True) as conn:
        cur = conn.execute(sql, params)
        return cur.fetchall() if cur.description else []


def test_spec_6_2_3_postgres_the_credit_marker_and_the_ledger_row_commit_together(pg_url):
    store = PostgresStore(url=pg_url)
    try:
        query(pg_url, "CREATE TABLE IF NOT EXISTS ledger (payment_id text, amount numeric)")
        payment_id = "pay_" + secrets.token_hex(6)

        def half(conn):
            conn.execute("INSERT INTO ledger VALUES (%s, 1)", (payment_id,))
            raise RuntimeError("after the ledger row")

        with pytest.raises(RuntimeError):
            store.credit_once(payment_id, half)
        assert query(pg_url, "SELECT * FROM ledger WHERE payment_id = %s", (payment_id,)) == []
        store.credit_once(payment_id, lambda conn: conn.execute("INSERT INTO ledger VALUES (%s, 1)", (payment_id,)))
        assert len(query(pg_url, "SELECT * FROM ledger WHERE payment_id = %s", (payment_id,))) == 1
    finally:
        store.close()


def test_postgres_durable_work_survives_a_restart_and_failed_work_is_kept(pg_url):
    store = PostgresStore(url=pg_url)
    events, calls = [], queue.Queue()

    def work(event, context):
        calls.put(context.attempt)
        if event["data"]["object"]["metadata"]["account"] == "fail":
            raise RuntimeError("work failed")
        events.append(event["id"])

    failing = payhooks.WebhookHandler(secret=SECRET, store=store, on_event=work, retry_delays=[0.01], poll_interval=0.05, on_error=lambda *a: None)
    bad = payment_event(account="fail")
    body, headers = delivery(bad)
    assert failing.handle(body, headers).status == 200
    assert [calls.get(timeout=30) for _ in range(2)] == [1, 2]
    wait_until(
        "the event to be kept as failed",
        lambda: (query(pg_url, "SELECT state FROM payhooks_events WHERE event_id = %s", (bad["id"],)) or [[None]])[0][0] == "failed",
    )
    assert "work failed" in query(pg_url, "SELECT last_error FROM payhooks_events WHERE event_id = %s", (bad["id"],))[0][0]
    # A replay of a failed event is processed again, not a duplicate.
    assert not json.loads(failing.handle(body, headers).body).get("duplicate")
    failing.close()
    # Work left pending by a dead process is picked up by the next one.
    pending = payment_event()
    claim = store.claim(pending, 60)
    store.retry_later(claim, 0, 60, "left behind")
    again = payhooks.WebhookHandler(secret=SECRET, store=store, on_event=lambda e, c: events.append(e["id"]), poll_interval=0.05)
    again.poll()
    wait_until("the pending event to be processed", lambda: pending["id"] in events)
    again.close()
    store.close()


def test_postgres_purge_deletes_done_ids_past_retention(pg_url):
    store = PostgresStore(url=pg_url)
    event = payment_event()
    store.complete(store.claim(event, 60))
    query(pg_url, "UPDATE payhooks_events SET updated_at = now() - interval '31 days' WHERE event_id = %s", (event["id"],))
    assert store.purge() >= 1
    assert store.claim(event, 60) is not None
    store.close()


def test_redis_a_done_id_is_kept_30_days(redis_client):
    store = RedisStore(redis_client, prefix=f"payhooks-py-test:{secrets.token_hex(4)}:")
    event = payment_event()
    store.complete(store.claim(event, 60))
    assert redis_client.pttl(store.event_key(event["id"])) > 29 * 24 * 3600 * 1000
