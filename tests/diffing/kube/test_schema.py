"""The API server's view of a RayService: prune, default, then validate (issue 9, points 1 and 2).

The v1.7.0 CRD marks ``workerGroupSpecs[].minReplicas``/``maxReplicas`` required *and* gives
them defaults; the API server drops non-nullable nulls and applies defaults while decoding,
and only then validates, so leaving them out (or writing ``null``) is accepted. Lists the CRD
marks ``x-kubernetes-list-type: map`` must have unique keys after defaulting (``ports`` are
keyed by containerPort + protocol, protocol defaulting to TCP); ``set`` lists unique items.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
import yaml

import diffing
from diffing.engine import tables
from diffing.kube.schema import validate
from tests.builders import dump, edited, group, head_container, rcc, sample, sample_text, worker_container
from tests.diffing.kube.schema_nodes import CONTAINER_SCH, RCC_SCH

SCHEMAS, _ = tables((1, 7))
SPEC = SCHEMAS.child(SCHEMAS.root("v1"), "spec")
NRS = "no-ray-serve-replica"


@pytest.mark.parametrize("name", ["high-throughput-llm", "high-throughput-gemma4"])
def test_kuberay_samples_without_replica_bounds_are_accepted(name: str) -> None:
    """KubeRay's own samples leave min/maxReplicas out; the CRD defaults them (0 and 2147483647)."""
    (r,) = diffing.analyze("", sample_text(name)).to_dict()["resources"]
    assert (r["rollout"], r["decision"]) == ("create", "approve")
    assert [f for f in r["findings"] if f["severity"] == "error"] == []
    assert "minReplicas" not in sample(name)["spec"]["rayClusterConfig"]["workerGroupSpecs"][0]


def _set(path: tuple[Any, ...], value: Any) -> Any:
    def edit(o: dict[str, Any]) -> None:
        target: Any = o
        for seg in path[:-1]:
            target = target[seg]
        target[path[-1]] = value
    return edit


def _pop(*path: Any) -> Any:
    def edit(o: dict[str, Any]) -> None:
        target: Any = o
        for seg in path[:-1]:
            target = target[seg]
        target.pop(path[-1])
    return edit


W0 = ("spec", "rayClusterConfig", "workerGroupSpecs", 0)
PORT_8000 = {"containerPort": 8000, "name": "serve"}


@dataclass
class Case:
    id: str
    edits: list[Any]
    violation: str | None  # the dotted path of the schema violation, or None when accepted
    message: str = ""


