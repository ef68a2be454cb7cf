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


def median_time(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        gc.collect()
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


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
    args = parser.parse_args()
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
    base, ours = median_time(parse, args.repeat), median_time(analyze, args.repeat)
    print(f"C-loader parse of both: {base * 1000:8.1f} ms (median of {args.repeat})")
    print(f"diffing.analyze:        {ours * 1000:8.1f} ms")
    print(f"ratio analyze/parse:    {ours / base:8.2f}  (target <= 3)")
    report = diffing.analyze(before, after).to_dict()["resources"][0]
    print(f"  -> rollout {report['rollout']}, {len(report['changes'])} changes, "
          f"extra {report['capacity']['extra']}")
    mem_parse, mem_analyze = peak_memory(parse) / 2**20, peak_memory(analyze) / 2**20
    print(f"peak memory: parse {mem_parse:.1f} MiB, analyze {mem_analyze:.1f} MiB")
    print("scaling (worker groups, 500 deployments):")
    rows = []
    for n in (20, 50, 100, 200):
        b, a = build(n, 500), build(n, 500, image="rayproject/ray:2.53.0", replicas=3)
        t_parse = median_time(lambda b=b, a=a: (yaml.load(b, Loader=loader), yaml.load(a, Loader=loader)),
                              args.repeat)
        t = median_time(lambda b=b, a=a: diffing.analyze(b, a), args.repeat)
        rows.append((n, t, t_parse))
        print(f"  {n:4d} groups: analyze {t * 1000:7.1f} ms, parse {t_parse * 1000:7.1f} ms, "
              f"ratio {t / t_parse:5.2f}")
    (n0, t0, _), (n1, t1, _) = rows[0], rows[-1]
    per_group = [(t1 - t0) / (n1 - n0) * 1000]
    print(f"marginal cost per worker group: {per_group[0]:.3f} ms; "
          f"time({n1})/time({n0}) = {t1 / t0:.2f} for {n1 / n0:.0f}x the groups")


if __name__ == "__main__":
    main()
