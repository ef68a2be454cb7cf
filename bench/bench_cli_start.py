"""Benchmark of the command line's cold start: a whole ``rayservice-impact analyze`` process on a
small pair against the least any Python tool reading those two files does, in one run (issue 24).

    python bench/bench_cli_start.py                  # hyperfine when on PATH, else subprocess timing
    python bench/bench_cli_start.py --timer subprocess --runs 60
    python bench/bench_cli_start.py --no-callgrind   # no instruction counts

Each row is a whole process, as CI and pre-commit hooks start it:

* ``python -c pass``: the interpreter's own start (with this environment's site-packages), for
  reference;
* **floor** (= 1.00): ``python -c "import yaml; [list(yaml.load_all(open(f),
  Loader=yaml.CSafeLoader)) for f in (BEFORE, AFTER)]"``: what any Python tool that reads the two
  files pays;
* **CLI**: ``rayservice-impact analyze BEFORE AFTER``: the console script beside this Python when
  it loads this checkout's code, else that script's body run in this checkout (an editable
  install of another copy would time that copy); its JSON report thrown away (the pair's answer
  is a hold: exit code 3).

Timer: ``hyperfine`` when it is on PATH (``apt-get install hyperfine``; ``-N``, no shell in
between; each command's runs in one block, so a slow moment of the machine lands on one row), else
this script's own loop (``--timer subprocess``): every command once per round in a rotating order,
CPU time (user + sys) from ``getrusage`` of the children. The first line of the report says which
measured. Medians of wall time, the spread as the 25th-75th percentiles, and the mean CPU time;
ratios are to the floor measured in the same run. The children run with ``RAYSERVICE_IMPACT_*``
and ``PYTHONDONTWRITEBYTECODE`` removed from the environment, after one plain run of each that
writes the .pyc files: an installed package has its bytecode compiled, and a child that compiled
sources would measure the compiler.

Instruction counts (``valgrind --tool=callgrind``, one child per command, ``PYTHONHASHSEED=0``):
deterministic where the times are not, on a shared machine; blind to cache misses and I/O.

Target: the CLI's median wall time <= 2x the floor's. Not a test and asserts nothing: the machine
is noisy, so only ratios measured side by side in one run mean anything.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import resource
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "samples" / "gpu-image-bump"
TARGET = 2.0


# What pip's console script runs (its sys.argv[0] tidying aside).
_CONSOLE_SCRIPT = "import sys; from app.cli import main; sys.exit(main())"


def _imports_this_checkout(script: Path) -> bool:
    """Whether the console script beside this Python loads this checkout's ``app``."""
    first = script.read_text(errors="replace").splitlines()[:1]
    python = first[0][2:].strip() if first and first[0].startswith("#!") else sys.executable
    proc = subprocess.run([python, "-c", "import app; print(app.__file__)"], capture_output=True,
                          text=True, cwd="/", env=child_env())
    return proc.returncode == 0 and Path(proc.stdout.strip()).resolve().is_relative_to(ROOT)


def commands(before: Path, after: Path) -> list[tuple[str, list[str], int]]:
    """(label, argv, expected exit code) of each row; the floor is the second."""
    py = sys.executable
    script = Path(py).with_name("rayservice-impact")
    if script.is_file() and _imports_this_checkout(script):
        cli, name = [str(script)], script.name
    else:
        # The console script's own body, run in this checkout (cwd first on sys.path): a script
        # installed from another copy (an editable install of another worktree) would time that
        # copy's code, and ``python -m app`` adds runpy, which the console script does not load.
        cli, name = [py, "-c", _CONSOLE_SCRIPT], "app.cli (checkout)"
    floor = ("import yaml; [list(yaml.load_all(open(f), Loader=yaml.CSafeLoader)) "
             f"for f in ({str(before)!r}, {str(after)!r})]")
    return [
        ("python -c pass", [py, "-c", "pass"], 0),
        ("floor: import yaml + parse", [py, "-c", floor], 0),
        (f"CLI: {name} analyze",
         [*cli, "analyze", str(before), str(after)], 3),
    ]


def child_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("RAYSERVICE_IMPACT_") and k != "PYTHONDONTWRITEBYTECODE"}
    env.update(extra)
    return env


def check(rows: list[tuple[str, list[str], int]]) -> None:
    """One plain run of each: it writes the .pyc files and shows the command works."""
    for label, argv, code in rows:
        proc = subprocess.run(argv, env=child_env(), cwd=ROOT, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True)
        if proc.returncode != code:
            sys.exit(f"{label}: exit code {proc.returncode}, expected {code}\n{proc.stderr}")


def quartiles(times: list[float]) -> tuple[float, float]:
    q = statistics.quantiles(times, n=4) if len(times) > 1 else [times[0]] * 3
    return q[0], q[2]


