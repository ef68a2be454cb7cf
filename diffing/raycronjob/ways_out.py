"""The ways out of a held RayCronJob change, each with who can take it (the reviewer's first,
then the author's edits, then the platform's settings); only those that can release this hold."""

from __future__ import annotations

from typing import TYPE_CHECKING

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
from diffing.raycronjob.capacity import burst_holds
from diffing.rayjob.capacity import capacity_holds
from diffing.report import WayOut
from diffing.vocab import Rollout

if TYPE_CHECKING:
    from diffing.raycronjob.analyze import RayCronJobAnalysis


def next_steps(a: RayCronJobAnalysis) -> tuple[WayOut, ...]:
    steps: list[WayOut] = []
    codes = {f.code for f in a.findings if f.severity == "error"}
    if codes:
        steps.append(fix_errors())
    if "raycronjob-never-fires" in codes:
        steps.append(author("to keep a RayCronJob from running, set suspend: true; an impossible date (30 "
                            "February) makes KubeRay create one RayJob at once"))
    if "raycronjob-clusters-accumulate" in codes:
        steps.append(author("set jobTemplate.shutdownAfterJobFinishes: true (with a ttlSecondsAfterFinished) "
                            "or a deletionStrategy, so each run's RayCluster is deleted when its job ends"))
    if a.rollout == Rollout.NOT_APPLIED:
        steps.append(author("fix the manifest where the API server rejects it (the error finding names the "
                            "field)" if a.schema_errors else
                            "fix what KubeRay rejects: the RayCronJob recovers by itself once its spec is "
                            "valid (no recreate needed), but the activations missed meanwhile then get their "
                            "RayJobs at once"))
    if a.rollout in (Rollout.CREATE, Rollout.RESUME, Rollout.NEXT_RUN) and _short(a):
        steps.extend(_room(a))
    return (approve(steps), *steps)


def _short(a: RayCronJobAnalysis) -> bool:
    """The runs' accelerators are held for lack of room (not only for what else was found), as
    :meth:`RayCronJobAnalysis.decide` weighs them."""
    if a.burst is not None and a.burst[0] > 1:
        return bool(burst_holds(a.policy, a.extra, a.known, a.burst[0]))
    renamed = a.rollout == Rollout.CREATE and bool(a.replacing) and bool(a.extra)
    return bool(capacity_holds(a.engine, a.extra, a.known, renamed))


def _room(a: RayCronJobAnalysis) -> list[WayOut]:
    gpus = a.policy.devices(a.rendered)
    renamed = a.rollout == Rollout.CREATE and bool(a.replacing) and bool(a.extra)
    if renamed and a.policy.hold_on_recreate == "always":
        return [policy_setting(*ALWAYS_SETTING)]
    if renamed and gpus:
        return replacement_steps(gpus, a.policy.accelerators)
    if not gpus:
        return []
    flags = " ".join(f"{k}={v}" for k, v in gpus.items())
    burst = a.burst is not None and a.burst[0] > 1
    runs = f"{a.burst[0]} runs'" if a.burst is not None and burst else "the run's"
    steps = []
    if burst:
        steps.append(author("avoid the catch-up: recreate the RayCronJob with the new schedule (a new "
                            "object starts from its creation time, RCJC:102-108); its RayJobs are deleted "
                            "with the old one, so do it between runs"))
    steps.append(platform(f"make room for {runs} accelerators and say so: `--headroom {flags}` (the Action's "
                          "`headroom:` input) or the policy's `thresholds`"))
    return steps + unknown_device_steps(gpus, a.policy.accelerators)
