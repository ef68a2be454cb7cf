"""What the forge REST clients (:mod:`app.clients.github`, :mod:`app.clients.gitlab`) share:
the error base class, the exponential backoff and retry budget, the body of a refused streamed
answer, and size-capped downloads. Each client keeps its own headers, its own rate-limit hints
and its own error names (``GitHubError``, ``GitLabError``), derived from :class:`ForgeError`.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import httpx

from .upstream import UpstreamError

T = TypeVar("T")


class ForgeError(UpstreamError):
    """A forge answered something we cannot use: ``{host} {method} {path}: HTTP {status}: {detail}``
    (never a token: ``path`` is the URL's path, without its query)."""

    host = "forge"  # the name the message starts with: "GitHub", "GitLab"

    def __init__(self, method: str, path: str, status: int | None, detail: str = "") -> None:
        what = f"HTTP {status}" if status is not None else "no answer"
        super().__init__(f"{self.host} {method} {path}: {what}" + (f": {detail}" if detail else ""),
                         status=status)
        self.method, self.path, self.detail = method, path, detail


@dataclass(frozen=True, slots=True)
class BackoffPolicy:
    """Exponential backoff inside one total budget per call (the clients add their own fields)."""

    budget: float = 120.0          # total seconds one call may spend waiting
    max_attempts: int = 8
    backoff: float = 0.5           # first 5xx wait, doubled each time
    max_backoff: float = 30.0

    def backoff_wait(self, attempt: int) -> float:
        """The wait before retry number ``attempt`` (1-based) after a 5xx or a transport error."""
        return min(self.backoff * 2 ** (attempt - 1), self.max_backoff)

    def exhausted(self, attempt: int, spent: float, wait: float) -> bool:
        """True when attempt ``attempt`` was the last, or waiting ``wait`` more would overrun the budget."""
        return attempt >= self.max_attempts or spent + wait > self.budget


async def post_once(post: Callable[[], Awaitable[T]],
                    find: Callable[[], Awaitable[dict[str, Any] | None]] | None,
                    edit: Callable[[dict[str, Any]], Awaitable[T]], *, uncertain: type[Exception],
                    policy: BackoffPolicy, sleep: Callable[[float], Awaitable[None]], log: logging.Logger,
                    label: str, noun: str, kept: str = "editing") -> T:
    """``post()`` a comment or note, never twice. A POST is not idempotent: after an ``uncertain``
    failure (a 5xx or a lost answer) the forge may have stored it, so ``find()`` looks for it
    first and, when it is there, ``edit(found)`` updates it instead; otherwise the POST is tried
    again after the backoff wait, up to ``policy.max_attempts``. ``label``/``noun`` name it in logs,
    ``kept`` what ``edit`` does with the stored one ("editing", "keeping")."""
    attempt = 0
    while True:
        attempt += 1
        try:
            return await post()
        except uncertain as exc:
            if find is not None:
                found = await find()
                if found is not None:
                    log.warning("%s: %s; the %s was stored, %s it", label, exc, noun, kept)
                    return await edit(found)
            if attempt >= policy.max_attempts:
                raise
            wait = policy.backoff_wait(attempt)
            log.warning("%s: %s; not stored, retrying in %.1fs", label, exc, wait)
            await sleep(wait)


async def discard(resp: httpx.Response) -> None:
    """Read a refused streamed answer's (small) body for its message and free the connection."""
    try:
        await resp.aread()
    except httpx.TransportError:
        pass
    await resp.aclose()


async def read_capped(resp: httpx.Response, path: str, max_bytes: int,
                      too_large: Callable[[str, int], Exception],
                      error: Callable[[str, str, int | None, str], Exception]) -> bytes:
    """``resp``'s streamed body, at most ``max_bytes``: over it (announced by Content-Length or
    not) raises ``too_large(path, max_bytes)``; a download that breaks off raises ``error``."""
    declared = resp.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > max_bytes:
        raise too_large(path, max_bytes)
    chunks: list[bytes] = []
    total = 0
    try:
        async for chunk in resp.aiter_bytes():
            total += len(chunk)
            if total > max_bytes:
                raise too_large(path, max_bytes)
            chunks.append(chunk)
    except httpx.TransportError as exc:
        raise error("GET", path, resp.status_code,
                    f"the download broke off after {total} bytes ({type(exc).__name__})") from None
    return b"".join(chunks)
