"""What the RayJob controller does with an edit of each field of a running (or finished) RayJob.

A RayJob runs once: its RayCluster and its submission are built from the spec when a run
starts, so most edits reach only the *next* run; the deadline, retry and cleanup settings are
read on every pass and apply now (docs/semantics/rayjob.md). Citations are KubeRay v1.7.0,
``ray-operator/``: RJC = ``controllers/ray/rayjob_controller.go``,
VAL = ``controllers/ray/utils/validation.go``, JOB = ``controllers/ray/common/job.go``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from diffing.kube.gojson import ABSENT
from diffing.kube.paths import Path


class JobCategory(StrEnum):
    """What an edit of a RayJob is (docs/semantics/rayjob.md)."""

    NEXT_RUN = "next-run"          # read when a run's cluster and submission are built
    APPLIES_NOW = "applies-now"    # read on every reconcile pass
    SUSPEND = "suspend"            # suspend / resume
    SERVICE_LEVEL = "service-level"  # RayJob labels and annotations
    NO_OP = "no-op"


NEXT_RUN, APPLIES_NOW, SUSPEND = JobCategory.NEXT_RUN, JobCategory.APPLIES_NOW, JobCategory.SUSPEND
NO_OP, SERVICE_LEVEL = JobCategory.NO_OP, JobCategory.SERVICE_LEVEL


@dataclass(frozen=True, slots=True)
class FieldRule:
    """How the RayJob controller treats an edit of ``spec.<field>`` after the job started."""

    category: str
    reason: str
    source: str


_NEXT = ("read when the cluster and the submission are built (Initializing); ignored afterwards")
JOB_FIELDS: dict[str, FieldRule] = {
    "rayClusterSpec": FieldRule(NEXT_RUN, "an existing RayCluster is never updated from the RayJob; only an "
                                "info log line (the next run builds a new one)", "RJC:988-992, 997-1041"),
    "entrypoint": FieldRule(NEXT_RUN, _NEXT, "RJC:560-584, 634-662"),
    "runtimeEnvYAML": FieldRule(NEXT_RUN, _NEXT, "RJC:560-584; JOB BuildJobSubmitCommand"),
    "metadata": FieldRule(NEXT_RUN, _NEXT, "RJC:560-584; JOB BuildJobSubmitCommand"),
    "entrypointNumCpus": FieldRule(NEXT_RUN, _NEXT, "RJC:560-584; JOB:193"),
    "entrypointNumGpus": FieldRule(NEXT_RUN, _NEXT, "RJC:560-584; JOB BuildJobSubmitCommand"),
    "entrypointResources": FieldRule(NEXT_RUN, _NEXT, "RJC:560-584; JOB:200-201"),
    "jobId": FieldRule(NEXT_RUN, "the job id is copied into the status once, at initialisation",
                       "RJC:887-902"),
    "submitterPodTemplate": FieldRule(NEXT_RUN, "the submitter Job is create-if-missing", "RJC:560-584"),
    "submitterConfig": FieldRule(NEXT_RUN, "the submitter Job is create-if-missing", "RJC:560-584, 716-757"),
    "submissionMode": FieldRule(NEXT_RUN, _NEXT, "RJC:225-236"),
    "clusterSelector": FieldRule(NEXT_RUN, "the cluster name is frozen in status.rayClusterName at "
                                 "initialisation: no retargeting", "RJC:904-910"),
    "activeDeadlineSeconds": FieldRule(APPLIES_NOW, "read on every pass, measured from status.startTime",
                                       "RJC:184, 254, 1234-1245"),
    "preRunningDeadlineSeconds": FieldRule(APPLIES_NOW, "read on every pass before Running, measured from "
                                           "status.startTime", "RJC:188, 238, 1249-1261"),
    "backoffLimit": FieldRule(APPLIES_NOW, "read when the job fails", "RJC:518-557"),
    "shutdownAfterJobFinishes": FieldRule(APPLIES_NOW, "read once the job is terminal",
                                          "RJC:420-447, 1515-1557"),
    "ttlSecondsAfterFinished": FieldRule(APPLIES_NOW, "read once the job is terminal", "RJC:1515-1534"),
    "deletionStrategy": FieldRule(APPLIES_NOW, "read once the job is terminal", "RJC:434-440, 1413-1512"),
    "managedBy": FieldRule(APPLIES_NOW, "checked first on every pass", "RJC:107-110"),
    "suspend": FieldRule(SUSPEND, "suspend deletes the cluster and the submitter; resume starts a new run",
                         "RJC:366-419, 1043-1060"),
}

# Go fields without a pointer (rayjob_types.go RayJobSpec): the zero value and absence are the same.
_ZERO: dict[str, Any] = {"entrypoint": "", "runtimeEnvYAML": "", "jobId": "", "entrypointResources": "",
                         "entrypointNumCpus": 0, "entrypointNumGpus": 0, "ttlSecondsAfterFinished": 0,
                         "shutdownAfterJobFinishes": False, "suspend": False, "metadata": {},
                         "clusterSelector": {}, "submissionMode": "K8sJobMode"}
_GO_TYPES = {"rayClusterSpec": None, "submitterPodTemplate": "core/v1.PodTemplateSpec"}



def _zero(key: str, value: Any) -> bool:
    if value is ABSENT or value is None:
        return True
    zero = _ZERO[key]
    if isinstance(zero, bool) or isinstance(value, bool):
        return value is zero
    if isinstance(zero, (int, float)):
        return isinstance(value, (int, float)) and value == zero  # 0 and 0.0 are the same float32
    return type(value) is type(zero) and value == zero


def category_of(path: Path) -> str:
    if not path or path[0] == "apiVersion":
        return NO_OP
    if path[0] == "metadata":
        return SERVICE_LEVEL  # labels/annotations reach only a RayCluster built later (RJC:998-1005)
    rule = JOB_FIELDS.get(str(path[1])) if len(path) > 1 else None
    return rule.category if rule else NO_OP


# KubeRay never submits an InteractiveMode job: the user does, and the job waits in Waiting until
# spec.jobId names the Ray job (RJC:225-228, 237-248). The submission's fields are read only by the
# submit command and the submitter Job (JOB:49, 112-116, 216-217; RJC:716-757), so an edit of them
# changes nothing there; validation still reads some of them (VAL:590-616).
INTERACTIVE = "InteractiveMode"
NOT_SUBMITTED = frozenset({"entrypoint", "runtimeEnvYAML", "metadata", "entrypointNumCpus",
                           "entrypointNumGpus", "entrypointResources", "submitterPodTemplate",
                           "submitterConfig"})


# The submit command (JOB BuildJobSubmitCommand) is what carries these into the Ray job; a K8sJobMode
# submitter container that sets its own command keeps it, and the command is never used
# (configureSubmitterContainer, RJC:641-647; the same in v1.6.2).
SUBMIT_COMMAND = frozenset({"entrypoint", "runtimeEnvYAML", "metadata", "entrypointNumCpus",
                            "entrypointNumGpus", "entrypointResources"})


def unread_fields(spec: Any) -> frozenset[str]:
    """The ``spec`` fields a job of this shape never reads when a run starts."""
    spec = spec if isinstance(spec, Mapping) else {}
    mode = spec.get("submissionMode") or "K8sJobMode"
    if mode == INTERACTIVE:
        return NOT_SUBMITTED
    containers = (((spec.get("submitterPodTemplate") or {}).get("spec") or {}).get("containers") or [{}])
    if mode == "K8sJobMode" and isinstance(containers[0], Mapping) and containers[0].get("command"):
        return SUBMIT_COMMAND
    return frozenset()


def category_without(unread: frozenset[str]) -> Callable[[Path], str]:
    """:func:`category_of` for a job that reads none of ``unread`` on either side of the change."""
    def category(path: Path) -> str:
        if len(path) > 1 and path[0] == "spec" and str(path[1]) in unread:
            return NO_OP
        return category_of(path)
    return category


def waiting(spec: Any) -> bool:
    """The job waits for its id (JobDeploymentStatus Waiting once its cluster is ready)."""
    return (isinstance(spec, Mapping) and spec.get("submissionMode") == INTERACTIVE and not spec.get("jobId")
            and spec.get("suspend") is not True)
