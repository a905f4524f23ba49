import base64
import json
import os
import secrets
import sys
import time
import uuid
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

import payhooks  # noqa: E402

VECTORS_FILE = Path(__file__).resolve().parents[3] / "packages" / "contract" / "test-vectors" / "webhook-signatures.json"
PG_ADMIN_URL = os.environ.get("PAYHOOKS_TEST_PG_URL", "postgres://postgres@127.0.0.1:5432/postgres")
REDIS_URL = os.environ.get("PAYHOOKS_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")
SECRET = "whsec_test_" + secrets.token_hex(24)


def vectors():
    return json.loads(VECTORS_FILE.read_text(encoding="utf-8"))


def vector_body(v) -> bytes:
    return base64.b64decode(v["body_base64"])


def payment_event(account="acct_1", amount="10.00", type="payment.succeeded", payment_id=None):
    return {
        "id": "evt_" + secrets.token_hex(10),
        "object": "event",
        "type": type,
        "api_version": "v1",
        "environment": "test",
        "merchant_id": "mch_test",
        "created_at": "2026-01-01T00:00:00Z",
        "data": {
            "object": {
                "id": payment_id or "pay_" + secrets.token_hex(8),
                "object": "payment",
                "status": "succeeded",
                "amount": amount,
                "asset_code": "USDC.ETH",
                "metadata": {"account": account, "note": "café ✓"},
            }
        },
    }


def delivery(event, secret=SECRET, timestamp=None):
    return payhooks.sign_test_delivery(event, secret, timestamp)


def wait_until(what, check, timeout=30.0):
    """Polls until ``check()`` is truthy (never a fixed sleep as the assertion)."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


@pytest.fixture(scope="session")
def pg_url():
    """A fresh PostgreSQL database for the session, dropped at the end."""
    import psycopg

    name = "payhooks_py_" + uuid.uuid4().hex[:12]
    with psycopg.connect(PG_ADMIN_URL, autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {name}")
    url = PG_ADMIN_URL.rsplit("/", 1)[0] + "/" + name
    yield url
    with psycopg.connect(PG_ADMIN_URL, autocommit=True) as admin:
        admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


@pytest.fixture()
def redis_client():
    import redis

    client = redis.Redis.from_url(REDIS_URL)
    yield client
    client.close()
