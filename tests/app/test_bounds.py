"""Issue "Green means safe", HTTP and jobs: what brought the service down, reproduced on real
sockets against real uvicorn servers on 127.0.0.1, and now bounded.

* A request head had no size limit with httptools: one client streaming a header value kept the
  event loop copying it (``/healthz`` stalled 1.2 s in 4 s; four clients: valid p99 x187). Now a
  head over 64 KiB is answered 431, with either parser.
* A client that never read a large answer kept it in memory past every timeout (96 of them:
  +1.15 GB). Now a write paused longer than the write timeout drops the connection and its
  buffer, and all paused answers of a server stay within a byte budget.
* A GitHub job had no overall deadline: one that ran on left its commit status pending. Now it
  ends with an error status saying so.
"""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from serverutil import running_server

from app.httpserver import MAX_HEAD_BYTES, protocol_with
from app.server import create_app
from app.settings import load_settings

ROOT = Path(__file__).resolve().parents[2]
PARSERS = ["httptools", "h11"]
ANSWER = 8 * 1024 * 1024
JSON = {"content-type": "application/json"}


def connect(url: str, *, rcvbuf: int | None = None) -> socket.socket:
    host, port = url.removeprefix("http://").split(":")
    sock = socket.socket()
    if rcvbuf:  # a small window: the answer waits in the server's buffer, not in ours
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    sock.settimeout(10)
    sock.connect((host, int(port)))
    return sock


def read_all(sock: socket.socket, limit: int = 1 << 30) -> bytes:
    data = bytearray()
    try:
        while len(data) < limit and (chunk := sock.recv(1 << 20)):
            data += chunk
    except OSError:  # reset: what arrived before it is what counts
        pass
    sock.close()
    return bytes(data)


async def big_answer(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """An ASGI app answering every request with ANSWER bytes (the service's largest are 16 MB)."""
    if scope["type"] != "http":
        return
    await send({"type": "http.response.start", "status": 200,
                "headers": [(b"content-length", str(ANSWER).encode())]})
    await send({"type": "http.response.body", "body": b"x" * ANSWER})


@pytest.fixture(scope="module")
def service() -> Iterator[str]:
    app = create_app(load_settings(analysis_workers=1, analysis_queue=4, live_basis="off", policy_file=None))
    with running_server(app, http=protocol_with(10.0)) as url:
        yield url


# -- the request head --------------------------------------------------------------------------------

@pytest.mark.parametrize("parser", PARSERS)
def test_a_head_over_64_kib_is_431_and_one_under_it_is_served(parser: str) -> None:
    app = create_app(load_settings(analysis_workers=1, analysis_queue=2, live_basis="off", policy_file=None))
    with running_server(app, http=protocol_with(10.0, parser=parser)) as url:
        filler = MAX_HEAD_BYTES - 200  # with the request line and Host: just under the limit
        with connect(url) as sock:
            sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * filler + b"\r\n\r\n")
            assert read_all(sock, 12).startswith(b"HTTP/1.1 200")
        sock = connect(url)
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * (MAX_HEAD_BYTES + 10)
                     + b"\r\n\r\n")
        answer = read_all(sock)
        assert answer.startswith(b"HTTP/1.1 431 ") and b'"code":"header-too-large"' in answer
        assert b"connection: close" in answer.lower()
        # A body of any size after a small head is the body's business, not the head's.
        body = b'{"before": "", "after": "# ' + b"p" * (2 * MAX_HEAD_BYTES) + b'"}'
        answer_ok = httpx.post(url + "/v1/analyze", content=body, headers=JSON, timeout=30)
        assert answer_ok.status_code == 200


