"""Benchmark of the placement plan (diffing.placement, docs/placement.md): the rollout's pods placed
on a large cluster, against computing the free allocatable alone, in one run.

    python bench/bench_place.py [--nodes 5000] [--running 50000] [--pods 2000] [--repeat 5]

A synthetic but realistic cluster: GKE-like pools (n2-standard-32 cpu pools; a2-highgpu-8g A100
and a3-highgpu-8g H100 pools tainted ``nvidia.com/gpu``; 4 zones), ``--running`` bound pods spread
over the nodes (cpu pods on the cpu pools, 1 to 4-GPU pods on the GPU pools, so the free GPUs are
fragmented), 2 % of the nodes cordoned, 1 % NotReady, a few hundred Pending pods; and a rollout
of ``--pods`` pods: a head, a cpu group (60 %) and an A100 group (40 %, selector + toleration).
Times, interleaved, medians of ``--repeat``:

* ``free``: :func:`diffing.placement.read_nodes` (allocatable minus the bound pods' requests):
  the baseline no plan can avoid;
* ``place``: :func:`diffing.placement.place` on those nodes (the Pending pods, then the rollout's);
* ``plan``: both, as :func:`diffing.placement.plan_for` does.

Then the same at x1, x2, x4 (nodes, running pods and rollout pods all scaled) and the log-log
slope of each (1 = linear). The cyclic GC is paused while timing, as ``diffing.analyze`` runs.
Target (issue 21): ``place`` under 200 ms at 2 000 pods on 5 000 nodes with 50 000 running pods.
Not a test.
"""

from __future__ import annotations

import argparse
import gc
import math
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from diffing.placement import pending_asks, place, read_nodes, rollout_asks  # noqa: E402
from diffing.placement.plan import bound_pods  # noqa: E402

