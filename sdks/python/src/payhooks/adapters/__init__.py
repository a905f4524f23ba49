"""Framework adapters. Each imports its framework only when used:

- ``payhooks.adapters.flask``: ``flask_view(handler)`` / ``handle_flask(handler, request)``;
- ``payhooks.adapters.django``: ``django_view(handler)`` (CSRF-exempt, POST only);
- ``payhooks.adapters.fastapi``: ``fastapi_endpoint(handler)`` / ``await handle_fastapi(handler, request)``.

Each reads the raw body (never parsed JSON) and refuses bodies over ``DEFAULT_MAX_BODY_BYTES``
with 413 (payhooks sends at most 64 KiB).
"""

#: Bodies above this are answered 413 without being read further.
DEFAULT_MAX_BODY_BYTES: int = 1 << 20
TOO_LARGE: str = '{"error":"body_too_large"}'
METHOD_NOT_ALLOWED: str = '{"error":"method_not_allowed"}'
