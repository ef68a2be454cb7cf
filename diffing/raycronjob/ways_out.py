"""The ways out of a held RayCronJob change, most specific first (the last is always the override)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from diffing.holds import OVERRIDE, replacement_steps, unknown_device_steps
from diffing.vocab import Rollout

if TYPE_CHECKING:
    from diffing.raycronjob.analyze import RayCronJobAnalysis


def next_steps(a: RayCronJobAnalysis) -> tuple[str, ...]:
    steps: list[str] = []
    codes = {f.code for f in a.findings if f.severity == "error"}
    if codes:
        steps.append("fix the error findings below: they hold whatever else the change does")
    if "raycronjob-never-fires" in codes:
        steps.append("to keep a RayCronJob from running, set suspend: true; an impossible date (30 "
                     "February) makes KubeRay create one RayJob at once")
    if "raycronjob-clusters-accumulate" in codes:
        steps.append("set jobTemplate.shutdownAfterJobFinishes: true (with a ttlSecondsAfterFinished) or a "
                     "deletionStrategy, so each run's RayCluster is deleted when its job ends")
    if a.rollout == Rollout.NOT_APPLIED:
        steps.append("fix the manifest where the API server rejects it (the error finding names the field)"
                     if a.schema_errors else
                     "fix what KubeRay rejects: the RayCronJob recovers by itself once its spec is valid "
                     "(no recreate needed), but the activations missed meanwhile then get their RayJobs at "
                     "once")
    gpus = a.policy.devices(a.rendered)
    if a.rollout == Rollout.CREATE and a.replacing and gpus:
        steps.extend(replacement_steps(gpus))
    elif a.rollout in (Rollout.CREATE, Rollout.RESUME, Rollout.NEXT_RUN) and gpus:
        flags = " ".join(f"{k}={v}" for k, v in gpus.items())
        runs = f"{a.burst[0]} runs'" if a.burst is not None and a.burst[0] > 1 else "the run's"
        steps.append(f"make room for {runs} accelerators and say so: `--headroom {flags}` (the Action's "
                     "`headroom:` input) or the policy's `thresholds`")
        if a.burst is not None and a.burst[0] > 1:
            steps.append("or avoid the catch-up: recreate the RayCronJob with the new schedule (a new "
                         "object starts from its creation time, RCJC:102-108); its "
                         "RayJobs are deleted with the old one, so do it between runs")
    steps.extend(unknown_device_steps(gpus, a.policy.accelerators))
    steps.append(OVERRIDE)
    return tuple(steps)
