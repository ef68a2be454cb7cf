"""Conformance: the prediction against KubeRay v1.7.0's own reconcilers (conformance/README.md).

Builds the Go harness (module and build caches under .cache/conformance/), runs a fixed seeded
set of generated cases through it and through ``diffing.analyze``, and fails on any disagreement
that conformance/limits.json does not document. Without ``go`` (or without KubeRay's source) the
test is skipped and says so loudly.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import time

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, ROOT)

from conformance import cases as gen  # noqa: E402
from conformance import compare, harness  # noqa: E402

SEED = 7
COUNT = int(os.environ.get("CONFORMANCE_CASES", "600"))


def _skip(reason: str) -> None:
    # pytest -ra (pyproject's addopts) lists the reason in the summary of every run.
    message = f"CONFORMANCE NOT RUN: {reason}"
    print(f"\n*** {message} ***", file=sys.stderr)
    pytest.skip(message)


@pytest.fixture(scope="module")
def binary() -> str:
    if not shutil.which("go"):
        _skip("no `go` on PATH; the prediction was not checked against KubeRay's reconcilers")
    log: list[str] = []
    try:
        path = harness.build(log)
    except harness.Unavailable as exc:
        _skip(str(exc))
    print("\n".join(log))
    return path


@pytest.mark.timeout(1500)
def test_prediction_conforms_to_kuberay(binary: str) -> None:
    t0 = time.monotonic()
    cases = gen.generate(harness.SRC, SEED, COUNT)
    results = harness.run(binary, cases)
    report = compare.evaluate(cases, results, compare.load_limits())
    elapsed = time.monotonic() - t0
    print(f"\nconformance: {len(cases)} cases in {elapsed:.1f} s; agreement: " +
          ", ".join(f"{f} {a['agree']}/{a['of']}" for f, a in report["agreement"].items()))
    assert len(cases) >= 500 or COUNT < 500
    # The oracle must run (almost) every case: a harness that skips is no judge.
    assert len(report["skipped"]) <= len(cases) // 50, report["skipped"][:5]
    unexplained = [{k: d[k] for k in ("id", "field", "python", "oracle")} for d in report["unexplained"]]
    assert not unexplained, (
        f"{len(unexplained)} disagreement(s) between the prediction and KubeRay's reconcilers that "
        "conformance/limits.json does not document (reproduce one with "
        "`python scripts/conformance.py show ID`):\n" + json.dumps(unexplained[:20], indent=1))


def test_every_limit_is_documented() -> None:
    for lim in compare.load_limits():
        assert lim.get("id") and lim.get("field") in compare.FIELDS and lim.get("reason"), lim
        assert lim.get("status") in ("limit", "open: prediction differs"), lim
        assert set(lim.get("mutations") or ()) | set(lim.get("anyMutation") or ()) <= set(gen.CATALOGUE), lim


def test_generator_is_seeded() -> None:
    a = gen.generate(None, SEED, 120)
    b = gen.generate(None, SEED, 120)
    assert [c["id"] for c in a] == [c["id"] for c in b]
    assert all(c["before"] != c["after"] for c in a)
