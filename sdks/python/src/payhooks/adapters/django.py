"""Django: the raw body from ``request.body``; the view is CSRF-exempt (a webhook carries no
CSRF token; the signature authenticates it).

    from payhooks.adapters.django import django_view
    urlpatterns = [path("webhooks/payhooks", django_view(handler))]
"""

from typing import Any, Callable

from django.http import HttpRequest, HttpResponse
from django.views.decorators.csrf import csrf_exempt

from ..handler import WebhookHandler
from . import DEFAULT_MAX_BODY_BYTES, METHOD_NOT_ALLOWED, TOO_LARGE


def handle_django(handler: WebhookHandler, request: HttpRequest, max_body_bytes: int = DEFAULT_MAX_BODY_BYTES) -> HttpResponse:
    """Hands the request's raw body to ``handler`` and returns its answer (413 above ``max_body_bytes``)."""
    try:
        length = int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        length = 0
    if length > max_body_bytes:
        return HttpResponse(TOO_LARGE, status=413, content_type="application/json")
    body = request.body
    if len(body) > max_body_bytes:
        return HttpResponse(TOO_LARGE, status=413, content_type="application/json")
    answer = handler.handle(body, request.headers)
    response = HttpResponse(answer.body, status=answer.status)
    for name, value in answer.headers.items():
        response[name] = value
    return response


def django_view(handler: WebhookHandler, max_body_bytes: int = DEFAULT_MAX_BODY_BYTES) -> Callable[[HttpRequest], HttpResponse]:
    """A Django view for the webhook URL: POST only, CSRF-exempt."""

    def payhooks_webhook(request: HttpRequest) -> HttpResponse:
        if request.method != "POST":
            response = HttpResponse(METHOD_NOT_ALLOWED, status=405, content_type="application/json")
            response["Allow"] = "POST"
            return response
        return handle_django(handler, request, max_body_bytes)

    view: Callable[[Any], HttpResponse] = csrf_exempt(payhooks_webhook)
    return view
