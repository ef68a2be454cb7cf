"""Standalone RayCluster changes against raycluster-semantics.md §9's table, row by row.

Each case names its row and the KubeRay v1.7.0 code it rests on (RCC =
ray-operator/controllers/ray/raycluster_controller.go, UT = controllers/ray/utils/util.go,
VAL = controllers/ray/utils/validation.go). Rows a manifest diff cannot decide are covered
with a live basis at the bottom (23, 38, 40) or noted where they are out of reach (36's
operator-level defaults, 39's Argo CD side is modelled from the Application in the change).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

import jq
import pytest
import yaml

import diffing
from diffing.engine import Engine, cluster_hash_equal, go_json, recreate_hash, recreate_hash_input
from diffing.live import LiveCluster
from diffing.policy import Policy
from diffing.versions import rules_for

BASE: dict[str, Any] = yaml.safe_load("""
apiVersion: ray.io/v1
kind: RayCluster
metadata: {name: llm, namespace: ml}
spec:
  rayVersion: "2.52.0"
  headGroupSpec:
    rayStartParams: {}
    template:
      spec:
        containers:
        - name: ray-head
          image: rayproject/ray:2.52.0
          resources: {limits: {cpu: "2", memory: 8Gi}}
  workerGroupSpecs:
  - groupName: gpu
    replicas: 2
    minReplicas: 1
    maxReplicas: 4
    rayStartParams: {}
    template:
      spec:
        containers:
        - name: ray-worker
          image: rayproject/ray:2.52.0
          resources: {limits: {cpu: "4", memory: 16Gi, nvidia.com/gpu: 1}}
