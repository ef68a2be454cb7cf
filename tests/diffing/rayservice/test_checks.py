"""Hazards of a RayService change, each a finding (diffing/rayservice/checks.py)."""

from __future__ import annotations

import yaml

import diffing
from tests.builders import dump, edited, group, sample
from tests.diffing.helpers import LLM, device, one, resource


def test_findings_for_common_hazards() -> None:
    base = sample("sample")
    after = edited(base, lambda o: o.__setitem__("apiVersion", "ray.io/v1alpha1"),
                   lambda o: group(o).__setitem__("replicas", 9),
                   lambda o: group(o).__setitem__("surprise", True))
    r = resource(base, after)
    codes = {f["code"] for f in r["findings"]}
    assert {"deprecated-api-version", "replicas-outside-bounds", "unknown-field"} <= codes
    bounds = next(f for f in r["findings"] if f["code"] == "replicas-outside-bounds")
    assert "KubeRay silently runs 5 pods" in bounds["message"]
    assert bounds["line"] is not None


def test_respect_ignore_differences_with_atomic_worker_groups_is_flagged() -> None:
    app = {"apiVersion": "argoproj.io/v1alpha1", "kind": "Application", "metadata": {"name": "serving"},
           "spec": {"ignoreDifferences": [{"group": "ray.io", "kind": "RayService", "jqPathExpressions": [
               ".spec.rayClusterConfig.workerGroupSpecs[]?.replicas"]}],
                    "syncPolicy": {"syncOptions": ["RespectIgnoreDifferences=true"]}}}
    base = dump(sample("sample"))
    report = diffing.analyze(base, base.replace("price: 3", "price: 4") + "---\n" + yaml.safe_dump(app))
    codes = {f.code for f in report.resources[0].findings}
    assert "respect-ignore-differences-atomic" in codes


def test_gpu_without_toleration_names_any_accelerator() -> None:
    obj = edited(LLM, device("gpu.intel.com/i915"),
                 lambda o: o["spec"]["rayClusterConfig"]["workerGroupSpecs"][0]["template"]["spec"].pop(
                     "tolerations", None),
                 lambda o: o["spec"]["rayClusterConfig"]["workerGroupSpecs"][0]["template"]["spec"].pop(
                     "nodeSelector", None))
    codes = {f["code"]: f["message"] for f in one(diffing.analyze("", dump(obj)))["findings"]}
    assert "gpu.intel.com/i915" in codes["gpu-without-toleration"]
