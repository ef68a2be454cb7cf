"""Unit tests of the core's building blocks: Go encoding, CRD schema, diff, capacity, validation."""

from __future__ import annotations

from fractions import Fraction

import pytest

from diffing.engine import tables
from diffing.kube import resources as cap
from diffing.kube.diff import Differ
from diffing.kube.gojson import ABSENT, OMIT, struct
from diffing.kube.paths import Key, format_path
from diffing.rayservice.rules import Category
from diffing.rayservice.validation import validate_rayservice
from diffing.versions import rules_for

SCHEMAS, GO = tables((1, 7))
RCC_SCH = SCHEMAS.child(SCHEMAS.child(SCHEMAS.root("v1"), "spec"), "rayClusterConfig")
GROUP_SCH = SCHEMAS.child(SCHEMAS.child(RCC_SCH, "workerGroupSpecs"), 0)
CONTAINER = struct("core/v1.Container")
CONTAINER_SCH = SCHEMAS.at(RCC_SCH, ("headGroupSpec", "template", "spec", "containers", 0))


def enc(value: object, t: object = GO.root, sch: object = RCC_SCH) -> object:
    return GO.encode(value, t, SCHEMAS, sch)  # type: ignore[arg-type]


def test_gojson_pointer_keeps_presence_and_omitempty_drops_zero() -> None:
    assert "enableInTreeAutoscaling" not in enc({})
    assert enc({"enableInTreeAutoscaling": False})["enableInTreeAutoscaling"] is False
    assert "env" not in enc({"name": "c", "env": []}, CONTAINER, CONTAINER_SCH)
    assert enc({"name": "c", "securityContext": {}}, CONTAINER, CONTAINER_SCH)["securityContext"] == {}


def test_gojson_map_without_omitempty_keeps_null_vs_empty() -> None:
    t = struct("ray/v1.WorkerGroupSpec")
    assert enc({"groupName": "g"}, t, GROUP_SCH)["rayStartParams"] is None
    assert enc({"groupName": "g", "rayStartParams": {}}, t, GROUP_SCH)["rayStartParams"] == {}


def test_gojson_quantities_canonical_int_or_string_kept() -> None:
    out = enc({"name": "c", "resources": {"limits": {"cpu": "1000m", "memory": "2048Mi"}},
               "readinessProbe": {"httpGet": {"port": "8000"}}}, CONTAINER, CONTAINER_SCH)
    assert out["resources"]["limits"] == {"cpu": "1", "memory": "2Gi"}
    assert out["readinessProbe"]["httpGet"]["port"] == "8000"


def test_gojson_crd_defaults_and_pruning_apply_before_encoding() -> None:
    t = struct("ray/v1.WorkerGroupSpec")
    out = enc({"groupName": "g", "template": {"metadata": {"creationTimestamp": None, "labels": {"a": "b"}}}},
              t, GROUP_SCH)
    defaults = (out["numOfHosts"], out["replicas"], out["minReplicas"], out["maxReplicas"])
    assert defaults == (1, 0, 0, 2**31 - 1)
    assert out["template"]["metadata"] == {"labels": {"a": "b"}}


def test_gojson_absent_and_omitted_markers() -> None:
    assert GO.encode(ABSENT, ("pointer", "nil", "bool", "bool"), SCHEMAS, None) is OMIT
    assert GO.encode(ABSENT, ("slice", "never", "string", "string"), SCHEMAS, None) is None


def test_schema_default_fill_and_child_lookup() -> None:
    filled = SCHEMAS.default_fill({"workerGroupSpecs": [{"groupName": "g", "replicas": None}]}, RCC_SCH)
    assert filled["workerGroupSpecs"][0]["replicas"] == 0
    assert SCHEMAS.child(RCC_SCH, "nope") is None
    assert SCHEMAS.list_key(SCHEMAS.child(CONTAINER_SCH, "ports")) == "containerPort"


def test_differ_matches_by_key_and_reports_reorders() -> None:
    differ = Differ(SCHEMAS, GO)
    before = {"workerGroupSpecs": [{"groupName": "a", "rayStartParams": {}}, {"groupName": "b"}]}
    after = {"workerGroupSpecs": [{"groupName": "b"}, {"groupName": "a", "rayStartParams": {"x": "1"}}]}
    got = [(format_path(d.path), d.kind, d.noop) for d in differ.diff(before, after, ("rcc",), RCC_SCH,
                                                                       GO.root)]
    assert got == [("rcc.workerGroupSpecs", "reordered", False),
                   ("rcc.workerGroupSpecs[groupName=a].rayStartParams.x", "added", False)]


