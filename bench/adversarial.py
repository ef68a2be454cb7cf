"""Hostile requests against the real service, measured in one run.

    python bench/adversarial.py [--seconds 20] [--unread 96] [--rss-requests 300] [--no-webhook]

Starts ``python -m app serve`` (2 analysis workers, :class:`load.Server`) on a free port of
127.0.0.1, with its GitHub webhook wired to a GitHub stand-in (``tests/app/github_standin.py``,
real git repositories), then:

1. **Latency under attack.** 4 clients send valid analyses (distinct bodies, no cache) for a fixed
   time: beside each hostile family in turn, then beside all of them at once, with a run alone
   before and after each (a family's p99 is set against those two, so that the drift of a shared
   machine does not pass for the family's effect):

   * API bodies (2 clients, in turn): an alias bomb just under and just over the expansion limit,
     an Argo CD Application that is an alias bomb, a quantity ``1e200000``, a 4 MiB body of flow
     YAML, a 5000-digit JSON number;
   * slow header streaming (2 clients): one header value that never ends, 16 KiB every 5 ms, a new
     connection each time the server cuts one off;
   * unread large answers (2 clients): an analysis whose report is 14 MB (from a 1.3 MB body),
     left unread for 5 s, then read to see whether it was dropped;
   * webhook pull requests (one at a time, each waiting for its commit status): a Helm values
     bomb (an Application's ``valueFiles``), an Application alias bomb, a folder 300 levels deep,
     100 001 files.

   The hostile clients and the stand-in run in processes of their own, so that their work does not
   stall the measured clients. Prints p50/p99 of the valid requests per phase and the ratio to
   the p99 alone around it (goal < 3), and what each hostile family got.
2. **Memory.** The server's resident memory, the main process alone and with its children (the
   analysis workers and renderers): before and after the phases; while ``--unread`` clients (the
   issue's 96, in waves that fit the admission queue) each hold a 14 MB report unread (peak);
   and after ``--rss-requests`` alias-heavy requests. Goal: the main process grows < 200 MiB.

Not a test: numbers on a shared machine are noisy; only ratios measured together mean anything.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import hmac
import json
import multiprocessing
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from load import ROOT, Server, sample_pair  # noqa: E402

# the GitHub stand-in and the GitOps repository builder of the tests
sys.path[1:1] = [str(ROOT / "tests" / "app"), str(ROOT / "tests" / "render")]

HEADERS = {"content-type": "application/json"}
SECRET, TOKEN = "bench webhook secret", "ghp_benchstandintoken0123456789abcdefAB"
REPO_URL = "https://github.com/example-org/ray-gitops.git"  # tests/render/gitops.py's: its Applications'


# -- memory -----------------------------------------------------------------------------------------

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
    total = rss_kib(pid)
    for child in children(pid):
        with contextlib.suppress(OSError, StopIteration):
            total += rss_kib(child)
    return total


class Sampler:
    """The peak RSS of the server (main, and with children) while a block runs."""

    def __init__(self, pid: int) -> None:
        self.pid, self.main, self.all = pid, 0, 0

    async def run(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            self.main = max(self.main, rss_kib(self.pid))
            self.all = max(self.all, total_rss_kib(self.pid))
            await asyncio.sleep(0.05)


# -- bodies -----------------------------------------------------------------------------------------

def alias_bomb(n: int) -> str:
    """About n×n nodes after expansion from ~3n bytes."""
    return "a: &x [" + ",".join(["v"] * n) + "]\nb: [" + ",".join(["*x"] * n) + "]\n"


def nested_alias_bomb(indent: str = "") -> str:
    """9 strings nested 8 levels deep 9 times over: 387 M strings once expanded, from 582 bytes."""
    lines = [f"{indent}a: &a [" + ",".join(['"' + "x" * 30 + '"'] * 9) + "]"]
    for prev, name in zip("abcdefg", "bcdefgh", strict=True):
        lines.append(f"{indent}{name}: &{name} [" + ",".join([f"*{prev}"] * 9) + "]")
    lines.append(f"{indent}i: [" + ",".join(["*h"] * 9) + "]")
    return "\n".join(lines) + "\n"


def application_bomb(repo_url: str) -> str:
    """An Argo CD Application whose inline Helm values are a nested alias bomb."""
    return ("apiVersion: argoproj.io/v1alpha1\nkind: Application\n"
            "metadata: {name: bomb, namespace: argocd}\nspec:\n  project: default\n"
            "  destination: {server: https://kubernetes.default.svc, namespace: x}\n"
            f"  source:\n    repoURL: {repo_url}\n    targetRevision: main\n    path: overlays/prod\n"
            "    helm:\n      valuesObject:\n" + nested_alias_bomb("        "))


def large_report_body(groups: int = 40, envs: int = 300, name_chars: int = 1000) -> bytes:
    """A RayService pair whose report is large: ``groups`` worker groups with long names, each with
    ``envs`` changed variables; every change's path repeats the group's name. 40 × 300 makes a
    14 MB report from a 1.3 MB body; 20 × 200 with 2000-character names an 8.8 MB one from 0.5 MB."""
    before, _ = sample_pair("ray-service.sample.yaml")

    def side(value: str) -> str:
        doc = yaml.safe_load(before)
        template = doc["spec"]["rayClusterConfig"]["workerGroupSpecs"][0]
        grown = []
        for i in range(groups):
            group = json.loads(json.dumps(template))
            group["groupName"] = f"g{i}-" + "x" * name_chars
            group["template"]["spec"]["containers"][0]["env"] = [{"name": f"E{j}", "value": value}
                                                                 for j in range(envs)]
            grown.append(group)
        doc["spec"]["rayClusterConfig"]["workerGroupSpecs"] = grown
        return yaml.safe_dump(doc, width=1 << 30)

    return json.dumps({"before": side("a"), "after": side("b")}).encode()


def hostile_bodies(before: str, after: str) -> list[tuple[str, bytes]]:
    huge_cpu = after.replace('cpu: "1"', 'cpu: "1e200000"')
    flow = "[" + ",a" * (2 * 1024 * 1024) + "]"
    app_bomb = application_bomb("https://github.com/bench/app.git")
    return [
        ("alias bomb under the limit", json.dumps({"before": "", "after": alias_bomb(600)}).encode()),
        ("alias bomb over the limit", json.dumps({"before": "", "after": alias_bomb(2000)}).encode()),
        ("Application alias bomb (API)", json.dumps({"before": "", "after": app_bomb}).encode()),
        ("quantity 1e200000", json.dumps({"before": before, "after": huge_cpu}).encode()),
        ("4 MiB of flow YAML", json.dumps({"before": "", "after": flow}).encode()),
        ("5000-digit JSON number", ('{"before": "", "after": "", "x": %s}' % ("9" * 5000)).encode()),
    ]


# -- clients ----------------------------------------------------------------------------------------

async def valid_client(client: httpx.AsyncClient, url: str, before: str, after: str, until: float,
                       latencies: list[float], tag: str, others: dict[int, int]) -> None:
    n = 0
    while time.monotonic() < until:
        n += 1
        body = {"before": before, "after": after + f"\n# {tag}-{n}-{time.monotonic_ns()}\n"}
        started = time.perf_counter()
        r = await client.post(url + "/v1/analyze", json=body)
        if r.status_code == 200:
            latencies.append(time.perf_counter() - started)
        else:
            others[r.status_code] = others.get(r.status_code, 0) + 1


async def api_client(client: httpx.AsyncClient, url: str, bodies: list[tuple[str, bytes]], until: float,
                     index: int, seen: dict[str, set[Any]]) -> None:
    i = index
    while time.monotonic() < until:
        i += 1
        name, data = bodies[i % len(bodies)]
        try:
            r = await client.post(url + "/v1/analyze", content=data, headers=HEADERS)
            seen.setdefault(name, set()).add(r.status_code)
        except httpx.HTTPError:
            seen.setdefault(name, set()).add("error")


def host_port(url: str) -> tuple[str, int]:
    host, port = url.removeprefix("http://").split(":")
    return host, int(port)


async def header_streamer(url: str, until: float, seen: dict[str, set[Any]]) -> None:
    """One header value streamed in for as long as the server takes it; again when it is cut off."""
    most = "slow header streaming: most KiB sent on one connection"
    while time.monotonic() < until:
        reader, writer = await asyncio.open_connection(*host_port(url))
        sent = 0
        try:
            writer.write(b"POST /v1/analyze HTTP/1.1\r\nHost: x\r\nX-Slow: ")
            while time.monotonic() < until and not reader.at_eof():
                writer.write(b"a" * 16384)
                await writer.drain()
                sent += 16384
                await asyncio.sleep(0.005)
            answer = await asyncio.wait_for(reader.read(64), 2)
            seen.setdefault("slow header streaming", set()).add(answer[9:12].decode() or "closed")
        except (ConnectionError, OSError, TimeoutError):
            seen.setdefault("slow header streaming", set()).add("cut off")
        finally:
            seen[most] = {max([sent // 1024, *seen.get(most, ())])}
            writer.close()


async def unread_request(url: str, body: bytes) -> socket.socket:
    """A connection that asked for ``body``'s analysis, with a small receive window."""
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.setblocking(False)
    loop = asyncio.get_running_loop()
    await loop.sock_connect(sock, host_port(url))
    head = (b"POST /v1/analyze HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Content-Length: %d\r\n\r\n")
    await loop.sock_sendall(sock, head % len(body) + body)
    return sock


