"""What the API server does with a version other than the storage one (conformance limits
``v1alpha1-read-defaults``, ``v1alpha1-drops-v1-fields``, ``unserved-api-version``,
``v1alpha1-required-ratcheted``).

KubeRay's CRDs serve ``v1alpha1`` and ``v1``, store ``v1`` and name no conversion (strategy None):
a v1alpha1 write is pruned and defaulted with v1alpha1's schema, stored as v1 (pruned with v1's)
and read with v1's defaults (apiextensions-apiserver customresource_handler.go:1288-1311,
1357-1384). A version the CRD does not serve has no endpoint (404). An update's validation
ratchets: an error under a node equal to the old object's is a warning
(apiserver/validation/ratcheting.go:136-156).
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml

import diffing
from diffing.engine import Engine, cluster_stored_spec, go_json, recreate_hash_input, tables
from diffing.kube.schema import STORAGE_VERSION, SchemaSet, ratchet, validate
from diffing.policy import Policy
from diffing.rayjob.schema import job_schemas
from diffing.versions import rules_for

WORKER = {
    "groupName": "tpu-group", "replicas": 1, "minReplicas": 1, "maxReplicas": 1, "numOfHosts": 2,
    "rayStartParams": {},
    "template": {"spec": {"containers": [{
        "name": "ray-worker", "image": "rayproject/ray:2.46.0",
        "resources": {"limits": {"cpu": "1", "google.com/tpu": "4", "memory": "4G"},
                      "requests": {"cpu": "1", "google.com/tpu": "4", "memory": "4G"}}}]}},
}
CLUSTER: dict[str, Any] = {
    "apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": {"name": "c", "namespace": "ns"},
    "spec": {
        "headGroupSpec": {"rayStartParams": {}, "template": {"spec": {"containers": [{
            "name": "ray-head", "image": "rayproject/ray:2.46.0",
            "resources": {"limits": {"cpu": "1", "memory": "2G"},
                          "requests": {"cpu": "1", "memory": "2G"}}}]}}},
        "workerGroupSpecs": [WORKER],
    },
}


def _as(obj: dict[str, Any], api_version: str, *drop: tuple[str, ...]) -> dict[str, Any]:
    out = copy.deepcopy(obj)
    out["apiVersion"] = api_version
    for path in drop:
        node = out
        for key in path[:-1]:
            node = node[key]
        del node[path[-1]]
    return out


def _dump(obj: dict[str, Any] | None) -> str:
    return "" if obj is None else yaml.safe_dump(obj, sort_keys=False)


def _one(before: dict[str, Any] | None, after: dict[str, Any] | None) -> dict[str, Any]:
    (r,) = diffing.analyze(_dump(before), _dump(after)).to_dict()["resources"]
    return r


def _defaults(s: SchemaSet, node: Any, path: tuple[str, ...], out: dict[tuple[str, ...], Any]) -> None:
    node = s.resolve(node)
    if node is None or len(path) > 40:
        return
    if "default" in node:
        out[path] = node["default"]
    for key, sub in (node.get("properties") or {}).items():
        _defaults(s, sub, path + (key,), out)
    for key in ("items", "additionalProperties"):
        if isinstance(node.get(key), dict):
            _defaults(s, node[key], path + (key,), out)


@pytest.mark.parametrize("schemas", [tables((1, 7))[0], tables((1, 6))[0], job_schemas()],
                         ids=["rayservice-1.7", "rayservice-1.6", "rayjob"])
def test_v1alpha1_defaults_are_v1_defaults(schemas: SchemaSet) -> None:
    """engine.stored_view leaves a v1alpha1 side's own defaults to the walk with v1's schema: right
    only while every v1alpha1 default is also v1's, with the same value."""
    old: dict[tuple[str, ...], Any] = {}
    new: dict[tuple[str, ...], Any] = {}
    _defaults(schemas, schemas.root("v1alpha1"), (), old)
    _defaults(schemas, schemas.root(STORAGE_VERSION), (), new)
    assert old and {p: new.get(p, "missing") for p in old} == old


@pytest.mark.parametrize(("version", "field"), [("1.7.0", '"priority":0'), ("1.7.0", '"numOfHosts":1'),
                                                ("1.6.2", '"numOfHosts":1')])
def test_v1alpha1_spec_is_read_with_v1_defaults(version: str, field: str) -> None:
    """The hash input of a v1alpha1-written cluster carries v1's defaults (limit v1alpha1-read-defaults)."""
    engine = Engine(rules_for(version), Policy())
    spec = copy.deepcopy(CLUSTER["spec"])
    del spec["workerGroupSpecs"][0]["numOfHosts"]
    as_v1 = go_json(recreate_hash_input(engine, spec, "ray.io/v1")).decode()
    encoded = go_json(recreate_hash_input(engine, spec, "ray.io/v1alpha1")).decode()
    assert encoded == as_v1  # nothing v1-only in the spec: the same stored object, the same hash
    assert field in encoded
    assert field in encoded


def test_v1alpha1_write_drops_v1_fields_from_the_stored_spec() -> None:
    engine = Engine(rules_for("1.7.0"), Policy())
    spec = {**copy.deepcopy(CLUSTER["spec"]), "upgradeStrategy": {"type": "Recreate"}}
    stored = cluster_stored_spec(engine, spec, "ray.io/v1alpha1")
    assert "upgradeStrategy" not in stored
    assert stored["workerGroupSpecs"][0]["numOfHosts"] == 1  # pruned, then v1's default
    assert cluster_stored_spec(engine, spec, "ray.io/v1") is spec


