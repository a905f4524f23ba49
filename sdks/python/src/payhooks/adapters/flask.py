"""Flask: the raw body from ``request.get_data()``, never ``request.json``.

    from payhooks.adapters.flask import flask_view
    app.add_url_rule("/webhooks/payhooks", view_func=flask_view(handler), methods=["POST"])
"""

from typing import Callable, Optional

from flask import Request, Response, request

from ..handler import WebhookHandler
from . import DEFAULT_MAX_BODY_BYTES, TOO_LARGE


def handle_flask(handler: WebhookHandler, req: Optional[Request] = None, max_body_bytes: int = DEFAULT_MAX_BODY_BYTES) -> Response:
    """Hands the request's raw body to ``handler`` and returns its answer (413 above ``max_body_bytes``)."""
    req = req or request
    if req.content_length is not None and req.content_length > max_body_bytes:
        return Response(TOO_LARGE, status=413, content_type="application/json")
    body = req.stream.read(max_body_bytes + 1) if req.content_length is None else req.get_data(cache=True)
    if len(body) > max_body_bytes:
        return Response(TOO_LARGE, status=413, content_type="application/json")
    answer = handler.handle(body, req.headers)
    return Response(answer.body, status=answer.status, headers=answer.headers)


def flask_view(handler: WebhookHandler, max_body_bytes: int = DEFAULT_MAX_BODY_BYTES) -> Callable[[], Response]:
    """A Flask view function for the webhook route (register it with methods=["POST"])."""

    def payhooks_webhook() -> Response:
        return handle_flask(handler, request, max_body_bytes)

    return payhooks_webhook
