"""What the RayCronJob controller does with an edit of each field (docs/semantics/raycronjob.md).

The controller reads the whole spec on every pass and writes nothing but
``status.lastScheduleTime``: the schedule fields apply at once (they decide when the next
RayJob is created), ``suspend`` stops or restarts the creating, and ``jobTemplate`` is copied
into each RayJob when it is created, so an edit reaches the next run only. The categories are
the RayJob kind's words (a RayCronJob's runs are RayJobs). Citations are KubeRay v1.7.0,
``ray-operator/``: RCJC = ``controllers/ray/raycronjob_controller.go``, TYPES =
``apis/ray/v1/raycronjob_types.go``, VAL = ``controllers/ray/utils/validation.go``.
"""

from __future__ import annotations

from enum import StrEnum

from diffing.kube.paths import Path
from diffing.rayjob.rules import FieldRule


class CronCategory(StrEnum):
    """What an edit of a RayCronJob is."""

    NEXT_RUN = "next-run"            # jobTemplate: the RayJobs created from now on
    APPLIES_NOW = "applies-now"      # schedule, timeZone: the next activation is computed anew
    SUSPEND = "suspend"              # suspend / resume of the creating
    SERVICE_LEVEL = "service-level"  # the RayCronJob's own labels and annotations
    NO_OP = "no-op"


NEXT_RUN, APPLIES_NOW, SUSPEND = CronCategory.NEXT_RUN, CronCategory.APPLIES_NOW, CronCategory.SUSPEND
SERVICE_LEVEL, NO_OP = CronCategory.SERVICE_LEVEL, CronCategory.NO_OP

CRON_FIELDS: dict[str, FieldRule] = {
    "schedule": FieldRule(APPLIES_NOW, "read on every pass: the next activation is the schedule's first "
                          "time after status.lastScheduleTime (or the creation time)",
                          "RCJC:92-112; VAL:976-981"),
    "timeZone": FieldRule(APPLIES_NOW, "read on every pass, prefixed to the schedule as TZ=<zone>",
                          "RCJC:93, 210-217; VAL:984-991"),
    "suspend": FieldRule(SUSPEND, "checked on every pass before the schedule: no RayJob is created while it "
                         "is true; RayJobs already created are not touched", "RCJC:84-90; TYPES:21-24"),
    "jobTemplate": FieldRule(NEXT_RUN, "copied into each RayJob when it is created; the controller only ever "
                             "creates RayJobs (its RBAC allows nothing else on them), so those already "
                             "created keep their copy", "RCJC:50, 114-129, 170-191"),
}

# Go fields without a pointer, where absence and the zero value are the same (TYPES:10-25):
# Suspend *bool is nil or false for "not suspended" (RCJC:85).
_SAME_AS_ABSENT = {"suspend": False}


def same_as_absent(key: str, value: object) -> bool:
    zero = _SAME_AS_ABSENT.get(key, ...)
    return value is None or (zero is not ... and value is zero)


def category_of(path: Path) -> CronCategory:
    if not path or path[0] == "apiVersion":
        return NO_OP
    if path[0] == "metadata":
        return SERVICE_LEVEL  # not copied to the RayJobs (RCJC:171-181)
    rule = CRON_FIELDS.get(str(path[1])) if len(path) > 1 else None
    return CronCategory(rule.category) if rule else NO_OP
