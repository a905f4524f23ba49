"""payhooks: receive payhooks webhooks correctly.

Verify the signature over the raw body (``verify``), record the evt_ id once, answer 200 at
once and do the work after (``WebhookHandler``), and credit each payment once (a store's
``credit_once``). Framework adapters are in ``payhooks.adapters``.
"""

from ._generated import PUBLIC_KEY_PREFIX, SECRET_PREFIX
from .errors import REASONS, ConfigurationError, CreditInProgressError, PayhooksError, WebhookVerificationError
from .event_types import EVENT_TYPES, is_payment_event
from .handler import DEFAULT_RETRY_DELAYS, EventContext, WebhookHandler, WebhookResponse
from .stores import DEDUP_RETENTION, Claim, CreditResult, MemoryStore, Store
from .webhook import (
    DEFAULT_TOLERANCE,
    EVENT_ID_HEADER,
    SIGNATURE_HEADER,
    Event,
    PublicKeys,
    Secret,
    sign,
    sign_test_delivery,
    verify,
)

# The one place the version is written: pyproject.toml reads it (dynamic version).
__version__ = "0.1.0"

__all__ = [
    "ConfigurationError",
    "CreditInProgressError",
    "CreditResult",
    "Claim",
    "DEDUP_RETENTION",
    "DEFAULT_RETRY_DELAYS",
    "DEFAULT_TOLERANCE",
    "EVENT_ID_HEADER",
    "EVENT_TYPES",
    "Event",
    "EventContext",
    "MemoryStore",
    "PayhooksError",
    "PUBLIC_KEY_PREFIX",
    "PublicKeys",
    "REASONS",
    "SECRET_PREFIX",
    "SIGNATURE_HEADER",
    "Secret",
    "Store",
    "WebhookHandler",
    "WebhookResponse",
    "WebhookVerificationError",
    "__version__",
    "is_payment_event",
    "sign",
    "sign_test_delivery",
    "verify",
]
