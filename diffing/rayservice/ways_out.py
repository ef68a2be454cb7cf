"""What to do about a hold: the concrete ways out, specific to its cause.

A hold that only says "no" gets switched off. Each hold ends with the ways a team really gets
past it: make the change take effect (for a change the operator would not apply), give or
declare headroom, roll out with less, move a Serve setting where it applies in place, or
accept it on purpose (an audited override). Pure: values in, sentences out.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from diffing.holds import OVERRIDE, replacement_steps, unknown_device_steps
from diffing.rayservice.rules import Category
from diffing.report import Change, Finding
from diffing.vocab import Rollout, Severity

_NOT_APPLIED = {
    "schema": "fix the manifest where the API server rejects it (the error finding names the field); "
              "until then nothing of this change is stored",
    "validation": "fix what KubeRay's validation rejects (the error finding names the rule); until then the "
                  "RayService is marked ValidationFailed and keeps running the old spec",
    "suspended": "set `spec.suspend: false` to apply it; resuming builds a new RayCluster at full size",
    "strategy-none": "set `spec.upgradeStrategy.type: NewCluster` (room for a second cluster while it rolls) "
                     "or `NewClusterWithIncrementalUpgrade`; under `None` cluster changes never apply",
    "bounds": "the new bounds take effect with the next change that builds a new RayCluster or when a "
              "worker group is appended; to use them now, set them on the running RayCluster too "
              "(`kubectl edit raycluster`), which KubeRay v1.7 leaves as it is",
    "replicas": "replicas in Git only size a new cluster: change the running RayCluster's replicas, or turn "
                "on autoscaling (`enableInTreeAutoscaling: true`) and let Ray size it",
    "ignored": "tolerations and schedulingGates reach only a new RayCluster: ship them with a change that "
               "builds one, or set them on the running RayCluster's pods' template as well",
}

# Container fields that Ray Serve can carry per deployment (runtime_env), applied in place.
_SERVE_CARRIABLE = ("env", "envFrom")


def _serve_could_carry(changes: Sequence[Change]) -> bool:
    """Only container env vars changed among the cluster-recreating changes."""
    recreating = [c for c in changes if c.category == Category.CLUSTER_RECREATE.value]
    return bool(recreating) and all(any(seg in _SERVE_CARRIABLE for seg in c.path if isinstance(seg, str))
                                    for c in recreating)


def next_steps(*, rollout: str, cause: str, strategy: str, changes: Sequence[Change],
               findings: Sequence[Finding], extra: Mapping[str, Any], is_accelerator: Callable[[str], bool],
               replacing: bool = False, declared: Sequence[str] = ()) -> tuple[str, ...]:
    """The ways out of a hold, most specific first (call only for a held resource).

    ``replacing``: the resource is created while the change deletes another (a rename);
    ``declared``: the policy's own ``accelerators`` (no hint to exclude those).
    """
    steps: list[str] = []
    if any(f.severity == Severity.ERROR for f in findings):
        steps.append("fix the error findings below: they hold whatever else the change does")
    if rollout == Rollout.NOT_APPLIED and cause in _NOT_APPLIED:
        steps.append(_NOT_APPLIED[cause])
    if rollout == Rollout.SUSPEND:
        steps.append("confirm the outage is intended: suspending deletes every RayCluster of this "
                     "RayService")
    gpus = {k: v for k, v in extra.items() if is_accelerator(k) and isinstance(v, int) and v > 0}
    if rollout in (Rollout.NEW_CLUSTER, Rollout.INCREMENTAL) and gpus:
        need = ", ".join(f"{v} {k}" for k, v in gpus.items())
        flags = " ".join(f"{k}={v}" for k, v in gpus.items())
        steps.append(f"make room for {need} while both clusters run, and say so: `--headroom {flags}` (the "
                     "Action's `headroom:` input), the service's live basis (it reads the free GPUs), or "
                     "the policy's `thresholds`")
        if rollout == Rollout.NEW_CLUSTER and "NewClusterWithIncrementalUpgrade" not in strategy:
            steps.append("roll out with less: `upgradeStrategy.type: NewClusterWithIncrementalUpgrade` moves "
                         "capacity step by step (only `maxSurgePercent` of the cluster extra at a time); it "
                         "needs the RayServiceIncrementalUpgrade feature gate, in-tree autoscaling and a "
                         "Gateway API controller")
        if _serve_could_carry(changes):
            steps.append("if these are settings of your Serve apps, move them to `serveConfigV2` "
                         "(`runtime_env.env_vars`): Serve applies them in place, no new cluster")
    if rollout == Rollout.CREATE and replacing and gpus:
        steps.extend(replacement_steps(gpus))
    steps.extend(unknown_device_steps(gpus, declared))
    steps.append(OVERRIDE)
    return tuple(steps)