async def read_rest(sock: socket.socket, limit: float = 30.0) -> bytes:
    loop = asyncio.get_running_loop()
    data = bytearray()
    try:
        async with asyncio.timeout(limit):
            while chunk := await loop.sock_recv(sock, 1 << 20):
                data += chunk
                if data.startswith(b"HTTP/1.1 200") and len(data) > 14_000_000:
                    break
    except (OSError, TimeoutError):
        pass
    sock.close()
    return bytes(data)


async def unread_client(url: str, body: bytes, until: float, seen: dict[str, set[Any]]) -> None:
    while time.monotonic() < until:
        sock = await unread_request(url, body)
        await asyncio.sleep(5.0)
        data = await read_rest(sock)
        status = data[9:12].decode() or "closed"
        if status == "200":
            status = "200 read in full" if len(data) > 14_000_000 else "200 dropped unread"
        seen.setdefault("unread 14 MB answers", set()).add(status)


# -- the GitHub webhook ------------------------------------------------------------------------------

class Webhook:
    """A GitHub stand-in holding four hostile repositories, and deliveries of their pull requests."""

    FAMILIES = ("Helm values bomb", "Application alias bomb", "folder 300 levels deep", "100 001 files")

    def __init__(self, tmp: Path) -> None:
        from github_standin import GitHubStandIn

        self.standin = GitHubStandIn(token=TOKEN)
        self.repos: dict[str, tuple[Path, str, str]] = {}
        self.number = 0
        builders = (self._helm_bomb, self._application_bomb, self._deep_tree, self._many_files)
        for family, build in zip(self.FAMILIES, builders, strict=True):
            slug = family.lower().replace(" ", "-")
            self.repos[family] = build(tmp / slug)

    @staticmethod
    def _repo(path: Path) -> tuple[Path, str]:
        from gitops import commit, make_repo, write

        path.mkdir()
        repo = make_repo(path, with_apps=True)
        write(repo, "charts/demo/Chart.yaml", "apiVersion: v2\nname: demo\nversion: 0.1.0\n")
        write(repo, "charts/demo/templates/cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n"
                                                     "data:\n  i: {{ .Values.i | toJson | quote }}\n")
        write(repo, "envs/demo/values.yaml", "i: [1]\n")
        write(repo, "apps/demo.yaml", yaml.safe_dump({
            "apiVersion": "argoproj.io/v1alpha1", "kind": "Application", "metadata": {"name": "demo"},
            "spec": {"project": "default", "destination": {"namespace": "demo"},
                     "source": {"repoURL": REPO_URL, "path": "charts/demo",
                                "helm": {"valueFiles": ["../../envs/demo/values.yaml"]}}}}))
        return repo, commit(repo, "base")

    def _helm_bomb(self, path: Path) -> tuple[Path, str, str]:
        from gitops import commit, write

        repo, base = self._repo(path)
        write(repo, "envs/demo/values.yaml", nested_alias_bomb())
        return repo, base, commit(repo, "a values bomb")

    def _application_bomb(self, path: Path) -> tuple[Path, str, str]:
        from gitops import commit, write

        repo, base = self._repo(path)
        write(repo, "apps/bomb.yaml", application_bomb(REPO_URL))
        return repo, base, commit(repo, "an Application alias bomb")

    def _deep_tree(self, path: Path) -> tuple[Path, str, str]:
        from gitops import commit

        repo, base = self._repo(path)
        folder = repo / "overlays" / "prod"
        with contextlib.chdir(folder):
            for _ in range(300):
                os.mkdir("d")
                os.chdir("d")
            Path("x.yaml").write_text("a: 1\n")
        return repo, base, commit(repo, "a folder 300 levels deep")

    def _many_files(self, path: Path) -> tuple[Path, str, str]:
        """100 001 files in one folder, made with git's plumbing (one blob, one tree) in a second."""
        from gitops import git

        repo, base = self._repo(path)
        blob = subprocess.run(["git", "-C", str(repo), "hash-object", "-w", "--stdin"], input=b"a: 1\n",
                              capture_output=True, check=True).stdout.decode().strip()
        listing = "".join(f"100644 blob {blob}\tf{i:06d}.yaml\n" for i in range(100_001))
        many = subprocess.run(["git", "-C", str(repo), "mktree"], input=listing.encode(), capture_output=True,
                              check=True).stdout.decode().strip()
        top = git(repo, "ls-tree", base) + f"\n040000 tree {many}\tmany\n"
        tree = subprocess.run(["git", "-C", str(repo), "mktree"], input=top.encode(), capture_output=True,
                              check=True).stdout.decode().strip()
        head = git(repo, "commit-tree", tree, "-p", base, "-m", "100 001 files")
        git(repo, "update-ref", "refs/heads/main", head)
        return repo, base, head

    def event(self, family: str) -> tuple[bytes, dict[str, str], str]:
        """A fresh pull request of ``family``'s repository: (body, headers, head SHA)."""
        from github_helpers import payload

        repo, base, head = self.repos[family]
        name = family.lower().replace(" ", "-")
        self.number += 1
        self.standin.add_git_pull("bench", name, self.number, base, head, repo)
        data = payload("pull_request.opened.repo-webhook.json", base=base, head=head, number=self.number)
        data["repository"].update(name=name, full_name=f"bench/{name}",
                                  clone_url=REPO_URL)
        data["repository"]["owner"]["login"] = "bench"
        body = json.dumps(data).encode()
        signature = "sha256=" + hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()
        headers = {"content-type": "application/json", "x-github-event": "pull_request",
                   "x-github-delivery": f"bench-{self.number}", "x-hub-signature-256": signature}
        return body, headers, head

    async def deliver(self, url: str, seconds: float) -> dict[str, set[Any]]:
        """Pull requests of each family in turn for ``seconds``, one at a time: each waits for
        its commit status (up to 120 s). What each family got."""
        seen: dict[str, set[Any]] = {}
        until = time.monotonic() + seconds
        i = 0
        async with httpx.AsyncClient(timeout=60) as client:
            while time.monotonic() < until:
                family = self.FAMILIES[i % len(self.FAMILIES)]
                i += 1
                body, headers, head = await asyncio.to_thread(self.event, family)
                done = len([s for s in self.standin.statuses if s["sha"] == head])
                r = await client.post(url + "/webhooks/github", content=body, headers=headers)
                if r.status_code != 202:
                    seen.setdefault(f"webhook {family}", set()).add(f"HTTP {r.status_code}")
                    continue
                deadline = time.monotonic() + 120
                while time.monotonic() < deadline:
                    statuses = [s for s in self.standin.statuses if s["sha"] == head]
                    if len(statuses) > done:
                        last = statuses[-1]
                        seen.setdefault(f"webhook {family}", set()).add(
                            f"{last['state']}: {(last.get('description') or '')[:90]}")
                        break
                    await asyncio.sleep(0.1)
        return seen


