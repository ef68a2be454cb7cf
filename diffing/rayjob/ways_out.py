"""The ways out of a held RayJob change."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from diffing.holds import OVERRIDE, replacement_steps, unknown_device_steps
from diffing.policy import Policy
from diffing.report import Finding


def next_steps(rollout: str, schema: bool, findings: Sequence[Finding], extra: Mapping[str, Any],
                policy: Policy, replacing: bool = False) -> tuple[str, ...]:
    steps: list[str] = []
    if any(f.severity == "error" for f in findings):
        steps.append("fix the error findings below: they hold whatever else the change does")
    if rollout == "not-applied":
        steps.append("fix the manifest where the API server rejects it (the error finding names the field)"
                     if schema else
                     "fix what KubeRay rejects, then delete and recreate the RayJob: a RayJob marked "
                     "ValidationFailed never leaves that status, even once the spec is fixed")
    if rollout == "suspend":
        steps.append("confirm the job may lose its work: suspending deletes its RayCluster and submitter, "
                     "and resuming reruns it from the start")
    gpus = policy.devices(extra)
    if rollout == "create" and replacing and gpus:
        steps.extend(replacement_steps(gpus))
    elif rollout in ("create", "resume") and gpus:
        flags = " ".join(f"{k}={v}" for k, v in gpus.items())
        steps.append(f"make room for the job's accelerators and say so: `--headroom {flags}` (the Action's "
                     "`headroom:` input) or the policy's `thresholds`")
    steps.extend(unknown_device_steps(gpus, policy.accelerators))
    steps.append(OVERRIDE)
    return tuple(steps)
