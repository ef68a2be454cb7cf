"""Load test of the HTTP service: req/s and p50/p99 latency under 1 to 64 concurrent clients.

    python bench/load.py                     # wrk table: 1, 4, 16, 64 clients, 10 s per row (about 1.5 min)
    python bench/load.py --quick             # smoke run: 1 and 16 clients, 3 s per row (about 30 s)
    python bench/load.py --duration 20 --connections 1,16,128
    python bench/load.py --url http://127.0.0.1:8080     # an already running service
    python bench/load.py --httpx --clients 16 --requests 4000 [--unique]    # the Python client instead

Without ``--url`` it starts ``python -m app serve`` (2 analysis workers, log level warning) on a
free port and always stops it at the end, workers included, even when wrk fails. Before the
start nothing may answer on that port, the server must not exit while it becomes ready, the
listening socket must belong to it (checked in /proc), and it must still be alive after the
runs: a stale server left on a port once made an ad-hoc run measure the wrong process.

Every request is POST /v1/analyze with a sample pair (an image bump of ray-service.sample.yaml
by default). With ``wrk`` on PATH (and no ``--httpx``) it prints one table, a row per body mode
and number of connections (``wrk -c N``, ``min(2, N)`` threads, ``--latency``):

* **distinct**: every request differs: the Lua ``request()`` puts a run tag, the wrk thread's
  number and a per-thread counter into a YAML comment at the end of ``after``, so no answer
  comes from the service's result cache (the figure for distinct manifests);
* **cached**: one body repeated, as with webhook redeliveries or repeated Argo CD syncs of an
  unchanged app: after the first request every answer is a cache hit.

Each mode starts with a 3 s warm-up (16 connections, or the most up to 16). Columns: req/s (all
answers), 2xx/s (req/s less the non-2xx share), p50 and p99 latency from wrk's Latency
Distribution (all answers, fast 503s included), non-2xx answers (503s when admission is full),
socket errors (connect/read/write/timeout; wrk's timeout is 10 s) and the request count. The 16-connection
rows carry the targets: distinct >= 300 req/s with p99 < 50 ms, cached >= 1500 req/s.

Below the table: the CPU milliseconds per request of the server's main process and of its
analysis workers (children of the multiprocessing forkserver, itself a child of the server)
over the 16-connection distinct run, from utime + stime in /proc/<pid>/stat ("n/a" without
/proc, or with ``--url`` when the listening process cannot be found); then the in-process
``diffing.analyze`` time for the same pair and its ratio to the service's one-client p50.

The body JSON is built in Python (``json.dumps``) and embedded in generated Lua scripts (a
temporary directory) as long-bracket strings whose level does not occur in the text.

``--httpx`` (the default without wrk) is the older mode: N asyncio httpx clients send a fixed
number of requests, one body repeated or (``--unique``) all distinct, and it prints req/s,
p50/p99 and the same in-process ratio. The Python client itself costs CPU on the same machine,
so its figures are lower than wrk's.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = next(p for p in (ROOT / "samples" / "kuberay-v1.7.0", Path("/work/shared/samples/kuberay-v1.7.0"))
               if p.is_dir())
PROC = Path("/proc")
TARGET_CLIENTS = 16
TARGET_DISTINCT_RPS, TARGET_DISTINCT_P99_MS, TARGET_CACHED_RPS = 300, 50.0, 1500
WRK_TIMEOUT = "10s"


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


# --------------------------------------------------------------------------- processes in /proc

def proc_stat(pid: int) -> tuple[int, int, int] | None:
    """(ppid, utime + stime in clock ticks, start time) of a process, or None if it is gone."""
    try:
        text = (PROC / str(pid) / "stat").read_text()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2:].split()  # after "pid (comm) "; comm may hold spaces
    # fields[0] is the state (field 3 of proc(5)): ppid is 4, utime 14, stime 15, starttime 22.
    return int(fields[1]), int(fields[11]) + int(fields[12]), int(fields[19])


def descendants(root: int) -> dict[int, int]:
    """Every process below ``root`` (not root itself), mapped to its depth (1 = a child)."""
    children: dict[int, list[int]] = {}
    for entry in PROC.iterdir():
        if entry.name.isdigit() and (stat := proc_stat(int(entry.name))) is not None:
            children.setdefault(stat[0], []).append(int(entry.name))
    depth: dict[int, int] = {}
    level, current = 1, [root]
    while current:
        current = [c for pid in current for c in children.get(pid, ()) if c not in depth]
        depth.update((c, level) for c in current)
        level += 1
    return depth


@dataclass
class CpuSnapshot:
    main: int            # ticks of the server process
    workers: dict[int, int]  # ticks per analysis worker (depth >= 2: children of the forkserver)
    helpers: int         # ticks of direct children (forkserver, resource tracker)


def cpu_snapshot(server: int) -> CpuSnapshot | None:
    if not PROC.is_dir() or (own := proc_stat(server)) is None:
        return None
    workers: dict[int, int] = {}
    helpers = 0
    for pid, depth in descendants(server).items():
        if (stat := proc_stat(pid)) is None:
            continue
        if depth >= 2:
            workers[pid] = stat[1]
        else:
            helpers += stat[1]
    return CpuSnapshot(own[1], workers, helpers)


def cpu_per_request(before: CpuSnapshot | None, after: CpuSnapshot | None, requests: int) -> str:
    if before is None or after is None or requests <= 0:
        return "n/a"
    ms = 1000 / os.sysconf("SC_CLK_TCK") / requests
    main = (after.main - before.main) * ms
    workers = sum(t - before.workers.get(pid, 0) for pid, t in after.workers.items()) * ms
    helpers = (after.helpers - before.helpers) * ms
    note = ""
    if set(before.workers) != set(after.workers):
        note = (f" (the worker set changed during the run: {sorted(before.workers)} -> "
                f"{sorted(after.workers)}; the CPU of workers that exited is missing)")
    return (f"main process {main:.2f} ms, analysis workers {workers:.2f} ms "
            f"({len(after.workers)} processes), "
            f"forkserver and helpers {helpers:.2f} ms; total {main + workers + helpers:.2f} ms{note}")


def listening_pids(port: int) -> set[int] | None:
    """The processes holding a listening TCP socket on ``port`` (None without /proc)."""
    inodes: set[str] = set()
    for table in ("tcp", "tcp6"):
        try:
            lines = (PROC / "net" / table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if fields[3] == "0A" and int(fields[1].rsplit(":", 1)[1], 16) == port:  # 0A: LISTEN
                inodes.add(f"socket:[{fields[9]}]")
    if not PROC.is_dir():
        return None
    pids: set[int] = set()
    for entry in PROC.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            for fd in (entry / "fd").iterdir():
                if os.readlink(fd) in inodes:
                    pids.add(int(entry.name))
                    break
        except OSError:  # gone, or another user's process
            continue
    return pids


# --------------------------------------------------------------------------- the server

def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def port_answers(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(1)
        return s.connect_ex(("127.0.0.1", port)) == 0


class Server:
    """``python -m app serve`` on a free port, checked to be the process that answers."""

    def __init__(self, workers: int) -> None:
        self.port = free_port()
        if port_answers(self.port):
            raise SystemExit(f"something already answers on port {self.port}")
        env = {**os.environ, "RAYSERVICE_IMPACT_ANALYSIS_WORKERS": str(workers),
               "RAYSERVICE_IMPACT_LOG_LEVEL": "warning"}
        self.stderr = tempfile.TemporaryFile()  # a file, not a pipe: a full pipe would stall the server
        self.proc = subprocess.Popen([sys.executable, "-m", "app", "serve", "--port", str(self.port)],
                                     cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=self.stderr)
        self.url = f"http://127.0.0.1:{self.port}"

    @property
    def pid(self) -> int:
        return self.proc.pid

    def wait_ready(self) -> None:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            self.check_alive("while starting")
            try:
                if httpx.get(f"{self.url}/readyz", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            time.sleep(0.1)
        else:
            raise SystemExit("the server did not become ready in 30 s")
        self.check_alive("once ready")  # a ready answer from another process would not count
        self.check_owner()

    def check_alive(self, when: str) -> None:
        if self.proc.poll() is not None:
            self.stderr.seek(0)
            err = self.stderr.read().decode(errors="replace")[-2000:].strip()
            raise SystemExit(f"the server (pid {self.pid}) exited {when} with status {self.proc.returncode}"
                             f"{': ' + err if err else ''}")

    def check_owner(self) -> None:
        owners = listening_pids(self.port)
        if owners is not None and owners != {self.pid}:
            raise SystemExit(f"port {self.port} is held by {sorted(owners)}, not by the started server "
                             f"(pid {self.pid})")

    def stop(self) -> None:
        """Stop the server and whatever it started (forkserver, workers), whatever state it is in."""
        tree: dict[int, int] = {}
        if PROC.is_dir():
            for pid in descendants(self.pid):
                if (stat := proc_stat(pid)) is not None:
                    tree[pid] = stat[2]  # start time: never signal a reused pid
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        deadline = time.monotonic() + 5
        for sig in (signal.SIGTERM, signal.SIGKILL):
            left = [pid for pid, start in tree.items() if (s := proc_stat(pid)) is not None and s[2] == start]
            for pid in left:
                try:
                    os.kill(pid, sig)
                except ProcessLookupError:
                    pass
            while left and time.monotonic() < deadline:
                time.sleep(0.1)
                left = [pid for pid in left if (s := proc_stat(pid)) is not None and s[2] == tree[pid]]
            if not left:
                break
        self.stderr.close()


# --------------------------------------------------------------------------- wrk

def long_string(text: str) -> str:
    """``text`` as a Lua long-bracket string, with a level that does not occur in it."""
    level = 0
    while f"]{'=' * level}]" in text:
        level += 1
    eq = "=" * level
    return f"[{eq}[{text}]{eq}]"


def write_scripts(directory: Path, before: str, after: str) -> dict[str, Path]:
    marker = f"@@{uuid.uuid4().hex}@@"
    assert marker not in before and marker not in after
    distinct = json.dumps({"before": before, "after": f"{after}\n# load {marker}\n"})
    head, tail = distinct.split(marker)
    cached = json.dumps({"before": before, "after": after})
    scripts = {
        # setup() runs in the main Lua state, once per thread; request() in each thread's own
        # state, so the counter is per thread and the thread number keeps threads apart. The
        # run tag (wrk's argument after --) keeps the warm-up's bodies from coming back.
        "distinct": f"""\