def _webhook_main(conn: Any, tmp: str) -> None:
    """The stand-in's process: build the repositories, serve, deliver when told, until told to stop."""
    from serverutil import running_server

    webhook = Webhook(Path(tmp))
    with running_server(webhook.standin.app, ready_path=None) as url:
        conn.send(url)
        while (command := conn.recv()) is not None:
            conn.send(asyncio.run(webhook.deliver(*command)))


def _attacker_main(conn: Any, url: str) -> None:
    """The hostile HTTP clients' process: build the bodies, attack when told, until told to stop."""
    before, after = sample_pair("ray-service.sample.yaml")
    bodies, large = hostile_bodies(before, after), large_report_body()
    conn.send("ready")
    while (command := conn.recv()) is not None:
        conn.send(asyncio.run(attack(url, *command, bodies=bodies, large=large)))


class Remote:
    """A function of this module in a process of its own, driven through a pipe: the hostile
    clients' work (a 14 MB answer read through a 4 KiB window, git subprocesses, building bodies)
    must not share this process, its GIL or its event loop with the valid clients measured."""

    def __init__(self, target: Any, *args: Any) -> None:
        context = multiprocessing.get_context("spawn")
        self.conn, child = context.Pipe()
        self.proc = context.Process(target=target, args=(child, *args), daemon=True)
        self.proc.start()
        child.close()  # the child's end lives in the child only: its exit ends our reads
        self.greeting: Any = self.conn.recv()

    def call(self, *command: Any) -> Any:
        self.conn.send(command)
        return self.conn.recv()

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.conn.send(None)
        self.proc.join(30)
        if self.proc.is_alive():
            self.proc.kill()


