"""The library's errors. Every exception payhooks raises derives from ``PayhooksError``:

- ``WebhookVerificationError``: a delivery to answer with HTTP 400 and not process;
- ``CreditInProgressError``: ``credit_once`` found another caller crediting the same payment;
- ``ConfigurationError``: a programming error (no secret, a secret without ``whsec_``, a parsed
  body instead of the raw bytes, a misspelt event type). It is also a ``ValueError``.
"""

from typing import Tuple

REASONS: Tuple[str, ...] = (
    "missing_header",
    "malformed_header",
    "bad_signature",
    "timestamp_out_of_tolerance",
    "event_id_mismatch",
    "invalid_json",
)


class PayhooksError(Exception):
    """The base class of every error this library raises."""


class ConfigurationError(PayhooksError, ValueError):
    """A programming error in how the library is called or configured: fix the code, don't retry."""


class WebhookVerificationError(PayhooksError):
    """A delivery that must be answered with HTTP 400 and not processed. ``reason`` says why:

    - ``missing_header``: Service-Signature or Service-Event-Id is absent or empty;
    - ``malformed_header``: Service-Signature is not t=<unix seconds>,v1=<64 lowercase hex>[,v1=...];
    - ``bad_signature``: no v1 matches the HMAC of "<t>.<raw body>" under any configured secret;
    - ``timestamp_out_of_tolerance``: the signature matched but |now - t| is more than the tolerance;
    - ``event_id_mismatch``: Service-Event-Id (not signed) differs from the signed body's id;
    - ``invalid_json``: the signed body is not UTF-8 JSON of an object with a string id and type.
    """

    status = 400

    def __init__(self, reason: str, message: str) -> None:
        if reason not in REASONS:
            raise ConfigurationError(f"unknown reason {reason}")
        super().__init__(message)
        self.reason = reason
        self.message = message


class CreditInProgressError(PayhooksError):
    """credit_once found another caller crediting the same payment, and it did not finish in time.
    Nothing was credited by this call: retry later (the handler's queue does)."""

    def __init__(self, payment_id: str) -> None:
        super().__init__(f"payment {payment_id} is being credited by another caller; try again later")
        self.payment_id = payment_id
