"""Benchmark of the PR flow's rendering on a monorepo, against the renderer alone, in one run.

    python bench/bench_render.py [--overlays 40] [--repeat 5]

Builds a real git repository with one shared kustomize base (KubeRay's LLM RayService) and N
overlays (each its own namespace and image tag), then commits a change to the base: every
overlay is affected, so the PR needs N roots × 2 revisions = 2N renders. Times, interleaved:

* ``total``: what ``rayservice-impact git BASE HEAD`` does: the changed paths, two
  ``git archive`` snapshots, root discovery, the 2N renders on the bounded pool, and the
  analysis of the rendered RayServices;
* ``renderer alone``: the same 2N ``kubectl kustomize`` runs on already unpacked snapshots,
  on a pool of the same width (the cost no tool can avoid), and sequentially for reference;
* the analysis of the rendered output against the C-loader parse of the same texts.

Prints medians and ratios. Not a test: the machine is noisy, so only ratios measured together
mean anything.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "render"))
from gitops import SAMPLE, commit, git, write  # noqa: E402

import diffing  # noqa: E402
from app.render.kustomize import kustomize_command  # noqa: E402
from app.render.pipeline import RenderOptions, analyze_rendered  # noqa: E402
from app.render.repo import render_git_range  # noqa: E402
from app.render.snapshot import git_snapshot  # noqa: E402


def build(tmp: Path, overlays: int) -> tuple[Path, str, str]:
    repo = tmp / "mono"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    write(repo, "base/rayservice.yaml", SAMPLE.read_text())
    write(repo, "base/kustomization.yaml", {"resources": ["rayservice.yaml"]})
    for i in range(overlays):
        write(repo, f"envs/team-{i:02d}/kustomization.yaml", {
            "namespace": f"team-{i:02d}", "resources": ["../../base"],
            "images": [{"name": "rayproject/ray-llm", "newTag": f"2.52.{i}-py311-cu128"}]})
    base = commit(repo, "base")
    text = (repo / "base/rayservice.yaml").read_text().replace('num-cpus: "0"', 'num-cpus: "1"', 1)
    (repo / "base/rayservice.yaml").write_text(text)
    head = commit(repo, "head")
    return repo, base, head


def total(repo: Path, base: str, head: str, options: RenderOptions) -> tuple[float, int, diffing.Report]:
    t = time.perf_counter()
    rendered = render_git_range(str(repo), base, head, None, options)
    report = analyze_rendered(rendered)
    return time.perf_counter() - t, rendered.renders, report


def renderer_alone(snaps: list[str], folders: list[str], workers: int) -> float:
    _, argv = kustomize_command()
    jobs = [(s, f) for s in snaps for f in folders]

    def one(job: tuple[str, str]) -> None:
        subprocess.run([*argv, os.path.join(job[0], job[1])], check=True, capture_output=True)

    t = time.perf_counter()
    if workers == 1:
        for job in jobs:
            one(job)
    else:
        with ThreadPoolExecutor(max_workers=workers) as pool:
            list(pool.map(one, jobs))
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--overlays", type=int, default=40)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    options = RenderOptions()
    folders = [f"envs/team-{i:02d}" for i in range(args.overlays)]
    with tempfile.TemporaryDirectory() as tmp:
        repo, base, head = build(Path(tmp), args.overlays)
        with git_snapshot(str(repo), base) as b, git_snapshot(str(repo), head) as h:
            totals, pooled, seq = [], [], []
            renders, report = 0, None
            for _ in range(args.repeat):
                dt, renders, report = total(repo, base, head, options)
                totals.append(dt)
                pooled.append(renderer_alone([b.root, h.root], folders, options.workers))
            for _ in range(max(1, args.repeat // 2)):
                seq.append(renderer_alone([b.root, h.root], folders, 1))
        rendered = render_git_range(str(repo), base, head, None, options)
    texts = [s.text for s in rendered.before + rendered.after]
    parse, analyse = [], []
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    for _ in range(args.repeat * 3):
        t = time.perf_counter()
        for text in texts:
            list(yaml.load_all(text, Loader=loader))
        parse.append(time.perf_counter() - t)
        t = time.perf_counter()
        analyze_rendered(rendered)
        analyse.append(time.perf_counter() - t)
    assert report is not None
    med = statistics.median
    print(f"monorepo: 1 base, {args.overlays} overlays; change to the base -> {renders} renders "
          f"({len(report.resources)} RayServices, decision {report.decision}); pool width {options.workers}")
    print(f"  total (git archive x2, discovery, renders, analysis): {med(totals) * 1000:8.1f} ms")
    print(f"  renderer alone, same pool width:                     {med(pooled) * 1000:8.1f} ms")
    print(f"  renderer alone, sequential:                          {med(seq) * 1000:8.1f} ms")
    print(f"  ratio total / renderer alone (goal <= 1.3):          {med(totals) / med(pooled):8.2f}")
    print(f"  analysis of the rendered output:                     {med(analyse) * 1000:8.1f} ms")
    print(f"  C-loader parse of the same texts:                    {med(parse) * 1000:8.1f} ms")
    print(f"  ratio analysis / parse (goal <= 3):                  {med(analyse) / med(parse):8.2f}")


if __name__ == "__main__":
    main()
