"""What one run of a RayJob needs, and the holds when a known headroom does not cover it.

Citations are KubeRay v1.7.0, ``ray-operator/``: RJC = ``controllers/ray/rayjob_controller.go``,
VAL = ``controllers/ray/utils/validation.go``, JOB = ``controllers/ray/common/job.go``.
"""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction
from typing import Any

from diffing.engine import Engine
from diffing.holds import shortfalls
from diffing.kube import resources as cap
from diffing.kube.values import dig, mapping, seq

# JOB:230-246 GetDefaultSubmitterContainer: the submitter's resources when no template is given
# (K8sJobMode, JOB:215-227), also the sidecar added to the head pod in SidecarMode (RJC:1025-1038).
DEFAULT_SUBMITTER = {"name": "ray-job-submitter", "resources": {
    "requests": {"cpu": "500m", "memory": "200Mi"}, "limits": {"cpu": "1", "memory": "1Gi"}}}

def job_amounts(spec: Mapping[str, Any], *, init_injection: bool = True
                ) -> tuple[cap.Amounts, dict[str, str]]:
    """Pods one run of the job adds: its RayCluster (none with clusterSelector, RJC:956-960; the
    SidecarMode submitter inside the head pod, RJC:1025-1038) and, in K8sJobMode, the submitter
    pod (JOB:215-246). HTTPMode and InteractiveMode add no submitter pod."""
    mode = spec.get("submissionMode") or "K8sJobMode"
    total: cap.Amounts = {}
    families: cap.Families = {}
    units: dict[str, str] = {}
    rcs = spec.get("rayClusterSpec")
    if not mapping(spec.get("clusterSelector")) and isinstance(rcs, Mapping):
        if mode == "SidecarMode":
            rcs = _with_sidecar(rcs)
        shape = cap.cluster_shape(rcs, init_injection=init_injection)
        total = shape.total()
        units.update(shape.units)
    if mode == "K8sJobMode":
        template = spec.get("submitterPodTemplate")
        pod = dig(template, "spec") if isinstance(template, Mapping) else {"containers": [DEFAULT_SUBMITTER]}
        total = cap.add(total, cap.pod_resources(pod, families=families))
    return total, {**cap.units_of(families), **units}


def job_asks(spec: Mapping[str, Any], namespace: str, *, init_injection: bool = True) -> list[Any]:
    """The pods of one run for the placement plan (docs/placement.md), as :func:`job_amounts`
    counts them: its RayCluster's head and workers, and the K8sJobMode submitter pod."""
    from diffing.placement import Ask, pod_requests, rollout_asks

    mode = spec.get("submissionMode") or "K8sJobMode"
    asks: list[Any] = []
    rcs = spec.get("rayClusterSpec")
    if not mapping(spec.get("clusterSelector")) and isinstance(rcs, Mapping):
        if mode == "SidecarMode":
            rcs = _with_sidecar(rcs)
        asks = rollout_asks(rcs, namespace=namespace, init_injection=init_injection)
    if mode == "K8sJobMode":
        template = spec.get("submitterPodTemplate")
        pod = dig(template, "spec") if isinstance(template, Mapping) else {"containers": [DEFAULT_SUBMITTER]}
        asks.append(Ask("submitter", pod_requests(pod), namespace=namespace, spec=pod))
    return asks


def _with_sidecar(rcs: Mapping[str, Any]) -> dict[str, Any]:
    head = dict(mapping(rcs.get("headGroupSpec")))
    template = dict(mapping(head.get("template")))
    pod = dict(mapping(template.get("spec")))
    pod["containers"] = [*seq(pod.get("containers")), DEFAULT_SUBMITTER]
    template["spec"], head["template"] = pod, template
    return {**rcs, "headGroupSpec": {**head, "template": template}}


def capacity_holds(engine: Engine, extra: Mapping[str, Fraction], known: Mapping[str, Fraction] | None,
                    replacing: bool = False) -> list[str]:
    """Accelerators (and resources with a policy threshold) the run needs beyond a known headroom.
    Without a known headroom nothing is held, as for a new RayService (docs/contract.md default policy),
    unless the job is created while the change deletes another object (``replacing``, a
    rename): both run at once, and an unknown headroom covers nothing, as for a second cluster."""
    if known is None and not replacing:
        return []
    policy = engine.policy
    if replacing and policy.hold_on_recreate != "gpu-only":
        return ["policy holdOnRecreate=always: every cluster recreation is held"] \
            if policy.hold_on_recreate == "always" else []
    out = []
    for name, amount, free in shortfalls(policy, extra, known):
        need = cap.render_amounts({name: amount}, policy.accelerators).get(name, amount)
        room = cap.render_amounts({name: free}, policy.accelerators, keep_zero=True).get(name, 0)
        where = ("no headroom is known" if known is None else
                 f"the known headroom covers {cap.human(name, room)}")
        out.append(f"the run needs {cap.human(name, need)} {name}{cap.family_note(name)}"
                   f"{' while the deleted one still runs' if replacing else ''}; {where} (without room its "
                   "pods stay Pending until a deadline fails the job)")
    return out