def test_multihost_group_rewritten_as_v1alpha1_loses_its_hosts() -> None:
    """numOfHosts is v1-only: the stored group has one host per replica, KubeRay deletes a pod."""
    r = _one(CLUSTER, _as(CLUSTER, "ray.io/v1alpha1"))
    hosts = [c for c in r["changes"] if c["path"].endswith("numOfHosts")]
    assert [(c["category"], c["before"]) for c in hosts] == [("scale", 2)]
    assert r["rollout"] == "scale"
    assert not {k for k in r["capacity"]["extra"] if "/" in k}
    assert any("-1 pod" in reason for reason in r["reasons"])


def test_rayservice_rewritten_as_v1alpha1_loses_gcs_fault_tolerance() -> None:
    rs = {"apiVersion": "ray.io/v1", "kind": "RayService", "metadata": {"name": "s", "namespace": "ns"},
          "spec": {"rayClusterConfig": {**copy.deepcopy(CLUSTER["spec"]),
                                        "gcsFaultToleranceOptions": {"redisAddress": "redis:6379"}}}}
    rs["spec"]["rayClusterConfig"]["workerGroupSpecs"][0].pop("numOfHosts")
    r = _one(rs, _as(rs, "ray.io/v1alpha1"))
    assert r["rollout"] == "new-cluster"
    assert any(c["path"].endswith("gcsFaultToleranceOptions") and c["category"] == "cluster-recreate"
               for c in r["changes"])
    # Written in v1alpha1 on both sides: the field is pruned from both, nothing changes.
    same = _one(_as(rs, "ray.io/v1alpha1"), _as(rs, "ray.io/v1alpha1"))
    assert same["rollout"] == "none"


def test_rayjob_rewritten_as_v1alpha1_loses_its_submission_mode() -> None:
    job = {"apiVersion": "ray.io/v1", "kind": "RayJob", "metadata": {"name": "j", "namespace": "ns"},
           "spec": {"entrypoint": "python x.py", "submissionMode": "SidecarMode",
                    "rayClusterSpec": copy.deepcopy(CLUSTER["spec"])}}
    job["spec"]["rayClusterSpec"]["workerGroupSpecs"][0].pop("numOfHosts")
    r = _one(job, _as(job, "ray.io/v1alpha1"))
    assert [c["category"] != "no-op" for c in r["changes"] if c["path"] == "spec.submissionMode"] == [True]


@pytest.mark.parametrize("before", [None, CLUSTER], ids=["create", "update"])
def test_unserved_version_is_rejected(before: dict[str, Any] | None) -> None:
    r = _one(before, _as(CLUSTER, "ray.io/v1beta1"))
    errors = [f for f in r["findings"] if f["code"] == "schema-violation"]
    assert len(errors) == 1 and "ray.io/v1beta1" in errors[0]["message"] \
        and "ray.io/v1, ray.io/v1alpha1" in errors[0]["message"]
    assert r["rollout"] == "not-applied"
    assert not {k for k in r["capacity"]["extra"] if "/" in k}


def test_required_field_missing_in_both_is_ratcheted_on_update() -> None:
    """v1alpha1 requires headGroupSpec.rayStartParams, v1 does not: a create is rejected, an update
    whose old object (read as v1alpha1) lacks it too is accepted."""
    v1 = _as(CLUSTER, "ray.io/v1", ("spec", "headGroupSpec", "rayStartParams"))
    alpha = _as(v1, "ray.io/v1alpha1")
    assert any(f["code"] == "schema-violation" for f in _one(None, alpha)["findings"])
    r = _one(v1, alpha)
    assert not any(f["code"] == "schema-violation" for f in r["findings"])
    assert r["rollout"] != "not-applied"
    # A change under the same node is not ratcheted: headGroupSpec differs from the old one.
    changed = copy.deepcopy(alpha)
    changed["spec"]["headGroupSpec"]["serviceType"] = "NodePort"
    assert any(f["code"] == "schema-violation" for f in _one(v1, changed)["findings"])


def test_ratchet_correlates_map_list_items_by_key() -> None:
    """Items of a map-type list correlate by key (not index); an atomic list only as a whole."""
    item = {"type": "object", "required": ["name"],
            "properties": {"name": {"type": "string"}, "size": {"type": "integer", "maximum": 3}}}
    root = {"type": "object", "properties": {
        "keyed": {"type": "array", "items": item, "x-kubernetes-list-type": "map",
                  "x-kubernetes-list-map-keys": ["name"]},
        "atomic": {"type": "array", "items": item}}}
    schemas = SchemaSet.from_versions({"v1": root})
    bad = {"name": "a", "size": 9}
    old = {"keyed": [bad], "atomic": [bad]}
    new = {"keyed": [{"name": "b"}, bad], "atomic": [{"name": "b"}, bad]}
    errors = validate(schemas, new, root, ("spec",))
    assert [p for p, _ in errors] == [("spec", "keyed", 1, "size"), ("spec", "atomic", 1, "size")]
    assert ratchet(schemas, errors, new, old, root) == [errors[1]]
    same = {"keyed": [bad], "atomic": [bad]}
    assert ratchet(schemas, validate(schemas, same, root, ("spec",)), same, old, root) == []
    changed = {"keyed": [{**bad, "size": 8}], "atomic": [bad]}
    errors = validate(schemas, changed, root, ("spec",))
    assert ratchet(schemas, errors, changed, old, root) == errors[:1]
