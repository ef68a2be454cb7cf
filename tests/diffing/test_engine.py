"""The operator's cluster hash (diffing/engine.py), on a standalone RayCluster: the Recreate hash, its
muted and hashed fields (UT:645-668), and its Go shape.

Citations are KubeRay v1.7.0, ``ray-operator/controllers/ray/``: UT = ``utils/util.go``, RCC =
``raycluster_controller.go``.
"""

from __future__ import annotations

import copy

import pytest

from diffing.engine import cluster_hash_equal, go_json, recreate_hash_input
from diffing.versions import rules_for
from tests.diffing.raycluster.cluster import BASE, ENGINE, Edit, _hash, gpu, spec, variant, worker_pod

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
