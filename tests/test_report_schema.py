"""docs/report.schema.json is the report users build on: every report the tool prints conforms."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import jsonschema_rs
import pytest

import diffing

ROOT = Path(__file__).resolve().parents[1]
SCHEMA = json.loads((ROOT / "docs" / "report.schema.json").read_text())
VALIDATOR = jsonschema_rs.validator_for(SCHEMA)
EXPECTED = sorted(ROOT.glob("samples/*/expected.json"))
UPSTREAM = sorted((ROOT / "samples" / "kuberay-v1.7.0").glob("*.yaml"))


def errors(report: dict) -> list[str]:
    return [f"{e.instance_path}: {e.message}" for e in VALIDATOR.iter_errors(report)]


@pytest.mark.parametrize("path", EXPECTED, ids=[p.parent.name for p in EXPECTED])
def test_reviewed_sample_reports_conform(path: Path) -> None:
    assert errors(json.loads(path.read_text())) == []


@pytest.mark.parametrize("path", UPSTREAM, ids=[p.name for p in UPSTREAM])
def test_reports_on_kuberay_samples_conform(path: Path) -> None:
    text = path.read_text()
    for before, after in (("", text), (text, ""), (text, text.replace("2.52.0", "2.53.0"))):
        assert errors(diffing.analyze(before, after).to_dict()) == []


def test_report_level_findings_and_other_kinds_conform() -> None:
    # A RayCluster that a RayService owns is the RayService's: counted, not analysed on its own.
    rc = ("apiVersion: ray.io/v1\nkind: RayCluster\nmetadata: {name: c, ownerReferences: [{apiVersion: "
          "ray.io/v1, kind: RayService, name: s, uid: u}]}\nspec: {}\n---\napiVersion: v1\nkind: ConfigMap\n"
          "metadata: {name: m}\n")
    note = diffing.Finding("error", "render-failed", "overlays/prod (kustomize)", "kustomize: boom")
    report = diffing.analyze("", rc, notes=[note]).to_dict()
    assert report["notAnalysed"] == {"ConfigMap": 1, "RayCluster": 1}
    assert report["findings"][0]["code"] == "render-failed" and report["resources"] == []
    assert errors(report) == []


def test_the_schema_rejects_what_is_not_the_contract() -> None:
    good = json.loads(EXPECTED[0].read_text())
    for mutate in (lambda r: r.pop("decision"), lambda r: r.update(decision="maybe"),
                   lambda r: r["resources"][0].update(rollout="explode"),
                   lambda r: r["resources"][0]["capacity"].update(basis="guess"),
                   lambda r: r.update(extra=1)):
        bad = copy.deepcopy(good)
        mutate(bad)
        assert errors(bad), bad


def test_operator_upgrade_report_conforms() -> None:
    from diffing.operator.detect import detect
    from diffing.operator.judge import judge, with_operator_upgrade

    changes = detect([("Chart.yaml", "dependencies: [{name: kuberay-operator, version: 1.6.2}]",
                       "dependencies: [{name: kuberay-operator, version: 1.7.0}]")])
    texts = [(str(p), p.read_text()) for p in sorted((ROOT / "samples").glob("*/before.yaml"))]
    for up in (judge(changes, texts), judge(changes[:0], texts)):
        report = with_operator_upgrade(diffing.analyze("", ""), up).to_dict()
        assert errors(report) == []
        assert report["operatorUpgrade"]["objects"] or not up.supported
    broken = with_operator_upgrade(diffing.analyze("", ""), judge(changes, texts)).to_dict()
    broken["operatorUpgrade"]["objects"][0]["firstReconcile"] = "rebuilt-maybe"
    assert errors(broken)


def test_report_with_a_placement_plan_conforms() -> None:
    # A live basis carrying the nodes and pods: the capacity gains "placement" (docs/placement.md).
    sample = Path(__file__).resolve().parents[1] / "samples" / "gpu-image-bump"
    node = {"metadata": {"name": "n", "labels": {}}, "spec": {},
            "status": {"allocatable": {"cpu": "4", "memory": "16Gi", "pods": "110", "nvidia.com/gpu": "1"},
                       "conditions": [{"type": "Ready", "status": "True"}]}}
    before, after = (sample / "before.yaml").read_text(), (sample / "after.yaml").read_text()
    keys = list(diffing.live_objects(after, "after"))
    live = {k: diffing.LiveCluster(active_cluster="old", cluster=([node], [])) for k in keys}
    report = diffing.analyze(before, after, live=live).to_dict()
    plans = [r["capacity"]["placement"] for r in report["resources"] if "placement" in r["capacity"]]
    assert plans and plans[0]["fits"] is False and "addNodes" in plans[0]
    assert plans[0]["byPool"]["resource"] == "nvidia.com/gpu" and plans[0]["byPool"]["notPlaced"] == 4
    assert errors(report) == []
    plans[0]["byPool"]["pools"][0]["placed"] = -1  # the picture's numbers are checked too
    assert errors(report)