# -- phases -----------------------------------------------------------------------------------------

FAMILIES = ("API bodies", "slow header streaming", "unread 14 MB answers", "webhook pull requests")


def pct(values: list[float], q: int) -> float:
    return statistics.quantiles(values, n=100)[q - 1] if len(values) >= 2 else float("nan")


async def attack(url: str, seconds: float, families: tuple[str, ...], *, bodies: list[tuple[str, bytes]],
                 large: bytes) -> dict[str, set[Any]]:
    """The hostile HTTP families for ``seconds`` (in the attacker's process): what each got."""
    seen: dict[str, set[Any]] = {}
    until = time.monotonic() + seconds
    async with httpx.AsyncClient(timeout=120, limits=httpx.Limits(max_connections=16)) as client:
        tasks = []
        if "API bodies" in families:
            tasks += [api_client(client, url, bodies, until, i, seen) for i in range(2)]
        if "slow header streaming" in families:
            tasks += [header_streamer(url, until, seen) for _ in range(2)]
        if "unread 14 MB answers" in families:
            tasks += [unread_client(url, large, until, seen) for _ in range(2)]
        await asyncio.gather(*tasks)
    return seen


async def phase(url: str, seconds: float, families: tuple[str, ...], before: str, after: str,
                attacker: Remote, webhook: Remote | None) -> tuple[list[float], dict[str, set[Any]]]:
    """4 valid clients for ``seconds``, with the hostile ``families`` beside them (from their own
    processes): the valid latencies and what each hostile request got."""
    latencies: list[float] = []
    seen: dict[str, set[Any]] = {}
    others: dict[int, int] = {}
    until = time.monotonic() + seconds
    async with httpx.AsyncClient(timeout=120, limits=httpx.Limits(max_connections=8)) as client:
        tasks: list[Any] = [valid_client(client, url, before, after, until, latencies, f"v{i}", others)
                            for i in range(4)]
        http = tuple(f for f in families if f != "webhook pull requests")
        if http:
            tasks.append(asyncio.to_thread(lambda: seen.update(attacker.call(seconds, http))))
        if "webhook pull requests" in families and webhook is not None:
            tasks.append(asyncio.to_thread(lambda: seen.update(webhook.call(url, seconds))))
        await asyncio.gather(*tasks)
    if others:
        seen["valid requests not answered 200"] = {f"{status}: {n}" for status, n in others.items()}
    return latencies, seen


