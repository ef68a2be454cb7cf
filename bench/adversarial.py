"""Hostile requests against the real service, measured in one run.

    python bench/adversarial.py [--seconds 20] [--rss-requests 1000]

Starts ``rayservice-impact serve`` (2 workers) on a free port of 127.0.0.1, then:

1. **Latency under attack.** 4 clients send valid analyses (distinct bodies, no cache) for a
   fixed time, first alone, then while 4 hostile clients keep sending, in turn: an alias bomb
   just under and just over the expansion limit, a quantity ``1e200000``, a 4 MiB body of dense
   flow YAML, a 5000-digit JSON number, and a slow request head. Prints p50/p99 of the valid
   requests in both phases and the ratio (goal: p99 under attack < 3× p99 alone).
2. **Memory.** The server's resident memory (the main process, and with its worker processes)
   before and after ``--rss-requests`` alias-heavy requests (goal: main within 100 MiB).

Not a test: numbers on a shared machine are noisy; only ratios measured together mean anything.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from load import ROOT, free_port, sample_pair, start_server  # noqa: E402

HEADERS = {"content-type": "application/json"}


def rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as fh:
        return next(int(line.split()[1]) for line in fh if line.startswith("VmRSS:"))


def children(pid: int) -> list[int]:
    out: list[int] = []
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{task}/children") as fh:
                out += [int(c) for c in fh.read().split()]
        except OSError:
            pass
    return out + [g for c in out for g in children(c)]


def total_rss_kib(pid: int) -> int:
    return rss_kib(pid) + sum(rss_kib(c) for c in children(pid) if os.path.exists(f"/proc/{c}"))


def alias_bomb(n: int) -> str:
    """About n×n nodes after expansion from ~3n bytes."""
    return "a: &x [" + ",".join(["v"] * n) + "]\nb: [" + ",".join(["*x"] * n) + "]\n"


def hostile_bodies(before: str, after: str) -> list[tuple[str, bytes]]:
    huge_cpu = after.replace('cpu: "1"', 'cpu: "1e200000"')
    flow = "[" + ",a" * (2 * 1024 * 1024) + "]"
    return [
        ("alias bomb under the limit", json.dumps({"before": "", "after": alias_bomb(600)}).encode()),
        ("alias bomb over the limit", json.dumps({"before": "", "after": alias_bomb(2000)}).encode()),
        ("quantity 1e200000", json.dumps({"before": before, "after": huge_cpu}).encode()),
        ("4 MiB of flow YAML", json.dumps({"before": "", "after": flow}).encode()),
        ("5000-digit JSON number", ('{"before": "", "after": "", "x": %s}' % ("9" * 5000)).encode()),
    ]


async def valid_client(client: httpx.AsyncClient, url: str, before: str, after: str, until: float,
                       latencies: list[float], tag: str) -> None:
    n = 0
    while time.monotonic() < until:
        n += 1
        body = {"before": before, "after": after + f"\n# {tag}-{n}-{time.monotonic_ns()}\n"}
        started = time.perf_counter()
        r = await client.post(url + "/v1/analyze", json=body)
        if r.status_code == 200:
            latencies.append(time.perf_counter() - started)


async def hostile_client(client: httpx.AsyncClient, url: str, bodies: list[tuple[str, bytes]], until: float,
                         index: int, seen: dict[str, set[int]]) -> None:
    host, port = url.removeprefix("http://").split(":")
    i = index
    while time.monotonic() < until:
        i += 1
        if i % (len(bodies) + 1) == len(bodies):  # a slow request head, held until the server drops it
            reader, writer = await asyncio.open_connection(host, int(port))
            writer.write(b"POST /v1/analyze HTTP/1.1\r\nHost: x\r\n")
            try:
                while time.monotonic() < until and not reader.at_eof():
                    writer.write(b"X-Slow: 1\r\n")
                    await writer.drain()
                    await asyncio.sleep(1.0)
            except (ConnectionError, OSError):
                pass
            seen.setdefault("slow request head", set()).add(0)
            writer.close()
            continue
        name, data = bodies[i % (len(bodies) + 1)]
        try:
            r = await client.post(url + "/v1/analyze", content=data, headers=HEADERS)
            seen.setdefault(name, set()).add(r.status_code)
        except httpx.HTTPError as exc:
            seen.setdefault(name, set()).add(-1)
            del exc


def pct(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100)[q - 1] if len(values) >= 2 else float("nan")


async def phase(url: str, seconds: float, hostile: bool, before: str, after: str
                ) -> tuple[list[float], dict[str, set[int]]]:
    latencies: list[float] = []
    seen: dict[str, set[int]] = {}
    until = time.monotonic() + seconds
    limits = httpx.Limits(max_connections=16)
    async with httpx.AsyncClient(timeout=60, limits=limits) as client:
        tasks = [valid_client(client, url, before, after, until, latencies, f"v{i}") for i in range(4)]
        if hostile:
            bodies = hostile_bodies(before, after)
            tasks += [hostile_client(client, url, bodies, until, i, seen) for i in range(4)]
        await asyncio.gather(*tasks)
    return latencies, seen


async def rss_run(url: str, pid: int, requests: int) -> tuple[int, int, int, int]:
    main_before, all_before = rss_kib(pid), total_rss_kib(pid)
    body = json.dumps({"before": "", "after": alias_bomb(600)}).encode()
    async with httpx.AsyncClient(timeout=60) as client:
        sem = asyncio.Semaphore(4)

        async def one(i: int) -> None:
            async with sem:
                # distinct bodies: nothing comes from the cache
                data = body.replace(b'"after": "a:', f'"after": "# {i}\\na:'.encode(), 1)
                await client.post(url + "/v1/analyze", content=data, headers=HEADERS)

        await asyncio.gather(*(one(i) for i in range(requests)))
    return main_before, rss_kib(pid), all_before, total_rss_kib(pid)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=20.0)
    ap.add_argument("--rss-requests", type=int, default=1000)
    args = ap.parse_args()
    before, after = sample_pair("ray-service.sample.yaml")
    port = free_port()
    proc = start_server(port, workers=2)
    url = f"http://127.0.0.1:{port}"
    try:
        alone, _ = asyncio.run(phase(url, args.seconds, False, before, after))
        attacked, seen = asyncio.run(phase(url, args.seconds, True, before, after))
        rss = asyncio.run(rss_run(url, proc.pid, args.rss_requests))
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    print(f"valid requests alone:        n={len(alone):5d}  p50 {pct(alone, 50) * 1000:7.1f} ms  "
          f"p99 {pct(alone, 99) * 1000:7.1f} ms")
    print(f"valid requests under attack: n={len(attacked):5d}  p50 {pct(attacked, 50) * 1000:7.1f} ms  "
          f"p99 {pct(attacked, 99) * 1000:7.1f} ms")
    print(f"p99 ratio under attack / alone (goal < 3): {pct(attacked, 99) / pct(alone, 99):.2f}")
    for name, statuses in sorted(seen.items()):
        print(f"  hostile {name}: answered {sorted(statuses)}")
    main_b, main_a, all_b, all_a = rss
    print(f"RSS after {args.rss_requests} alias-heavy requests: main {main_b / 1024:.0f} -> "
          f"{main_a / 1024:.0f} MiB (+{(main_a - main_b) / 1024:.0f}, goal < 100); with workers "
          f"{all_b / 1024:.0f} -> {all_a / 1024:.0f} MiB")


if __name__ == "__main__":
    os.chdir(ROOT)
    main()
