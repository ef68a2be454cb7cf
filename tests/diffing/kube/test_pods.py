"""Pod rules the API server enforces on the pods KubeRay builds (issue 9, point 7).

The RayService is accepted, but the API server rejects every pod of a template whose extended
resource (any accelerator) request differs from its limit, or whose CPU/memory request is
above its limit: the pods are never created and the rollout never finishes. Rules of
Kubernetes' ``pkg/apis/core/validation/validation.go``, ids ``<function>/<case>``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

import diffing
from diffing.kube.paths import format_path
from diffing.kube.pods import RULES, pod_problems
from tests.builders import dump, edited, rcc, sample, set_images, worker_container

SD = "stable-diffusion"  # worker: limits nvidia.com/gpu 1, requests nvidia.com/gpu 1
GPU = "nvidia.com/gpu"


def resources(requests: dict[str, Any] | None = None, limits: dict[str, Any] | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if requests is not None:
        out["requests"] = requests
    if limits is not None:
        out["limits"] = limits
    return {"resources": out}


def container(**fields: Any) -> dict[str, Any]:
    return {"name": "c", **fields}


@dataclass
class Case:
    id: str
    container: dict[str, Any]
    rules: list[str]  # rule ids that fail, in table order


CASES = [
    Case("ValidateResourceRequirements/request-not-limit: gpu limit 2 request 1",
         container(**resources({GPU: 1}, {GPU: 2})), ["ValidateResourceRequirements/request-not-limit"]),
    Case("ValidateResourceRequirements/request-not-limit: tpu request above limit",
         container(**resources({"google.com/tpu": 8}, {"google.com/tpu": 4})),
         ["ValidateResourceRequirements/request-not-limit"]),
    Case("ValidateResourceRequirements/request-without-limit: gpu request only",
         container(**resources({GPU: 1}, {"cpu": "1"})),
             ["ValidateResourceRequirements/request-without-limit"]),
    Case("ValidateResourceRequirements/extended-not-integer: half a gpu",
         container(**resources(None, {GPU: "0.5"})), ["ValidateResourceRequirements/extended-not-integer"]),
    Case("ValidateResourceRequirements/request-over-limit: cpu", container(**resources({"cpu": "4"},
         {"cpu": "2"})),
         ["ValidateResourceRequirements/request-over-limit"]),
    Case("ValidateResourceRequirements/request-over-limit: memory across units",
         container(**resources({"memory": "3G"}, {"memory": "2Gi"})),
         ["ValidateResourceRequirements/request-over-limit"]),
    Case("ValidateResourceRequirements/negative: cpu", container(**resources({"cpu": "-1"})),
         ["ValidateResourceRequirements/negative"]),
    Case("quantity-out-of-range: cpu 1e200000 (our int64 bound, issue 12)",
         container(**resources({"cpu": "1e200000"}, {"cpu": "1e200000"})),
         ["quantity-out-of-range", "quantity-out-of-range"]),
    Case("ValidateResourceRequirements/resource-name: unqualified gpu", container(**resources(None,
         {"gpu": 1})),
         ["ValidateResourceRequirements/resource-name"]),
    Case("validateContainerPorts/port-name: longer than 15", container(ports=[
        {"containerPort": 8080, "name": "serve-metrics-port"}]), ["validateContainerPorts/port-name"]),
    Case("validateContainerPorts/port-name: upper case", container(ports=[{"containerPort": 8080,
         "name": "Serve"}]),
         ["validateContainerPorts/port-name"]),
    Case("validateContainerPorts/port-number: zero", container(ports=[{"containerPort": 0}]),
         ["validateContainerPorts/port-number"]),
    # Accepted: the pod defaulting copies a limit into a missing request; CPU/memory may overcommit.
    Case("accepted: gpu limit only", container(**resources({"cpu": "1"}, {GPU: 2})), []),
    Case("accepted: gpu request equals limit in other spelling", container(**resources({GPU: "1"},
         {GPU: 1})), []),
    Case("accepted: cpu and memory below limits", container(**resources({"cpu": "500m", "memory": "1Gi"},
                                                                        {"cpu": "2", "memory": "2Gi"})), []),
    Case("accepted: hugepages with equal request and limit",
         container(**resources({"hugepages-2Mi": "1Gi", "memory": "1Gi"}, {"hugepages-2Mi": "1Gi"})), []),
    Case("accepted: KubeRay port names", container(ports=[{"containerPort": 6379, "name": "gcs"},
                                                          {"containerPort": 8265, "name": "dashboard"},
                                                          {"containerPort": 10001, "name": "client"},
                                                          {"containerPort": 8000, "name": "serve"}]), []),
]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_pod_rule(case: Case) -> None:
    spec = {"headGroupSpec": {"template": {"spec": {"containers": [case.container]}}}}
    assert [p.rule for p in pod_problems(spec, ("spec", "rayClusterConfig"))] == case.rules


def test_every_pod_rule_has_a_failing_case() -> None:
    assert {r.id for r in RULES} <= {rule for c in CASES for rule in c.rules}


def gpu_limit(n: int):  # type: ignore[no-untyped-def]
    return lambda o: worker_container(o)["resources"]["limits"].__setitem__(GPU, str(n))


@dataclass
class Flow:
    id: str
    before: list[Any]
    after: list[Any]
    rollout: str
    decision: str
    severity: str | None  # of the pod-rejected finding, None = no finding
    headroom: dict[str, Any] | None = None
    create: bool = False


FLOWS = [
    Flow("gpu-limit-2-request-1-image-bump-held-despite-headroom", [], [gpu_limit(2), lambda o: set_images(
        o, "rayproject/ray-ml:2.47.0-gpu")], "new-cluster", "hold", "error", {GPU: 8}),
    Flow("gpu-limit-2-request-1-created", [], [gpu_limit(2)], "create", "hold", "error", create=True),
    Flow("cpu-request-over-limit", [], [lambda o: worker_container(o)["resources"]["requests"].__setitem__(
        "cpu", "8")], "new-cluster", "hold", "error", {GPU: 8}),
    Flow("already-broken-template-is-a-warning", [gpu_limit(2)], [lambda o: o["spec"].__setitem__(
        "serveConfigV2", o["spec"]["serveConfigV2"].replace("stable_diffusion:entrypoint",
            "stable_diffusion:app"))],
         "serve-in-place", "approve", "warning"),
    Flow("autoscaler-sidecar-resources", [], [lambda o: rcc(o).update(
        enableInTreeAutoscaling=True, autoscalerOptions={"resources": {"requests": {"cpu": "2"},
                                                                       "limits": {"cpu": "1"}}})],
         "new-cluster", "hold", "error", {GPU: 8}),
    Flow("valid-gpu-image-bump-with-headroom", [], [lambda o: set_images(o, "rayproject/ray-ml:2.47.0-gpu")],
         "new-cluster", "approve", None, {GPU: 8}),
]


@pytest.mark.parametrize("flow", FLOWS, ids=[f.id for f in FLOWS])
def test_pod_rejection_changes_the_verdict(flow: Flow) -> None:
    base = edited(sample(SD), *flow.before)
    after = edited(base, *flow.after)
    report = diffing.analyze("" if flow.create else dump(base), dump(after), headroom=flow.headroom)
    (r,) = report.to_dict()["resources"]
    assert (r["rollout"], r["decision"]) == (flow.rollout, flow.decision), r["reasons"]
    pods = [f for f in r["findings"] if f["code"] == "pod-rejected"]
    assert [f["severity"] for f in pods][:1] == ([flow.severity] if flow.severity else [])
    if pods:
        assert "never created" in pods[0]["message"]


def test_pod_rejected_path_points_at_the_request() -> None:
    after = edited(sample(SD), gpu_limit(2))
    (problem,) = pod_problems(rcc(after), ("spec", "rayClusterConfig"))
    assert format_path(problem.path) == (
        "spec.rayClusterConfig.workerGroupSpecs[groupName=gpu-group].template.spec.containers[name=ray-worker]"
        '.resources.requests["nvidia.com/gpu"]')
    assert "must equal its limit (2)" in problem.message