async def unread_burst(url: str, pid: int, count: int, body: bytes, wave: int = 6
                       ) -> tuple[int, int, int, int, dict[str, int]]:
    """``count`` requests for a 14 MB report, in waves of ``wave`` (what one heavy slot analyses
    within the 10 s budget, so that few are refused 503), each connection held unread (but for its
    status line) until the end: (main before, main peak, all before, all peak) in KiB, and the
    statuses answered."""
    before_main, before_all = rss_kib(pid), total_rss_kib(pid)
    sampler, stop = Sampler(pid), asyncio.Event()
    sampling = asyncio.create_task(sampler.run(stop))
    loop = asyncio.get_running_loop()
    held: list[socket.socket] = []
    statuses: dict[str, int] = {}
    for start in range(0, count, wave):
        socks = await asyncio.gather(*(unread_request(url, body) for _ in range(min(wave, count - start))))
        for sock in socks:  # the status line says the answer is out: the rest stays unread
            status = "no answer"
            with contextlib.suppress(OSError, TimeoutError):
                async with asyncio.timeout(120):
                    line = b""
                    while len(line) < 12 and (chunk := await loop.sock_recv(sock, 12 - len(line))):
                        line += chunk
                    status = line[9:12].decode() or "closed"
            statuses[status] = statuses.get(status, 0) + 1
        held += socks
    await asyncio.sleep(2.0)
    stop.set()
    await sampling
    for sock in held:
        sock.close()
    return before_main, sampler.main, before_all, sampler.all, statuses


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


