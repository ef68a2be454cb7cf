"""Benchmark of the analysis core against PyYAML's C loader, measured in the same run.

    python bench/bench_core.py [--repeat 15]

Builds a RayService with N worker groups and D Serve deployments, changes one group's image
and one deployment's replicas, then times ``diffing.analyze(before, after)`` against
``yaml.load(..., CSafeLoader)`` of the same two texts (the floor: any analysis must at least
parse them). Prints medians, the ratio, the scaling from 20 to 200 groups, and peak memory.
Not a test: the machine is noisy, so only ratios measured together mean anything.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import time
import tracemalloc
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import diffing  # noqa: E402


def build(groups: int, deployments: int, image: str = "rayproject/ray:2.52.0", replicas: int = 1) -> str:
    apps = []
    per_app = 10
    for a in range(max(1, deployments // per_app)):
        deps = [{"name": f"Model{a}_{d}", "num_replicas": replicas if (a, d) == (0, 0) else 1,
                 "ray_actor_options": {"num_cpus": 0.5, "num_gpus": 0.25},
                 "user_config": {"threshold": 0.5, "labels": ["a", "b"]}}
                for d in range(per_app)]
        apps.append({"name": f"app{a}", "import_path": f"models.app{a}:entry", "route_prefix": f"/a{a}",
                     "runtime_env": {"pip": ["torch==2.6.0"]}, "deployments": deps})
    serve = yaml.safe_dump({"applications": apps}, sort_keys=False)
    workers = []
    for g in range(groups):
        workers.append({
            "groupName": f"group-{g}", "replicas": 2, "minReplicas": 1, "maxReplicas": 8,
            "rayStartParams": {"num-gpus": "1"},
            "template": {"spec": {
                "containers": [{
                    "name": "ray-worker", "image": image if g == groups // 2 else "rayproject/ray:2.52.0",
                    "env": [{"name": f"VAR_{i}", "value": str(i)} for i in range(4)],
                    "ports": [{"containerPort": 8000, "name": "serve"}],
                    "resources": {"limits": {"cpu": "8", "memory": "32Gi", "nvidia.com/gpu": "1"},
                                  "requests": {"cpu": "8", "memory": "32Gi", "nvidia.com/gpu": "1"}},
                    "volumeMounts": [{"name": "logs", "mountPath": "/tmp/ray"}]}],
                "volumes": [{"name": "logs", "emptyDir": {}}],
                "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]}}})
    obj = {"apiVersion": "ray.io/v1", "kind": "RayService", "metadata": {"name": "big"},
           "spec": {"serveConfigV2": serve, "rayClusterConfig": {
               "rayVersion": "2.52.0",
               "headGroupSpec": {"rayStartParams": {"num-cpus": "0"}, "template": {"spec": {"containers": [{
                   "name": "ray-head", "image": "rayproject/ray:2.52.0",
                   "resources": {"limits": {"cpu": "4", "memory": "16Gi"}}}]}}},
               "workerGroupSpecs": workers}}}
    return yaml.safe_dump(obj, sort_keys=False)


GC_OFF = False


def _timed(fn) -> float:
    gc.collect()
    if GC_OFF:
        gc.disable()
    t0 = time.perf_counter()
    fn()
    elapsed = time.perf_counter() - t0
    gc.enable()
    return elapsed


def paired(base, ours, repeat: int) -> tuple[float, float, float]:
    """Median times of ``base`` and ``ours`` run back to back, and the median of their ratios.

    Interleaving the two keeps a slow moment of this noisy machine from landing on one side.
    """
    b_times, o_times = [], []
    for _ in range(repeat):
        b_times.append(_timed(base))
        o_times.append(_timed(ours))
    ratios = [o / b for o, b in zip(o_times, b_times, strict=True)]
    return statistics.median(b_times), statistics.median(o_times), statistics.median(ratios)


def linear_fit(xs: list[float], ys: list[float]) -> tuple[float, float, float]:
    """Least squares y = a + b x, with R^2."""
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sxx
    a = my - b * mx
    ss_res = sum((y - a - b * x) ** 2 for x, y in zip(xs, ys, strict=True))
    ss_tot = sum((y - my) ** 2 for y in ys)
    return a, b, 1 - ss_res / ss_tot


def peak_memory(fn) -> int:
    gc.collect()
    tracemalloc.start()
    fn()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--gc-off", action="store_true",
                        help="time both sides with the cyclic GC paused (removes its superlinear pauses)")
    args = parser.parse_args()
    global GC_OFF
    GC_OFF = args.gc_off
    loader = getattr(yaml, "CSafeLoader", None)
    print(f"PyYAML {yaml.__version__}, libyaml: {loader is not None}, Python {sys.version.split()[0]}")
    before = build(200, 500)
    after = build(200, 500, image="rayproject/ray:2.53.0", replicas=3)
    print(f"pair: 200 worker groups, 500 deployments, {len(before) + len(after):,} bytes of YAML")

    def parse() -> None:
        yaml.load(before, Loader=loader)
        yaml.load(after, Loader=loader)

    def analyze() -> None:
        diffing.analyze(before, after)

    analyze()  # warm the rule tables and caches once
    base, ours, ratio = paired(parse, analyze, args.repeat)
    print(f"C-loader parse of both: {base * 1000:8.1f} ms (median of {args.repeat}, interleaved)")
    print(f"diffing.analyze:        {ours * 1000:8.1f} ms")
    print(f"ratio analyze/parse:    {ratio:8.2f}  (median of paired ratios; target <= 3)")
    report = diffing.analyze(before, after).to_dict()["resources"][0]
    print(f"  -> rollout {report['rollout']}, {len(report['changes'])} changes, "
          f"extra {report['capacity']['extra']}")
    mem_parse, mem_analyze = peak_memory(parse) / 2**20, peak_memory(analyze) / 2**20
    print(f"peak memory: parse {mem_parse:.1f} MiB, analyze {mem_analyze:.1f} MiB")
    print("scaling (worker groups, 500 deployments):")
    rows = []
    for n in (20, 50, 100, 150, 200):
        b, a = build(n, 500), build(n, 500, image="rayproject/ray:2.53.0", replicas=3)
        t_parse, t, r = paired(lambda b=b, a=a: (yaml.load(b, Loader=loader), yaml.load(a, Loader=loader)),
                               lambda b=b, a=a: diffing.analyze(b, a), args.repeat)
        rows.append((n, t, t_parse))
        print(f"  {n:4d} groups: analyze {t * 1000:7.1f} ms, parse {t_parse * 1000:7.1f} ms, ratio {r:5.2f}")
    fixed, slope, r2 = linear_fit([n for n, _, _ in rows], [t for _, t, _ in rows])
    print(f"linear fit of analyze time: {fixed * 1000:.1f} ms + {slope * 1000:.2f} ms x groups, "
          f"R^2 = {r2:.4f} (the fixed part is parsing the 500-deployment serveConfigV2 twice)")


if __name__ == "__main__":
    main()
