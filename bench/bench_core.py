"""Benchmark of the analysis core against PyYAML's C loader and DeepDiff, measured in one run.

    python bench/bench_core.py                 # full run, about 5 minutes on 2 cores
    python bench/bench_core.py --quick         # smoke run: fewer repeats, no callgrind (< 1 minute)
    python bench/bench_core.py --no-callgrind  # full timings, no instruction counts

``pip install -e '.[bench]'`` adds DeepDiff (row 3); without it row 3 is skipped with a note.
Instruction counts need ``valgrind`` on PATH. Not a test and asserts nothing: the machine is
noisy, so only ratios measured side by side in one run mean anything; the targets are printed
next to the figures.

One table, two columns: the 5 KB pair (``samples/gpu-image-bump``, a RayService and a Secret)
and the 645 KB pair (``build(200, 500)``: 200 worker groups and 500 Serve deployments, with one
group's image and one deployment's replicas changed). Every row is a ratio to the bare parse,
whose absolute time is in the header. Times are medians of per-round ratios; in each round
every variant runs once, in a rotating order, so a slow moment of the machine lands on all.
Every variant runs with the cyclic GC paused, as ``diffing.analyze`` pauses it itself (its
passes over a growing heap make a plain parse of a big text superlinear); the bare parse is
also shown with the GC running, as a plain call runs it. ``--gc-on`` times every variant so.

1. bare parse: ``yaml.load_all(text, Loader=yaml.CSafeLoader)`` of both texts (= 1.00). Any
   analysis has to read the YAML at least once.
2. floor: the bare parse plus parsing each RayService's ``spec.serveConfigV2`` string with the
   C loader: the least a tool that looks at Serve deployments must do.
3. DeepDiff keyed: the floor, then lists of mappings turned into dicts keyed by ``groupName``
   or ``name`` (where every item has a unique one) and documents keyed by kind/namespace/name,
   then ``deepdiff.DeepDiff`` of the two sides: what a user would assemble instead (it lists
   changed values; it does not say what the operator does with them).
4. ``diffing.analyze`` (wall time, warm: the rule tables are loaded once before timing).
5. analyze's stages as shares of analyze's cumulative time in one cProfile session (for the
   5 KB pair, enough calls to last ~0.2 s). cProfile's per-call overhead inflates stages that
   make many small Python calls (defaulting, validation) relative to those in C (parsing).

Instruction counts (callgrind; with valgrind on PATH, without ``--no-callgrind``): each of
rows 1, 2 and 4 runs once in its own ``valgrind --tool=callgrind python -c ...`` child, and a
baseline child imports diffing and yaml, reads the texts and does nothing else. Both run one
warm-up analysis of another sample (``samples/replicas-autoscaling``), so the one-time rule
table load is left out as in the timings; "analyze, cold" adds the first call of a process
(one CLI run), measured against a baseline without the warm-up. Printed as
(I_variant - I_base) / (I_parse - I_base): deterministic, unlike the times, but blind to cache
misses and memory traffic. ``PYTHONHASHSEED=0`` keeps the children repeatable, and a plain
child first writes the .pyc files, so no child counts a compilation. 12 children, one per
core (at most 4) at a time: about 2 of the run's 4-5 minutes on 2 cores.

Then: analyze against the bare parse for 10, 50, 200 and 800 worker groups (50 deployments,
so serve parsing does not dominate) and the least-squares log-log slope of analyze time
against groups over the four points (1 = linear; the 200 -> 800 step alone is shown too, as
the fixed cost flattens the fit at the small end); 50 RayServices in one file against 50
separate analyses of the same texts (the 5 KB sample with metadata.name svc-0..49, each with
its Secret); every ``samples/<situation>`` pair (RayService and RayCluster) with its kinds,
the floor and analyze as ratios to the bare parse and analyze against the floor (no target:
a sample whose serveConfigV2 is most of its text costs 2.4x the bare parse at the floor
already); peak traced memory (tracemalloc) of analyze against the bare parse on the 645 KB
pair.

Targets: analyze <= 1.5x the bare parse on both pairs; slope <= 1.05; one file of 50
RayServices <= 1.0x 50 separate analyses; peak memory <= 1.5x the bare parse's.

Progress goes to stderr; the report to stdout.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import math
import os
import pstats
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from importlib import metadata
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
import diffing  # noqa: E402

SAMPLE = ROOT / "samples" / "gpu-image-bump"
WARM_SAMPLE = ROOT / "samples" / "replicas-autoscaling"
LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

# Targets printed next to the figures (never asserted).
TARGET_RATIO = 1.5  # analyze / bare parse, both pairs
TARGET_SLOPE = 1.05  # log-log slope of analyze time against worker groups
TARGET_MANY = 1.0  # one file of 50 RayServices / 50 separate analyses
TARGET_MEMORY = 1.5  # peak memory of analyze / bare parse, 645 KB pair


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


# --- the variants (also run by the callgrind children, which import this module) -------------

def parse_pair(before: str, after: str) -> list[list[Any]]:
    """Row 1: the bare C-loader parse of both texts."""
    return [list(yaml.load_all(before, Loader=LOADER)), list(yaml.load_all(after, Loader=LOADER))]


def floor_pair(before: str, after: str) -> list[list[Any]]:
    """Row 2: the bare parse, then each RayService's serveConfigV2 string parsed in place."""
    sides = parse_pair(before, after)
    for docs in sides:
        for doc in docs:
            if isinstance(doc, dict) and doc.get("kind") == "RayService":
                spec = doc.get("spec")
                if isinstance(spec, dict) and isinstance(spec.get("serveConfigV2"), str):
                    spec["serveConfigV2"] = yaml.load(spec["serveConfigV2"], Loader=LOADER)
    return sides


