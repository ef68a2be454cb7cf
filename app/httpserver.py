"""uvicorn's HTTP/1.1 protocol with a deadline for the request head.

uvicorn (h11) arms a timer only between requests (``timeout_keep_alive``) and drops it at the
first byte of the next one, so a client that sends its headers one byte every few seconds held
a connection, and a file descriptor, for as long as it liked. Here a request head that is not
complete within ``header_timeout`` seconds of its first byte (or of the connection) closes the
connection. The body has its own deadline in :class:`app.middleware.BodyLimitMiddleware`.
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


def protocol_with(header_timeout: float) -> type[GuardedH11Protocol]:
    """The protocol class for one server, with its head deadline."""
    return type("GuardedH11Protocol", (GuardedH11Protocol,), {"header_timeout": header_timeout})
