"""Benchmark of the GitLab CI job's analysis: one ``rayservice-impact git`` run that writes markdown,
JSON and Code Quality (``--output``) against one run per format, and against a single markdown run.

    python bench/bench_gitlab_ci.py [--overlays 8] [--repeat 5]

Builds a real git repository laid out as ``flux bootstrap`` leaves it (tests/render/fluxrepo.py)
with N Flux Kustomizations, each deploying its own overlay of one kustomize base (KubeRay's LLM
RayService), and commits a Serve config change to the base: every Kustomization is affected, so each run
renders N roots at two revisions with real ``kubectl kustomize``. Times, interleaved, whole CLI
processes:

* ``one format``: ``--format markdown`` alone (the baseline: what one analysis costs);
* ``--output``: ``--format markdown --output json=… --output codequality=…`` (what the job does);
* ``three runs``: markdown, json and codequality as three processes (what the job did before).

Prints medians and ratios to the baseline. Not a test: only ratios measured together mean anything.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "render"))
from fluxrepo import kustomization, make_flux_repo  # noqa: E402
from gitops import IMAGE, commit, write  # noqa: E402


def build(tmp: Path, overlays: int) -> tuple[Path, str, str]:
    repo = make_flux_repo(tmp)
    for i in range(overlays):
        write(repo, f"clusters/prod/app-{i}.yaml", kustomization(f"app-{i}", f"./apps/env-{i}"))
        write(repo, f"apps/env-{i}/kustomization.yaml", {
            "namespace": f"ray-{i}", "resources": ["../base"],
            "images": [{"name": IMAGE, "newTag": f"2.52.{i}-py311-cu128"}]})
    base = commit(repo, "overlays")
    path = repo / "apps/base/rayservice.yaml"
    path.write_text(path.read_text().replace("max_model_len: 1024", "max_model_len: 2048"))
    head = commit(repo, "a Serve change in the base")
    return repo, base, head


def run(repo: Path, base: str, head: str, fmt: str, *extra: str) -> int:
    args = [sys.executable, "-m", "app", "git", base, head, "--repo", str(repo), "--format", fmt, *extra]
    return subprocess.run(args, cwd=ROOT, capture_output=True, check=False).returncode


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--overlays", type=int, default=8)
    parser.add_argument("--repeat", type=int, default=5)
    opts = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        repo, base, head = build(Path(tmp), opts.overlays)
        out = Path(tmp) / "out"
        out.mkdir()
        outputs = ("--output", f"json={out / 'r.json'}", "--output", f"codequality={out / 'cq.json'}")
        cases = {
            "one format": lambda: [run(repo, base, head, "markdown")],
            "--output": lambda: [run(repo, base, head, "markdown", *outputs)],
            "three runs": lambda: [run(repo, base, head, f) for f in ("markdown", "json", "codequality")],
        }
        times: dict[str, list[float]] = {name: [] for name in cases}
        codes: set[int] = set()
        for _ in range(opts.repeat):
            for name, case in cases.items():
                t0 = time.perf_counter()
                codes.update(case())
                times[name].append(time.perf_counter() - t0)
    baseline = statistics.median(times["one format"])
    print(f"{opts.overlays} Flux Kustomizations, 2 revisions, median of {opts.repeat}; "
          f"exit codes {sorted(codes)}")
    for name, values in times.items():
        median = statistics.median(values)
        print(f"  {name:<11} {median:7.3f} s   x{median / baseline:.2f} of one format")


if __name__ == "__main__":
    main()
