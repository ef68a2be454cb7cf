"""What the RayCronJob controller does about a change: the rollout and its reasons.

First match wins: ``create`` · ``delete`` · ``not-applied`` (the API server rejects the
manifest, or KubeRay's ValidateRayCronJobSpec does) · ``suspend`` · ``resume`` (suspend turns
false, or a rejected spec becomes valid) · ``next-run`` (the template or the schedule) ·
``none``; then, whatever matched, ``none`` when the operator runs no RayCronJob controller (the
feature gate is off: main.go:353-359). Citations are KubeRay v1.7.0, ``ray-operator/``: RCJC =
``controllers/ray/raycronjob_controller.go``, TYPES = ``apis/ray/v1/raycronjob_types.go``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from diffing.raycronjob.rules import APPLIES_NOW, NEXT_RUN, SERVICE_LEVEL
from diffing.vocab import Action, Rollout

if TYPE_CHECKING:
    from diffing.raycronjob.analyze import RayCronJobAnalysis

GATE_OFF = ("no RayCronJob controller runs: its feature gate is alpha and off by default "
            "(pkg/features/features.go:110), and the operator starts the controller only when it is on "
            "(main.go:353-359); the API server stores the object, but nothing reads it, so no RayJob is "
            "created and nothing is validated")
REJECTED = ("KubeRay rejects the spec: it records a Warning event InvalidRayCronJobSpec and ends every pass "
            "there (RCJC:77-82), so no RayJob is created until the spec is valid again; RayJobs created "
            "before are not touched and the status is not changed. Nothing is recorded for good: the next "
            "edit triggers a new pass (RCJC:193-207)")
_NAMED = ("named after the object and the minute of the activation (<name>-<minutes since 1970>) and owned "
          "by the RayCronJob (RCJC:160-191)")


def created_reason(a: RayCronJobAnalysis) -> str:
    if a.a_spec.get("suspend") is True:
        return ("the RayCronJob is created suspended: KubeRay creates no RayJob until suspend turns false "
                "(RCJC:84-90)")
    if a.never:
        return ("the RayCronJob is new, and its schedule has no activation within five years: KubeRay "
                "creates one RayJob at once instead of never (see the findings)")
    return ("the RayCronJob is new: KubeRay creates its first RayJob at the schedule's first activation "
            f"after the object's creation (RCJC:102-112), {_NAMED}, and another at every activation after "
            "that, whatever the earlier ones are doing (there is no concurrency policy)")


def deleted_reason(a: RayCronJobAnalysis) -> str:
    return ("the RayCronJob is removed: no RayJob is created any more, and Kubernetes' garbage collector "
            "deletes the RayJobs it created, running ones included (each has the RayCronJob as its "
            "controller owner, RCJC:185-188); deleting a RayJob stops its Ray job and removes its "
            "RayCluster (rayjob_controller.go:112-139)")


def updated(a: RayCronJobAnalysis) -> Rollout:
    """The rollout of an edit of an existing RayCronJob (its reason appended to ``a.reasons``)."""
    if not a.changes:
        return Rollout.NONE
    if a.schema_errors or a.problems:
        return Rollout.NOT_APPLIED
    b_susp, a_susp = a.b_spec.get("suspend") is True, a.a_spec.get("suspend") is True
    if not b_susp and a_susp:
        a.reasons.append("scheduling is suspended: from the next pass on no RayJob is created and a Normal "
                         "event SuspendedRayCronJob is recorded (RCJC:84-90); suspend does not apply to "
                         "RayJobs already created (TYPES:21-24), so a run in progress goes on")
        return Rollout.SUSPEND
    if b_susp and not a_susp:
        a.reasons.append("suspend turns false: scheduling resumes from status.lastScheduleTime, the last "
                         "activation that got its RayJob (RCJC:102-108, 130), so every activation missed "
                         "while suspended gets its RayJob at once, one after another (see the findings)")
        return Rollout.RESUME
    if a.was_rejected and not a_susp:
        a.reasons.append("the spec is valid again: KubeRay rejected the previous one "
                         "(InvalidRayCronJobSpec, nothing was scheduled, RCJC:77-82); scheduling resumes "
                         "from status.lastScheduleTime (RCJC:102-108), so every activation missed meanwhile "
                         "gets its RayJob at once (see the findings)")
        return Rollout.RESUME
    when = " (while suspended: the first RayJob after the resume)" if a_susp else ""
    if APPLIES_NOW in a.real:
        also = "; the new jobTemplate is used from that RayJob on" if NEXT_RUN in a.real else ""
        a.reasons.append("the schedule changed: the next RayJob is created at the new schedule's first "
                         "activation after status.lastScheduleTime, the old schedule's last run "
                         "(RCJC:92-112); one that falls between that run and now is created at once"
                         + when + also)
        return Rollout.NEXT_RUN
    if NEXT_RUN in a.real:
        a.reasons.append("only the next run sees this change: the jobTemplate is copied into a RayJob when "
                         "it is created (RCJC:114-129, 182) and the controller never updates a RayJob (it "
                         "may only create them, RCJC:50), so RayJobs already created, a running one "
                         "included, keep the old template" + when)
        return Rollout.NEXT_RUN
    if SERVICE_LEVEL in a.real:
        a.reasons.append("only the RayCronJob's labels or annotations changed: they are not copied to its "
                         "RayJobs (RCJC:171-181)")
    else:
        a.reasons.append("nothing the operator reads changed (defaults, zero values or pruned fields)")
    return Rollout.NONE


def settle(a: RayCronJobAnalysis) -> None:
    """What overrides the rollout: a new object the API server or KubeRay rejects; a gate that is off."""
    if a.refuse_new():
        a.reasons[:] = []  # the creation's story does not happen
    if not a.gate_on and a.after is not None and not a.schema_errors and a.action != Action.UNCHANGED:
        a.reasons[:] = [GATE_OFF + ("; turning it on later starts the schedule from the object's creation "
                                    "time (see the findings)" if a.before is None else "")]
        a.rollout = Rollout.NONE
    if a.rollout == Rollout.NOT_APPLIED:
        a.reasons.append("the API server rejects the manifest: nothing of it is stored" if a.schema_errors
                         else REJECTED)
