"""Conformance: the prediction against KubeRay's own reconcilers (conformance/README.md).

For each KubeRay version (v1.7.0: source from $KUBERAY_SRC, the Go proxy or $KUBERAY_GIT;
v1.6.2: the Go proxy) builds the Go harness (module and build caches under .cache/conformance/),
runs a fixed seeded set of generated cases through it and through ``diffing.analyze`` with that
``kuberay_version``, and fails on any disagreement that the version's limits file
(conformance/limits.json, limits-v1.6.2.json) does not document. A version that cannot be built
here (no ``go``, no source) is skipped and says so loudly; the other still runs.
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
# Cases per version: CONFORMANCE_CASES (v1.7.0), CONFORMANCE_CASES_V1_6_2 (v1.6.2).
COUNTS = {"1.7.0": int(os.environ.get("CONFORMANCE_CASES", "600")),
          "1.6.2": int(os.environ.get("CONFORMANCE_CASES_V1_6_2", "300"))}
MINIMUM = {"1.7.0": 500, "1.6.2": 250}  # a default run must not silently shrink


def _skip(reason: str) -> None:
    # pytest -ra (pyproject's addopts) lists the reason in the summary of every run.
    message = f"CONFORMANCE NOT RUN: {reason}"
    print(f"\n*** {message} ***", file=sys.stderr)
    pytest.skip(message)


@pytest.fixture(scope="module", params=harness.VERSIONS, ids=lambda v: f"kuberay-v{v}")
def built(request: pytest.FixtureRequest) -> tuple[str, str]:
    version = request.param
    if not shutil.which("go"):
        _skip(f"KubeRay v{version}: no `go` on PATH; the prediction was not checked against "
              "KubeRay's reconcilers")
    log: list[str] = []
    try:
        path = harness.build(log, version)
    except harness.Unavailable as exc:
        _skip(f"KubeRay v{version}: {exc}")
    print("\n".join(log))
    return version, path


@pytest.mark.timeout(1500)
def test_prediction_conforms_to_kuberay(built: tuple[str, str]) -> None:
    version, binary = built
    count = COUNTS[version]
    t0 = time.monotonic()
    cases = gen.generate(harness.src_dir(version), SEED, count, version)
    results = harness.run(binary, cases, version=version)
    report = compare.evaluate(cases, results, compare.load_limits(version=version))
    elapsed = time.monotonic() - t0
    print(f"\nconformance v{version}: {len(cases)} cases in {elapsed:.1f} s; agreement: " +
          ", ".join(f"{f} {a['agree']}/{a['of']}" for f, a in report["agreement"].items()))
    assert len(cases) >= MINIMUM[version] or count < MINIMUM[version]
    # The oracle must run (almost) every case: a harness that skips is no judge.
    assert len(report["skipped"]) <= len(cases) // 50, report["skipped"][:5]
    # Every family of cases.FAMILY_SHARE (creates, deletes, v1alpha1 writes...) is in the set and run.
    assert set(gen.FAMILY_SHARE) <= set(report["agreementByFamily"]), sorted(report["agreementByFamily"])
    unexplained = [{k: d[k] for k in ("id", "field", "python", "oracle")} for d in report["unexplained"]]
    assert not unexplained, (
        f"{len(unexplained)} disagreement(s) between the prediction and KubeRay v{version}'s reconcilers "
        f"that {os.path.relpath(compare.limits_path(version), ROOT)} does not document (reproduce one "
        f"with `python scripts/conformance.py show --kuberay {version} ID`):\n" +
        json.dumps(unexplained[:20], indent=1))


@pytest.mark.parametrize("version", harness.VERSIONS)
def test_every_limit_is_documented(version: str) -> None:
    limits = compare.load_limits(version=version)
    assert len({lim["id"] for lim in limits}) == len(limits)
    for lim in limits:
        assert lim.get("id") and lim.get("field") in compare.FIELDS and lim.get("reason"), lim
        assert lim.get("status") in ("limit", "open: prediction differs"), lim
        assert set(lim.get("mutations") or ()) | set(lim.get("anyMutation") or ()) <= set(gen.CATALOGUE), lim
        assert "difference" not in lim or lim["field"] == "hash", lim


@pytest.mark.parametrize("version", harness.VERSIONS)
def test_generator_is_seeded(version: str) -> None:
    a = gen.generate(None, SEED, 120, version)
    b = gen.generate(None, SEED, 120, version)
    assert [c["id"] for c in a] == [c["id"] for c in b]
    assert all(c["before"] != c["after"] and c["version"] == version for c in a)
    known = gen.GATES[version]
    assert known is None or all(set(c["featureGates"]) <= known for c in a)


@pytest.mark.parametrize("version", harness.VERSIONS)
def test_fixed_sets_have_every_family(version: str) -> None:
    """The seeded sets CI runs hold creates and deletes of every kind, invalid creates, v1alpha1
    writes and held-back objects (managedBy elsewhere, created suspended)."""
    found = harness.src_dir(version)
    src = found if os.path.isdir(os.path.join(found, "config", "samples")) else None
    cases = gen.generate(src, SEED, COUNTS[version], version)
    assert len(cases) == COUNTS[version]
    families: dict[str, set[str]] = {}
    for c in cases:
        families.setdefault(c.get("family") or "update", set()).add(c["kind"])
    assert set(gen.FAMILY_SHARE) | {"update"} == set(families), families
    if src:  # KubeRay's samples give every kind
        assert families["create"] == families["delete"] == set(gen.KINDS), families
    for c in cases:
        op = gen.operation(c)
        assert (op == "create") == ("lifecycle.create" in c["mutations"])
        assert (op == "delete") == ("lifecycle.delete" in c["mutations"])


def test_lifecycle_and_v1alpha1_cases() -> None:
    base = next(b for b in gen.bases(None) if b.obj["kind"] == "RayService" and "+" not in b.name)
    created = gen.make_case(base, ("lifecycle.create", "invalid.deletionDelay_negative"), SEED)
    assert created and created["before"] is None
    assert created["after"]["spec"]["rayClusterDeletionDelaySeconds"] == -1
    deleted = gen.make_case(base, ("lifecycle.delete", "apiVersion.v1alpha1"), SEED)
    assert deleted and deleted["after"] is None and deleted["before"]["apiVersion"] == "ray.io/v1alpha1"
    plain = gen.make_case(base, ("lifecycle.create",), SEED)
    assert plain and plain["after"] == base.obj and compare.operation(plain) == "create"
    assert gen.make_case(base, ("lifecycle.create", "lifecycle.delete"), SEED) is None
    moved = gen.make_case(base, ("apiVersion.v1alpha1",), SEED)
    assert moved and moved["before"]["apiVersion"] == "ray.io/v1"
    assert moved["after"]["apiVersion"] == "ray.io/v1alpha1"
    alpha = next(b for b in gen.bases(None) if b.name.endswith("+v1alpha1"))
    assert gen.make_case(alpha, ("apiVersion.v1alpha1",), SEED) is None  # already v1alpha1
    # A delete is compared on admission, rollout and accelerators only.
    py = {"admission": "accepted"}
    assert compare.agreement_fields(py, {"admission": "accepted", "hash": "x"}, "delete") == \
        ["admission", "rollout", "accelerators"]
