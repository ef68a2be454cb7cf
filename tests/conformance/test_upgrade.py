"""The operator-upgrade case (conformance/README.md, "The operator-upgrade case").

Every base the generator knows under KubeRay v1.6.2 is created and reconciled by v1.6.2's
reconcilers and its world dumped (conformance/upgrade.go). Two checks:

* the round trip, v1.6.2 only (CI: v1.6.2 comes from the Go proxy): the dumped world loaded into
  v1.6.2 again and reconciled changes nothing but what any operator restart does (the Serve
  config, cached in the operator's memory, is sent once more, unchanged);
* the upgrade, v1.6.2 → v1.7.0 (v1.7.0's source is not on the proxy, so mostly local): what
  KubeRay v1.7.0 does with v1.6.2's objects, against what its source says it does.

A version that cannot be built is skipped, loudly, as in test_conformance.py.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from typing import Any

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, ROOT)

from conformance import harness  # noqa: E402
from conformance import upgrade as upg  # noqa: E402

Dumped = tuple[list[dict[str, Any]], list[dict[str, Any]]]  # the cases, their worlds
MINIMUM_BASES = 60  # v1.6.2's samples and the project's: a run must not silently shrink


def _skip(reason: str) -> None:
    message = f"CONFORMANCE NOT RUN: {reason}"
    print(f"\n*** {message} ***", file=sys.stderr)
    pytest.skip(message)


def _build(version: str) -> str:
    if not shutil.which("go"):
        _skip(f"operator upgrade, KubeRay v{version}: no `go` on PATH")
    log: list[str] = []
    try:
        path = harness.build(log, version)
    except harness.Unavailable as exc:
        _skip(f"operator upgrade, KubeRay v{version}: {exc}")
    print("\n".join(log))
    return path


@pytest.fixture(scope="module")
def old_build() -> str:
    return _build(upg.FROM)


@pytest.fixture(scope="module")
def dumped(old_build: str) -> Dumped:
    cases = upg.base_cases()
    t0 = time.monotonic()
    worlds = upg.dump_worlds(old_build, cases)
    print(f"\nv{upg.FROM}: {len(worlds)} worlds dumped in {time.monotonic() - t0:.1f} s")
    assert len(cases) >= MINIMUM_BASES
    bad = [(w["id"], w.get("error") or "no fixpoint") for w in worlds
           if w.get("error") or not w.get("converged")]
    assert not bad, bad[:5]
    # The fake client stores what the operator sent; the API server would have pruned and
    # defaulted every ray.io write. Nothing the operator writes may differ from that (else the
    # old operator ran on objects a real cluster would not hold).
    store = {w["id"]: w["storeDefaulted"] for w in worlds if w.get("storeDefaulted")}
    assert not store, json.dumps(store, indent=1)[:3000]
    return cases, worlds


@pytest.mark.timeout(900)
def test_restart_round_trip_changes_nothing(old_build: str, dumped: Dumped) -> None:
    cases, worlds = dumped
    t0 = time.monotonic()
    restarts = upg.upgrade_worlds(old_build, worlds, version=upg.FROM)
    print(f"\nv{upg.FROM} → v{upg.FROM} (restart): {len(restarts)} worlds in {time.monotonic() - t0:.1f} s")
    problems = []
    for case, r in zip(cases, restarts, strict=True):
        eff = upg.effects(r)
        serve = eff.pop("serve", None)
        why = []
        if r.get("error") or not r.get("converged"):
            why.append(r.get("error") or "no fixpoint")
        if r.get("schemaRead"):
            why.append(f"reading through the same CRD changed {r['schemaRead']}")
        if eff:
            why.append(f"changed {eff}")
        if serve and (case["kind"] != "RayService" or serve["sameConfig"] != serve["submissions"]):
            why.append(f"Serve {serve}")
        if r.get("classification") not in ("untouched", "serve-resubmitted"):
            why.append(r.get("classification"))
        if why:
            problems.append((case["id"], why))
    assert not problems, json.dumps(problems[:10], indent=1)


@pytest.mark.timeout(900)
def test_upgrade_to_v1_7_0(dumped: Dumped) -> None:
    new_build = _build(upg.TO)
    cases, worlds = dumped
    t0 = time.monotonic()
    ups = upg.upgrade_worlds(new_build, worlds)
    records = [upg.record(c, w, u, None) for c, w, u in zip(cases, worlds, ups, strict=True)]
    summary = upg.summarize(records)
    print(f"\nv{upg.FROM} → v{upg.TO}: {len(records)} worlds in {time.monotonic() - t0:.1f} s; "
          f"{json.dumps(summary['byClassification'])}")
    assert not summary["errors"] and not summary["unconverged"], (summary["errors"], summary["unconverged"])
    by_id = {u["id"]: u for u in ups}
    problems: list[tuple[Any, ...]] = []
    for case, rec in zip(cases, records, strict=True):
        up = by_id[case["id"]]
        # v1.7.0 rewrites an active cluster whose ray.io/kuberay-version differs in place
        # (rayservice_controller.go:1363-1367, :1221-1233) before it compares hashes
        # (shouldPrepareNewCluster, :244): no RayService gets a new cluster, no pod moves.
        if rec["classification"] in ("new-cluster", "pods-recreated"):
            problems.append((case["id"], rec["classification"], rec["facts"]))
        for h in up.get("hashes") or []:
            after = h.get("after") or {}
            want = {"ray.io/kuberay-version": "v" + upg.TO, upg.HASH_KEY: h.get("serviceGoal")}
            if (h.get("owner") or "").startswith("RayService/") and after and \
                    any(after.get(k) != v for k, v in want.items()):
                problems.append((case["id"], "RayService cluster not re-annotated", after, want))
            # A Recreate cluster's head pod gets the new hash and version, and stays
            # (raycluster_controller.go:1481-1494).
            spec = ((case["before"].get("spec") or {}).get("upgradeStrategy") or {})
            head = h.get("headAfter") or {}
            want = {"ray.io/kuberay-version": "v" + upg.TO, upg.RECREATE_KEY: h.get("clusterGoal")}
            recreate = case["kind"] == "RayCluster" and spec.get("type") == "Recreate" and \
                case["before"]["apiVersion"] == "ray.io/v1"  # v1alpha1 has no upgradeStrategy
            if recreate and head and any(head.get(k) != v for k, v in want.items()):
                problems.append((case["id"], "Recreate head pod not re-annotated", head, want))
        # diffing's v1.7.0 hash of the stored object is KubeRay v1.7.0's.
        if rec["pythonMatchesGo"] and not rec["pythonMatchesGo"][upg.TO]:
            problems.append((case["id"], "Python's v1.7.0 hash differs from KubeRay's", rec["pythonHash"],
                             rec["goHash"]))
    print(f"Go hash of the same stored spec differs: {summary['goHashDiffers']}/{summary['goHashCompared']}; "
          f"Python's 1.6.2 hash equals KubeRay v1.6.2's: {summary['pythonMatchesGo'][upg.FROM]}/"
          f"{summary['pythonComparedWithGo']}")
    assert not problems, json.dumps(problems[:10], indent=1)


def test_effects_leave_status_out_and_count_new_objects() -> None:
    up = {"objects": {"RayService": {"status": ["svc"]},
                      "Pod": {"created": ["a-x1", "a-x2"], "changed": {"h": ["metadata.annotations[k]"]}}},
          "serve": {"submissions": 1, "sameConfig": 1}}
    assert upg.effects(up) == {"Pod": {"created": 2, "changed": {"h": ["metadata.annotations[k]"]}},
                               "serve": {"submissions": 1, "sameConfig": 1}}
    assert upg.facts(upg.effects(up)) == ["Pod +2 annotations", "serve x1"]
