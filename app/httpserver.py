"""uvicorn's HTTP/1.1 protocols with the bounds uvicorn lacks: a deadline and a size limit for the
request head, and a deadline and a memory budget for answers a client does not read.

The head's deadline. uvicorn arms a timer only between requests (``timeout_keep_alive``) and
drops it at the first byte of the next one, so a client that sends its headers one byte every few
seconds held a connection, and a file descriptor, for as long as it liked. Here a request head
that is not complete within ``header_timeout`` seconds of its first byte (or of the connection)
closes the connection. The body has its own deadline in :class:`app.middleware.BodyLimitMiddleware`.

The head's size. h11 stops at 16 KiB, but httptools takes a head of any length and grows the URL
and each header value by concatenation, so one client streaming a 40 MB header value within the
deadline kept the event loop copying bytes (``/healthz`` took 1.2 s to answer meanwhile). A head
over ``max_head_bytes`` (64 KiB, for both parsers) is answered 431 and the connection closed.

Unread answers. An answer the client does not read waits in the transport's buffer, and asyncio
and uvloop keep that buffer until the socket takes it, even after ``close()``: 96 clients that asked
for a 14 MB report and never read it held 1.15 GB past every timeout. The transport tells the
protocol when its buffer passes the high-water mark (``pause_writing``) and when it drains again
(``resume_writing``); here a connection whose writing stays paused for ``write_timeout`` seconds
is aborted, which drops the buffer, and the bytes held by all paused connections of a server
stay within ``write_budget``: past it, the connections paused the longest are aborted first.

The service runs on httptools (the C parser of ``uvicorn[standard]``, several times cheaper per
request than h11) when it is installed, else on h11; both carry the same bounds.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

log = logging.getLogger("rayservice_impact")

MAX_HEAD_BYTES = 64 * 1024         # request line and headers, as many servers allow
WRITE_TIMEOUT = 30.0               # seconds a client may leave its answer unread
WRITE_BUDGET = 64 * 1024 * 1024    # bytes of unread answers one server holds at most
LINGER_SECONDS, LINGER_BYTES = 1.0, 1024 * 1024  # after a 431: the client's bytes read and dropped


class HeadDeadline:
    """The head's deadline and size limit, for a uvicorn protocol class it is mixed into first.

    The deadline is armed when the connection opens and when the bytes of a request head start to
    arrive, and dropped once the parser has the whole head; at the deadline a head still awaited
    closes the connection. The bytes received while a head is awaited are counted per chunk; a
    chunk that crosses the limit is fed up to the limit only, and unless the head ends there the
    request is refused with 431. (A pipelined request that starts in the chunk ending the head
    before it is counted from the next chunk: its head may grow by one chunk more.)
    ``_awaiting_head`` says what the parser knows; the parser calls ``_head_complete`` when it has
    a head."""

    header_timeout = 10.0  # these two are replaced per server by :func:`protocol_with`
    max_head_bytes = MAX_HEAD_BYTES
    loop: asyncio.AbstractEventLoop
    transport: asyncio.Transport
    _head_timer: asyncio.TimerHandle | None = None
    _head_bytes = 0        # received since the awaited head began
    _heads_done = 0        # heads the parser completed: a chunk may complete several
    _refused = False       # a 431 went out: what still arrives is dropped unparsed ...
    _dropped = 0           # ... and counted

    def _awaiting_head(self) -> bool:
        raise NotImplementedError

    def _parse(self, data: bytes) -> None:
        super().data_received(data)  # type: ignore[misc]

    def data_received(self, data: bytes) -> None:
        if self._refused:
            self._dropped += len(data)
            if self._dropped > LINGER_BYTES:
                self._close()
            return
        if not self._awaiting_head():
            self._parse(data)  # a body, or a pipelined request while one is answered
            return
        self._arm_head_timer()  # bytes of a request head: its deadline runs from now
        room = self.max_head_bytes - self._head_bytes
        self._head_bytes += len(data)
        if len(data) <= room:
            self._parse(data)
        else:
            done = self._heads_done
            self._parse(data[:room])  # the head may end within the limit, its body after it
            if self._heads_done == done:
                self._refuse_head()
                return
            if not self.transport.is_closing():
                self._parse(data[room:])
        if not self._awaiting_head():
            self._disarm_head_timer()

    def _head_complete(self) -> None:
        self._heads_done += 1
        self._head_bytes = 0
        self._disarm_head_timer()

    def _refuse_head(self) -> None:
        """431, then the connection closes. Closing a socket whose client is still sending resets
        it, and the client would see the reset instead of the answer: so only the write side is
        shut now, and what arrives for ``LINGER_SECONDS`` more (up to ``LINGER_BYTES``) is dropped
        unparsed."""
        self._refused = True
        self._disarm_head_timer()
        body = (b'{"error":{"code":"header-too-large","message":"the request line and headers are over '
                b'the %d-byte limit"}}' % self.max_head_bytes)
        self.transport.write(b"HTTP/1.1 431 Request Header Fields Too Large\r\ncontent-type: application/json"
                             b"\r\ncontent-length: %d\r\nconnection: close\r\n\r\n%s" % (len(body), body))
        if self.transport.can_write_eof():
            self.transport.write_eof()
        self.loop.call_later(LINGER_SECONDS, self._close)

    def _close(self) -> None:
        if not self.transport.is_closing():
            self.transport.close()

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


class WriteBudget:
    """The bytes waiting in the buffers of one server's paused connections, oldest pause first;
    over ``max_bytes`` the oldest are aborted (never the one that just paused)."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.total = 0
        self.held: dict[WriteDeadline, int] = {}

    def hold(self, conn: WriteDeadline, size: int) -> None:
        self.release(conn)
        self.held[conn] = size
        self.total += size
        while self.total > self.max_bytes and len(self.held) > 1:
            oldest = next(iter(self.held))
            self.release(oldest)
            oldest._drop_unread("the server's budget for unread answers is spent")

    def release(self, conn: WriteDeadline) -> None:
        self.total -= self.held.pop(conn, 0)


