"""diffing.operator.judge against the real operators: KubeRay v1.6.2 builds each base, v1.7.0
takes over (conformance/upgrade.py, report in .cache/conformance/upgrade-report.json; run
``python scripts/conformance.py upgrade`` first). Skipped, loudly, without that report or the
v1.6.2 sources the bases come from."""

from __future__ import annotations

import json
import os
import sys

import pytest

from conformance import harness
from conformance import upgrade as upg
from diffing.operator.detect import detect
from diffing.operator.judge import IN_PLACE, NONE, REANNOTATED, REBUILD, UNTOUCHED, judge

# The judge's first-reconcile outcome in the oracle's classification (conformance/README.md).
ORACLE = {
    ("RayService", REANNOTATED): "serve-resubmitted", ("RayService", IN_PLACE): "cluster-in-place",
    ("RayService", REBUILD): "new-cluster", ("RayService", UNTOUCHED): "serve-resubmitted",
    ("RayService", NONE): "untouched",
    ("RayCluster", REANNOTATED): "annotations-only", ("RayCluster", UNTOUCHED): "untouched",
    ("RayCluster", NONE): "untouched", ("RayCluster", REBUILD): "pods-recreated",
    ("RayJob", UNTOUCHED): "untouched", ("RayJob", NONE): "untouched",
}


def _skip(reason: str) -> None:
    message = f"CONFORMANCE NOT RUN: operator-upgrade judge: {reason}"
    print(f"\n*** {message} ***", file=sys.stderr)
    pytest.skip(message)


def _report() -> dict:
    if not os.path.isfile(upg.REPORT):
        _skip(f"no {upg.REPORT} (run `python scripts/conformance.py upgrade`)")
    if not os.path.isdir(harness.src_dir(upg.FROM)):
        _skip(f"no KubeRay v{upg.FROM} source in {harness.src_dir(upg.FROM)}")
    with open(upg.REPORT, encoding="utf-8") as f:
        return json.load(f)


def test_judge_agrees_with_the_real_operators() -> None:
    report = _report()
    records = {r["base"]: r for r in report["records"] if not r["error"]}
    changes = detect([("Chart.yaml", "dependencies: [{name: kuberay-operator, version: 1.6.2}]",
                       "dependencies: [{name: kuberay-operator, version: 1.7.0}]")])
    outcome, rebuilt, hashed, hash_agree = [], 0, 0, 0
    for case in upg.base_cases():
        rec = records.get(case["id"])
        if rec is None:
            continue
        up = judge(changes, [(case["id"], json.dumps(case["before"]))])
        (o,) = up.objects
        outcome.append((case["id"], ORACLE[(o.kind, o.first_reconcile)], rec["classification"]))
        rebuilt += o.rebuilds == (rec["classification"] in ("new-cluster", "pods-recreated"))
        if rec["goHash"]["differs"] is not None and o.hash_before is not None:
            hashed += 1
            hash_agree += (o.hash_before != o.hash_after) == rec["goHash"]["differs"]
    wrong = [x for x in outcome if x[1] != x[2]]
    print(f"\noperator upgrade {upg.FROM} -> {upg.TO}: first reconcile {len(outcome) - len(wrong)}/"
          f"{len(outcome)}, rebuild {rebuilt}/{len(outcome)}, hash change {hash_agree}/{hashed}")
    assert len(outcome) >= 60
    assert rebuilt == len(outcome)
    assert hash_agree == hashed
    assert wrong == []
