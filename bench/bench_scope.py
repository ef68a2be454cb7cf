"""Benchmark of scoping a change with many files: root discovery and root matching, against
listing the tree alone, in one run.

    python bench/bench_scope.py [--sizes 1000,10000,50000] [--roots 200]

Lays out a snapshot folder with ``--roots`` kustomize overlays over one base and N plain files
spread over folders (half YAML, each a plain-file root; no RayService in them), marks all N as
changed, and times, interleaved:

* ``scope``: :func:`app.render.roots.discover` of the snapshot plus the matching of the N
  changed paths to the roots that read them (:class:`app.render.roots.PathIndex`), i.e. what
  :func:`app.render.pipeline.render_change` does before it renders anything;
* ``walk``: the iterative walk of the same tree alone (what no scoping can avoid).

Prints medians, the ratio, and the log-log slope of ``scope`` over N (target: about 1, linear;
the pattern-per-root matching it replaced was quadratic: 10 000 files took 38 s). Not a test.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from app.render.roots import PathIndex, discover, walk  # noqa: E402
from app.render.snapshot import Snapshot  # noqa: E402


def layout(top: Path, files: int, roots: int) -> list[str]:
    (top / "base").mkdir(parents=True)
    (top / "base" / "kustomization.yaml").write_text("resources: [cm.yaml]\n")
    (top / "base" / "cm.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n")
    for i in range(roots):
        d = top / "overlays" / f"o{i}"
        d.mkdir(parents=True)
        (d / "kustomization.yaml").write_text(f"resources: [../../base]\nnamePrefix: o{i}-\n")
    changed = []
    for i in range(files):
        rel = f"docs/d{i % 97}/s{i % 13}/f{i}.{'yaml' if i % 2 else 'md'}"  # half are file roots
        p = top / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text("x\n")
        changed.append(rel)
    return changed


def scope(top: Path, changed: list[str]) -> int:
    disc = discover(Snapshot(str(top), "bench"))
    index = PathIndex(disc.roots.values())
    return sum(len(index.readers(p)) for p in changed)


def tree(top: Path) -> int:
    return sum(len(names) for _, names in walk(str(top)))


def median_pair(top: Path, changed: list[str], repeat: int) -> tuple[float, float]:
    a, b = [], []
    for _ in range(repeat):
        t = time.perf_counter()
        scope(top, changed)
        a.append(time.perf_counter() - t)
        t = time.perf_counter()
        tree(top)
        b.append(time.perf_counter() - t)
    return statistics.median(a), statistics.median(b)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="1000,10000,50000")
    ap.add_argument("--roots", type=int, default=200)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    rows = []
    print(f"{'files':>8} {'scope s':>9} {'walk s':>9} {'ratio':>6}")
    for n in sizes:
        with tempfile.TemporaryDirectory() as tmp:
            changed = layout(Path(tmp), n, args.roots)
            s, w = median_pair(Path(tmp), changed, args.repeat)
        rows.append((n, s))
        print(f"{n:>8} {s:>9.3f} {w:>9.3f} {s / w:>6.2f}")
    if len(rows) > 1:
        (n0, s0), (n1, s1) = rows[0], rows[-1]
        print(f"log-log slope of scope over files: {math.log(s1 / s0) / math.log(n1 / n0):.2f} (target ~1)")


if __name__ == "__main__":
    main()
