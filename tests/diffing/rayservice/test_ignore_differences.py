"""The Argo CD ignoreDifferences snippet really selects the autoscaler-owned fields (real jq)."""

from __future__ import annotations

import json

import jq

import diffing
from tests.builders import dump, edited, group, rcc, sample


def _ignore_entry() -> dict:
    before = edited(sample("sample"), lambda o: rcc(o).__setitem__("enableInTreeAutoscaling", True))
    after = edited(before, lambda o: group(o).__setitem__("replicas", 3),
                   lambda o: group(o).__setitem__("scaleStrategy", {"workersToDelete": ["w-1"]}))
    report = diffing.analyze(dump(before), dump(after)).to_dict()
    assert report["decision"] == "ignore-differences"
    (entry,) = report["resources"][0]["ignoreDifferences"]
    return entry, after


def test_ignore_differences_entry_shape() -> None:
    entry, _ = _ignore_entry()
    assert {k: entry[k] for k in ("group", "kind", "name", "namespace")} == {
        "group": "ray.io", "kind": "RayService", "name": "rayservice-sample", "namespace": "default"}


def test_jq_expressions_delete_exactly_the_owned_fields() -> None:
    entry, manifest = _ignore_entry()
    doc = json.loads(json.dumps(manifest))
    for expr in entry["jqPathExpressions"]:
        # Argo CD wraps each expression as del(<expr>) and runs it with gojq.
        doc = jq.compile(f"del({expr})").input_value(doc).first()
    for g in doc["spec"]["rayClusterConfig"]["workerGroupSpecs"]:
        assert "replicas" not in g and "scaleStrategy" not in g
    expected = json.loads(json.dumps(manifest))
    for g in expected["spec"]["rayClusterConfig"]["workerGroupSpecs"]:
        g.pop("replicas", None)
        g.pop("scaleStrategy", None)
    assert doc == expected


def test_jq_expressions_tolerate_a_manifest_without_worker_groups() -> None:
    entry, _ = _ignore_entry()
    doc = {"spec": {"rayClusterConfig": {"headGroupSpec": {}}}}
    for expr in entry["jqPathExpressions"]:
        assert jq.compile(f"del({expr})").input_value(doc).first() == doc


def test_markdown_snippet_is_valid_yaml_with_the_same_rules() -> None:
    import yaml

    before = edited(sample("sample"), lambda o: rcc(o).__setitem__("enableInTreeAutoscaling", True))
    after = edited(before, lambda o: group(o).__setitem__("replicas", 3))
    report = diffing.analyze(dump(before), dump(after))
    text = diffing.render_markdown(report)
    block = text.split("```yaml\n", 1)[1].split("```", 1)[0]
    snippet = yaml.safe_load(block)
    assert snippet["spec"]["ignoreDifferences"][0]["jqPathExpressions"] == \
        report.resources[0].ignore_differences[0]["jqPathExpressions"]
    assert snippet["spec"]["syncPolicy"]["syncOptions"] == ["ApplyOutOfSyncOnly=true"]
