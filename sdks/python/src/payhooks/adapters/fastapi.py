"""FastAPI / Starlette: the raw body from ``await request.body()``; the handler's store call runs
in the thread pool so the event loop is never blocked.

    from payhooks.adapters.fastapi import fastapi_endpoint
    app.add_api_route("/webhooks/payhooks", fastapi_endpoint(handler), methods=["POST"])
"""

from typing import Awaitable, Callable, List

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response

from ..handler import WebhookHandler
from . import DEFAULT_MAX_BODY_BYTES, TOO_LARGE


async def handle_fastapi(handler: WebhookHandler, request: Request, max_body_bytes: int = DEFAULT_MAX_BODY_BYTES) -> Response:
    """Hands the request's raw body to ``handler`` and returns its answer (413 above ``max_body_bytes``)."""
    length = request.headers.get("content-length")
    if length is not None and length.isdigit() and int(length) > max_body_bytes:
        return Response(TOO_LARGE, status_code=413, media_type="application/json")
    chunks: List[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > max_body_bytes:
            return Response(TOO_LARGE, status_code=413, media_type="application/json")
        chunks.append(chunk)
    answer = await run_in_threadpool(handler.handle, b"".join(chunks), request.headers)
    return Response(answer.body, status_code=answer.status, headers=answer.headers)


def fastapi_endpoint(handler: WebhookHandler, max_body_bytes: int = DEFAULT_MAX_BODY_BYTES) -> Callable[[Request], Awaitable[Response]]:
    """An endpoint function for ``app.add_api_route(path, ..., methods=["POST"])``."""

    async def payhooks_webhook(request: Request) -> Response:
        return await handle_fastapi(handler, request, max_body_bytes)

    return payhooks_webhook
