"""uvicorn's HTTP/1.1 protocols with a deadline for the request head.

uvicorn arms a timer only between requests (``timeout_keep_alive``) and drops it at the first
byte of the next one, so a client that sends its headers one byte every few seconds held a
connection, and a file descriptor, for as long as it liked. Here a request head that is not
complete within ``header_timeout`` seconds of its first byte (or of the connection) closes the
connection. The body has its own deadline in :class:`app.middleware.BodyLimitMiddleware`.

The service runs on httptools (the C parser of ``uvicorn[standard]``, several times cheaper per
request than h11) when it is installed, else on h11; both carry the same deadline.
"""

from __future__ import annotations

import asyncio
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol


class GuardedH11Protocol(H11Protocol):
    header_timeout = 10.0  # replaced per server by :func:`protocol_with`

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._head_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm_head_timer()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm_head_timer()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self.conn.their_state is h11.IDLE:
            self._arm_head_timer()  # bytes of a request head: its deadline runs from now
        super().data_received(data)
        if self.conn.their_state is not h11.IDLE:
            self._disarm_head_timer()

    def _arm_head_timer(self) -> None:
        if self._head_timer is None:
            self._head_timer = self.loop.call_later(self.header_timeout, self._head_timeout)

    def _disarm_head_timer(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _head_timeout(self) -> None:
        self._head_timer = None
        if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
            self.transport.close()


def _guarded_httptools() -> type[Any] | None:
    try:
        from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
    except ImportError:  # no httptools: the h11 protocol serves
        return None

    class GuardedHttpToolsProtocol(HttpToolsProtocol):  # type: ignore[misc]
        """The httptools protocol with the same head deadline: armed when the bytes of a head
        start to arrive (or the connection opens), disarmed once the parser has the headers."""

        header_timeout = 10.0

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self._head_timer: asyncio.TimerHandle | None = None
            self._awaiting_head = True

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self._arm_head_timer()

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm_head_timer()
            super().connection_lost(exc)

        def data_received(self, data: bytes) -> None:
            if self._awaiting_head:
                self._arm_head_timer()
            super().data_received(data)

        def on_headers_complete(self) -> None:
            self._awaiting_head = False
            self._disarm_head_timer()
            super().on_headers_complete()

        def on_message_complete(self) -> None:
            super().on_message_complete()
            self._awaiting_head = True  # the next bytes are the next request's head

        def _arm_head_timer(self) -> None:
            if self._head_timer is None:
                self._head_timer = self.loop.call_later(self.header_timeout, self._head_timeout)

        def _disarm_head_timer(self) -> None:
            if self._head_timer is not None:
                self._head_timer.cancel()
                self._head_timer = None

        def _head_timeout(self) -> None:
            self._head_timer = None
            if self._awaiting_head and not self.transport.is_closing():
                self.transport.close()

    return GuardedHttpToolsProtocol


GUARDED_HTTPTOOLS = _guarded_httptools()


def protocol_with(header_timeout: float, *, parser: str = "auto") -> type[Any]:
    """The protocol class for one server, with its head deadline: httptools when installed
    (``parser="auto"``), or the one named (``"httptools"``, ``"h11"``)."""
    base: type[Any] = GuardedH11Protocol
    if parser in ("auto", "httptools") and GUARDED_HTTPTOOLS is not None:
        base = GUARDED_HTTPTOOLS
    elif parser == "httptools":
        raise RuntimeError("httptools is not installed (pip install 'uvicorn[standard]')")
    return type(base.__name__, (base,), {"header_timeout": header_timeout})
