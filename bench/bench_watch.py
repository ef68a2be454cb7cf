"""Benchmark of the rollout watch while idle: CPU of the service process following 200 RayServices.

    python bench/bench_watch.py [--objects 200] [--seconds 20] [--bookmark 60]

Starts the stand-in Kubernetes API (tests/app/kube_standin.py, real uvicorn) in a separate
process with ``--objects`` RayServices, each with a head pod, in one namespace. In this process it
follows every one of them with one :class:`~app.rollout.tracker.KubeFollower` (one watch per
RayService, as the reporting side starts them), waits until every follower has its first
observation, then measures this process's CPU time (``time.process_time``: every thread) over
``--seconds`` of idle watching: nothing changes, the stand-in sends a bookmark every
``--bookmark`` seconds per watch (the API server sends one about every minute).

The baseline, measured in the same run just before, is an idle asyncio loop in this same process
for the same time. Prints both as a fraction of one core, and the number of watch connections the
stand-in saw. Target: under 1 % of a core above the baseline. Not a test.
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing as mp
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from app.rollout.kubeapi import KubeAPI  # noqa: E402
from app.rollout.model import Target, Watch  # noqa: E402
from app.rollout.tracker import KubeFollower  # noqa: E402
from app.rollout.watch import WatchHub  # noqa: E402

NS = "serving"


def serve(objects: int, bookmark: float, urls: mp.Queue, stop: mp.Event) -> None:  # type: ignore[type-arg]
    sys.path.insert(0, str(ROOT / "tests" / "app"))
    from kube_standin import KubeStandin

    server = KubeStandin(bookmark_seconds=bookmark)
    for i in range(objects):
        server.put("rayservices", {"apiVersion": "ray.io/v1", "kind": "RayService",
                                   "metadata": {"name": f"svc-{i}", "namespace": NS, "generation": 1},
                                   "status": {"observedGeneration": 1,
                                              "activeServiceStatus": {"rayClusterName": f"svc-{i}-a"}}})
        server.put("pods", {"apiVersion": "v1", "kind": "Pod",
                            "metadata": {"name": f"svc-{i}-a-head", "namespace": NS,
                                         "labels": {"ray.io/cluster": f"svc-{i}-a",
                                                    "ray.io/node-type": "head"}},
                            "spec": {"containers": [{"name": "ray"}]}, "status": {"phase": "Running"}})
    with server.serving() as url:
        urls.put(url)
        stop.wait()
        urls.put(f"{len(server.watch_requests)} {sum(server.open_watches.values())}")


async def idle(seconds: float) -> float:
    start = time.process_time()
    await asyncio.sleep(seconds)
    return (time.process_time() - start) / seconds


async def watching(url: str, objects: int, seconds: float) -> tuple[float, float]:
    api = KubeAPI(url, timeout=10)
    hub = WatchHub(api, timeout_seconds=300)
    follower = KubeFollower(hub)
    firsts = 0

    async def one(i: int) -> None:
        nonlocal firsts
        target = Target("RayService", NS, f"svc-{i}", "new-cluster", {})
        watch = Watch(f"bench:{i}", (target,), started=time.time(), deadline_seconds=3600, sink={})
        async for _ in follower.follow(watch):
            firsts += 1

    settle = time.monotonic()
    tasks = [asyncio.create_task(one(i)) for i in range(objects)]
    while firsts < objects:
        await asyncio.sleep(0.05)
    settled = time.monotonic() - settle
    await asyncio.sleep(1)
    start = time.process_time()
    await asyncio.sleep(seconds)
    used = (time.process_time() - start) / seconds
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    await hub.close()
    await api.aclose()
    return used, settled


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--objects", type=int, default=200)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--bookmark", type=float, default=60.0)
    args = parser.parse_args()
    ctx = mp.get_context("spawn")
    urls: mp.Queue = ctx.Queue()  # type: ignore[type-arg]
    stop = ctx.Event()
    proc = ctx.Process(target=serve, args=(args.objects, args.bookmark, urls, stop), daemon=True)
    proc.start()
    url = urls.get(timeout=60)
    baseline = asyncio.run(idle(args.seconds))
    used, settled = asyncio.run(watching(url, args.objects, args.seconds))
    stop.set()
    requests, still_open = urls.get(timeout=30).split()
    proc.join(timeout=10)
    print(f"{args.objects} RayServices followed, {args.seconds:.0f} s idle, "
          f"bookmark every {args.bookmark:.0f} s")
    print(f"  first observation of all followers after {settled:.2f} s")
    print(f"  watch requests seen by the stand-in: {requests} (one per kind: 5)")
    print(f"  baseline (idle asyncio loop): {100 * baseline:.3f} % of a core")
    print(f"  idle-watching:                {100 * used:.3f} % of a core "
          f"(above baseline: {100 * (used - baseline):.3f} %; target < 1 %)")


if __name__ == "__main__":
    main()
