"""Rollouts issue 9 corrected, table-driven on real KubeRay samples.

* minReplicas/maxReplicas changes are ``not-applied`` with or without autoscaling (v1.7.0 mutes
  them in the hash and never copies them to the running cluster: kuberay#2331, #4568); only
  replicas/workersToDelete under autoscaling are the autoscaler's (``ignore-differences``).
* ``spec.managedBy`` naming another controller: KubeRay skips the object
  (rayservice_controller.go:121-124) -> rollout ``none``, a finding naming the manager, no capacity.
* created with ``spec.suspend: true``: handleSuspend goes straight to Suspended, no RayCluster.
* the operator's validation end to end, with feature gates from the policy and per version.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

import diffing
from tests.builders import dump, edited, group, head_container, rcc, sample, set_images

NRS = "no-ray-serve-replica"  # CPU only, replicas 2, min 1, max 5
SD = "stable-diffusion"  # one GPU worker
MK = "kueue.x-k8s.io/multikueue"


def autoscaling(o: dict[str, Any]) -> None:
    rcc(o)["enableInTreeAutoscaling"] = True


def setg(**fields: Any):  # type: ignore[no-untyped-def]
    return lambda o: group(o).update(fields)


def spec(**fields: Any):  # type: ignore[no-untyped-def]
    return lambda o: o["spec"].update(fields)


def drop_spec(name: str):  # type: ignore[no-untyped-def]
    return lambda o: o["spec"].pop(name)


def image(tag: str):  # type: ignore[no-untyped-def]
    return lambda o: set_images(o, tag)


def serve_edit(o: dict[str, Any]) -> None:
    o["spec"]["serveConfigV2"] = o["spec"]["serveConfigV2"].replace("num_replicas: 1", "num_replicas: 2", 1)


def append_group(o: dict[str, Any]) -> None:
    rcc(o)["workerGroupSpecs"].append({
        "groupName": "extra", "replicas": 1, "minReplicas": 0, "maxReplicas": 2, "rayStartParams": {},
        "template": {"spec": {"containers": [{"name": "w", "image": "rayproject/ray:2.52.0",
                                              "resources": {"limits": {"cpu": "1", "memory": "1Gi"}}}]}}})


def head_env(name: str, value: str):  # type: ignore[no-untyped-def]
    return lambda o: head_container(o).setdefault("env", []).append({"name": name, "value": value})


@dataclass
class Case:
    id: str
    base: str
    after: list[Any]
    rollout: str
    decision: str
    before: list[Any] = field(default_factory=list)
    accelerators: dict[str, int] | None = None
    findings: set[str] = field(default_factory=set)
    reason: str = ""  # a piece of text one reason must contain
    policy: dict[str, Any] | None = None
    version: str = "1.7.0"
    create: bool = False
    delete: bool = False
    no_findings: set[str] = field(default_factory=set)


CASES = [
    # -- point 6: replica bounds ----------------------------------------------------------------
    Case("max-replicas-raise-autoscaling-on", NRS, [setg(maxReplicas=9)], "not-applied", "hold",
         before=[autoscaling], accelerators={}, findings={"autoscaler-owned-not-propagated"},
         reason="next new-cluster rollout or when a worker group is appended"),
    Case("min-replicas-raise-autoscaling-off", NRS, [setg(minReplicas=2)], "not-applied", "hold",
         reason="with or without autoscaling"),
    Case("max-replicas-and-replicas-autoscaling-on", NRS, [setg(maxReplicas=9, replicas=4)], "not-applied",
         "hold", before=[autoscaling], reason="maxReplicas changed"),
    Case("replicas-only-autoscaling-on", NRS, [setg(replicas=4)], "none", "ignore-differences",
         before=[autoscaling]),
    Case("workers-to-delete-autoscaling-on", NRS, [setg(scaleStrategy={"workersToDelete": ["w-1"]})], "none",
         "ignore-differences", before=[autoscaling]),
    Case("max-replicas-with-serve-change", NRS, [setg(maxReplicas=9), serve_edit], "serve-in-place",
         "approve",
         before=[autoscaling], findings={"not-applied"}),
    Case("max-replicas-with-appended-group", NRS, [setg(maxReplicas=9), append_group], "cluster-in-place",
         "approve", before=[autoscaling], findings={"append-resets-replicas"}),
    Case("max-replicas-with-image", NRS, [setg(maxReplicas=9), image("rayproject/ray:2.53.0")], "new-cluster",
         "approve", before=[autoscaling]),
    # -- point 4: managedBy ---------------------------------------------------------------------
    Case("managed-by-multikueue-image-bump", SD, [image("rayproject/ray-ml:2.47.0-gpu")], "none", "approve",
         before=[spec(managedBy=MK)], accelerators={}, findings={"managed-by-other-controller"}, reason=MK,
         no_findings={"gpu-without-toleration", "autoscaler-owned-not-propagated"}),
    Case("managed-by-multikueue-created", SD, [spec(managedBy=MK)], "none", "approve", accelerators={},
         findings={"managed-by-other-controller"}, reason="never reconciles", create=True),
    Case("managed-by-multikueue-deleted", SD, [spec(managedBy=MK)], "none", "approve",
         reason="never reconciles",
         delete=True),
    Case("managed-by-multikueue-added", SD, [spec(managedBy=MK), image("rayproject/ray-ml:2.47.0-gpu")],
         "none",
         "approve", accelerators={}, findings={"managed-by-other-controller"}, reason="left as they are"),
    Case("managed-by-multikueue-skips-validation", NRS, [spec(upgradeStrategy={"type": "Foo"})], "none",
         "approve", before=[spec(managedBy=MK)], no_findings={"validation-failed"}),
    Case("managed-by-kuberay-is-reconciled", SD, [image("rayproject/ray-ml:2.47.0-gpu")], "new-cluster",
         "hold",
         before=[spec(managedBy="ray.io/kuberay-operator")], accelerators={"nvidia.com/gpu": 1}),
    Case("managed-by-unknown-value-is-rejected", NRS, [spec(managedBy="example.com/mine")], "not-applied",
         "hold", findings={"schema-violation"}),
    Case("managed-by-is-immutable", NRS, [spec(managedBy="ray.io/kuberay-operator")], "not-applied", "hold",
         before=[spec(managedBy=MK)], findings={"schema-violation"}),
    Case("managed-by-removed-kuberay-takes-over", SD, [drop_spec("managedBy")], "new-cluster", "hold",
         before=[spec(managedBy=MK)], accelerators={"nvidia.com/gpu": 1}, reason="takes the RayService over"),
    # -- point 5: created suspended -------------------------------------------------------------
    Case("created-suspended-builds-nothing", SD, [spec(suspend=True)], "create", "approve", accelerators={},
         findings={"created-suspended"}, reason="builds no RayCluster", create=True),
    Case("created-suspended-v16-has-no-rayservice-suspend", SD, [spec(suspend=True)], "create", "approve",
         accelerators={"nvidia.com/gpu": 1}, version="1.6.2", create=True),
    Case("created-not-suspended", SD, [spec(suspend=False)], "create", "approve",
         accelerators={"nvidia.com/gpu": 1}, create=True),
    # -- point 3: the operator's validation, end to end -----------------------------------------
    Case("network-policy-gate-off", NRS, [lambda o: rcc(o).__setitem__("networkPolicy", {"mode": "DenyAll"})],
         "not-applied", "hold", findings={"validation-failed"}, reason="RayClusterNetworkPolicy"),
    Case("network-policy-gate-on-in-policy", NRS,
         [lambda o: rcc(o).__setitem__("networkPolicy", {"mode": "DenyAll"})], "new-cluster", "approve",
         policy={"operator": {"featureGates": {"RayClusterNetworkPolicy": True}}}),
    Case("redis-address-without-ft", NRS, [head_env("RAY_REDIS_ADDRESS", "redis:6379")], "not-applied",
         "hold",
         findings={"validation-failed"}, reason="RAY_REDIS_ADDRESS"),
    Case("label-value-invalid", NRS, [setg(labels={"tier": "a/b"})], "not-applied", "hold",
         findings={"validation-failed"}, reason="label value"),
    Case("autoscaler-start-cmd-in-env", NRS, [lambda o: rcc(o).__setitem__("autoscalerOptions", {
        "env": [{"name": "KUBERAY_GEN_AUTOSCALER_START_CMD", "value": "x"}]})], "not-applied", "hold",
         before=[autoscaling], findings={"validation-failed"}),
    Case("priority-needs-ray-256-in-v17", NRS, [setg(priority=1)], "not-applied", "hold",
         findings={"validation-failed"}, reason="2.56.0"),
    # v1.6.2's WorkerGroupSpec has no priority: its CRD prunes the field (conformance, KubeRay v1.6.2).
    Case("priority-pruned-in-v16", NRS, [setg(priority=1)], "none", "approve", version="1.6.2",
         findings={"unknown-field"}),
    Case("worker-suspend-needs-rayjob-deletion-gate", NRS, [setg(suspend=True)], "not-applied", "hold",
         policy={"operator": {"featureGates": {"RayJobDeletionPolicy": False}}},
             findings={"validation-failed"}),
    Case("v2-restart-policy", NRS, [lambda o: rcc(o).__setitem__("autoscalerOptions", {"version": "v2"}),
                                    lambda o: group(o)["template"]["spec"].__setitem__("restartPolicy",
                                        "Always")],
         "not-applied", "hold", before=[autoscaling], findings={"validation-failed"}, reason="restartPolicy"),
    Case("rocksdb-gate-on-in-policy", "high-availability", [lambda o: rcc(o).__setitem__(
        "gcsFaultToleranceOptions", {"backend": "rocksdb"})], "new-cluster", "approve",
         before=[lambda o: rcc(o).pop("gcsFaultToleranceOptions"),
                 lambda o: o["metadata"].pop("annotations", None)],
         policy={"operator": {"featureGates": {"GCSFaultToleranceEmbeddedStorage": True}}}),
]


def run(case: Case) -> dict[str, Any]:
    base = edited(sample(case.base), *case.before)
    after = edited(base, *case.after)
    before_text = "" if case.create else dump(base)
    after_text = "" if case.delete else dump(after)
    if case.delete:
        before_text = dump(after)
    report = diffing.analyze(before_text, after_text, kuberay_version=case.version, policy=case.policy)
    (r,) = report.to_dict()["resources"]
    return r


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_rollout_rule(case: Case) -> None:
    r = run(case)
    codes = {f["code"] for f in r["findings"]}
    assert (r["rollout"], r["decision"]) == (case.rollout, case.decision), (r["reasons"], r["findings"])
    if case.accelerators is not None:
        assert {k: v for k, v in r["capacity"]["extra"].items() if isinstance(v, int)} == case.accelerators
    assert case.findings <= codes, r["findings"]
    assert not case.no_findings & codes, r["findings"]
    assert not case.reason or any(case.reason in reason for reason in r["reasons"]), r["reasons"]


def test_bounds_change_never_answers_ignore_differences() -> None:
    """The Argo CD snippet ignores replicas/scaleStrategy only: a new maxReplicas must not be dropped."""
    base = edited(sample(NRS), autoscaling)
    r = diffing.analyze(dump(base), dump(edited(base, setg(maxReplicas=9)))).to_dict()["resources"][0]
    assert r["ignoreDifferences"] == []
    replicas = diffing.analyze(dump(base), dump(edited(base, setg(replicas=4)))).to_dict()["resources"][0]
    assert replicas["ignoreDifferences"][0]["jqPathExpressions"] == [
        ".spec.rayClusterConfig.workerGroupSpecs[]?.replicas",
        ".spec.rayClusterConfig.workerGroupSpecs[]?.scaleStrategy"]


def test_managed_by_finding_names_the_manager() -> None:
    base = edited(sample(SD), spec(managedBy=MK))
    r = diffing.analyze(dump(base), dump(edited(base, image("x:2")))).to_dict()["resources"][0]
    (finding,) = [f for f in r["findings"] if f["code"] == "managed-by-other-controller"]
    assert finding["severity"] == "warning" and MK in finding["message"]
    assert (r["capacity"]["extra"], r["capacity"]["peak"]) == ({}, {})
