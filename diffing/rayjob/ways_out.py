"""The ways out of a held RayJob change, each with who can take it: the reviewer's, the
author's edits, the platform's settings; only those that can release this hold."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from diffing.holds import (
    ALWAYS_SETTING,
    approve,
    author,
    fix_errors,
    platform,
    policy_setting,
    replacement_steps,
    unknown_device_steps,
)
from diffing.policy import Policy
from diffing.report import Finding, WayOut

SUSPEND_WITHOUT_SHUTDOWN = "rayjob-suspend-without-shutdown"


def next_steps(rollout: str, schema: bool, findings: Sequence[Finding], extra: Mapping[str, Any],
               policy: Policy, replacing: bool = False, spec: Mapping[str, Any] | None = None, *,
               capacity_held: bool = True) -> tuple[WayOut, ...]:
    """``spec``: the RayJob's new spec (which edit a rejected ``suspend`` asks for);
    ``capacity_held``: the known headroom lacks the run's accelerators (a hold of its own). No
    policy setting releases a suspend or a rejected RayJob (its error findings hold it whatever
    ``notApplied`` says), so none is offered for them."""
    steps: list[WayOut] = []
    codes = {f.code for f in findings if f.severity == "error"}
    if codes:
        steps.append(fix_errors())
    if SUSPEND_WITHOUT_SHUTDOWN in codes:
        if (spec or {}).get("clusterSelector"):
            steps.append(author("drop `suspend: true`: a RayJob on an existing cluster (`clusterSelector`) "
                                "cannot be suspended", (("spec", "suspend"), False)))
        else:
            steps.append(author("set `spec.shutdownAfterJobFinishes: true`: KubeRay suspends only a RayJob "
                                "that deletes its cluster when it ends",
                                (("spec", "shutdownAfterJobFinishes"), True)))
    if rollout == "not-applied":
        steps.append(author("fix the manifest where the API server rejects it (the error finding names the "
                            "field)" if schema else
                            "fix what KubeRay rejects, then delete and recreate the RayJob: a RayJob marked "
                            "ValidationFailed never leaves that status, even once the spec is fixed"))
    confirm = ""
    if rollout == "suspend":
        confirm = ("the job may lose its work (suspending deletes its RayCluster and submitter, and resuming "
                   "reruns it from the start)")
        steps.append(author("let the run finish: leave `spec.suspend` false", (("spec", "suspend"), False)))
    gpus = policy.devices(extra)
    if capacity_held:
        steps.extend(_room(rollout, replacing, gpus, policy))
    return (approve(steps, confirm), *steps)


def _room(rollout: str, replacing: bool, gpus: Mapping[str, int], policy: Policy) -> list[WayOut]:
    """A run held for accelerators the known headroom lacks (or a rename, both jobs at once)."""
    if rollout == "create" and replacing and policy.hold_on_recreate == "always":
        return [policy_setting(*ALWAYS_SETTING)]
    if rollout == "create" and replacing and gpus:
        return replacement_steps(gpus, policy.accelerators)
    if not gpus:
        return []
    flags = " ".join(f"{k}={v}" for k, v in gpus.items())
    return [platform(f"make room for the job's accelerators and say so: `--headroom {flags}` (the Action's "
                     "`headroom:` input) or the policy's `thresholds`"),
            *unknown_device_steps(gpus, policy.accelerators)]