def test_differ_marks_normalised_away_differences_noop() -> None:
    differ = Differ(SCHEMAS, GO)
    d = differ.diff({"name": "c", "resources": {"limits": {"cpu": "2"}}},
                    {"name": "c", "resources": {"limits": {"cpu": "2000m"}}, "env": []},
                    (), CONTAINER_SCH, CONTAINER)
    assert [(format_path(x.path), x.noop) for x in d] == [("resources.limits.cpu", True), ("env", True)]


def test_paths_format_keys_indexes_and_odd_names() -> None:
    assert format_path(("spec", "w", Key("groupName", "gpu"), "c", 0, "ray.io/x")) == \
        'spec.w[groupName=gpu].c[0]["ray.io/x"]'


def test_capacity_pod_counts_limit_only_init_and_sidecar() -> None:
    spec = {"containers": [{"resources": {"requests": {"cpu": "1"},
                                          "limits": {"cpu": "2", "nvidia.com/gpu": 1}}},
                           {"resources": {"requests": {"cpu": "500m", "memory": "1Gi"}}}],
            "initContainers": [{"resources": {"requests": {"cpu": "4"}}}]}
    assert cap.pod_resources(spec) == {"cpu": Fraction(4), "nvidia.com/gpu": Fraction(1),
                                       "memory": Fraction(2**30)}
    shape = cap.cluster_shape({"enableInTreeAutoscaling": True, "headGroupSpec": {"template": {"spec": {
        "containers": [{"resources": {"requests": {"cpu": "1"}}}]}}}, "workerGroupSpecs": [
        {"groupName": "g", "replicas": 9, "minReplicas": 1, "maxReplicas": 3, "numOfHosts": 2,
         "template": {"spec": {"containers": [{"resources": {"limits": {"google.com/tpu": "4"}}}]}}}]})
    assert shape.head == {"cpu": Fraction(3, 2), "memory": Fraction(512 * 2**20)}
    assert (shape.groups[0].replicas, shape.groups[0].pods) == (3, 6)
    assert cap.render_amounts(shape.total()) == {"google.com/tpu": 24, "cpu": "2700m", "memory": "2Gi"}


@pytest.mark.parametrize(("name", "accelerator"), [("nvidia.com/gpu", True), ("amd.com/gpu", True),
                                                   ("nvidia.com/mig-1g.5gb", True), ("google.com/tpu", True),
                                                   ("aws.amazon.com/neuroncore", True), ("cpu", False),
                                                   # every extended resource counts (green means safe)
                                                   ("gpu.intel.com/i915", True)])
def test_capacity_accelerator_names(name: str, accelerator: bool) -> None:
    assert cap.is_accelerator(name) is accelerator


def test_capacity_incremental_surge_share() -> None:
    g = cap.GroupSize("g", replicas=4, hosts=1, min_replicas=1, max_replicas=10, per_pod={})
    assert [cap.surge_replicas(g, 4, m) for m in (0, 10, 50, 100)] == [1, 1, 2, 4]


def test_validation_codes_and_paths() -> None:
    obj = {"metadata": {"name": "x" * 48, "annotations": {"ray.io/initializing-timeout": "0s"}},
           "spec": {"upgradeStrategy": {"type": "Blue"}, "rayClusterConfig": {
               "headGroupSpec": {"template": {"spec": {"containers": []}}},
               "workerGroupSpecs": [{"groupName": "g", "minReplicas": 3, "maxReplicas": 2,
                                     "rayStartParams": {"labels": "a=b"},
                                     "template": {"spec": {"containers": [{"name": "w"}]}}}]}}}
    got = {(code, format_path(path)) for code, path, _ in validate_rayservice(
        obj, incremental_gate=True, feature_gates={})}
    assert got == {
        ("name-too-long", "metadata.name"),
        ("validation-failed", 'metadata.annotations["ray.io/initializing-timeout"]'),
        ("validation-failed", "spec.upgradeStrategy.type"),
        ("validation-failed", "spec.rayClusterConfig.headGroupSpec.template.spec.containers"),
        ("validation-failed", "spec.rayClusterConfig.workerGroupSpecs[groupName=g].rayStartParams.labels"),
        ("validation-failed", "spec.rayClusterConfig.workerGroupSpecs[groupName=g].minReplicas"),
    }


def test_rules_table_has_no_shadowed_rule_and_muted_set() -> None:
    rules = rules_for("1.7.0")
    for i, rule in enumerate(rules.rules):
        earlier = [r for r in rules.rules[:i] if rule.pattern[: len(r.pattern)] == r.pattern]
        assert not earlier, f"{rule.pattern} is shadowed by {earlier[0].pattern}"
    assert rules.category_of(("spec", "rayClusterConfig", "workerGroupSpecs", "[]", "replicas")).category \
        == Category.AUTOSCALER_OWNED
    assert ("spec", "rayClusterConfig", "suspend") in rules.muted_patterns
