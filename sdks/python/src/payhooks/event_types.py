"""The event types payhooks sends. The catalog grows: a receiver acknowledges the types it does
not handle and ignores them. (Checked against the contract's list by the tests.)"""

EVENT_TYPES = (
    "payment.created",
    "payment.requires_action",
    "payment.under_review",
    "payment.processing",
    "payment.succeeded",
    "payment.failed",
    "payment.cancelled",
    "payment.expired",
    "checkout_session.completed",
    "checkout_session.expired",
    "webhook_endpoint.disabled",
)


def is_payment_event(event) -> bool:
    """True for payment.* events, whose data.object is a Payment."""
    return isinstance(event, dict) and str(event.get("type", "")).startswith("payment.")