@pytest.mark.parametrize("parser", PARSERS)
def test_clients_streaming_a_header_do_not_stall_other_requests(parser: str) -> None:
    """Four clients stream one endless header value as fast as they can; /healthz stays prompt and
    each of them is cut off after about the limit (was: 40 MB taken per client, /healthz > 1 s)."""
    app = create_app(load_settings(analysis_workers=1, analysis_queue=2, live_basis="off", policy_file=None))
    with running_server(app, http=protocol_with(10.0, parser=parser)) as url:
        stop = time.monotonic() + 3.0
        taken: list[int] = []

        def attacker() -> None:
            while time.monotonic() < stop:  # a new connection each time one is cut off
                sock = connect(url)
                sent = 0
                try:
                    sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ")
                    while time.monotonic() < stop:
                        sock.sendall(b"a" * 16384)
                        sent += 16384
                except OSError:
                    pass
                taken.append(sent)
                sock.close()

        threads = [threading.Thread(target=attacker) for _ in range(4)]
        for t in threads:
            t.start()
        worst = 0.0
        with httpx.Client(base_url=url, timeout=30) as client:
            while time.monotonic() < stop:
                started = time.perf_counter()
                assert client.get("/healthz").status_code == 200
                worst = max(worst, time.perf_counter() - started)
                time.sleep(0.02)
        for t in threads:
            t.join()
        # Bytes the server accepted before refusing: the head limit, the 1 MiB read after the 431 and
        # what the kernel buffers hold; never tens of MB.
        assert taken and max(taken) < 16 * 1024 * 1024
        assert worst < 1.0, f"/healthz took {worst:.2f} s while heads streamed in"


# -- unread answers ----------------------------------------------------------------------------------

def request_unread(url: str, path: str = "/") -> socket.socket:
    sock = connect(url, rcvbuf=4096)
    sock.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
    return sock


