"""What the forge webhook routes (:mod:`.github`, :mod:`.gitlab`) share: the size-capped body,
the JSON object it must hold, and the shape of an error or an accepted delivery."""

from __future__ import annotations

import json
from typing import Any

from fastapi import Request
from fastapi.responses import JSONResponse


def error(status: int, code: str, message: str) -> JSONResponse:
    """``{"error": {"code", "message"}}`` with ``status``."""
    return JSONResponse({"error": {"code": code, "message": message}}, status_code=status)


async def read_limited(request: Request, limit: int) -> bytes | None:
    """The request body, or None when it is over ``limit`` bytes (announced by Content-Length or
    not: reading stops at the first byte past the cap)."""
    declared = request.headers.get("content-length")
    if declared and declared.isdigit() and int(declared) > limit:
        return None
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
    return b"".join(chunks)


def json_object(body: bytes) -> dict[str, Any] | JSONResponse:
    """The delivery's JSON object, or the 400 answer saying it is not one."""
    try:
        payload = json.loads(body)
    except ValueError:
        return error(400, "malformed-json", "the body is not JSON")
    if not isinstance(payload, dict):
        return error(400, "malformed-json", "the body is not a JSON object")
    return payload


def accepted(result: str, delivery: str, waiting: str) -> JSONResponse:
    """202 with the dispatcher's ``result`` for ``delivery``; 503 when it is ``busy`` (too many
    ``waiting`` jobs: the forge redelivers later)."""
    if result == "busy":
        return error(503, "busy", f"too many {waiting} waiting; redeliver later")
    return JSONResponse({"status": result, "delivery": delivery[:64]}, status_code=202)
