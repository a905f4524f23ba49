"""The event types payhooks sends. The catalog grows: a receiver acknowledges the types it does
not handle and ignores them. (Checked against the contract's list by the tests.)"""

from ._generated import EVENT_TYPES as EVENT_TYPES  # the catalog, generated from packages/contract


def is_payment_event(event: object) -> bool:
    """True for payment.* events, whose data.object is a Payment."""
    return isinstance(event, dict) and str(event.get("type", "")).startswith("payment.")