CASES = [
    Case("min-max-replicas-absent-are-defaulted",
         [_pop(*W0, "minReplicas"), _pop(*W0, "maxReplicas")], None),
    Case("min-max-replicas-null-are-pruned-then-defaulted",
         [_set(W0 + ("minReplicas",), None), _set(W0 + ("maxReplicas",), None)], None),
    Case("replicas-null-is-defaulted", [_set(W0 + ("replicas",), None)], None),
    Case("required-without-default-still-missing",
         [lambda o: worker_container(o).__setitem__("ports", [{"name": "x"}])],
         "spec.rayClusterConfig.workerGroupSpecs[0].template.spec.containers[0].ports[0].containerPort",
         "required field is missing"),
    Case("required-null-without-default-is-missing",
         [lambda o: worker_container(o).__setitem__("ports", [{"containerPort": None}])],
         "spec.rayClusterConfig.workerGroupSpecs[0].template.spec.containers[0].ports[0].containerPort",
         "required field is missing"),
    Case("env-duplicate-names", [lambda o: worker_container(o).__setitem__("env", [
        {"name": "A", "value": "1"}, {"name": "A", "value": "2"}])],
         "spec.rayClusterConfig.workerGroupSpecs[0].template.spec.containers[0].env[1]",
         "duplicate entry (name=A"),
    Case("ports-duplicate-after-protocol-default", [lambda o: head_container(o).__setitem__("ports", [
        {"containerPort": 8000, "name": "serve", "protocol": "TCP"},
        {"containerPort": 8000, "name": "other"}])],
         "spec.rayClusterConfig.headGroupSpec.template.spec.containers[0].ports[1]",
         "containerPort=8000, protocol=TCP"),
    Case("ports-same-number-other-protocol-is-fine", [lambda o: head_container(o).__setitem__("ports", [
        PORT_8000, {"containerPort": 8000, "name": "dns", "protocol": "UDP"}])], None),
    Case("volumes-duplicate-names", [lambda o: group(o)["template"]["spec"].__setitem__("volumes", [
        {"name": "logs", "emptyDir": {}}, {"name": "logs", "emptyDir": {}}])],
         "spec.rayClusterConfig.workerGroupSpecs[0].template.spec.volumes[1]", "name=logs"),
    Case("volume-mounts-duplicate-mount-path", [lambda o: worker_container(o).__setitem__("volumeMounts", [
        {"name": "a", "mountPath": "/tmp/ray"}, {"name": "b", "mountPath": "/tmp/ray"}])],
         "spec.rayClusterConfig.workerGroupSpecs[0].template.spec.containers[0].volumeMounts[1]",
         "mountPath=/tmp/ray"),
    Case("containers-duplicate-names", [lambda o: group(o)["template"]["spec"]["containers"].append(
        dict(worker_container(o)))],
         "spec.rayClusterConfig.workerGroupSpecs[0].template.spec.containers[1]", "duplicate entry (name="),
    # KubeRay's own autoscalerOptions.env carries no list-type marker: an atomic list, duplicates pass.
    Case("autoscaler-env-is-atomic", [lambda o: rcc(o).__setitem__("autoscalerOptions", {"env": [
        {"name": "X", "value": "1"}, {"name": "X", "value": "1"}]})], None),
    Case("set-list-duplicate-values", [lambda o: worker_container(o).__setitem__("restartPolicyRules", [
        {"action": "Restart", "exitCodes": {"operator": "In", "values": [42, 42]}}])],
         "spec.rayClusterConfig.workerGroupSpecs[0].template.spec.containers[0].restartPolicyRules[0]"
         ".exitCodes.values[1]", "duplicate value 42"),
]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_api_server_prunes_defaults_then_validates(case: Case) -> None:
    base = sample(NRS)
    after = edited(base, *case.edits)
    (r,) = diffing.analyze(dump(base), dump(after)).to_dict()["resources"]
    violations = [f for f in r["findings"] if f["code"] == "schema-violation"]
    if case.violation is None:
        assert violations == [], violations
        return
    assert [(f["path"], case.message in f["message"]) for f in violations] == [(case.violation, True)]
    assert (r["rollout"], r["decision"]) == ("not-applied", "hold")
    assert any("the API server rejects the new manifest" in reason for reason in r["reasons"])


def test_duplicate_env_is_no_longer_a_new_cluster() -> None:
    """Before: the core predicted a new cluster for a spec the API server refuses."""
    base = sample(NRS)
    after = edited(base, lambda o: worker_container(o).__setitem__("env", [{"name": "A", "value": "1"},
                                                                           {"name": "A", "value": "2"}]))
    (r,) = diffing.analyze(dump(base), dump(after)).to_dict()["resources"]
    assert r["rollout"] == "not-applied"
    assert r["capacity"]["extra"] == {}


def test_created_with_null_bounds_builds_the_cluster() -> None:
    obj = edited(sample(NRS), _set(W0 + ("minReplicas",), None))
    (r,) = diffing.analyze("", dump(obj)).to_dict()["resources"]
    assert (r["rollout"], r["decision"]) == ("create", "approve")


def test_validate_sees_defaults_without_building_the_defaulted_object() -> None:
    spec = {"rayClusterConfig": {"headGroupSpec": {"template": {"spec": {"containers": [{"name": "h"}]}}},
                                 "workerGroupSpecs": [{"groupName": "g", "minReplicas": None, "template": {
                                     "spec": {"containers": [{"name": "w"}]}}}]}}
    assert validate(SCHEMAS, spec, SPEC, ("spec",)) == []
    spec["rayClusterConfig"]["workerGroupSpecs"][0]["template"]["spec"]["containers"].append({"name": "w"})
    assert [m for _, m in validate(SCHEMAS, spec, SPEC, ("spec",))] == [
        "duplicate entry (name=w; also item 0): the list is keyed by name"]