def keyed(value: Any) -> Any:
    """Lists of mappings become dicts keyed by ``groupName`` or ``name`` when every item has a
    unique string one, so that DeepDiff pairs worker groups, containers, env vars and Serve
    deployments by name rather than by position."""
    if isinstance(value, dict):
        return {k: keyed(v) for k, v in value.items()}
    if isinstance(value, list):
        items = [keyed(v) for v in value]
        if items and all(isinstance(v, dict) for v in items):
            for field in ("groupName", "name"):
                keys = [v.get(field) for v in items]
                if all(isinstance(k, str) for k in keys) and len(set(keys)) == len(keys):
                    return dict(zip(keys, items, strict=True))
        return items
    return value


def _ident(doc: dict[str, Any]) -> str:
    meta = doc.get("metadata") if isinstance(doc.get("metadata"), dict) else {}
    return f"{doc.get('kind')}/{meta.get('namespace', '')}/{meta.get('name')}"


def deepdiff_pair(before: str, after: str) -> Any:
    """Row 3: the floor, keyed, then DeepDiff of the two sides."""
    from deepdiff import DeepDiff

    b_docs, a_docs = floor_pair(before, after)
    b = {_ident(d): keyed(d) for d in b_docs if isinstance(d, dict)}
    a = {_ident(d): keyed(d) for d in a_docs if isinstance(d, dict)}
    return DeepDiff(b, a)


def analyze_pair(before: str, after: str) -> Any:
    """Row 4."""
    return diffing.analyze(before, after)


def warm_up() -> None:
    """Load the rule tables and fill the caches once, on a text other than the measured ones."""
    diffing.analyze((WARM_SAMPLE / "before.yaml").read_text(), (WARM_SAMPLE / "after.yaml").read_text())


# --- timing -----------------------------------------------------------------------------------

GC_PAUSED = True


def _timed(fn: Callable[[], Any], gc_paused: bool | None = None) -> float:
    gc.collect()
    if GC_PAUSED if gc_paused is None else gc_paused:
        gc.disable()
    t0 = time.perf_counter()
    fn()
    elapsed = time.perf_counter() - t0
    gc.enable()
    return elapsed


