"""The smallest real payhooks receiver in Python: Flask, the payhooks library with its PostgreSQL
store, credit_once into a ledger table. Run it with ./start (PORT, DATABASE_URL,
PAYHOOKS_WEBHOOK_SECRET)."""

import os
import signal
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "sdks" / "python" / "src"))  # the library, from this repository

import psycopg  # noqa: E402
from flask import Flask, jsonify  # noqa: E402
from werkzeug.serving import make_server  # noqa: E402

import database  # noqa: E402
import payhooks  # noqa: E402
from payhooks.adapters.flask import flask_view  # noqa: E402
from payhooks.stores import PostgresStore  # noqa: E402

secret = [s.strip() for s in os.environ.get("PAYHOOKS_WEBHOOK_SECRET", "").split(",") if s.strip()]
if not secret:
    sys.exit("Set PAYHOOKS_WEBHOOK_SECRET to the endpoint's whsec_ signing secret (comma-separated during a rotation).")
database_url = os.environ.get("DATABASE_URL", database.DEFAULT_URL)
try:
    database.create_if_missing(database_url)
    database.migrate(database_url)
except psycopg.Error as e:
    sys.exit(
        f"The receiver could not open its database: {str(e).strip()}. Check that PostgreSQL runs and DATABASE_URL "
        f"(default {database.DEFAULT_URL}) is right."
    )

STORE = PostgresStore(url=database_url)  # payhooks_events and payhooks_credits, created on first use


def credit_payment(payment: dict) -> None:
    """Credits a succeeded payment exactly once, whoever asks: the webhook, a replay, a status poll."""
    # `payhooks check-receiver` sends made-up payments (metadata.payhooks_check): nothing to credit.
    if (payment.get("metadata") or {}).get("payhooks_check") is True:
        print(f"[receiver] {payment['id']} is a payhooks check-receiver test payment; nothing to credit", flush=True)
        return
    account = (payment.get("metadata") or {}).get("account")
    if not isinstance(account, str):
        # Retried, then kept as a failed row in payhooks_events for a human to look at.
        raise ValueError(f"payment {payment['id']} has no metadata.account")
    STORE.credit_once(
        payment["id"],
        lambda conn: conn.execute(
            "INSERT INTO ledger_entries (account, amount, asset_code, payment_id) VALUES (%s, %s, %s, %s)",
            (account, payment["amount"], payment["asset_code"], payment["id"]),
        ),
    )


def on_event(event: dict, context: payhooks.EventContext) -> None:
    # Every other type: 200 and ignored (the catalog grows).
    if payhooks.is_payment_event(event) and event["data"]["object"].get("status") == "succeeded":
        credit_payment(event["data"]["object"])


WEBHOOKS = payhooks.WebhookHandler(secret=secret, store=STORE, types=["payment.succeeded"], on_event=on_event)

app = Flask("receiver")
# The signature covers the raw bytes: the adapter reads request.get_data(), never request.json.
app.add_url_rule("/webhooks/payhooks", view_func=flask_view(WEBHOOKS), methods=["POST"])


@app.get("/checkout/return")
def checkout_return():
    # Where the checkout sends the customer back. It never credits: the redirect may be forged,
    # may come before the webhook, or never come.
    return "Thanks! Your payment is being confirmed."


@app.get("/accounts/<account>/balance")
def account_balance(account: str):
    return jsonify(account=account, balances=database.balance(STORE, account))


if __name__ == "__main__":
    port = int(os.environ.get("PORT", "4242"))
    server = make_server(os.environ.get("HOST", "0.0.0.0"), port, app, threaded=True)

    def stop(*_):
        # Running work finishes; queued retries stay in PostgreSQL.
        raise SystemExit(0)

    signal.signal(signal.SIGTERM, stop)
    print(f"receiver listening on http://localhost:{port}/webhooks/payhooks", flush=True)
    try:
        server.serve_forever()
    finally:
        WEBHOOKS.close()
        STORE.close()
