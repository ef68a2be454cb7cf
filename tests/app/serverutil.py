"""Start a real uvicorn server on 127.0.0.1 in a background thread, for integration tests.

>>> with running_server(create_app(load_settings())) as base_url:   # doctest: +SKIP
...     httpx.get(base_url + "/healthz")

The socket is bound before the server starts (port 0: the kernel picks a free port), so
there is no race for the port. Reusable by every test module that needs a live service.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import uvicorn


@contextlib.contextmanager
def running_server(app: Any, *, ready_path: str | None = "/readyz", timeout: float = 30.0,
                   http: Any = "auto") -> Iterator[str]:
    """Serve ``app`` until the block ends; yields ``http://127.0.0.1:PORT``.

    With ``ready_path`` it waits until that path answers 200 (e.g. the analysis pool warmed up).
    ``http`` is uvicorn's protocol (the service's own: ``app.httpserver.protocol_with``).
    """
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(app, log_config=None, access_log=False, lifespan="on",
                            timeout_graceful_shutdown=2, http=http)
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True,
                              name=f"uvicorn-{port}")
    thread.start()
    base_url = f"http://127.0.0.1:{port}"
    try:
        wait_until_up(base_url, server, ready_path, timeout)
        yield base_url
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()


def wait_until_up(base_url: str, server: uvicorn.Server, ready_path: str | None, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not server.started:
        if time.monotonic() > deadline:
            raise RuntimeError(f"uvicorn did not start on {base_url}")
        time.sleep(0.01)
    if ready_path is None:
        return
    with httpx.Client(base_url=base_url, timeout=5) as client:
        while client.get(ready_path).status_code != 200:
            if time.monotonic() > deadline:
                raise RuntimeError(f"{base_url}{ready_path} did not turn ready")
            time.sleep(0.02)