def test_list_map_keys_compare_as_json_values() -> None:
    # env is keyed by name: "1" twice is a duplicate; ports by containerPort + protocol, where
    # a port written as text is another key than the number (and fails the integer type).
    def spec_with(container: dict) -> dict:
        return {"rayClusterConfig": {"headGroupSpec": {"template": {"spec": {"containers": [container]}}}}}

    env = [{"name": "1", "value": "a"}, {"name": "1", "value": "b"}]
    assert [m for _, m in validate(SCHEMAS, spec_with({"name": "h", "env": env}), SPEC, ("spec",))] == [
        "duplicate entry (name=1; also item 0): the list is keyed by name"]
    ports = [{"containerPort": 80}, {"containerPort": "80"}, {"containerPort": 80, "protocol": "UDP"}]
    messages = [m for _, m in validate(SCHEMAS, spec_with({"name": "h", "ports": ports}), SPEC, ("spec",))]
    assert not any(m.startswith("duplicate entry") for m in messages)
    assert any("must be integer" in m for m in messages)
    ports.append({"containerPort": 80, "protocol": "TCP"})
    messages = [m for _, m in validate(SCHEMAS, spec_with({"name": "h", "ports": ports}), SPEC, ("spec",))]
    assert "duplicate entry (containerPort=80, protocol=TCP; also item 0): the list is keyed by " \
           "containerPort, protocol" in messages


def test_schema_memos_stay_the_size_of_the_schema_whatever_the_keys() -> None:
    # A long-lived service reads labels, resource names and rayStartParams keys without end:
    # the memos keep declared fields and a bounded number of other keys, one answer for the rest.
    from diffing.kube.schema import SchemaSet
    from diffing.versions import schema_data

    schemas = SchemaSet(schema_data((1, 7))[0])  # its own memos
    spec = schemas.child(schemas.root("v1"), "spec")
    for batch in range(3):
        many = {f"k{batch}-{i}": "v" for i in range(2000)}
        value = {"rayClusterConfig": {"headGroupSpec": {"rayStartParams": many, "template": {
            "metadata": {"labels": many}, "spec": {"containers": [{"name": "h", "resources": {
                "limits": {"cpu": "1", **{f"x.io/r{batch}-{i}": "1" for i in range(500)}}}}],
                "nodeSelector": many}}}}}
        assert validate(schemas, value, spec, ("spec",)) == []
        filled = schemas.default_fill(value, spec)
        assert filled["rayClusterConfig"]["headGroupSpec"]["rayStartParams"] == many
    memos = list(schemas._memos.values())
    assert max(len(m) for m in memos) <= max(len(m.node.get("properties") or {}) for m in memos) + 1 + 64
    assert sum(len(m) for m in memos) < 2000


def test_schema_default_fill_and_child_lookup() -> None:
    filled = SCHEMAS.default_fill({"workerGroupSpecs": [{"groupName": "g", "replicas": None}]}, RCC_SCH)
    assert filled["workerGroupSpecs"][0]["replicas"] == 0
    assert SCHEMAS.child(RCC_SCH, "nope") is None
    assert SCHEMAS.list_key(SCHEMAS.child(CONTAINER_SCH, "ports")) == "containerPort"


def test_user_crd_replaces_the_schema() -> None:
    text = dump(sample("sample"))
    strict = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
              "spec": {"versions": [{"name": "v1", "schema": {"openAPIV3Schema": {
                  "type": "object", "properties": {"spec": {"type": "object", "properties": {
                      "serveConfigV2": {"type": "integer"}}}}}}}]}}
    report = diffing.analyze(text, text.replace("price: 3", "price: 4"), crd=yaml.safe_dump(strict))
    assert "schema-violation" in {f.code for f in report.resources[0].findings}