def interleaved(fns: Sequence[Callable[[], Any]], repeat: int,
                gc_paused: Sequence[bool | None] = ()) -> tuple[list[float], list[float]]:
    """Median time of each of ``fns`` and the median of its per-round ratio to ``fns[0]``.

    Every round runs each function once, starting one further along each time, so a slow
    moment of this noisy machine lands on all of them rather than on one side. ``gc_paused``
    overrides the run's GC setting per function.
    """
    n = len(fns)
    paused = list(gc_paused) + [None] * (n - len(gc_paused))
    times: list[list[float]] = [[] for _ in fns]
    for r in range(repeat):
        for k in range(n):
            i = (r + k) % n
            times[i].append(_timed(fns[i], paused[i]))
    ratios = [[t / b for t, b in zip(ts, times[0], strict=True)] for ts in times]
    return [statistics.median(ts) for ts in times], [statistics.median(rs) for rs in ratios]


def paired(base: Callable[[], Any], ours: Callable[[], Any], repeat: int) -> tuple[float, float, float]:
    """Median times of ``base`` and ``ours`` run interleaved, and the median of their ratios."""
    (b, o), (_, ratio) = interleaved([base, ours], repeat)
    return b, o, ratio


def loglog_slope(xs: Sequence[float], ys: Sequence[float]) -> float:
    """Least-squares slope of log y against log x (1 = linear)."""
    lx, ly = [math.log(x) for x in xs], [math.log(y) for y in ys]
    mx, my = statistics.fmean(lx), statistics.fmean(ly)
    return sum((x - mx) * (y - my) for x, y in zip(lx, ly, strict=True)) / sum((x - mx) ** 2 for x in lx)


def peak_memory(fn: Callable[[], Any]) -> int:
    gc.collect()
    tracemalloc.start()
    result = fn()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    del result
    return peak


# --- cProfile shares --------------------------------------------------------------------------

STAGES: list[tuple[str, list[tuple[str, str]]]] = [
    ("manifests.collect_all", [("kube/manifests.py", "collect_all")]),
    ("serve.parse", [("rayservice/serve.py", "parse")]),
    ("Engine.defaulted", [("engine.py", "defaulted")]),
    ("Engine.hash_compare + differences", [("engine.py", "hash_compare"), ("engine.py", "differences")]),
    ("schema.validate + validate_rayservice", [("kube/schema.py", "validate"),
                                               ("rayservice/validation.py", "validate_rayservice")]),
    ("capacity.estimate_capacity", [("rayservice/capacity.py", "estimate_capacity")]),
    ("checks.collect_findings", [("rayservice/checks.py", "collect_findings")]),
]
# Files are named by their path under diffing/ (several kinds have a capacity.py).


def stage_shares(before: str, after: str) -> tuple[dict[str, float | None], int]:
    """Cumulative time of each stage as a share of analyze's, from one cProfile session."""
    t = min(_timed(lambda: analyze_pair(before, after)) for _ in range(3))
    calls = max(1, min(100, round(0.2 / t)))
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(calls):
        analyze_pair(before, after)
    prof.disable()
    stats = pstats.Stats(prof).stats  # type: ignore[attr-defined]
    pkg = os.sep + "diffing" + os.sep
    cum: dict[tuple[str, str], float] = {}
    for (filename, _line, func), (_cc, _nc, _tt, ct, _callers) in stats.items():
        if pkg in filename:
            key = (filename.rsplit(pkg, 1)[1].replace(os.sep, "/"), func)
            cum[key] = cum.get(key, 0.0) + ct
    total = cum.get(("pipeline.py", "analyze"))
    shares: dict[str, float | None] = {}
    for label, parts in STAGES:
        found = [cum[p] for p in parts if p in cum]
        shares[label] = sum(found) / total if total and found else None
    if total:
        shares["other (outside these stages)"] = 1 - sum(s for s in shares.values() if s is not None)
    return shares, calls


# --- callgrind --------------------------------------------------------------------------------

CHILD = """\
import sys
sys.path[:0] = [{bench!r}]
import yaml, diffing, bench_core
before = open({before!r}).read()
after = open({after!r}).read()
{warm}
{op}
"""