def wait_until(predicate: Any, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


@pytest.mark.parametrize("parser", PARSERS)
def test_an_answer_left_unread_is_dropped_at_the_write_deadline(parser: str) -> None:
    protocol = protocol_with(10.0, parser=parser, write_timeout=1.0)
    with running_server(big_answer, ready_path=None, http=protocol) as url:
        reader = request_unread(url)
        assert len(read_all(reader)) > ANSWER  # read at once: all of it (head and body)
        idle = request_unread(url)
        wait_until(lambda: protocol.write_budget.total > 0)  # the server holds the rest of the answer
        time.sleep(2.0)
        assert protocol.write_budget.total == 0 and not protocol.write_budget.held
        got = len(read_all(idle))
        assert got < ANSWER  # the connection was dropped with what the kernel had already taken


def test_unread_answers_stay_within_the_write_budget() -> None:
    """A budget one answer wide: each answer left unread makes the server drop the one paused before
    it, so the server never holds more than one, and the last is still served whole."""
    protocol = protocol_with(10.0, write_timeout=60.0, write_budget=ANSWER)
    budget = protocol.write_budget
    with running_server(big_answer, ready_path=None, http=protocol) as url:
        clients, previous = [], None
        for _ in range(4):
            clients.append(request_unread(url))
            wait_until(lambda old=previous: bool(budget.held) and next(iter(budget.held)) is not old)
            assert len(budget.held) == 1 and 0 < budget.total <= ANSWER
            previous = next(iter(budget.held))
        got = [len(read_all(c)) for c in clients]
        assert all(n < ANSWER for n in got[:3]) and got[3] > ANSWER


def test_the_service_drops_a_large_report_nobody_reads() -> None:
    """The service itself, with an analysis whose report is 8.8 MB (from a 0.5 MB request)."""
    import json
    import sys

    sys.path.insert(0, str(ROOT / "bench"))
    from adversarial import large_report_body

    body = large_report_body(groups=20, envs=200, name_chars=2000)
    protocol = protocol_with(10.0, write_timeout=1.0)
    app = create_app(load_settings(analysis_workers=1, analysis_queue=2, live_basis="off", policy_file=None,
                                   analysis_timeout_seconds=30, analysis_cache_entries=0))
    with running_server(app, http=protocol) as url:
        whole = httpx.post(url + "/v1/analyze", content=body, timeout=60, headers=JSON)
        assert whole.status_code == 200 and len(whole.content) > 8_000_000
        assert json.loads(whole.content)["decision"] == "approve"
        sock = connect(url, rcvbuf=4096)
        sock.sendall(b"POST /v1/analyze HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                     b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
        wait_until(lambda: protocol.write_budget.total > 0, timeout=60)  # the answer waits for the client
        wait_until(lambda: protocol.write_budget.total == 0, timeout=5)  # ... and is dropped 1 s later
        assert len(read_all(sock)) < len(whole.content)


# -- the GitHub job deadline -------------------------------------------------------------------------

def test_a_github_job_over_its_deadline_ends_with_an_error_status(monkeypatch: pytest.MonkeyPatch) -> None:
    from github_helpers import HEAD_SHA, add_sample_pull, github_service, payload, post_event, wait_for

    import app.github.flow as flow
    import app.workers as workers

    async def stuck(*args: Any, **kwargs: Any) -> Any:
        await asyncio.sleep(3600)

    monkeypatch.setattr(workers, "JOB_DEADLINE_SECONDS", 1.0)
    monkeypatch.setattr(flow, "analyse", stuck)
    with github_service(render="none") as (url, standin):
        add_sample_pull(standin)
        started = time.monotonic()
        event = payload("pull_request.opened.repo-webhook.json")
        assert post_event(url, "pull_request", event).status_code == 202
        status = wait_for(lambda: [s for s in standin.statuses if s["sha"] == HEAD_SHA], timeout=30,
                          what="a commit status")[-1]
        assert status["state"] == "error" and "analysis timed out after 1 s" in status["description"]
        assert time.monotonic() - started < 10
        [comment] = [c for comments in standin.comments.values() for c in comments]
        assert "analysis timed out after 1 s" in comment["body"]


def test_the_deadline_is_not_confused_with_a_timeout_inside_the_job() -> None:
    from app.workers import with_deadline

    async def fast(pr: Any, is_current: Any) -> str:
        return "done"

    async def raises(pr: Any, is_current: Any) -> str:
        raise TimeoutError("the job's own")

    async def timed_out(pr: Any, is_current: Any) -> str:
        return "timed out"

    async def main() -> None:
        assert await with_deadline(fast, 1.0, timed_out)(None, lambda: True) == "done"
        with pytest.raises(TimeoutError, match="the job's own"):
            await with_deadline(raises, 1.0, timed_out)(None, lambda: True)

        async def slow(pr: Any, is_current: Any) -> str:
            await asyncio.sleep(10)
            return "late"

        assert await with_deadline(slow, 0.1, timed_out)(None, lambda: True) == "timed out"

    asyncio.run(main())


# -- heavy analyses never take the last worker ------------------------------------------------------

def test_heavy_jobs_leave_a_worker_to_small_requests() -> None:
    """Two 14 MB reports held both workers of a 2-worker service, and small requests waited behind
    them (valid p99 x38 in bench/adversarial.py); heavy jobs now share workers - 1 slots."""
    from app.errors import ServiceUnavailable
    from app.workers import HEAVY_INPUT_BYTES, AnalysisPool, input_bytes

    async def main() -> None:
        pool = AnalysisPool(2, 8, "thread")
        await pool.start()
        try:
            heavy = [asyncio.create_task(pool.call(time.sleep, 1.0, timeout=5)) for _ in range(2)]
            await asyncio.sleep(0.1)
            started = time.monotonic()
            await pool.call(time.sleep, 0.01, timeout=5, heavy=False)
            light = time.monotonic() - started
            await asyncio.gather(*heavy)
            assert light < 0.5 and time.monotonic() - started > 1.5  # the second heavy job waited
            # A heavy job that cannot get a slot within its budget is refused, and no worker is killed.
            first = asyncio.create_task(pool.call(time.sleep, 1.0, timeout=5))
            await asyncio.sleep(0.1)
            with pytest.raises(ServiceUnavailable) as refused:
                await pool.call(time.sleep, 0.01, timeout=0.2)
            assert refused.value.code == "overloaded" and pool.recycled == 0
            await first
            assert pool.in_flight == 0
        finally:
            pool.close()

    asyncio.run(main())
    assert input_bytes({"before": "a" * HEAVY_INPUT_BYTES, "after": "b"}) > HEAVY_INPUT_BYTES
