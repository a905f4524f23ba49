"""Spec 5.1: every library runs the shared signature vectors made by the contract package."""

import pytest

import payhooks
from conftest import SECRET, delivery, payment_event, vector_body, vectors

ALL = vectors()


@pytest.mark.parametrize("v", ALL["vectors"], ids=[v["name"] for v in ALL["vectors"]])
def test_vector(v):
    try:
        event = payhooks.verify(
            vector_body(v), v["headers"], v["secrets"], v["tolerance_seconds"], now=v["now_ms"] / 1000, public_keys=v["public_keys"]
        )
        outcome = {"ok": True, "event_id": event["id"], "event_type": event["type"]}
    except payhooks.WebhookVerificationError as e:
        assert e.status == 400
        outcome = {"ok": False, "reason": e.reason}
    except payhooks.ConfigurationError as e:
        # A key that is not a whpk_ key is refused without being echoed.
        assert v["public_keys"][0][5:] not in str(e)
        outcome = {"ok": False, "reason": "configuration_error"}
    assert outcome == v["expected"], v["description"]


def test_the_library_knows_the_contracts_event_types():
    assert list(payhooks.EVENT_TYPES) == ALL["event_types"]


def test_headers_as_a_wsgi_environ_and_as_pairs():
    v = next(x for x in ALL["vectors"] if x["name"] == "valid")
    environ = {"HTTP_" + k.upper().replace("-", "_"): val for k, val in v["headers"].items()}
    assert payhooks.verify(vector_body(v), environ, v["secrets"], now=v["now_ms"] / 1000)["id"] == v["expected"]["event_id"]
    pairs = [(k.lower().encode(), val.encode()) for k, val in v["headers"].items()]
    assert payhooks.verify(vector_body(v), pairs, v["secrets"], now=v["now_ms"] / 1000)["id"] == v["expected"]["event_id"]


def test_a_repeated_header_is_malformed():
    v = next(x for x in ALL["vectors"] if x["name"] == "valid")
    pairs = list(v["headers"].items()) + [("Service-Signature", v["headers"]["Service-Signature"])]
    with pytest.raises(payhooks.WebhookVerificationError) as e:
        payhooks.verify(vector_body(v), pairs, v["secrets"], now=v["now_ms"] / 1000)
    assert e.value.reason == "malformed_header"


def test_programming_errors_are_value_errors():
    with pytest.raises(ValueError):
        payhooks.verify(b"{}", {}, "not-a-secret")
    with pytest.raises(ValueError):
        payhooks.verify(b"{}", {}, [])
    with pytest.raises(ValueError, match="raw request body"):
        payhooks.verify({"id": "x"}, {}, SECRET)
    with pytest.raises(ValueError):
        payhooks.verify(b"{}", {}, SECRET, tolerance=-1)


def test_sign_round_trips_with_the_current_clock():
    event = payment_event()
    body, headers = delivery(event)
    assert payhooks.verify(body, headers, SECRET)["id"] == event["id"]


def test_a_handler_with_only_a_public_key_accepts_and_refuses_by_the_vectors():
    for name, status in [("v1a_valid_public_key_only", 200), ("v1a_wrong_key", 400), ("v1a_tampered_body", 400)]:
        v = next(x for x in ALL["vectors"] if x["name"] == name)
        handler = payhooks.WebhookHandler(
            public_keys=v["public_keys"],
            store=payhooks.MemoryStore(),
            on_event=lambda event, context: None,
            on_rejected=lambda error: None,
            clock=lambda: v["now_ms"] / 1000,
        )
        try:
            assert handler.handle(vector_body(v), v["headers"]).status == status, name
        finally:
            handler.close()
