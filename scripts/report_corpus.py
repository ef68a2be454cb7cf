"""Every report of a corpus, hashed: to show a change to the core leaves reports as they were.

``python -m scripts.report_corpus out.json`` analyses every sample (created, unchanged, and as
the before/after pair where a sample has one) and every conformance case of both supported
KubeRay versions (all single mutations of every base plus as many combinations), each with no
headroom and with a small one, and writes hashes of each report (JSON, Markdown,
annotations). Compare two outputs with ``python -m scripts.report_record old.json new.json``.
"""

from __future__ import annotations

import glob
import json
import os
import sys
from typing import Any

import yaml

import diffing
from conformance import cases, compare
from scripts.report_record import digest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
KUBERAY = os.environ.get("KUBERAY_SRC", os.path.join(ROOT, ".cache/conformance/src/ray-operator-v1.7.0"))
ROOMS: tuple[dict[str, str] | None, ...] = (None, {"nvidia.com/gpu": "2", "cpu": "8", "memory": "32Gi"})


def _run(out: dict[str, Any], key: str, before: str, after: str, **kw: Any) -> None:
    for i, room in enumerate(ROOMS):
        try:
            out[f"{key}@{i}"] = digest(diffing.analyze(before, after, headroom=room, **kw))
        except diffing.DiffingError as exc:
            out[f"{key}@{i}"] = {"error": f"{type(exc).__name__}: {exc}"}


def main(path: str) -> None:
    out: dict[str, Any] = {}
    files = sorted(glob.glob(os.path.join(ROOT, "samples/**/*.yaml"), recursive=True)
                   + glob.glob(os.path.join(ROOT, "tests/data/**/*.yaml"), recursive=True))
    for f in files:
        text = open(f, encoding="utf-8", errors="replace").read()
        rel = os.path.relpath(f, ROOT)
        _run(out, f"create:{rel}", "", text)
        _run(out, f"same:{rel}", text, text)
        if f.endswith("/before.yaml") and os.path.exists(f[:-len("before.yaml")] + "after.yaml"):
            _run(out, f"pair:{rel}", text, open(f[:-len("before.yaml")] + "after.yaml").read())
    src = KUBERAY if os.path.isdir(KUBERAY) else None
    for version in ("1.7.0", "1.6.2"):
        for case in cases.generate(src, seed=7, version=version):
            before = yaml.safe_dump(case["before"], sort_keys=False)
            after = yaml.safe_dump(case["after"], sort_keys=False)
            _run(out, f"case:{version}:{case['id']}", before, after, kuberay_version=version,
                 policy=compare._policy(case))
    with open(path, "w") as fh:
        json.dump(out, fh, indent=0, sort_keys=True)
    print(f"{len(out)} reports -> {path}")


if __name__ == "__main__":
    main(sys.argv[1])