GPU_TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
TOLERATE = [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
A100 = {"cloud.google.com/gke-accelerator": "nvidia-tesla-a100"}


def cluster(nodes: int, running: int, seed: int = 21) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    rnd = random.Random(seed)
    out, kinds = [], []
    for i in range(nodes):
        pool = i % 20
        kind = "cpu" if pool < 12 else ("a100" if pool < 17 else "h100")
        labels = {"kubernetes.io/hostname": f"n{i}", "cloud.google.com/gke-nodepool": f"{kind}-pool-{pool}",
                  "topology.kubernetes.io/zone": f"us-central1-{'abcd'[i % 4]}",
                  "node.kubernetes.io/instance-type": {"cpu": "n2-standard-32", "a100": "a2-highgpu-8g",
                                                       "h100": "a3-highgpu-8g"}[kind]}
        alloc = {"cpu": "31850m", "memory": "120Gi", "pods": "110", "ephemeral-storage": "95Gi"}
        taints = []
        if kind != "cpu":
            accel = "nvidia-tesla-a100" if kind == "a100" else "nvidia-h100-80gb"
            labels["cloud.google.com/gke-accelerator"] = accel
            alloc.update({"cpu": "94", "memory": "1300Gi", "nvidia.com/gpu": "8"})
            taints = [GPU_TAINT]
        ready = "False" if rnd.random() < 0.01 else "True"
        spec: dict[str, Any] = {"taints": taints}
        if rnd.random() < 0.02:
            spec["unschedulable"] = True
        out.append({"metadata": {"name": f"n{i}", "labels": labels}, "spec": spec,
                    "status": {"allocatable": alloc, "conditions": [{"type": "Ready", "status": ready}]}})
        kinds.append(kind)
    pods = []
    for j in range(running):
        i = rnd.randrange(nodes)
        if kinds[i] == "cpu":
            req = {"cpu": f"{rnd.choice([250, 500, 1000, 2000])}m", "memory": f"{rnd.choice([1, 2, 4, 8])}Gi"}
        else:
            req = {"cpu": "4", "memory": "32Gi", "nvidia.com/gpu": str(rnd.choice([0, 0, 0, 1, 1, 2]))}
        meta = {"name": f"p{j}", "namespace": f"ns{j % 50}", "labels": {"app": f"a{j % 300}"}}
        containers = [{"name": "c", "resources": {"requests": req}}]
        pods.append({"metadata": meta, "spec": {"nodeName": f"n{i}", "containers": containers},
                     "status": {"phase": "Running"}})
    for j in range(running // 200):  # Pending, waiting for room
        pods.append({"metadata": {"name": f"w{j}", "namespace": "batch", "labels": {}},
                     "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "8"}}}]},
                     "status": {"phase": "Pending"}})
    return out, pods


def rollout(pods: int) -> Any:
    cpu, gpu = int(pods * 0.6), pods - 1 - int(pods * 0.6)
    worker = {"name": "w", "resources": {"requests": {"cpu": "4", "memory": "16Gi"}}}
    gworker = {"name": "g", "resources": {"requests": {"cpu": "8", "memory": "64Gi", "nvidia.com/gpu": "1"},
                                          "limits": {"nvidia.com/gpu": "1"}}}
    return {"headGroupSpec": {"template": {"spec": {"containers": [
        {"name": "h", "resources": {"requests": {"cpu": "4", "memory": "16Gi"}}}]}}},
        "enableInTreeAutoscaling": True,
        "workerGroupSpecs": [
            {"groupName": "cpu", "replicas": cpu, "maxReplicas": 100000,
             "template": {"spec": {"containers": [worker]}}},
            {"groupName": "a100", "replicas": gpu, "maxReplicas": 100000, "template": {"spec": {
                "containers": [gworker], "nodeSelector": A100, "tolerations": TOLERATE}}}]}


def measure(nodes: int, running: int, pods: int, repeat: int) -> dict[str, float]:
    objs, live = cluster(nodes, running)
    asks = rollout_asks(rollout(pods), namespace="ml")
    waiting, bound = pending_asks(live), bound_pods(live)
    free_t, place_t = [], []
    fits = None
    for _ in range(repeat):
        gc.collect()
        gc.disable()  # as diffing.analyze runs (it pauses the cyclic GC itself)
        t0 = time.perf_counter()
        state = read_nodes(objs, live)
        t1 = time.perf_counter()
        plan = place(asks, state, pending=waiting, bound=bound)
        t2 = time.perf_counter()
        gc.enable()
        free_t.append(t1 - t0)
        place_t.append(t2 - t1)
        fits = plan.as_dict()
    f, p = statistics.median(free_t), statistics.median(place_t)
    assert fits is not None
    placed = sum(g["placed"] for g in fits["groups"])
    return {"free": f, "place": p, "plan": f + p, "placed": placed, "pods": fits["pods"]}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", type=int, default=5000)
    ap.add_argument("--running", type=int, default=50000)
    ap.add_argument("--pods", type=int, default=2000)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    series = []
    print(f"{'scale':>5} {'nodes':>6} {'running':>7} {'pods':>5} {'placed':>6} "
          f"{'free ms':>8} {'place ms':>9} {'plan ms':>8}")
    for k in (1, 2, 4):
        m = measure(args.nodes * k, args.running * k, args.pods * k, args.repeat)
        series.append(m)
        print(f"{'x' + str(k):>5} {args.nodes * k:>6} {args.running * k:>7} {m['pods']:>5} {m['placed']:>6} "
              f"{m['free'] * 1000:>8.1f} {m['place'] * 1000:>9.1f} {m['plan'] * 1000:>8.1f}")
    for name in ("free", "place", "plan"):
        slope = math.log(series[2][name] / series[0][name]) / math.log(4)
        print(f"log-log slope of {name} over x1..x4: {slope:.2f}")
    print(f"target: place < 200 ms at x1 -> {'met' if series[0]['place'] < 0.2 else 'NOT met'} "
          f"({series[0]['place'] * 1000:.1f} ms)")


if __name__ == "__main__":
    main()