local head = {long_string(head)}
local tail = {long_string(tail)}
local headers = {{["Content-Type"] = "application/json"}}
local threads = 0
local tag = "-"
local n = 0

function setup(thread)
  threads = threads + 1
  thread:set("thread_number", threads)
end

function init(args)
  tag = args[1] or "-"
end

function request()
  n = n + 1
  return wrk.format("POST", nil, headers, head .. tag .. " " .. thread_number .. " " .. n .. tail)
end
""",
        "cached": f"""\
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.body = {long_string(cached)}
""",
    }
    paths = {}
    for mode, text in scripts.items():
        paths[mode] = directory / f"{mode}.lua"
        paths[mode].write_text(text)
    return paths


@dataclass
class WrkResult:
    rps: float
    p50_ms: float
    p99_ms: float
    requests: int
    non_2xx: int
    socket_errors: int


_UNITS_MS = {"us": 0.001, "ms": 1.0, "s": 1000.0, "m": 60_000.0, "h": 3_600_000.0}


def to_ms(value: str) -> float:
    match = re.fullmatch(r"([\d.]+)(us|ms|s|m|h)", value)
    if match is None:
        raise ValueError(f"not a wrk duration: {value!r}")
    return float(match[1]) * _UNITS_MS[match[2]]


def parse_wrk(output: str) -> WrkResult:
    def find(pattern: str) -> re.Match[str]:
        match = re.search(pattern, output, re.MULTILINE)
        if match is None:
            raise ValueError(f"no match for {pattern!r} in wrk's output:\n{output}")
        return match

    non_2xx = re.search(r"^\s*Non-2xx or 3xx responses:\s*(\d+)", output, re.MULTILINE)
    errors = re.search(r"^\s*Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)",
                       output, re.MULTILINE)
    return WrkResult(rps=float(find(r"^Requests/sec:\s*([\d.]+)")[1]),
                     p50_ms=to_ms(find(r"^\s*50%\s+(\S+)")[1]),
                     p99_ms=to_ms(find(r"^\s*99%\s+(\S+)")[1]),
                     requests=int(find(r"^\s*(\d+) requests in")[1]),
                     non_2xx=int(non_2xx[1]) if non_2xx else 0,
                     socket_errors=sum(int(g) for g in errors.groups()) if errors else 0)


def run_wrk(url: str, script: Path, connections: int, seconds: float) -> WrkResult:
    command = ["wrk", "--latency", "-t", str(min(2, connections)), "-c", str(connections),
               "-d", f"{seconds:g}s", "--timeout", WRK_TIMEOUT, "-s", str(script),
               f"{url.rstrip('/')}/v1/analyze", "--", uuid.uuid4().hex[:12]]
    done = subprocess.run(command, capture_output=True, text=True, timeout=seconds + 60)
    if done.returncode != 0:
        raise SystemExit(f"wrk failed with status {done.returncode}: {done.stderr or done.stdout}")
    return parse_wrk(done.stdout)


def target_note(mode: str, result: WrkResult) -> str:
    if mode == "distinct":
        met = result.rps >= TARGET_DISTINCT_RPS and result.p99_ms < TARGET_DISTINCT_P99_MS
        target = f">= {TARGET_DISTINCT_RPS} req/s, p99 < {TARGET_DISTINCT_P99_MS:.0f} ms"
    else:
        met = result.rps >= TARGET_CACHED_RPS
        target = f">= {TARGET_CACHED_RPS} req/s"
    return f"target {target}: {'met' if met else 'MISSED'}"


def wrk_main(args: argparse.Namespace, url: str, server_pid: int | None, check: Server | None,
             before: str, after: str) -> tuple[list[str], float | None]:
    levels = [1, 16] if args.quick and args.connections is None else \
        [int(c) for c in (args.connections or "1,4,16,64").split(",")]
    duration = args.duration if args.duration is not None else (3.0 if args.quick else 10.0)
    warm = max([c for c in levels if c <= TARGET_CLIENTS] or [min(levels)])
    rows: list[str] = []
    cpu = "n/a (no 16-connection distinct run)"
    service_p50: float | None = None
    with tempfile.TemporaryDirectory(prefix="load-wrk-") as tmp:
        scripts = write_scripts(Path(tmp), before, after)
        for mode in ("distinct", "cached"):
            run_wrk(url, scripts[mode], warm, args.warmup)
            for connections in levels:
                measure = mode == "distinct" and connections == TARGET_CLIENTS
                start = cpu_snapshot(server_pid) if measure and server_pid is not None else None
                result = run_wrk(url, scripts[mode], connections, duration)
                if measure:
                    end = cpu_snapshot(server_pid) if server_pid is not None else None
                    cpu = cpu_per_request(start, end, result.requests)
                if mode == "distinct" and connections == 1:
                    service_p50 = result.p50_ms / 1000
                if check is not None:
                    check.check_alive(f"during the {mode} run with {connections} connections")
                note = target_note(mode, result) if connections == TARGET_CLIENTS else ""
                ok = result.rps * (result.requests - result.non_2xx) / max(result.requests, 1)
                rows.append(f"{mode:<9}{connections:>6}{result.rps:>8.0f}{ok:>8.0f}{result.p50_ms:>9.2f}"
                            f"{result.p99_ms:>9.2f}{result.non_2xx:>9}{result.socket_errors:>8}"
                            f"{result.requests:>9}  {note}".rstrip())
    head = [f"wrk: {duration:g} s per row, {args.warmup:g} s warm-up per mode ({warm} connections), "
            f"threads min(2, N); {os.cpu_count()} CPUs",
            f"{'bodies':<9}{'conns':>6}{'req/s':>8}{'2xx/s':>8}{'p50 ms':>9}{'p99 ms':>9}{'non-2xx':>9}"
            f"{'errors':>8}{'requests':>9}",
            *rows,
            f"CPU per request, {TARGET_CLIENTS} connections, distinct bodies: {cpu}"]
    return head, service_p50


# --------------------------------------------------------------------------- httpx (no wrk)

def bodies(before: str, after: str, count: int, unique: bool) -> list[bytes]:
    if not unique:
        return [json.dumps({"before": before, "after": after}).encode()] * count
    tag = uuid.uuid4().hex[:12]  # distinct from any earlier run's bodies too
    return [json.dumps({"before": before, "after": f"{after}\n# request {tag} {i}\n"}).encode()
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


def httpx_main(args: argparse.Namespace, url: str, before: str, after: str) -> tuple[list[str], float]:
    # Sequential service time (one client, distinct bodies so the cache cannot help).
    _, sequential, _ = asyncio.run(run_load(url, bodies(before, after, 200, True), 1))
    asyncio.run(run_load(url, bodies(before, after, 100, args.unique), args.clients))  # warm-up
    elapsed, latencies, statuses = asyncio.run(
        run_load(url, bodies(before, after, args.requests, args.unique), args.clients))
    p50, p99 = percentile(latencies, 0.5) * 1000, percentile(latencies, 0.99) * 1000
    return [f"httpx: {args.requests} requests, {args.clients} clients, "
            f"{'distinct bodies' if args.unique else 'one repeated body'}; statuses {statuses}",
            f"throughput {args.requests / elapsed:.0f} req/s; latency p50 {p50:.1f} ms, p99 {p99:.1f} ms"], \
        statistics.median(sequential)


# --------------------------------------------------------------------------- main

def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", help="an already running service (default: start one)")
    parser.add_argument("--sample", default="ray-service.sample.yaml")
    parser.add_argument("--workers", type=int, default=2, help="analysis workers of the started server")
    wrk = parser.add_argument_group("wrk mode (the default when wrk is on PATH)")
    wrk.add_argument("--duration", type=float, help="seconds per row (default 10; 3 with --quick)")
    wrk.add_argument("--warmup", type=float, default=3.0, help="seconds of warm-up per body mode")
    wrk.add_argument("--connections", help="comma-separated wrk -c values (default 1,4,16,64; "
                                            "1,16 with --quick)")
    wrk.add_argument("--quick", action="store_true", help="3 s per row, 1 and 16 connections")
    py = parser.add_argument_group("httpx mode (--httpx, or no wrk on PATH)")
    py.add_argument("--httpx", action="store_true", help="load from Python (httpx) instead of wrk")
    py.add_argument("--clients", type=int, default=8)
    py.add_argument("--requests", type=int, default=3000)
    py.add_argument("--unique", action="store_true", help="a distinct body per request (no cache hits)")
    args = parser.parse_args()
    use_wrk = not args.httpx and shutil.which("wrk") is not None

    before, after = sample_pair(args.sample)
    core = in_process_seconds(before, after)
    server: Server | None = None
    url, server_pid = args.url, None
    try:
        if url is None:
            server = Server(args.workers)
            server.wait_ready()
            url, server_pid = server.url, server.pid
        else:
            port = httpx.URL(url).port or 80
            if httpx.URL(url).host in ("127.0.0.1", "localhost") and (owners := listening_pids(port)):
                server_pid = next(iter(owners)) if len(owners) == 1 else None
        where = f"started server, pid {server_pid}" if server else \
            f"given server{f', pid {server_pid}' if server_pid else ''}"
        lines = [f"sample {args.sample} ({len(before)} + {len(after)} bytes); {url} ({where})"]
        if use_wrk:
            out, service = wrk_main(args, url, server_pid, server, before, after)
        else:
            out, service = httpx_main(args, url, before, after)
        if server is not None:
            server.check_alive("after the runs")
            server.check_owner()
    finally:
        if server is not None:
            server.stop()
    print("\n".join(lines + out))
    service_text = f"{service * 1000:.2f} ms; ratio {service / core:.2f}" if service else "n/a"
    print(f"in-process diffing.analyze {core * 1000:.2f} ms; service, one client, p50 {service_text}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
