from __future__ import annotations

import pathlib

from diffing.operator.detect import detect
from diffing.operator.judge import (
    CRDS_DEPENDS,
    CRDS_NOT_UPGRADED,
    IN_PLACE,
    NONE,
    REANNOTATED,
    UNTOUCHED,
    judge,
)

ROOT = pathlib.Path(__file__).resolve().parents[3]


def _chart(a: str, b: str):
    return detect([("Chart.yaml", f"dependencies: [{{name: kuberay-operator, version: {a}}}]",
                    f"dependencies: [{{name: kuberay-operator, version: {b}}}]")])


def _sample(name: str) -> tuple[str, str]:
    path = f"samples/{name}/before.yaml"
    return path, (ROOT / path).read_text()


def _outcomes(up):
    return {o.name: o.first_reconcile for o in up.objects}


def test_judge_1_6_to_1_7_rebuilds_nothing():
    up = judge(_chart("1.6.2", "1.7.0"), [_sample(s) for s in (
        "gpu-image-bump", "incremental-upgrade", "raycluster-image-bump-recreate",
        "raycluster-image-bump", "rayjob-tpu-next-run")])
    assert up.supported and up.decision == "approve" and up.crds == CRDS_DEPENDS
    assert _outcomes(up) == {"ray-serve-llm": REANNOTATED, "rayservice-incremental-upgrade": IN_PLACE,
                             "train-l4": REANNOTATED, "v6e-4-job": UNTOUCHED,
                             **{o.name: UNTOUCHED for o in up.objects
                                if o.kind == "RayCluster" and o.name != "train-l4"}}
    assert not any(o.rebuilds for o in up.objects)
    # The v1.7.0 CRD defaults a worker group's priority: the hash of the same spec differs.
    llm = next(o for o in up.objects if o.name == "ray-serve-llm")
    assert llm.hash_before != llm.hash_after
    assert up.to_dict()["rebuilt"] == 0


def test_judge_policy_pinning_the_gate_removes_the_incremental_change():
    up = judge(_chart("1.6.2", "1.7.0"), [_sample("incremental-upgrade")],
               policy={"operator": {"featureGates": {"RayServiceIncrementalUpgrade": False}}})
    assert _outcomes(up) == {"rayservice-incremental-upgrade": REANNOTATED}
    assert up.objects[0].behaviour == ()


def test_judge_unknown_version_holds_and_says_so():
    up = judge(_chart("1.6.2", "1.9.0"), [_sample("gpu-image-bump")])
    assert (up.supported, up.decision, up.objects) == (False, "hold", ())
    assert "1.9.0 is not a version this tool models" in up.summary


def test_judge_range_is_not_guessed():
    up = judge(_chart("1.6.2", "~1.7"), [_sample("gpu-image-bump")])
    assert up.decision == "hold" and "~1.7 is not one KubeRay release" in up.summary


def test_judge_image_only_reads_through_old_crds():
    changes = detect([("values.yaml", "image: {repository: quay.io/kuberay/operator, tag: v1.6.2}",
                       "image: {repository: quay.io/kuberay/operator, tag: v1.7.0}")])
    up = judge(changes, [_sample("gpu-image-bump")])
    assert up.crds == CRDS_NOT_UPGRADED
    (o,) = up.objects
    # Read through the v1.6.2 CRD, nothing defaults priority: the same hash.
    assert o.hash_before == o.hash_after and o.next_sync is None


def test_judge_pruned_field_is_written_on_the_next_sync():
    text = _sample("gpu-image-bump")[1].replace("kind: RayService", "kind: RayService", 1)
    crd_app = """apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: k}
spec: {source: {repoURL: https://github.com/ray-project/kuberay, path: helm-chart/kuberay-operator,
       targetRevision: %s}}
"""
    changes = detect([("app.yaml", crd_app % "v1.6.2", crd_app % "v1.7.0")])
    suspended = text.replace("spec:\n", "spec:\n  suspend: true\n", 1)
    up = judge(changes, [("svc.yaml", suspended)])
    (o,) = up.objects
    assert o.next_sync is not None and "spec.suspend" in o.next_sync["changes"]


def test_judge_managed_elsewhere_is_left_alone():
    path, text = _sample("raycluster-image-bump-recreate")
    text = text.replace("  upgradeStrategy:", "  managedBy: kueue.x-k8s.io/multikueue\n  upgradeStrategy:", 1)
    up = judge(_chart("1.6.2", "1.7.0"), [(path, text)])
    assert _outcomes(up) == {"train-l4": NONE}
