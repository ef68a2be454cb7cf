"""An operator upgrade found in a change given as texts (two files, the HTTP API, an Argo CD diff),
judged over the change's own objects and, with a live basis, the cluster's."""

from __future__ import annotations

import pathlib

import yaml

import diffing
from diffing.operator.judge import REANNOTATED, upgrade_in, with_upgrade_in

ROOT = pathlib.Path(__file__).resolve().parents[3]


def _deployment(tag: str) -> str:
    return f"""\
apiVersion: apps/v1
kind: Deployment
metadata: {{name: kuberay-operator, namespace: kuberay-system}}
spec:
  selector: {{matchLabels: {{app: kuberay-operator}}}}
  template:
    metadata: {{labels: {{app: kuberay-operator}}}}
    spec:
      containers:
      - name: kuberay-operator
        image: quay.io/kuberay/operator:{tag}
"""


def _sample(name: str) -> str:
    return (ROOT / f"samples/{name}/before.yaml").read_text()


def _live(text: str, **meta: object) -> dict:
    """A sample object as the API server answers a list: status, managedFields and the rest."""
    obj = next(d for d in yaml.safe_load_all(text) if d and d.get("kind") in ("RayService", "RayCluster"))
    obj["metadata"].setdefault("namespace", "default")
    obj["metadata"].update({"resourceVersion": "812", "uid": "0d9f", "generation": 3,
                            "managedFields": [{"manager": "argocd-controller"}], **meta})
    obj["status"] = {"serviceStatus": "Running"}
    return obj


def test_two_files_judge_the_objects_in_the_change_and_say_so():
    svc = _sample("gpu-image-bump")
    up = upgrade_in([("before.yaml", _deployment("v1.6.2") + "---\n" + svc)],
                    [("after.yaml", _deployment("v1.7.0") + "---\n" + svc)])
    assert up is not None and (up.before, up.after) == ("1.6.2", "1.7.0")
    assert [(o.kind, o.name, o.first_reconcile) for o in up.objects] == [
        ("RayService", "ray-serve-llm", REANNOTATED)]
    assert any("only the 1 object in the change" in n for n in up.notes)


def test_a_single_text_each_side_is_one_file_even_under_two_names():
    up = upgrade_in([("a/operator.yaml", _deployment("v1.6.2"))],
                    [("b/operator.yaml", _deployment("v1.7.0"))])
    assert up is not None and up.changes[0].path == "b/operator.yaml"


def test_the_cluster_objects_are_judged_and_owned_clusters_are_left_to_their_owner():
    svc = _live(_sample("gpu-image-bump"))
    owned = _live(_sample("raycluster-image-bump"), name="ray-serve-llm-raycluster-abcde",
                  ownerReferences=[{"kind": "RayService", "name": "ray-serve-llm"}])
    standalone = _live(_sample("raycluster-image-bump"))
    up = upgrade_in([("Deployment kuberay-system/kuberay-operator", _deployment("v1.6.2"))],
                    [("Deployment kuberay-system/kuberay-operator", _deployment("v1.7.0"))],
                    cluster=[svc, owned, standalone])
    assert up is not None
    judged = sorted((o.kind, o.name) for o in up.objects)
    assert judged == [("RayCluster", standalone["metadata"]["name"]), ("RayService", "ray-serve-llm")]
    assert not any("only the" in n for n in up.notes)
    assert up.decision == "approve"


def test_an_object_in_the_change_and_the_cluster_is_judged_once_as_the_change_has_it():
    text = _sample("gpu-image-bump")
    live = _live(text)
    live["metadata"]["name"] = "ray-serve-llm"
    up = upgrade_in([("x.yaml", _deployment("v1.6.2") + "---\n" + text)],
                    [("x.yaml", _deployment("v1.7.0") + "---\n" + text)], cluster=[live])
    assert up is not None
    assert [(o.name, o.source.split(":")[0]) for o in up.objects] == [("ray-serve-llm", "x.yaml")]


def test_a_cluster_that_could_not_be_read_holds():
    up = upgrade_in([("op", _deployment("v1.6.2"))], [("op", _deployment("v1.7.0"))],
                    cluster_unread="the Kubernetes API answered 403")
    assert up is not None and up.decision == "hold"
    assert "could not be read (the Kubernetes API answered 403)" in up.summary


def test_no_operator_change_leaves_the_report_alone():
    text = _sample("gpu-image-bump")
    report = diffing.analyze([("f", text)], [("f", text)])
    assert upgrade_in([("f", text)], [("f", text)]) is None
    assert with_upgrade_in(report, [("f", text)], [("f", text)]) is report


def test_the_upgrade_holds_the_report():
    text = _sample("gpu-image-bump")
    before = [("f", _deployment("v1.6.2") + "---\n" + text)]
    after = [("f", _deployment("v1.9.0") + "---\n" + text)]
    report = with_upgrade_in(diffing.analyze(before, after), before, after)
    assert report.decision == "hold" and report.to_dict()["operatorUpgrade"]["to"] == "1.9.0"
