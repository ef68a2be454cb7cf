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


class HeadDeadline:
    """The head deadline, for a uvicorn protocol class it is mixed into first: armed when the
    connection opens and when the bytes of a request head start to arrive, dropped once the
    parser has the whole head; at the deadline a head still awaited closes the connection.
    ``_awaiting_head`` says what the parser knows."""

    header_timeout = 10.0  # replaced per server by :func:`protocol_with`
    loop: asyncio.AbstractEventLoop
    transport: asyncio.Transport
    _head_timer: asyncio.TimerHandle | None = None

    def _awaiting_head(self) -> bool:
        raise NotImplementedError

    def _arm_head_timer(self) -> None:
        if self._head_timer is None:
            self._head_timer = self.loop.call_later(self.header_timeout, self._head_timeout)

    def _disarm_head_timer(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _head_timeout(self) -> None:
        self._head_timer = None
        if self._awaiting_head() and not self.transport.is_closing():
            self.transport.close()

    def connection_made(self, transport: asyncio.Transport) -> None:
        super().connection_made(transport)  # type: ignore[misc]
        self._arm_head_timer()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm_head_timer()
        super().connection_lost(exc)  # type: ignore[misc]


class GuardedH11Protocol(HeadDeadline, H11Protocol):  # type: ignore[misc]
    def _awaiting_head(self) -> bool:
        return self.conn.their_state is h11.IDLE

    def data_received(self, data: bytes) -> None:
        if self._awaiting_head():
            self._arm_head_timer()  # bytes of a request head: its deadline runs from now
        super().data_received(data)
        if not self._awaiting_head():
            self._disarm_head_timer()


def _guarded_httptools() -> type[Any] | None:
    try:
        from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
    except ImportError:  # no httptools: the h11 protocol serves
        return None

    class GuardedHttpToolsProtocol(HeadDeadline, HttpToolsProtocol):  # type: ignore[misc]
        _head_pending = True  # between requests and until the parser has the headers

        def _awaiting_head(self) -> bool:
            return self._head_pending

        def data_received(self, data: bytes) -> None:
            if self._head_pending:
                self._arm_head_timer()
            super().data_received(data)

        def on_headers_complete(self) -> None:
            self._head_pending = False
            self._disarm_head_timer()
            super().on_headers_complete()

        def on_message_complete(self) -> None:
            super().on_message_complete()
            self._head_pending = True  # the next bytes are the next request's head

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
