"""What the RayJob controller does about a RayJob change: the rollout and its reasons.

First match wins: ``create`` · ``delete`` · ``not-applied`` (the API server or the operator's
validation rejects it) · ``suspend`` · ``resume`` · ``next-run`` · ``none``. Citations are
KubeRay v1.7.0, ``ray-operator/controllers/ray/rayjob_controller.go`` (RJC).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from diffing.kube.values import mapping
from diffing.managed import external_manager
from diffing.rayjob.rules import APPLIES_NOW, NEXT_RUN, SERVICE_LEVEL, waiting
from diffing.vocab import Rollout

if TYPE_CHECKING:
    from diffing.rayjob.analyze import RayJobAnalysis

PERMANENT = ("ValidationFailed is permanent: no reconcile branch leaves it, even after the spec is fixed "
             "(RJC:147-161, 448-450); delete and recreate the RayJob to run it")


def created_reason(a: RayJobAnalysis) -> str:
    if mapping(a.a_spec.get("clusterSelector")):
        name = mapping(a.a_spec.get("clusterSelector")).get("ray.io/cluster")
        return (f"the RayJob is new: it runs on the existing RayCluster {name} (clusterSelector), "
                "so only its submitter is new (RJC:904-910, 956-960)")
    if a.a_spec.get("suspend") is True:
        return ("the RayJob is created suspended: no RayCluster and no submission until suspend "
                "turns false (RJC:179-181, 1043-1060)")
    return ("the RayJob is new: KubeRay builds its RayCluster (the job's name plus a random "
            "5-character suffix) and submits the job once it is ready (RJC:166-236, 997-1041)")


def deleted_reason(a: RayJobAnalysis) -> str:
    return ("the RayJob is removed: its finalizer stops the Ray job if it has not finished "
            "(RJC:112-139); the RayCluster and the submitter Job it created go with it through "
            "their ownerReferences (RJC:1020-1023)"
            + ("; the existing RayCluster of its clusterSelector stays"
               if mapping(a.b_spec.get("clusterSelector")) else ""))


def updated(a: RayJobAnalysis) -> Rollout:
    """The rollout of an edit of an existing RayJob (its reason appended to ``a.reasons``)."""
    b_susp, a_susp = a.b_spec.get("suspend") is True, a.a_spec.get("suspend") is True
    manager = external_manager(a.a_def)
    if not a.changes:
        return Rollout.NONE
    if a.schema_errors or (a.problems and manager is None):
        return Rollout.NOT_APPLIED
    if manager is not None:
        a.reasons.append(f"spec.managedBy is {manager}: KubeRay skips this RayJob (RJC:107-110); another "
                         "controller carries out the change")
        return Rollout.NONE
    if not b_susp and a_susp and waiting(a.b_spec):
        a.reasons.append("suspend: true on a job waiting for spec.jobId (InteractiveMode) does nothing yet: "
                         "the Waiting state never reads suspend (RJC:237-248); it suspends the job once the "
                         "job id is set and the job runs")
        return Rollout.NONE
    if not b_susp and a_susp:
        a.reasons.append("suspend: true on a job that is Initializing or Running deletes its RayCluster and "
                         "its submitter Job (RJC:366-410, 1043-1060): the job's work so far is lost, and "
                         "resuming runs it again from the start; a finished job is left as it is")
        return Rollout.SUSPEND
    if b_susp and not a_susp:
        a.reasons.append("suspend turns false: a Suspended job starts a new run, a new RayCluster from the "
                         "current rayClusterSpec and a new submission (RJC:411-417, 166-236)")
        return Rollout.RESUME
    if NEXT_RUN in a.real:
        a.reasons.append("only the next run sees this change: the running (or finished) job keeps its "
                         "RayCluster and its submission, so the running job is not affected; the next run is "
                         "a suspend → resume or a backoffLimit retry, each with a new RayCluster "
                         "(RJC:988-992, 560-584, 518-557)")
        return Rollout.NEXT_RUN
    if APPLIES_NOW in a.real:
        a.reasons.append("deadline, retry or cleanup settings changed: the operator reads them on every "
                         "pass, so they apply to the current run now (see the findings)")
    elif SERVICE_LEVEL in a.real:
        a.reasons.append("only RayJob labels or annotations changed: they reach a RayCluster built later "
                         "(RJC:998-1005)")
    else:
        a.reasons.append("nothing the operator reads changed (defaults, zero values or pruned fields)")
    return Rollout.NONE


def settle(a: RayJobAnalysis) -> None:
    """What overrides the rollout: a new object the API server or KubeRay rejects, ``managedBy``."""
    a.refuse_new()
    a.leave_to_manager("RJC:107-110")
    if a.rollout == Rollout.NOT_APPLIED:
        a.reasons.append("the API server rejects the manifest: nothing of it is stored" if a.schema_errors
                         else "KubeRay marks the RayJob ValidationFailed and does nothing more with it; "
                         + PERMANENT)