CG_VARIANTS = {
    "base": ("", True),
    "parse": ("bench_core.parse_pair(before, after)", True),
    "floor": ("bench_core.floor_pair(before, after)", True),
    "analyze": ("bench_core.analyze_pair(before, after)", True),
    "base_cold": ("", False),
    "analyze_cold": ("bench_core.analyze_pair(before, after)", False),
}


def callgrind_count(before_path: Path, after_path: Path, op: str, warm: bool) -> tuple[int | None, str]:
    code = CHILD.format(bench=str(Path(__file__).resolve().parent), before=str(before_path),
                        after=str(after_path), warm="bench_core.warm_up()" if warm else "", op=op)
    env = dict(os.environ, PYTHONHASHSEED="0")
    proc = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null",
                           sys.executable, "-c", code], capture_output=True, text=True, env=env)
    found = re.search(r"Collected\s*:\s*(\d+)", proc.stderr)
    if proc.returncode != 0 or not found:
        return None, proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else f"rc {proc.returncode}"
    return int(found.group(1)), ""


def callgrind_all(pairs: dict[str, tuple[str, str]], jobs: int) -> dict[str, dict[str, int | None]]:
    out: dict[str, dict[str, int | None]] = {name: {} for name in pairs}
    # Write the .pyc files of this module and of every module the analysis imports (others may
    # have just edited them) outside valgrind, so that no child counts a compilation.
    subprocess.run([sys.executable, "-c", f"import sys; sys.path[:0] = [{str(Path(__file__).parent)!r}]; "
                    "import bench_core; bench_core.warm_up()"], check=True)
    with tempfile.TemporaryDirectory(prefix="bench-core-") as tmp:
        work = []
        for name, (before, after) in pairs.items():
            b, a = Path(tmp, f"{name}.before.yaml"), Path(tmp, f"{name}.after.yaml")
            b.write_text(before)
            a.write_text(after)
            for variant, (op, warm) in CG_VARIANTS.items():
                work.append((name, variant, b, a, op, warm))
        # The big pair's children first: they take longest.
        work.sort(key=lambda w: -len(pairs[w[0]][0]))
        with ThreadPoolExecutor(max_workers=jobs) as pool:
            futures = {(w[0], w[1]): pool.submit(callgrind_count, *w[2:]) for w in work}
            for (name, variant), fut in futures.items():
                count, err = fut.result()
                out[name][variant] = count
                if err:
                    print(f"  callgrind {name}/{variant} failed: {err}", file=sys.stderr)
                else:
                    print(f"  callgrind {name}/{variant}: {count:,}", file=sys.stderr)
    return out


# --- report -----------------------------------------------------------------------------------

LABEL_W, COL_W = 44, 19


def row(label: str, cells: Sequence[str], target: str = "") -> str:
    line = f"{label:<{LABEL_W}}" + "".join(f"{c:>{COL_W}}" for c in cells)
    return (line + f"   {target}") if target else line


def fmt_ratio(x: float | None, digits: int = 2) -> str:
    return "n/a" if x is None else f"{x:.{digits}f}x"


