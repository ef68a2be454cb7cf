"""Load test of the HTTP service: N concurrent clients, a fixed number of requests.

    python bench/load.py                        # starts `rayservice-impact serve` on a free port
    python bench/load.py --url http://127.0.0.1:8080 --clients 16 --requests 4000

Sends POST /v1/analyze with a sample pair (an image bump of ray-service.sample.yaml by
default) and prints req/s, p50/p99 latency, and the ratio of the service's time per request
(sequential, one client) to the in-process ``diffing.analyze`` time for the same pair.

``--unique`` makes every request body different (a comment appended), so no answer comes
from the service's result cache: the figure for distinct manifests. Without it the same body
repeats, as with webhook redeliveries or repeated Argo CD syncs of an unchanged app.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = next(p for p in (ROOT / "samples" / "kuberay-v1.7.0", Path("/work/shared/samples/kuberay-v1.7.0"))
               if p.is_dir())


def sample_pair(name: str) -> tuple[str, str]:
    before = (SAMPLES / name).read_text()
    return before, before.replace("rayproject/ray:2.52.0", "rayproject/ray:2.53.0")


def in_process_seconds(before: str, after: str, repeat: int = 200) -> float:
    import diffing

    diffing.analyze(before, after)  # warm the rule tables
    started = time.perf_counter()
    for _ in range(repeat):
        diffing.analyze(before, after)
    return (time.perf_counter() - started) / repeat


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_server(port: int, workers: int) -> subprocess.Popen[bytes]:
    env = {**os.environ, "RAYSERVICE_IMPACT_ANALYSIS_WORKERS": str(workers),
           "RAYSERVICE_IMPACT_LOG_LEVEL": "warning"}
    proc = subprocess.Popen([sys.executable, "-m", "app", "serve", "--port", str(port)], cwd=ROOT, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=1).status_code == 200:
                return proc
        except httpx.TransportError:
            pass
        time.sleep(0.1)
    proc.kill()
    raise SystemExit("the server did not become ready")


def bodies(before: str, after: str, count: int, unique: bool) -> list[bytes]:
    if not unique:
        return [json.dumps({"before": before, "after": after}).encode()] * count
    return [json.dumps({"before": before, "after": f"{after}\n# request {i}\n"}).encode()
            for i in range(count)]


async def run_load(url: str, payloads: list[bytes],
                   clients: int) -> tuple[float, list[float], dict[int, int]]:
    queue: asyncio.Queue[bytes] = asyncio.Queue()
    for p in payloads:
        queue.put_nowait(p)
    latencies: list[float] = []
    statuses: dict[int, int] = {}
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)

    async with httpx.AsyncClient(base_url=url, limits=limits, timeout=60,
                                 headers={"content-type": "application/json"}) as client:
        async def worker() -> None:
            while not queue.empty():
                body = queue.get_nowait()
                started = time.perf_counter()
                response = await client.post("/v1/analyze", content=body)
                latencies.append(time.perf_counter() - started)
                statuses[response.status_code] = statuses.get(response.status_code, 0) + 1

        started = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(clients)))
        elapsed = time.perf_counter() - started
    return elapsed, latencies, statuses


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", help="an already running service (default: start one)")
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--requests", type=int, default=3000)
    parser.add_argument("--sample", default="ray-service.sample.yaml")
    parser.add_argument("--workers", type=int, default=2, help="analysis workers of the started server")
    parser.add_argument("--unique", action="store_true", help="a distinct body per request (no cache hits)")
    args = parser.parse_args()

    before, after = sample_pair(args.sample)
    core = in_process_seconds(before, after)
    proc = None
    url = args.url
    if url is None:
        port = free_port()
        proc = start_server(port, args.workers)
        url = f"http://127.0.0.1:{port}"
    try:
        # Sequential service time (one client, distinct bodies so the cache cannot help).
        _, sequential, _ = asyncio.run(run_load(url, bodies(before, after, 200, True), 1))
        asyncio.run(run_load(url, bodies(before, after, 100, args.unique), args.clients))  # warm-up
        elapsed, latencies, statuses = asyncio.run(
            run_load(url, bodies(before, after, args.requests, args.unique), args.clients))
    finally:
        if proc is not None:
            proc.terminate()
            proc.wait(10)
    service = statistics.median(sequential)
    print(f"sample {args.sample}; {args.requests} requests, {args.clients} clients, "
          f"{'distinct bodies' if args.unique else 'one repeated body'}; statuses {statuses}")
    p50, p99 = percentile(latencies, 0.5) * 1000, percentile(latencies, 0.99) * 1000
    print(f"throughput {args.requests / elapsed:.0f} req/s; latency p50 {p50:.1f} ms, p99 {p99:.1f} ms")
    print(f"in-process diffing.analyze {core * 1000:.2f} ms; service, one client, "
          f"p50 {service * 1000:.2f} ms; ratio {service / core:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
