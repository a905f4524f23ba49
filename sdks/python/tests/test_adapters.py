"""The framework adapters hand the raw bytes to the handler: Flask, Django and FastAPI."""

import json
import queue

import pytest

import payhooks
from conftest import SECRET, delivery, payment_event


@pytest.fixture()
def handler():
    processed = queue.Queue()
    h = payhooks.WebhookHandler(secret=SECRET, store=payhooks.MemoryStore(), on_event=lambda e, c: processed.put(e["id"]), on_rejected=lambda e: None)
    h.processed = processed
    yield h
    h.close()


def test_flask(handler):
    from flask import Flask

    from payhooks.adapters.flask import flask_view

    app = Flask("receiver")
    app.add_url_rule("/webhooks/payhooks", view_func=flask_view(handler), methods=["POST"])
    client = app.test_client()
    event = payment_event()
    body, headers = delivery(event)
    answer = client.post("/webhooks/payhooks", data=body, headers=headers)
    assert answer.status_code == 200 and answer.get_json() == {"received": True}
    assert handler.processed.get(timeout=30) == event["id"]
    # A re-serialised body (what request.json would give back) no longer verifies.
    tampered = json.dumps(json.loads(body)).encode()
    answer = client.post("/webhooks/payhooks", data=tampered, headers=headers)
    assert answer.status_code == 400 and answer.get_json()["error"] == "bad_signature"
    assert client.post("/webhooks/payhooks", data=b"x" * ((1 << 20) + 1), headers=headers).status_code == 413


def test_django(handler):
    from django.conf import settings

    if not settings.configured:
        settings.configure(DEBUG=False, ALLOWED_HOSTS=["*"], ROOT_URLCONF=__name__, SECRET_KEY="test", MIDDLEWARE=["django.middleware.csrf.CsrfViewMiddleware"])
    import django

    django.setup()
    from django.test import Client
    from django.urls import path

    from payhooks.adapters.django import django_view

    global urlpatterns
    urlpatterns = [path("webhooks/payhooks", django_view(handler))]
    client = Client(enforce_csrf_checks=True)
    event = payment_event()
    body, headers = delivery(event)
    meta = {"HTTP_" + k.upper().replace("-", "_"): v for k, v in headers.items() if k != "Content-Type"}
    answer = client.post("/webhooks/payhooks", data=body, content_type="application/json", **meta)
    assert answer.status_code == 200, answer.content
    assert json.loads(answer.content) == {"received": True}
    assert handler.processed.get(timeout=30) == event["id"]
    assert client.get("/webhooks/payhooks").status_code == 405
    bad = client.post("/webhooks/payhooks", data=body + b" ", content_type="application/json", **meta)
    assert bad.status_code == 400 and json.loads(bad.content)["error"] == "bad_signature"


def test_fastapi(handler):
    from fastapi import FastAPI
    from fastapi.testclient import TestClient

    from payhooks.adapters.fastapi import fastapi_endpoint

    app = FastAPI()
    app.add_api_route("/webhooks/payhooks", fastapi_endpoint(handler), methods=["POST"])
    client = TestClient(app)
    event = payment_event()
    body, headers = delivery(event)
    answer = client.post("/webhooks/payhooks", content=body, headers=headers)
    assert answer.status_code == 200 and answer.json() == {"received": True}
    assert handler.processed.get(timeout=30) == event["id"]
    assert json.loads(client.post("/webhooks/payhooks", content=body, headers=headers).content)["duplicate"] is True
    assert client.post("/webhooks/payhooks", content=body[:-1], headers=headers).status_code == 400
