"""The Argo CD ignoreDifferences advice for an autoscaled RayCluster: the entry, its jq expressions run
as Argo CD runs them, and the markdown snippet.
"""

from __future__ import annotations

import json
from typing import Any

import jq
import yaml

import diffing
from tests.diffing.raycluster.cluster import AUTOSCALED, gpu, one, variant


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