class WriteDeadline:
    """The write deadline and budget, mixed into a uvicorn protocol class: armed when the transport
    pauses writing, dropped when it resumes; at the deadline the connection is aborted."""

    write_timeout = WRITE_TIMEOUT  # these two are replaced per server by :func:`protocol_with`
    write_budget = WriteBudget(WRITE_BUDGET)
    loop: asyncio.AbstractEventLoop
    transport: asyncio.Transport
    _write_timer: asyncio.TimerHandle | None = None

    def pause_writing(self) -> None:
        super().pause_writing()  # type: ignore[misc]
        if self._write_timer is None:
            why = f"its answer was not read within {self.write_timeout:g} s"
            self._write_timer = self.loop.call_later(self.write_timeout, self._drop_unread, why)
        self.write_budget.hold(self, self.transport.get_write_buffer_size())

    def resume_writing(self) -> None:
        self._stop_watching()
        super().resume_writing()  # type: ignore[misc]

    def _stop_watching(self) -> None:
        if self._write_timer is not None:
            self._write_timer.cancel()
            self._write_timer = None
        self.write_budget.release(self)

    def _drop_unread(self, why: str) -> None:
        """Abort, not close: ``close()`` keeps the buffer until the client reads it."""
        self._stop_watching()
        log.info("connection dropped: %s (%d bytes unsent)", why, self.transport.get_write_buffer_size())
        self.transport.abort()

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_watching()
        super().connection_lost(exc)  # type: ignore[misc]


class GuardedH11Protocol(HeadDeadline, WriteDeadline, H11Protocol):  # type: ignore[misc]
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # h11's own bound (16 KiB by default, answered 400) is put above ours, so both parsers take
        # the same heads and refuse the same ones with 431.
        self.conn = h11.Connection(h11.SERVER, max_incomplete_event_size=2 * self.max_head_bytes)

    def _awaiting_head(self) -> bool:
        return self.conn.their_state is h11.IDLE

    def _parse(self, data: bytes) -> None:
        idle = self._awaiting_head()
        super()._parse(data)
        if idle and not self._awaiting_head():
            self._head_complete()


def _guarded_httptools() -> type[Any] | None:
    try:
        from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
    except ImportError:  # no httptools: the h11 protocol serves
        return None

    class GuardedHttpToolsProtocol(HeadDeadline, WriteDeadline, HttpToolsProtocol):  # type: ignore[misc]
        _head_pending = True  # between requests and until the parser has the headers

        def _awaiting_head(self) -> bool:
            return self._head_pending

        def on_headers_complete(self) -> None:
            self._head_pending = False
            self._head_complete()
            super().on_headers_complete()

        def on_message_complete(self) -> None:
            super().on_message_complete()
            self._head_pending = True  # the next bytes are the next request's head

    return GuardedHttpToolsProtocol


GUARDED_HTTPTOOLS = _guarded_httptools()


def protocol_with(header_timeout: float, *, parser: str = "auto", max_head_bytes: int = MAX_HEAD_BYTES,
                  write_timeout: float = WRITE_TIMEOUT, write_budget: int = WRITE_BUDGET) -> type[Any]:
    """The protocol class for one server, with its bounds: httptools when installed
    (``parser="auto"``), or the one named (``"httptools"``, ``"h11"``). Each call makes a class with
    its own write budget, shared by that server's connections."""
    base: type[Any] = GuardedH11Protocol
    if parser in ("auto", "httptools") and GUARDED_HTTPTOOLS is not None:
        base = GUARDED_HTTPTOOLS
    elif parser == "httptools":
        raise RuntimeError("httptools is not installed (pip install 'uvicorn[standard]')")
    return type(base.__name__, (base,), {"header_timeout": header_timeout, "max_head_bytes": max_head_bytes,
                                         "write_timeout": write_timeout,
                                         "write_budget": WriteBudget(write_budget)})
