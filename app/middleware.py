"""Pure ASGI middleware: the body-size limit and the per-request log line and metrics."""

from __future__ import annotations

import asyncio
import logging
import time
import uuid

from starlette.datastructures import MutableHeaders
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .errors import ApiError, BodyTooLarge, RequestTimeout, error_response, internal_error_body
from .logs import log_request
from .metrics import Metrics

log = logging.getLogger("rayservice_impact")


class BodyLimitMiddleware:
    """Refuse a request body over ``max_bytes`` with 413, while it streams in.

    A declared ``Content-Length`` over the limit is refused before a byte reaches the app;
    otherwise the bytes are counted chunk by chunk as the app reads them, and the chunk that
    crosses the limit raises :class:`BodyTooLarge` instead of being delivered. Nothing is
    buffered here. Before answering, up to ``DRAIN_BYTES`` of the unread body are read and
    thrown away, so a client that sends its whole body before reading (most do) gets the 413
    instead of a reset connection; a larger body is cut off.
    """

    def __init__(self, app: ASGIApp, max_bytes: int, per_path: dict[str, int] | None = None,
                 body_timeout: float = 30.0) -> None:
        self.app, self.max_bytes, self.per_path = app, max_bytes, per_path or {}
        self.body_timeout = body_timeout

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = self.per_path.get(scope.get("path", ""), self.max_bytes)
        too_large = BodyTooLarge(f"the request body is over the {limit}-byte limit"
                                 + (" (RAYSERVICE_IMPACT_MAX_BODY_BYTES)" if limit == self.max_bytes else ""))
        for name, value in scope["headers"]:
            if name == b"content-length":
                try:
                    declared = int(value)
                except ValueError:
                    declared = 0
                if declared > limit:
                    await _reject(scope, receive, send, too_large, drain=declared <= DRAIN_BYTES)
                    return
        received = 0
        started = False
        deadline = time.monotonic() + self.body_timeout

        async def limited_receive() -> Message:
            nonlocal received
            try:
                message = await asyncio.wait_for(receive(), max(0.0, deadline - time.monotonic()))
            except TimeoutError:
                raise RequestTimeout(f"the request body did not arrive within {self.body_timeout:g} s") \
                    from None
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    raise too_large
            return message

        async def watched_send(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, limited_receive, watched_send)
        except BodyTooLarge as exc:  # raised while reading outside the app's handlers
            if started:
                raise
            await _reject(scope, receive, send, exc, drain=True)
        except RequestTimeout as exc:
            if started:
                raise
            await _reject(scope, receive, send, exc, drain=False)


DRAIN_BYTES = 64 * 1024 * 1024
DRAIN_SECONDS = 10.0


async def _drain(receive: Receive) -> bool:
    """Read and discard the rest of the body within the bounds; True when it all arrived."""
    seen, deadline = 0, time.monotonic() + DRAIN_SECONDS
    while seen <= DRAIN_BYTES and time.monotonic() < deadline:
        message = await receive()
        if message["type"] != "http.request":
            return False
        seen += len(message.get("body", b""))
        if not message.get("more_body", False):
            return True
    return False


async def _reject(scope: Scope, receive: Receive, send: Send, exc: ApiError, *, drain: bool) -> None:
    scope.setdefault("state", {})["error_code"] = exc.code
    response = error_response(exc)
    if not (drain and await _drain(receive)):
        response.headers["Connection"] = "close"  # the rest of the body is not read
    await response(scope, _no_receive, send)


async def _no_receive() -> Message:
    return {"type": "http.disconnect"}


class ObserveMiddleware:
    """One JSON log line and the request metrics for every HTTP request; a request id on every
    answer (``X-Request-Id``); and the last resort for a bug: a 500 with that id, the traceback
    in the log under the same id, and the connection kept (Starlette's own last resort re-raises
    to the server, which closes a keep-alive connection)."""

    def __init__(self, app: ASGIApp, metrics: Metrics) -> None:
        self.app, self.metrics = app, metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500
        sent_start = False
        request_id = uuid.uuid4().hex[:16]
        state = scope.setdefault("state", {})
        state["request_id"] = request_id

        async def watched_send(message: Message) -> None:
            nonlocal status, sent_start
            if message["type"] == "http.response.start":
                status, sent_start = message["status"], True
                MutableHeaders(scope=message)["x-request-id"] = request_id
            await send(message)

        try:
            await self.app(scope, receive, watched_send)
        except Exception as exc:  # noqa: BLE001 - answered here, logged with its traceback
            log.error("unhandled exception", exc_info=exc, extra={"request_id": request_id})
            state["error_code"] = "internal-error"
            if not sent_start:
                response = JSONResponse(internal_error_body(request_id), status_code=500)
                await response(scope, _no_receive, watched_send)
        finally:
            seconds = time.perf_counter() - started
            route = _route_of(scope)
            self.metrics.observe_request(scope["method"], route, status, seconds)
            state = scope.get("state") or {}
            log_request({"method": scope["method"], "route": route, "status": status,
                         "duration_ms": round(seconds * 1000, 2), "decision": state.get("decision"),
                         "error": state.get("error_code"), "cache": state.get("cache"),
                         "request_id": request_id})


def _route_of(scope: Scope) -> str:
    """The route template (``/v1/analyze``), never the raw path: bounded label values."""
    route = scope.get("route")
    path = getattr(route, "path", None)
    return path if isinstance(path, str) else "unmatched"