def mib(kib: int) -> str:
    return f"{kib / 1024:.0f}"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=20.0)
    ap.add_argument("--unread", type=int, default=96)
    ap.add_argument("--rss-requests", type=int, default=300)
    ap.add_argument("--no-webhook", action="store_true", help="leave the webhook families out")
    args = ap.parse_args()
    before, after = sample_pair("ray-service.sample.yaml")
    for name in [n for n in os.environ if n.upper().startswith("RAYSERVICE_IMPACT_")]:
        del os.environ[name]
    large = large_report_body()
    with tempfile.TemporaryDirectory(prefix="rsi-bench-") as tmp, contextlib.ExitStack() as stack:
        webhook = None
        if not args.no_webhook:
            started = time.monotonic()
            webhook = Remote(_webhook_main, tmp)
            stack.callback(webhook.close)
            os.environ.update({"RAYSERVICE_IMPACT_GITHUB_WEBHOOK_SECRET": SECRET,
                               "RAYSERVICE_IMPACT_GITHUB_API_URL": webhook.greeting,
                               "RAYSERVICE_IMPACT_GITHUB_TOKEN": TOKEN,
                               "RAYSERVICE_IMPACT_GITHUB_WRITE_INTERVAL_SECONDS": "0",
                               "RAYSERVICE_IMPACT_LIVE_BASIS": "off"})
            print(f"webhook repositories built in {time.monotonic() - started:.0f} s")
        server = Server(workers=2)
        try:
            server.wait_ready()
            pid = server.pid
            attacker = Remote(_attacker_main, server.url)
            stack.callback(attacker.close)
            families = FAMILIES if webhook is not None else FAMILIES[:-1]
            # "alone" between every two phases: a family's p99 is set against the runs alone just
            # before and after it, so a shared machine's drift does not pass for the family's effect
            runs: list[tuple[str, tuple[str, ...]]] = [("alone", ())]
            for label, chosen in [*((name, (name,)) for name in families), ("all together", families)]:
                runs += [(label, chosen), ("alone", ())]
            results = []
            rss_before = rss_kib(pid), total_rss_kib(pid)
            for label, chosen in runs:
                latencies, seen = asyncio.run(phase(server.url, args.seconds, chosen, before, after, attacker,
                                                    webhook))
                results.append((label, latencies, seen))
            time.sleep(2.0)
            rss_after = rss_kib(pid), total_rss_kib(pid)
            burst = asyncio.run(unread_burst(server.url, pid, args.unread, large))
            time.sleep(2.0)
            rss_burst_after = rss_kib(pid)
            rss = asyncio.run(rss_run(server.url, pid, args.rss_requests))
            server.check_alive("after the runs")
        finally:
            server.stop()
    print(f"{'valid requests (4 clients) with':34s} {'n':>6s} {'p50 ms':>8s} {'p99 ms':>8s}  "
          "p99 / p99 alone just before and after (goal < 3)")
    for i, (label, latencies, _) in enumerate(results):
        p50, p99 = pct(latencies, 50) * 1000, pct(latencies, 99) * 1000
        ratio = ""
        if label != "alone":
            around = (pct(results[i - 1][1], 99) + pct(results[i + 1][1], 99)) / 2 * 1000
            ratio = f"{p99 / around:.2f}"
        print(f"{label:34s} {len(latencies):6d} {p50:8.1f} {p99:8.1f}  {ratio}")
    for label, _, seen in results:
        if label == "alone":
            continue
        print(f"what the hostile requests got ({label}):")
        for name, outcomes in sorted(seen.items()):
            print(f"  {name}: {sorted(map(str, outcomes))}")
    print(f"RSS over the attacks: main {mib(rss_before[0])} -> {mib(rss_after[0])} MiB "
          f"(+{mib(rss_after[0] - rss_before[0])}, goal < 200); with children {mib(rss_before[1])} -> "
          f"{mib(rss_after[1])} MiB")
    b_main, p_main, b_all, p_all, statuses = burst
    print(f"RSS with {args.unread} requests for a 14 MB report left unread (answered {statuses}): main "
          f"{mib(b_main)} -> peak {mib(p_main)} MiB (+{mib(p_main - b_main)}, goal < 200), "
          f"{mib(rss_burst_after)} MiB once they closed; with children {mib(b_all)} -> peak {mib(p_all)} MiB")
    main_b, main_a, all_b, all_a = rss
    print(f"RSS after {args.rss_requests} alias-heavy requests: main {mib(main_b)} -> {mib(main_a)} MiB "
          f"(+{mib(main_a - main_b)}); with workers {mib(all_b)} -> {mib(all_a)} MiB")


if __name__ == "__main__":
    os.chdir(ROOT)
    main()
