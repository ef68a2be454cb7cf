"""HTTP errors: one body shape, and the one table mapping exceptions to status codes.

Every error answer is ``{"error": {"code": "...", "message": "..."}}`` (plus ``location`` for a
manifest that cannot be read). The tree of the service's own exceptions::

    ApiError                      status, code and message carried by the instance
    ├── MalformedJSON             400 the body is not UTF-8 JSON
    ├── RequestTimeout            408 the body did not arrive in time
    ├── BodyTooLarge              413 over RAYSERVICE_IMPACT_MAX_BODY_BYTES
    ├── UnsupportedMediaType      415 not application/json
    ├── InvalidRequest            422 JSON of the wrong shape
    └── ServiceUnavailable        503 pool saturated, time budget spent, not ready (Retry-After)

Core exceptions (``diffing.DiffingError``) and ``ManagedResourcesError`` are mapped to 422 in
:func:`error_for`, which both the event loop and the analysis workers use, so a status code is
decided here and nowhere else. Bad input never becomes a 5xx.
"""

from __future__ import annotations

import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from diffing.errors import DiffingError, ManifestError

from .managed import ManagedResourcesError

log = logging.getLogger("rayservice_impact")


class ApiError(Exception):
    """An answer other than success; subclasses fix the status and code."""

    status = 400
    code = "bad-request"

    def __init__(self, message: str, *, code: str | None = None, retry_after: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code
        self.retry_after = retry_after

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.message!r}, code={self.code!r})"


class MalformedJSON(ApiError):
    status, code = 400, "malformed-json"


class BodyTooLarge(ApiError):
    status, code = 413, "body-too-large"


class RequestTimeout(ApiError):
    status, code = 408, "request-timeout"


class UnsupportedMediaType(ApiError):
    status, code = 415, "unsupported-media-type"


class InvalidRequest(ApiError):
    status, code = 422, "invalid-request"


class ServiceUnavailable(ApiError):
    status, code = 503, "unavailable"


def error_body(code: str, message: str, location: dict[str, Any] | None = None) -> dict[str, Any]:
    detail: dict[str, Any] = {"code": code, "message": message}
    if location:
        detail["location"] = location
    return {"error": detail}


def error_for(exc: BaseException) -> tuple[int, dict[str, Any], dict[str, str]]:
    """(status, body, headers) for an exception; the single mapping table of the service."""
    if isinstance(exc, ApiError):
        headers = {"Retry-After": str(exc.retry_after)} if exc.retry_after is not None else {}
        if exc.status == 401:
            headers["WWW-Authenticate"] = "Bearer"
        return exc.status, error_body(exc.code, exc.message), headers
    if isinstance(exc, ManifestError):
        location = {k: v for k, v in (("source", exc.source), ("document", exc.document),
                                      ("line", exc.line), ("path", exc.path)) if v not in (None, "")}
        return 422, error_body(exc.code, exc.message, location), {}
    if isinstance(exc, DiffingError):  # PolicyError, UnsupportedVersionError
        return 422, error_body(exc.code, str(exc)), {}
    if isinstance(exc, ManagedResourcesError):
        return 422, error_body("invalid-managed-resources", str(exc)), {}
    if isinstance(exc, RecursionError):  # JSON, pickling or the core on absurdly nested input
        return 422, error_body("too-deep", "the input is nested too deeply to analyse"), {}
    if isinstance(exc, UnicodeError):  # a lone surrogate ("\ud800" in JSON) reaching the YAML reader
        return 422, error_body("invalid-text", f"a text is not valid Unicode: {exc}"), {}
    if isinstance(exc, RequestValidationError):
        return 422, error_body("invalid-request", describe_validation(exc.errors())), {}
    if isinstance(exc, StarletteHTTPException):
        code = {404: "not-found", 405: "method-not-allowed"}.get(exc.status_code, "http-error")
        return exc.status_code, error_body(code, str(exc.detail)), dict(exc.headers or {})
    return 500, error_body("internal-error", "the service failed unexpectedly; see its log"), {}


def internal_error_body(request_id: str) -> dict[str, Any]:
    """A 500's body: nothing of the failure itself, the id under which the log has it."""
    body = error_body("internal-error", f"the service failed unexpectedly; its log has the details "
                                        f"under request id {request_id}")
    body["error"]["requestId"] = request_id
    return body


def describe_validation(errors: Any) -> str:
    """One sentence per pydantic error: ``body.before: Input should be a valid string``."""
    parts = []
    for err in list(errors)[:5]:
        where = ".".join(str(p) for p in err.get("loc", ()) if p != "body") or "body"
        parts.append(f"{where}: {err.get('msg', 'invalid')}")
    return "; ".join(parts) or "the request does not have the documented shape"


def error_response(exc: BaseException) -> JSONResponse:
    status, body, headers = error_for(exc)
    return JSONResponse(body, status_code=status, headers=headers)


async def _handle(request: Request, exc: Exception) -> JSONResponse:
    request.scope.setdefault("state", {})["error_code"] = error_for(exc)[1]["error"]["code"]
    return error_response(exc)


def install_error_handlers(app: FastAPI) -> None:
    """Expected errors become their 4xx/503 here; anything else reaches ObserveMiddleware, which
    answers 500 with a request id and logs the traceback."""
    for cls in (ApiError, DiffingError, ManagedResourcesError, RequestValidationError,
                StarletteHTTPException, RecursionError, UnicodeError):
        app.add_exception_handler(cls, _handle)