def verdict(x: float | None, target: float) -> str:
    return "" if x is None else ("ok" if x <= target else "OVER")


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="smoke run: fewer repeats, no callgrind")
    parser.add_argument("--repeat", type=int, default=None,
                        help="rounds for the 645 KB pair (default 9, --quick 3); small texts get more")
    parser.add_argument("--no-callgrind", action="store_true", help="skip the instruction counts")
    parser.add_argument("--gc-on", action="store_true",
                        help="time the variants with the cyclic GC running, as a plain call would "
                             "(analyze pauses it itself, so this flatters analyze on big texts)")
    args = parser.parse_args()
    global GC_PAUSED
    GC_PAUSED = not args.gc_on
    repeat = args.repeat or (3 if args.quick else 9)

    def reps(total_bytes: int) -> int:
        if total_bytes < 100_000:
            return repeat * 5
        return repeat if total_bytes < 1_000_000 else max(3, repeat // 2)

    try:
        dd_version: str | None = metadata.version("deepdiff")
    except metadata.PackageNotFoundError:
        dd_version = None
    valgrind = shutil.which("valgrind")
    use_cg = bool(valgrind) and not args.quick and not args.no_callgrind
    t_start = time.perf_counter()

    small = ((SAMPLE / "before.yaml").read_text(), (SAMPLE / "after.yaml").read_text())
    big = (build(200, 500), build(200, 500, image="rayproject/ray:2.53.0", replicas=2))
    pairs = {"5kb": small, "645kb": big}
    warm_up()

    # Rows 1-4, interleaved per pair.
    timing: dict[str, tuple[list[float], list[float], int]] = {}
    summary: dict[str, str] = {}
    for name, (b, a) in pairs.items():
        fns: list[Callable[[], Any]] = [lambda b=b, a=a: parse_pair(b, a),
                                        lambda b=b, a=a: floor_pair(b, a),
                                        lambda b=b, a=a: analyze_pair(b, a)]
        paused: list[bool | None] = [None] * len(fns)
        if dd_version:
            fns.append(lambda b=b, a=a: deepdiff_pair(b, a))
            paused.append(None)
        if GC_PAUSED:  # the bare parse once more, as a plain call runs it
            fns.append(lambda b=b, a=a: parse_pair(b, a))
            paused.append(False)
        for fn in fns:
            fn()  # warm
        n = reps(len(b) + len(a))
        log(f"timing {name}: {n} rounds of {len(fns)} variants")
        medians, ratios = interleaved(fns, n, paused)
        timing[name] = (medians, ratios, n)
        res = analyze_pair(b, a).to_dict()["resources"][0]
        found = f"analyze: {res['rollout']}, {len(res['changes'])} changes"
        if dd_version:
            dd = deepdiff_pair(b, a)
            found += f"; DeepDiff: {sum(len(v) for v in dd.values())} changed values"
        summary[name] = found

    log("cProfile")
    shares = {name: stage_shares(*pair) for name, pair in pairs.items()}

    log("scaling")
    scaling = []
    for groups in (10, 50, 200, 800):
        b, a = build(groups, 50), build(groups, 50, image="rayproject/ray:2.53.0", replicas=2)
        analyze_pair(b, a)
        n = reps(len(b) + len(a))
        t_parse, t_an, r = paired(lambda b=b, a=a: parse_pair(b, a), lambda b=b, a=a: analyze_pair(b, a), n)
        scaling.append((groups, len(b) + len(a), t_parse, t_an, r, n))

    log("50 RayServices")

    def renamed(text: str, i: int) -> str:
        out = text.replace("metadata:\n  name: ray-serve-llm\n", f"metadata:\n  name: svc-{i}\n", 1)
        assert out != text, "the sample's RayService name moved"
        return out

    bs = [renamed(small[0], i) for i in range(50)]
    as_ = [renamed(small[1], i) for i in range(50)]
    one_b, one_a = "\n---\n".join(bs), "\n---\n".join(as_)
    n_res = len(analyze_pair(one_b, one_a).resources)
    n_many = reps(len(one_b) + len(one_a))
    t_sep, t_one, r_many = paired(lambda: [analyze_pair(b, a) for b, a in zip(bs, as_, strict=True)],
                                  lambda: analyze_pair(one_b, one_a), n_many)

    log("every sample")
    per_sample = []
    for d in sorted(p for p in (ROOT / "samples").iterdir() if (p / "before.yaml").is_file()):
        b, a = (d / "before.yaml").read_text(), (d / "after.yaml").read_text()
        kinds = sorted({r.kind for r in analyze_pair(b, a).resources})
        n = reps(len(b) + len(a))
        (t_parse, _, _), (_, r_floor, r_an) = interleaved(
            [lambda b=b, a=a: parse_pair(b, a), lambda b=b, a=a: floor_pair(b, a),
             lambda b=b, a=a: analyze_pair(b, a)], n)
        per_sample.append((d.name, "/".join(kinds), len(b) + len(a), t_parse, r_floor, r_an, n))

    log("memory")
    mem_parse = peak_memory(lambda: parse_pair(*big))
    mem_an = peak_memory(lambda: analyze_pair(*big))

    counts: dict[str, dict[str, int | None]] = {}
    if use_cg:
        jobs = max(1, min(4, os.cpu_count() or 1))
        log(f"callgrind: {len(CG_VARIANTS) * len(pairs)} children, {jobs} at a time")
        counts = callgrind_all(pairs, jobs)
    elapsed = time.perf_counter() - t_start

    # ---- the table ----
    out = print
    libyaml = "libyaml" if LOADER is not yaml.SafeLoader else "pure-Python loader (no libyaml!)"
    out(f"rayservice-impact core benchmark: PyYAML {yaml.__version__} ({libyaml}), "
        f"Python {sys.version.split()[0]}, deepdiff {dd_version or 'not installed'}, "
        f"{os.cpu_count()} CPUs{', --quick' if args.quick else ''}")
    out("every variant is timed with the cyclic GC paused, as analyze pauses it itself"
        if GC_PAUSED else "--gc-on: the variants run with the cyclic GC (analyze still pauses it)")
    out()
    out(row("", ["5 KB pair", "645 KB pair"], "target"))
    out(row("", ["gpu-image-bump", "200 groups/500 dep"]))
    out(row("bytes (before + after)", [f"{len(b) + len(a):,}" for b, a in pairs.values()]))
    out(row("bare parse of both texts, median ms",
            [f"{timing[k][0][0] * 1000:.2f}" for k in pairs]))
    out(row("rounds (interleaved)", [str(timing[k][2]) for k in pairs]))
    out()
    out("time, as a ratio to the bare parse (median of per-round ratios)")

    def ratio_of(key: str, idx: int) -> float | None:
        r = timing[key][1]
        return r[idx] if -len(r) <= idx < len(r) else None

    out(row(" 1. bare parse (CSafeLoader, load_all)", [fmt_ratio(ratio_of(k, 0)) for k in pairs]))
    if GC_PAUSED:
        out(row("    the same with the cyclic GC running", [fmt_ratio(ratio_of(k, -1)) for k in pairs],
                "as a plain call runs it"))
    out(row(" 2. floor: + serveConfigV2 parsed", [fmt_ratio(ratio_of(k, 1)) for k in pairs]))
    if dd_version:
        out(row(" 3. DeepDiff keyed (floor + keying + diff)", [fmt_ratio(ratio_of(k, 3)) for k in pairs]))
    else:
        out(row(" 3. DeepDiff keyed", ["skipped", "skipped"],
                "deepdiff not installed: pip install -e '.[bench]'"))
    an = [ratio_of(k, 2) for k in pairs]
    out(row(" 4. diffing.analyze (wall)", [fmt_ratio(x) for x in an],
            f"<= {TARGET_RATIO}x  " + " / ".join(verdict(x, TARGET_RATIO) for x in an)))
    out(row("    analyze, median ms", [f"{timing[k][0][2] * 1000:.2f}" for k in pairs]))
    calls = ", ".join(f"{shares[k][1]} call{'s' if shares[k][1] > 1 else ''}" for k in pairs)
    out(f" 5. share of analyze (cProfile, inflates Python-heavy stages; {calls})")
    labels = list(shares["645kb"][0]) + [k for k in shares["5kb"][0] if k not in shares["645kb"][0]]
    for label in labels:
        cells = []
        for k in pairs:
            s = shares[k][0].get(label)
            cells.append("n/a" if s is None else f"{s * 100:.1f}%")
        out(row(f"    {label}", cells))
    out()
    if counts:
        out("instructions (callgrind, one run each), (I_variant - I_base) / (I_parse - I_base)")

        def cg_ratio(k: str, variant: str, base: str = "base") -> float | None:
            c = counts[k]
            v, b0, p = c.get(variant), c.get(base), c.get("parse")
            if v is None or b0 is None or p is None or p == c.get("base"):
                return None
            return (v - b0) / (p - c["base"])  # type: ignore[operator]

        def mi(k: str, variant: str, base: str = "base") -> str:
            c = counts[k]
            if c.get(variant) is None or c.get(base) is None:
                return "n/a"
            return f"{(c[variant] - c[base]) / 1e6:,.0f} M"  # type: ignore[operator]

        out(row(" 1. bare parse, instructions", [mi(k, "parse") for k in pairs]))
        out(row(" 1. bare parse", [fmt_ratio(cg_ratio(k, "parse")) for k in pairs]))
        out(row(" 2. floor", [fmt_ratio(cg_ratio(k, "floor")) for k in pairs]))
        cg_an = [cg_ratio(k, "analyze") for k in pairs]
        out(row(" 4. diffing.analyze", [fmt_ratio(x) for x in cg_an],
                f"<= {TARGET_RATIO}x  " + " / ".join(verdict(x, TARGET_RATIO) for x in cg_an)))
        out(row(" 4. analyze, cold (first call of a process)",
                [fmt_ratio(cg_ratio(k, "analyze_cold", "base_cold")) for k in pairs], "one CLI run"))
        out(row("    the warm-up left out of rows 1-4", [mi(k, "base", "base_cold") for k in pairs],
                "instructions"))
        out()
    elif valgrind is None:
        out("instructions: skipped (no valgrind on PATH)")
        out()
    else:
        out("instructions: skipped (--quick / --no-callgrind)")
        out()
    for k, label in (("5kb", "5 KB"), ("645kb", "645 KB")):
        out(f"found on the {label} pair: {summary[k]}")
    out()

    out("scaling with worker groups (50 deployments; interleaved medians)")
    out(f"  {'groups':>6} {'bytes':>11} {'parse ms':>10} {'analyze ms':>11} {'ratio':>7} {'rounds':>7}")
    for groups, size, t_parse, t_an, r, n in scaling:
        out(f"  {groups:>6} {size:>11,} {t_parse * 1000:>10.1f} {t_an * 1000:>11.1f} {r:>6.2f}x {n:>7}")
    xs = [g for g, *_ in scaling]
    slope = loglog_slope(xs, [t for *_, t, _r, _n in scaling])
    slope_parse = loglog_slope(xs, [s[2] for s in scaling])
    tail = math.log(scaling[-1][3] / scaling[-2][3]) / math.log(scaling[-1][0] / scaling[-2][0])
    out(f"  log-log slope of analyze time vs groups: {slope:.3f} (target <= {TARGET_SLOPE}: "
        f"{verdict(slope, TARGET_SLOPE)}); {xs[-2]}->{xs[-1]} alone: {tail:.3f}; "
        f"bare parse: {slope_parse:.3f}")
    out()
    out(f"50 RayServices in one file vs 50 separate analyses ({n_res} resources reported, {n_many} rounds):")
    out(f"  one file {t_one * 1000:.1f} ms, 50 separate {t_sep * 1000:.1f} ms, ratio {r_many:.2f}x "
        f"(target <= {TARGET_MANY}: {verdict(r_many, TARGET_MANY)})")
    out()
    out("every samples/<situation> pair (interleaved medians; a big serveConfigV2 is one scalar to the")
    out("bare parse but a document to read for any tool that looks at Serve, hence the floor column)")
    out(f"  {'sample':<31} {'kind':<10} {'bytes':>7} {'parse ms':>9} {'floor':>7} {'analyze':>8} "
        f"{'/floor':>7} {'rounds':>7}")
    for name, kind, size, t_parse, r_floor, r_an, n in per_sample:
        out(f"  {name:<31} {kind:<10} {size:>7,} {t_parse * 1000:>9.2f} {r_floor:>6.2f}x {r_an:>7.2f}x "
            f"{r_an / r_floor:>6.2f}x {n:>7}")
    out()
    mem_ratio = mem_an / mem_parse
    out("peak traced memory (tracemalloc), 645 KB pair:")
    out(f"  bare parse {mem_parse / 2**20:.1f} MiB, analyze {mem_an / 2**20:.1f} MiB, ratio {mem_ratio:.2f}x "
        f"(target <= {TARGET_MEMORY}: {verdict(mem_ratio, TARGET_MEMORY)})")
    out()
    out(f"total run time {elapsed:.0f} s")


if __name__ == "__main__":
    main()
