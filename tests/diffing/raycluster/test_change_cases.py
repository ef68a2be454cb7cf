"""Standalone RayCluster changes against docs/semantics/raycluster.md §9's table, row by row.

Each case names its row and the KubeRay v1.7.0 code it rests on (RCC =
ray-operator/controllers/ray/raycluster_controller.go, UT = controllers/ray/utils/util.go,
VAL = controllers/ray/utils/validation.go). Rows a manifest diff cannot decide are covered
with a live basis in test_live_basis.py (23, 38, 40) or noted where they are out of reach (36's
operator-level defaults, 39's Argo CD side is modelled from the Application in the change).
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml

import diffing
from tests.diffing.raycluster.cluster import (
    AUTOSCALED,
    BASE,
    RECREATE,
    ROOM,
    SUSPENDED,
    Edit,
    analyse,
    categories,
    codes,
    gpu,
    one,
    spec,
    variant,
    worker_pod,
)

# (row, citation, before, edit, headroom, rollout, decision, GPUs extra, finding codes that must be present)
ROWS: list[tuple[str, str, dict[str, Any], Edit, Any, str, str, int, set[str]]] = [
    ("01 replicas up, autoscaling off", "RCC:1183-1214", BASE, lambda o: gpu(o).update(replicas=3),
     ROOM, "scale", "approve", 1, set()),
    ("01 replicas up without headroom", "RCC:1183-1214", BASE, lambda o: gpu(o).update(replicas=3),
     None, "scale", "hold", 1, set()),
    ("02 replicas down, autoscaling off", "RCC:1218-1256", BASE, lambda o: gpu(o).update(replicas=1),
     None, "scale", "approve", 0, {"scale-in-deletes-pods"}),
    ("03 replicas up, autoscaling on", "RCC:1183-1214; docs/semantics/raycluster.md §5.4", AUTOSCALED,
     lambda o: gpu(o).update(replicas=3), None, "scale", "ignore-differences", 1, {"autoscaler-fight"}),
    ("03 replicas down, autoscaling on", "RCC:1218-1236", AUTOSCALED,
     lambda o: gpu(o).update(replicas=1), None, "none", "ignore-differences", 0, {"autoscaler-fight"}),
    ("04 replicas above max is clamped", "UT:389-407", BASE, lambda o: gpu(o).update(replicas=10),
     ROOM, "scale", "approve", 2, {"replicas-outside-bounds"}),
    ("05 minReplicas above current", "UT:389-407; e2eautoscaler:427-436", BASE,
     lambda o: gpu(o).update(minReplicas=3), ROOM, "scale", "approve", 1, {"replicas-outside-bounds"}),
    ("06 maxReplicas below current, autoscaling off", "RCC:1218-1256", BASE,
     lambda o: gpu(o).update(maxReplicas=1), None, "scale", "approve", 0, {"replicas-outside-bounds"}),
    ("06 maxReplicas below current, autoscaling on", "raycluster_autoscaler_test.go:458-545", AUTOSCALED,
     lambda o: gpu(o).update(maxReplicas=1), None, "scale", "approve", 0, set()),
    ("07 maxReplicas up", "UT:389-407", BASE, lambda o: gpu(o).update(maxReplicas=8),
     None, "none", "approve", 0, set()),
    ("08 env edit, default strategy", "RCC:1765-; common/pod.go", BASE,
     lambda o: worker_pod(o)["containers"][0].update(env=[{"name": "X", "value": "1"}]),
     None, "latent", "approve", 0, set()),
    ("08 GPU request edit, default strategy", "RCC:1765-", BASE,
     lambda o: worker_pod(o)["containers"][0]["resources"]["limits"].update({"nvidia.com/gpu": 2}),
     None, "latent", "approve", 0, set()),
    ("09 env edit, Recreate", "RCC:968-982", RECREATE,
     lambda o: worker_pod(o)["containers"][0].update(env=[{"name": "X", "value": "1"}]),
     None, "recreate", "hold", 0, {"recreate-downtime"}),
    ("09 GPU request up, Recreate: the new shape's growth", "RCC:968-982; §6.1", RECREATE,
     lambda o: worker_pod(o)["containers"][0]["resources"]["limits"].update({"nvidia.com/gpu": 2}),
     None, "recreate", "hold", 2, {"recreate-downtime"}),
    ("10 Ray image, default strategy", "§3.2 version skew", BASE,
     lambda o: worker_pod(o)["containers"][0].update(image="rayproject/ray:2.53.0"),
     None, "latent", "hold", 0, {"version-skew"}),
    ("10 same Ray version, another image variant: latent without skew", "§3.2", BASE,
     lambda o: worker_pod(o)["containers"][0].update(image="rayproject/ray:2.52.0-cu124"),
     None, "latent", "approve", 0, set()),
    ("10 rayVersion, default strategy", "§3.2 version skew", BASE,
     lambda o: spec(o).update(rayVersion="2.53.0"), None, "latent", "hold", 0, {"version-skew"}),
    ("10 rayVersion on one side of 2.53.0: the injected probes stay, no pod changes", "§3.2; pod.go:721-743",
     BASE, lambda o: spec(o).update(rayVersion="2.52.1"), None, "none", "approve", 0, set()),
    ("10 rayVersion across 2.53.0, every Ray container sets both probes: none", "§3.2; pod.go:775-800",
     variant(lambda o: [c["containers"][0].update(livenessProbe={"exec": {"command": ["true"]}},
                                                  readinessProbe={"exec": {"command": ["true"]}})
                        for c in (spec(o)["headGroupSpec"]["template"]["spec"], worker_pod(o))]),
     lambda o: spec(o).update(rayVersion="2.99.0"), None, "none", "approve", 0, set()),
    ("10 GCS FT backend: redis written where it was unset (the operator's reading): none",
     "util.go:771-777",
     variant(lambda o: spec(o).update(gcsFaultToleranceOptions={"redisAddress": "redis:6379"})),
     lambda o: spec(o)["gcsFaultToleranceOptions"].update(backend="redis"), None, "none", "approve", 0,
     set()),
    ("10 GCS FT backend: redis written where it was unset, Recreate: the hash sees it",
     "util.go:771-777; RCC:968-982", variant(lambda o: spec(o).update(
         gcsFaultToleranceOptions={"redisAddress": "redis:6379"}, upgradeStrategy={"type": "Recreate"})),
     lambda o: spec(o)["gcsFaultToleranceOptions"].update(backend="redis"), None, "recreate", "hold", 0,
     {"recreate-downtime"}),
    ("12 a copy of a group under the same name, Recreate: one set of pods, no growth",
     "association.go:113-121; RCC:1079", RECREATE,
     lambda o: spec(o)["workerGroupSpecs"].append(copy.deepcopy(gpu(o))), None, "recreate", "hold", 0,
     {"recreate-downtime", "shared-group-name"}),
    ("11 tolerations, Recreate (muted)", "UT:653-662", RECREATE,
     lambda o: worker_pod(o).update(tolerations=[{"key": "gpu", "operator": "Exists"}]),
     None, "latent", "approve", 0, set()),
    ("11 schedulingGates, Recreate (muted)", "UT:653-662", RECREATE,
     lambda o: worker_pod(o).update(schedulingGates=[{"name": "kueue"}]), None, "latent", "approve", 0,
     set()),
    ("12 append a group, default", "RCC:1069-1214", BASE,
     lambda o: spec(o)["workerGroupSpecs"].append({**copy.deepcopy(gpu(o)), "groupName": "more"}),
     ROOM, "scale", "approve", 2, set()),
    ("13 append a group, Recreate", "RCC:968-982", RECREATE,
     lambda o: spec(o)["workerGroupSpecs"].append({**copy.deepcopy(gpu(o)), "groupName": "more"}),
     ROOM, "recreate", "hold", 2, {"recreate-downtime"}),
    ("14 remove a group", "RCC:1069-1079; networkpolicy_controller.go:99-105", BASE,
     lambda o: spec(o).update(workerGroupSpecs=[]), None, "not-applied", "hold", 0, {"orphaned-pods"}),
    ("14 rename a group", "RCC:1069-1079", BASE, lambda o: gpu(o).update(groupName="gpu-v2"),
     ROOM, "scale", "hold", 2, {"orphaned-pods"}),
    ("14 remove a group, Recreate deletes the orphans", "common/association.go:123-130", RECREATE,
     lambda o: spec(o).update(workerGroupSpecs=[]), None, "recreate", "hold", 0, {"recreate-downtime"}),
    ("16 numOfHosts 1 -> 2, default", "RCC:1095-1102; common/pod.go:673-681 (inferred)", BASE,
     lambda o: gpu(o).update(numOfHosts=2), ROOM, "scale", "hold", 4, {"orphaned-pods"}),
    ("17 suspend true", "RCC:940-966", BASE, lambda o: spec(o).update(suspend=True),
     None, "suspend", "hold", 0, set()),
    ("18 suspend true -> false", "RCC:2084-2091", SUSPENDED, lambda o: spec(o).update(suspend=False),
     ROOM, "resume", "approve", 2, set()),
    ("18 resume without headroom", "RCC:2084-2091", SUSPENDED, lambda o: spec(o).update(suspend=False),
     None, "resume", "hold", 2, set()),
    ("19 suspend true -> line removed", "RCC:2084-2091", SUSPENDED, lambda o: spec(o).pop("suspend"),
     None, "not-applied", "hold", 0, {"suspend-field-removed"}),
    ("20 suspend false -> removed, Recreate (pointer presence is hashed)", "UT:645-668",
     variant(lambda o: spec(o).update(suspend=False), base=RECREATE), lambda o: spec(o).pop("suspend"),
     None, "recreate", "hold", 0, {"recreate-downtime"}),
    ("21 worker group suspend, autoscaling off", "RCC:1083-1093", BASE, lambda o: gpu(o).update(suspend=True),
     None, "scale", "approve", 0, set()),
    ("22 worker group suspend, autoscaling on (frozen)", "VAL:214-220", AUTOSCALED,
     lambda o: gpu(o).update(suspend=True), None, "not-applied", "hold", 0, {"validation-failed"}),
    ("23 None -> Recreate alone (no live basis)", "RCC:1495-1499", BASE,
     lambda o: spec(o).update(upgradeStrategy={"type": "Recreate"}), None, "none", "approve", 0,
     {"recreate-switch"}),
    ("24 unknown upgradeStrategy type", "CRD:5316-5323", BASE,
     lambda o: spec(o).update(upgradeStrategy={"type": "Rolling"}), None, "not-applied", "hold", 0,
     {"schema-violation"}),
    ("25 enableInTreeAutoscaling on", "common/pod.go:242-283", BASE,
     lambda o: spec(o).update(enableInTreeAutoscaling=True), None, "latent", "approve", 0, set()),
    ("26 enableInTreeAutoscaling off", "RCC:1222-1236 (inferred)", AUTOSCALED,
     lambda o: spec(o).pop("enableInTreeAutoscaling"), None, "latent", "approve", 0,
     {"autoscaling-disabled"}),
    ("27 autoscaler idleTimeoutSeconds, default", "autoscaling_config.py", AUTOSCALED,
     lambda o: spec(o).update(autoscalerOptions={"idleTimeoutSeconds": 120}), None, "none", "approve", 0,
     set()),
    ("27 autoscaler idleTimeoutSeconds, Recreate (hashed)", "UT:645-668",
     variant(lambda o: spec(o).update(upgradeStrategy={"type": "Recreate"}), base=AUTOSCALED),
     lambda o: spec(o).update(autoscalerOptions={"idleTimeoutSeconds": 120}), None, "recreate", "hold", 0,
     {"recreate-downtime"}),
    ("28 group idleTimeoutSeconds without explicit v2 (frozen)", "VAL:1016-1026", AUTOSCALED,
     lambda o: gpu(o).update(idleTimeoutSeconds=60), None, "not-applied", "hold", 0, {"validation-failed"}),
    ("29 head serviceType", "RCC:609-655", BASE, lambda o: spec(o)["headGroupSpec"].update(
        serviceType="LoadBalancer"), None, "not-applied", "hold", 0, set()),
    ("29 headServiceAnnotations", "RCC:609-655", BASE, lambda o: spec(o).update(
        headServiceAnnotations={"a": "b"}), None, "not-applied", "hold", 0, set()),
    ("30 enableIngress", "RCC:540-606", BASE, lambda o: spec(o)["headGroupSpec"].update(enableIngress=True),
     None, "none", "approve", 0, set()),
    ("31 managedBy value -> other value", "CRD:4727-4729 (self == oldSelf)",
     variant(lambda o: spec(o).update(managedBy="ray.io/kuberay-operator")),
     lambda o: spec(o).update(managedBy="kueue.x-k8s.io/multikueue"), None, "not-applied", "hold", 0,
     {"schema-violation"}),
    ("32 managedBy absent -> Kueue", "RCC:158-161; UT:744-749", BASE,
     lambda o: spec(o).update(managedBy="kueue.x-k8s.io/multikueue"), None, "not-applied", "hold", 0, set()),
    ("34 minReplicas over maxReplicas (frozen)", "VAL:134-138", BASE, lambda o: gpu(o).update(minReplicas=5),
     None, "not-applied", "hold", 0, {"validation-failed"}),
    ("34 minReplicas over maxReplicas fixed: the frozen cluster is reconciled, worst case built whole",
     "RCC:172-177", variant(lambda o: gpu(o).update(minReplicas=5)), lambda o: gpu(o).update(minReplicas=1),
     ROOM, "scale", "approve", 2, set()),
    ("35 workersToDelete in Git", "RCC:1132-1153", BASE,
     lambda o: gpu(o).update(scaleStrategy={"workersToDelete": ["llm-gpu-abcde"]}), None, "scale", "approve",
     0, {"workers-to-delete-in-git"}),
    ("36 RayCluster labels", "RCC:1941-1951", BASE, lambda o: o["metadata"].update(labels={"team": "a"}),
     None, "none", "approve", 0, set()),
    ("36 ray.io/ft-enabled annotation (read by the pod builder)", "common/pod.go:60-126", BASE,
     lambda o: o["metadata"].update(annotations={"ray.io/ft-enabled": "true"}), None, "latent", "approve", 0,
     set()),
]


@pytest.mark.parametrize("row", ROWS, ids=[r[0] for r in ROWS])
def test_semantics_table_row(row: tuple[Any, ...]) -> None:
    name, cite, before, edit, headroom, rollout, decision, gpus, must = row
    res = one(before, variant(edit, base=before), headroom=headroom)
    assert (res["rollout"], res["decision"]) == (rollout, decision), (cite, res["reasons"], res["findings"])
    assert res["capacity"]["extra"].get("nvidia.com/gpu", 0) == gpus, (cite, res["capacity"])
    assert must <= codes(res), (cite, res["findings"])
    if decision == "hold":
        assert res["nextSteps"], cite


def test_15_reorder_is_nothing_by_default_and_a_full_recreate_under_recreate() -> None:
    two = variant(lambda o: spec(o)["workerGroupSpecs"].append({**copy.deepcopy(gpu(o)), "groupName": "b"}))
    swap: Edit = lambda o: spec(o).update(workerGroupSpecs=spec(o)["workerGroupSpecs"][::-1])  # noqa: E731
    default = one(two, variant(swap, base=two))
    assert default["rollout"] == "none" and set(categories(default).values()) == {"no-op"}
    recreate = variant(lambda o: spec(o).update(upgradeStrategy={"type": "Recreate"}), base=two)
    res = one(recreate, variant(swap, base=recreate))
    assert res["rollout"] == "recreate"  # the hash covers the order (UT:645-668)


def test_33_gcs_backend_change_is_rejected_by_cel() -> None:
    redis = variant(lambda o: spec(o).update(gcsFaultToleranceOptions={"redisAddress": "redis:6379",
                                                                       "backend": "redis"}))
    res = one(redis, variant(lambda o: spec(o)["gcsFaultToleranceOptions"].update(backend="rocksdb"),
                             base=redis))
    assert res["rollout"] == "not-applied" and "schema-violation" in codes(res)


def test_37_renaming_the_cluster_is_a_second_full_cluster() -> None:
    report = analyse(BASE, variant(lambda o: o["metadata"].update(name="llm-v2")), headroom=ROOM)
    by_name = {r["name"]: r for r in report["resources"]}
    assert by_name["llm"]["rollout"] == "delete" and by_name["llm-v2"]["rollout"] == "create"
    assert by_name["llm-v2"]["capacity"]["extra"]["nvidia.com/gpu"] == 2


def test_39_respect_ignore_differences_drops_worker_group_edits() -> None:
    app = {"apiVersion": "argoproj.io/v1alpha1", "kind": "Application", "metadata": {"name": "ray"},
           "spec": {"syncPolicy": {"syncOptions": ["RespectIgnoreDifferences=true"]},
                    "ignoreDifferences": [{"group": "ray.io", "kind": "RayCluster",
                                           "jqPathExpressions": [".spec.workerGroupSpecs[]?.replicas"]}]}}
    after = variant(lambda o: worker_pod(o)["containers"][0].update(env=[{"name": "X", "value": "1"}]))
    texts = [yaml.safe_dump_all([BASE, app]), yaml.safe_dump_all([after, app])]
    (res,) = diffing.analyze(*texts).to_dict()["resources"]
    assert res["rollout"] == "not-applied" and "respect-ignore-differences-drops-edits" in codes(res)
    # Outside the list the edit still applies (docs/semantics/raycluster.md §5.5).
    head = variant(lambda o: spec(o)["headGroupSpec"]["template"]["spec"]["containers"][0].update(
        env=[{"name": "X", "value": "1"}]))
    (res,) = diffing.analyze(texts[0], yaml.safe_dump_all([head, app])).to_dict()["resources"]
    assert res["rollout"] == "latent"


def test_create_reports_the_whole_cluster_and_is_approved() -> None:
    res = one(None, BASE)
    assert (res["rollout"], res["decision"]) == ("create", "approve")
    assert res["capacity"]["extra"] == {"nvidia.com/gpu": 2, "cpu": "10", "memory": "40Gi"}


def test_created_suspended_needs_nothing_now() -> None:
    res = one(None, SUSPENDED)
    assert res["rollout"] == "create" and res["capacity"]["extra"] == {}