def with_hyperfine(rows: list[tuple[str, list[str], int]], runs: int, warmup: int
                   ) -> tuple[str, list[dict[str, float]]]:
    version = subprocess.run(["hyperfine", "--version"], capture_output=True, text=True).stdout.strip()
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "hyperfine.json"
        argv = ["hyperfine", "-N", "--ignore-failure", "--warmup", str(warmup), "--runs", str(runs),
                "--style", "none", "--export-json", str(out)]
        argv += [shlex.join(a) for _, a, _ in rows]
        proc = subprocess.run(argv, env=child_env(), cwd=ROOT, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True)
        if proc.returncode:
            sys.exit(f"hyperfine failed ({proc.returncode}):\n{proc.stderr}")
        results = json.loads(out.read_text())["results"]
    stats = []
    for r in results:
        times = [t * 1000 for t in r["times"]]
        lo, hi = quartiles(times)
        stats.append({"median": statistics.median(times), "lo": lo, "hi": hi,
                      "cpu": (r["user"] + r["system"]) * 1000, "runs": len(times)})
    return f"{version} (-N, --warmup {warmup}, --runs {runs}; each command's runs in one block)", stats


def with_subprocess(rows: list[tuple[str, list[str], int]], runs: int, warmup: int
                    ) -> tuple[str, list[dict[str, float]]]:
    wall: list[list[float]] = [[] for _ in rows]
    cpu: list[list[float]] = [[] for _ in rows]
    env = child_env()
    for round_ in range(warmup + runs):
        for k in range(len(rows)):
            i = (k + round_) % len(rows)  # rotating order: a slow moment lands on every row
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            t = time.perf_counter()
            subprocess.run(rows[i][1], env=env, cwd=ROOT, stdout=subprocess.DEVNULL)
            elapsed = time.perf_counter() - t
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            if round_ >= warmup:
                wall[i].append(elapsed * 1000)
                cpu[i].append((after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1000)
    stats = []
    for times, cpus in zip(wall, cpu, strict=True):
        lo, hi = quartiles(times)
        stats.append({"median": statistics.median(times), "lo": lo, "hi": hi,
                      "cpu": statistics.fmean(cpus), "runs": len(times)})
    return (f"this script's subprocess loop ({warmup} warm-up rounds, {runs} rounds, rotating order; "
            "CPU from getrusage)"), stats


def instructions(argv: list[str]) -> int | None:
    proc = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *argv],
                          env=child_env(PYTHONHASHSEED="0"), cwd=ROOT, stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, text=True)
    m = re.search(r"Collected : (\d+)", proc.stderr)
    return int(m.group(1)) if m else None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--timer", choices=("auto", "hyperfine", "subprocess"), default="auto")
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--no-callgrind", action="store_true")
    ap.add_argument("--sample", type=Path, default=SAMPLE, help="a folder with before.yaml and after.yaml")
    args = ap.parse_args()
    before, after = args.sample / "before.yaml", args.sample / "after.yaml"
    rows = commands(before, after)
    check(rows)
    timer = args.timer
    if timer == "auto":
        timer = "hyperfine" if shutil.which("hyperfine") else "subprocess"
    if timer == "hyperfine" and not shutil.which("hyperfine"):
        sys.exit("hyperfine is not on PATH (apt-get install hyperfine), or use --timer subprocess")
    print(f"timing {len(rows)} commands ({args.runs} runs each) ...", file=sys.stderr)
    how, stats = (with_hyperfine if timer == "hyperfine" else with_subprocess)(rows, args.runs, args.warmup)
    counts: list[int | None] = [None] * len(rows)
    if not args.no_callgrind and shutil.which("valgrind"):
        print("instruction counts (callgrind) ...", file=sys.stderr)
        counts = [instructions(argv) for _, argv, _ in rows]

    size = before.stat().st_size + after.stat().st_size
    sample = args.sample.resolve()
    name = sample.relative_to(ROOT) if sample.is_relative_to(ROOT) else sample
    print(f"rayservice-impact CLI cold start: {name} ({size:,} bytes), Python {platform.python_version()}, "
          f"{os.cpu_count()} CPUs")
    print(f"measured by {how}; bytecode cached, as an installed package has it")
    print()
    floor = stats[1]
    header = (f"{'':34} {'wall median ms':>14} {'p25-p75 ms':>15} {'ratio':>7} {'CPU ms':>8} {'ratio':>7}"
              f" {'instructions':>14} {'ratio':>7}   target")
    print(header)
    for (label, _, _), s, n in zip(rows, stats, counts, strict=True):
        line = (f"{label:34} {s['median']:>14.1f} {s['lo']:>7.1f}-{s['hi']:<7.1f} "
                f"{s['median'] / floor['median']:>6.2f}x {s['cpu']:>8.1f} {s['cpu'] / floor['cpu']:>6.2f}x")
        line += (f" {n / 1e6:>12.1f} M {n / counts[1]:>6.2f}x" if n and counts[1]
                 else f" {'n/a':>14} {'':>7}")
        if label.startswith("CLI"):
            verdict = "ok" if s["median"] / floor["median"] <= TARGET else "OVER"
            line += f"   <= {TARGET:.1f}x wall: {verdict}"
        print(line)
    if not any(counts):
        print("instructions: skipped (--no-callgrind or no valgrind on PATH)")


if __name__ == "__main__":
    main()
