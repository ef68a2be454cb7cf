"""What a RayCronJob change makes run: one run's pods (the RayJob kind's arithmetic), times the
runs it starts at once.

A created RayCronJob starts one run at a time: its first RayJob at the schedule's first
activation after the creation time (raycronjob_controller.go:102-112). A resume, a fix of a
rejected spec, or a schedule change starts one RayJob for every activation between
``status.lastScheduleTime`` and now, back to back: each pass creates the RayJob of the oldest
missed activation, records it as ``lastScheduleTime`` (not the current time) and the status
update triggers the next pass at once (raycronjob_controller.go:102-143; the controller watches
its object without a filter, 193-207). For a schedule change the number is bounded: the last run
was an activation of the old schedule, so at most the new schedule's activations within one of
the old schedule's intervals are missed. A template-only change adds what the new run needs
beyond the old one.
"""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction
from typing import Any

from diffing.holds import shortfalls
from diffing.kube import resources as cap
from diffing.kube.values import mapping
from diffing.managed import external_manager
from diffing.policy import Policy
from diffing.raycronjob.cron import Schedule, sample
from diffing.rayjob.capacity import job_amounts


def runs_here(template: Mapping[str, Any]) -> bool:
    """Whether a RayJob built from ``template`` starts pods in this cluster at once: not when it
    is created suspended (it waits for someone, e.g. Kueue, to unsuspend it; rayjob_controller.go:
    179-181) or handed to another controller (``managedBy``, rayjob_controller.go:107-110)."""
    return mapping(template).get("suspend") is not True and external_manager({"spec": template}) is None


def run_amounts(template: Mapping[str, Any], *, init_injection: bool = True
                ) -> tuple[cap.Amounts, dict[str, str]]:
    """One run's pods: the RayJob's RayCluster and its submitter (:func:`diffing.rayjob.capacity.
    job_amounts`); nothing when the RayJob does not start here."""
    if not template or not runs_here(template):
        return {}, {}
    return job_amounts(template, init_injection=init_injection)


def catch_up_bound(before: Schedule, after: Schedule) -> tuple[int, bool] | None:
    """The most RayJobs a change from ``before`` to ``after`` creates at once (``(n, at_least)``),
    ``None`` when the old schedule's interval is unknown (it fires less than twice in the sample).

    The last run was an activation of ``before``; the change lands before its next one, so what
    is missed is ``after``'s activations in less than one of ``before``'s longest intervals.
    """
    gap = sample(before).longest_gap()
    if gap is None:
        return None
    return sample(after).most_in_window(gap)


def per_day(schedule: Schedule) -> tuple[int, bool]:
    """The most activations within 24 hours: the RayJobs each day of a pause adds to a resume."""
    return sample(schedule).most_in_window(86400)


def overlap(schedule: Schedule, lifetime: int) -> tuple[int, bool]:
    """The most runs alive at once when each lives at least ``lifetime`` seconds."""
    return sample(schedule).most_in_window(lifetime)


def burst_holds(policy: Policy, extra: Mapping[str, Fraction], known: Mapping[str, Fraction] | None,
                runs: int) -> list[str]:
    """Accelerators that ``runs`` RayJobs created at once need beyond a known headroom (nothing
    is held without one, as for a single run: :func:`diffing.rayjob.capacity.capacity_holds`)."""
    if known is None:
        return []
    out = []
    for name, amount, free in shortfalls(policy, extra, known):
        need = cap.render_amounts({name: amount}, policy.accelerators).get(name, amount)
        room = cap.render_amounts({name: free}, policy.accelerators, keep_zero=True).get(name, 0)
        out.append(f"{runs} runs created at once need {cap.human(name, need)} {name}{cap.family_note(name)}; "
                   f"the known headroom covers {cap.human(name, room)} (without room their pods stay Pending "
                   "until a deadline fails the jobs)")
    return out