""")

Edit = Callable[[dict[str, Any]], Any]


def spec(o: dict[str, Any]) -> dict[str, Any]:
    return o["spec"]


def gpu(o: dict[str, Any]) -> dict[str, Any]:
    return o["spec"]["workerGroupSpecs"][0]


def worker_pod(o: dict[str, Any]) -> dict[str, Any]:
    return gpu(o)["template"]["spec"]


def variant(*edits: Edit, base: dict[str, Any] = BASE) -> dict[str, Any]:
    out = copy.deepcopy(base)
    for edit in edits:
        edit(out)
    return out


AUTOSCALED = variant(lambda o: spec(o).update(enableInTreeAutoscaling=True))
RECREATE = variant(lambda o: spec(o).update(upgradeStrategy={"type": "Recreate"}))
SUSPENDED = variant(lambda o: spec(o).update(suspend=True))
ROOM = {"nvidia.com/gpu": 8}


def analyse(before: dict[str, Any] | None, after: dict[str, Any] | None, **kw: Any) -> dict[str, Any]:
    report = diffing.analyze(yaml.safe_dump(before) if before else "", yaml.safe_dump(after) if after else "",
                             **kw).to_dict()
    return report


def one(before: dict[str, Any] | None, after: dict[str, Any] | None, **kw: Any) -> dict[str, Any]:
    (res,) = analyse(before, after, **kw)["resources"]
    assert res["kind"] == "RayCluster"
    return res


def codes(res: dict[str, Any]) -> set[str]:
    return {f["code"] for f in res["findings"]}


def categories(res: dict[str, Any]) -> dict[str, str]:
    return {c["path"]: c["category"] for c in res["changes"]}


# (row, citation, before, edit, headroom, rollout, decision, GPUs extra, finding codes that must be present)
ROWS: list[tuple[str, str, dict[str, Any], Edit, Any, str, str, int, set[str]]] = [
    ("01 replicas up, autoscaling off", "RCC:1183-1214", BASE, lambda o: gpu(o).update(replicas=3),
     ROOM, "scale", "approve", 1, set()),
    ("01 replicas up without headroom", "RCC:1183-1214", BASE, lambda o: gpu(o).update(replicas=3),
     None, "scale", "hold", 1, set()),
    ("02 replicas down, autoscaling off", "RCC:1218-1256", BASE, lambda o: gpu(o).update(replicas=1),
     None, "scale", "approve", 0, {"scale-in-deletes-pods"}),
    ("03 replicas up, autoscaling on", "RCC:1183-1214; raycluster-semantics §5.4", AUTOSCALED,
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
    # Outside the list the edit still applies (raycluster-semantics.md §5.5).
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


def test_delete() -> None:
    res = one(BASE, None)
    assert (res["rollout"], res["decision"]) == ("delete", "approve")


def test_an_owned_raycluster_is_not_analysed() -> None:
    owned = variant(lambda o: o["metadata"].update(ownerReferences=[
        {"apiVersion": "ray.io/v1", "kind": "RayJob", "name": "j", "uid": "u"}]))
    report = analyse(None, owned)
    assert report["resources"] == [] and report["notAnalysed"] == {"RayCluster": 1}


# -- the Recreate hash: muted and hashed fields (UT:645-668) -----------------------------------

ENGINE = Engine(rules_for("1.7.0"), Policy())

MUTED: dict[str, Edit] = {
    "replicas": lambda o: gpu(o).update(replicas=3),
    "minReplicas": lambda o: gpu(o).update(minReplicas=0),
    "maxReplicas": lambda o: gpu(o).update(maxReplicas=9),
    "workersToDelete": lambda o: gpu(o).update(scaleStrategy={"workersToDelete": ["p"]}),
    "worker tolerations": lambda o: worker_pod(o).update(tolerations=[{"key": "k", "operator": "Exists"}]),
    "worker schedulingGates": lambda o: worker_pod(o).update(schedulingGates=[{"name": "g"}]),
    "head tolerations": lambda o: spec(o)["headGroupSpec"]["template"]["spec"].update(
        tolerations=[{"key": "k", "operator": "Exists"}]),
    "head schedulingGates": lambda o: spec(o)["headGroupSpec"]["template"]["spec"].update(
        schedulingGates=[{"name": "g"}]),
    "upgradeStrategy": lambda o: spec(o).update(upgradeStrategy={"type": "Recreate"}),
    "rayStartParams absent vs {} (setDefaults, RCC:2422-2432)": lambda o: gpu(o).pop("rayStartParams"),
    "numOfHosts written as its default 1": lambda o: gpu(o).update(numOfHosts=1),
}

HASHED: dict[str, Edit] = {
    "suspend false written": lambda o: spec(o).update(suspend=False),
    "enableInTreeAutoscaling false written": lambda o: spec(o).update(enableInTreeAutoscaling=False),
    "autoscalerOptions.idleTimeoutSeconds": lambda o: spec(o).update(
        autoscalerOptions={"idleTimeoutSeconds": 5}),
    "headServiceAnnotations": lambda o: spec(o).update(headServiceAnnotations={"a": "b"}),
    "rayVersion": lambda o: spec(o).update(rayVersion="2.53.0"),
    "groupName": lambda o: gpu(o).update(groupName="g2"),
    "numOfHosts": lambda o: gpu(o).update(numOfHosts=2),
    "group idleTimeoutSeconds": lambda o: gpu(o).update(idleTimeoutSeconds=30),
    "group suspend": lambda o: gpu(o).update(suspend=True),
    "managedBy": lambda o: spec(o).update(managedBy="ray.io/kuberay-operator"),
    "worker image": lambda o: worker_pod(o)["containers"][0].update(image="x"),
    "group order": lambda o: spec(o)["workerGroupSpecs"].insert(
        0, {**copy.deepcopy(gpu(o)), "groupName": "a"}),
}


def _hash(o: dict[str, Any]) -> str:
    return recreate_hash(ENGINE, o["spec"])


@pytest.mark.parametrize("name", list(MUTED))
def test_recreate_hash_mutes(name: str) -> None:
    assert _hash(variant(MUTED[name])) == _hash(BASE)


@pytest.mark.parametrize("name", list(HASHED))
def test_recreate_hash_covers(name: str) -> None:
    assert _hash(variant(HASHED[name])) != _hash(BASE)


@pytest.mark.parametrize("name", list(MUTED) + list(HASHED))
def test_hash_equality_without_hashing_agrees_with_the_hash(name: str) -> None:
    # The analysis compares specs by walking both and encoding only where they differ; the live
    # basis computes the hash itself. Both read the muted fields from the same rule table.
    edited = variant({**MUTED, **HASHED}[name])
    assert cluster_hash_equal(ENGINE, BASE["spec"], edited["spec"]) == (_hash(edited) == _hash(BASE))
    assert cluster_hash_equal(ENGINE, edited["spec"], BASE["spec"]) == (name in MUTED)


def test_the_muted_fields_are_the_rule_tables() -> None:
    assert set(rules_for("1.7.0").cluster_muted) == {
        ("workerGroupSpecs", "[]", f) for f in ("replicas", "minReplicas", "maxReplicas", "scaleStrategy")
    } | {(*p, "template", "spec", f) for p in (("workerGroupSpecs", "[]"), ("headGroupSpec",))
         for f in ("tolerations", "schedulingGates")} | {("upgradeStrategy",)}


def test_recreate_hash_is_go_shaped() -> None:
    encoded = go_json(recreate_hash_input(ENGINE, BASE["spec"]))
    # Struct fields in Go order, muted pointers without omitempty as null, no spaces, HTML escaped.
    assert encoded.startswith(b'{"headGroupSpec":{"template":')
    assert b'"minReplicas":null,"maxReplicas":null' in encoded and b'"replicas"' not in encoded
    assert go_json({"a": "<&>"}) == b'{"a":"\\u003c\\u0026\\u003e"}'
    assert len(_hash(BASE)) == 32 and set(_hash(BASE)) <= set("0123456789ABCDEFGHIJKLMNOPQRSTUV=")


# -- the live basis: what the pods say (raycluster-semantics.md §10) ---------------------------


def _live(**kw: Any) -> dict[str, LiveCluster]:
    return {"RayCluster/ml/llm": LiveCluster(**kw)}


def test_23_switch_to_recreate_fires_when_the_head_was_built_from_an_older_spec() -> None:
    older = variant(lambda o: worker_pod(o)["containers"][0].update(env=[{"name": "OLD", "value": "1"}]))
    switch = variant(lambda o: spec(o).update(upgradeStrategy={"type": "Recreate"}))
    pending = one(BASE, switch, live=_live(head_hash=_hash(older), head_kuberay_version="v1.7.0"))
    assert pending["rollout"] == "recreate" and "recreate-downtime" in codes(pending)
    current = one(BASE, switch, live=_live(head_hash=_hash(BASE), head_kuberay_version="v1.7.0"))
    assert current["rollout"] == "none" and "recreate-switch" not in codes(current)


def test_38_a_head_built_by_another_operator_version_absorbs_the_change() -> None:
    edit = variant(lambda o: worker_pod(o)["containers"][0].update(env=[{"name": "X", "value": "1"}]),
                   base=RECREATE)
    res = one(RECREATE, edit, live=_live(head_hash=_hash(RECREATE), head_kuberay_version="v1.6.2"))
    assert res["rollout"] == "latent"
    assert any("absorbed" in r for r in res["reasons"])


def test_live_orphans_of_an_earlier_removal_are_reported() -> None:
    res = one(BASE, variant(lambda o: gpu(o).update(replicas=3)), headroom=ROOM,
              live=_live(group_pods={"gpu": 2, "old-gpu": 3}, worker_replicas={"gpu": 2}))
    assert "orphaned-pods" in codes(res) and res["decision"] == "hold"
    assert res["capacity"]["basis"] == "live"


def test_live_pod_count_drives_the_scale_out() -> None:
    # The autoscaler has the group at 4 pods; Git asks 3 with autoscaling off: one pod is deleted.
    res = one(BASE, variant(lambda o: gpu(o).update(replicas=3)), live=_live(group_pods={"gpu": 4}))
    assert res["rollout"] == "scale" and res["capacity"]["extra"] == {}


def test_40_any_edit_resets_the_autoscalers_replicas_to_git() -> None:
    before = variant(lambda o: gpu(o).update(replicas=1), base=AUTOSCALED)
    after = variant(lambda o: worker_pod(o)["containers"][0].update(env=[{"name": "X", "value": "1"}]),
                    base=before)
    res = one(before, after, live=_live(worker_replicas={"gpu": 4}, group_pods={"gpu": 4}))
    fight = [f for f in res["findings"] if f["code"] == "autoscaler-fight"]
    assert fight and "minReplicas" in fight[0]["message"]


# -- policy and the Argo CD advice -------------------------------------------------------------


def test_policy_can_approve_a_recreate_and_hold_every_latent_change() -> None:
    edit = variant(lambda o: worker_pod(o)["containers"][0].update(env=[{"name": "X", "value": "1"}]),
                   base=RECREATE)
    assert one(RECREATE, edit, policy={"raycluster": {"holdOnRecreate": False}})["decision"] == "approve"
    latent = variant(lambda o: worker_pod(o)["containers"][0].update(env=[{"name": "X", "value": "1"}]))
    assert one(BASE, latent, policy={"raycluster": {"holdOnLatent": "always"}})["decision"] == "hold"
    skew = variant(lambda o: spec(o).update(rayVersion="2.53.0"))
    assert one(BASE, skew, policy={"raycluster": {"holdOnLatent": "never"}})["decision"] == "approve"


def test_policy_rejects_unknown_raycluster_keys() -> None:
    with pytest.raises(diffing.PolicyError):
        diffing.analyze("", "", policy={"raycluster": {"holdOnOrphans": True}})


def _owned_change() -> tuple[dict[str, Any], dict[str, Any]]:
    after = variant(lambda o: gpu(o).update(replicas=3, scaleStrategy={"workersToDelete": ["w-1"]}),
                    base=AUTOSCALED)
    res = one(AUTOSCALED, after)
    assert res["decision"] == "ignore-differences"
    return res, after


def test_ignore_differences_entry_for_a_raycluster() -> None:
    res, _ = _owned_change()
    (entry,) = res["ignoreDifferences"]
    assert entry == {"group": "ray.io", "kind": "RayCluster", "name": "llm", "namespace": "ml",
                     "jqPathExpressions": [".spec.workerGroupSpecs[]?.replicas",
                                           ".spec.workerGroupSpecs[]?.scaleStrategy"]}


def test_raycluster_jq_expressions_delete_exactly_the_owned_fields() -> None:
    res, manifest = _owned_change()
    doc = json.loads(json.dumps(manifest))
    for expr in res["ignoreDifferences"][0]["jqPathExpressions"]:
        doc = jq.compile(f"del({expr})").input_value(doc).first()  # as Argo CD runs it (gojq)
    expected = json.loads(json.dumps(manifest))
    for g in expected["spec"]["workerGroupSpecs"]:
        g.pop("replicas", None)
        g.pop("scaleStrategy", None)
    assert doc == expected
    bare = {"spec": {"headGroupSpec": {}}}
    for expr in res["ignoreDifferences"][0]["jqPathExpressions"]:
        assert jq.compile(f"del({expr})").input_value(bare).first() == bare


def test_markdown_snippet_for_a_raycluster_is_valid_yaml_without_respect_ignore_differences() -> None:
    _, after = _owned_change()
    text = diffing.render_markdown(diffing.analyze(yaml.safe_dump(AUTOSCALED), yaml.safe_dump(after)))
    block = text.split("```yaml\n", 1)[1].split("```", 1)[0]
    snippet = yaml.safe_load(block)
    assert snippet["spec"]["ignoreDifferences"][0]["kind"] == "RayCluster"
    assert snippet["spec"]["syncPolicy"]["syncOptions"] == ["ApplyOutOfSyncOnly=true"]
    assert "minReplicas" in block  # keep Git replicas equal to minReplicas


def test_a_raycluster_next_to_a_rayservice_keeps_the_rayservice_report_unchanged() -> None:
    rs = open("samples/kuberay-v1.7.0/ray-service.sample.yaml").read()
    rs2 = rs.replace("2.52.0", "2.53.0")
    alone = diffing.analyze(rs, rs2).to_dict()["resources"]
    both = diffing.analyze(rs + "\n---\n" + yaml.safe_dump(BASE),
                           rs2 + "\n---\n" + yaml.safe_dump(variant(lambda o: gpu(o).update(replicas=1))))
    got = both.to_dict()["resources"]
    assert [r["kind"] for r in got] == ["RayService", "RayCluster"]
    assert got[0] == alone[0]


def test_an_autoscaled_replicas_cut_is_explained_as_the_autoscalers() -> None:
    res = one(AUTOSCALED, variant(lambda o: gpu(o).update(replicas=1), base=AUTOSCALED))
    assert res["rollout"] == "none" and "autoscaler" in " ".join(res["reasons"])
    assert "scale-in-deletes-pods" not in codes(res)


def test_removing_suspend_is_a_warning_whose_way_out_is_an_explicit_false() -> None:
    res = one(SUSPENDED, variant(lambda o: spec(o).pop("suspend"), base=SUSPENDED))
    (f,) = [f for f in res["findings"] if f["code"] == "suspend-field-removed"]
    assert f["severity"] == "warning"
    assert res["nextSteps"] == ["write spec.suspend: false instead of deleting the line"]


def test_a_live_before_side_lists_no_server_defaults_as_changes() -> None:
    """Argo CD's live state carries the CRD defaults the API server filled in (``numOfHosts: 1``,
    ``priority: 0``, CRD:5336-5360): not changes of the PR."""
    live = variant(lambda o: gpu(o).update(numOfHosts=1, priority=0))
    res = one(live, BASE, before_is_live=True)
    assert (res["rollout"], res["changes"]) == ("none", [])
    res = one(live, variant(lambda o: gpu(o).update(replicas=3)), before_is_live=True, headroom=ROOM)
    assert [c["path"] for c in res["changes"]] == ["spec.workerGroupSpecs[groupName=gpu].replicas"]
