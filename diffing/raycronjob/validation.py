"""KubeRay's validation of a RayCronJob (v1.7.0), as a table of rules.

The RayCronJob controller runs ``ValidateRayCronJobSpec`` first on every pass
(raycronjob_controller.go:77-82). A failure records a Warning event ``InvalidRayCronJobSpec``
(constant.go:473) and ends the pass without a requeue and without touching the status: no
RayJob is created, and the RayJobs created before are left alone. Unlike a RayJob's
``ValidationFailed``, nothing is recorded for good: the next edit triggers a new pass (the
controller watches every change of the object, raycronjob_controller.go:193-207) and a valid
spec is scheduled again.

``ValidateRayCronJobSpec`` (validation.go:968-1003): the name at most 36 characters
(constant.go:382-385), no ``TZ`` in the schedule, the schedule parsed by ``cron.ParseStandard``,
``timeZone`` non-empty and known to Go's ``time.LoadLocation``, then ``ValidateRayJobSpec`` on
``jobTemplate`` -- wrapped in a RayJob with no metadata at all (validation.go:994-996), so the
template's own cluster checks see no annotations and no name. Upstream stops at the first
failure; every failing rule is reported here, since each alone stops the schedule. Rules read
the object as the API server stores it (pruned and defaulted). VAL =
``controllers/ray/utils/validation.go``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from diffing.kube.paths import Path
from diffing.kube.values import mapping
from diffing.raycronjob.cron import CronError, Schedule, parse_standard
from diffing.raycronjob.schema import ZONES
from diffing.rayjob.validation import MAX_JOB_NAME, check_rayjob
from diffing.versions import VersionRules

# constant.go:382-385: MaxRayJobNameLength (47) minus "-" and a Unix-minute number of up to 10 digits.
MAX_CRON_NAME = MAX_JOB_NAME - 11
TEMPLATE: Path = ("spec", "jobTemplate")
# What a child's name looks like today: "<name>-" and the minutes since 1970 (8 digits until 2160).
CHILD_SUFFIX = "-29500000"

Problem = tuple[str, Path, str]  # (code, path, message)


@dataclass(frozen=True, slots=True)
class CronCheck:
    """The outcome of ``ValidateRayCronJobSpec`` on one (defaulted) RayCronJob."""

    problems: tuple[Problem, ...]      # what stops the schedule (the InvalidRayCronJobSpec event)
    child_problems: tuple[Problem, ...]  # what the RayJob controller rejects in every RayJob it creates
    schedule: Schedule | None           # the parsed schedule, when it parses


def check_raycronjob(obj: Mapping[str, Any], rules: VersionRules,
                     feature_gates: Mapping[str, bool] | None = None) -> CronCheck:
    meta, spec = mapping(obj.get("metadata")), mapping(obj.get("spec"))
    name = str(meta.get("name") or "")
    if name.endswith("*"):  # generateName: the API server appends 5 random characters
        name = name[:-1] + "x" * 5
    out: list[Problem] = []
    if len(name) > MAX_CRON_NAME:  # VAL:971-973
        out.append(("raycronjob-name-too-long", ("metadata", "name"),
                    f"the name has {len(name)} characters; KubeRay accepts at most {MAX_CRON_NAME}, so that "
                    "each RayJob's name (the name, '-' and the minute of its run) stays within the RayJob "
                    f"limit of {MAX_JOB_NAME} (KubeRay ValidateRayCronJobSpec, validation.go:971-973; "
                    "constant.go:382-385)"))
    text = spec.get("schedule")
    schedule: Schedule | None = None
    if isinstance(text, str):
        if "TZ" in text:  # VAL:976-978
            out.append(("raycronjob-invalid-schedule", ("spec", "schedule"),
                        "the schedule contains TZ: KubeRay refuses TZ= and CRON_TZ= prefixes in the "
                        "schedule; set spec.timeZone instead (validation.go:976-978)"))
        else:
            try:
                schedule = parse_standard(text)  # VAL:979-981
            except CronError as exc:
                out.append(("raycronjob-invalid-schedule", ("spec", "schedule"),
                            f"invalid cron schedule {text!r}: {exc} (cron.ParseStandard: five fields -- "
                            "minute, hour, day of month, month, day of week -- or "
                            "@hourly/@daily/@weekly/@monthly/@yearly/@every <duration>; "
                            "validation.go:979-981)"))
    zone = spec.get("timeZone")
    if isinstance(zone, str):  # VAL:984-991
        if zone == "":
            out.append(("raycronjob-invalid-time-zone", ("spec", "timeZone"),
                        "timeZone must not be empty; omit it to use the operator's local time zone "
                        "(validation.go:985-987)"))
        elif not known_zone(zone):
            out.append(("raycronjob-invalid-time-zone", ("spec", "timeZone"),
                        f"invalid time zone {zone!r}: Go's time.LoadLocation does not know it (IANA names "
                        "such as Asia/Taipei or America/New_York, case-sensitive; validation.go:988-990)"))
    template = mapping(spec.get("jobTemplate"))
    child: list[Problem] = []
    if template:
        # The template's own checks ignore managedBy (ValidateRayJobSpec never reads it), but
        # check_rayjob skips a RayJob another controller manages, as the RayJob controller does.
        tpl = {k: v for k, v in template.items() if k != "managedBy"}
        wrapped = {"metadata": {"name": (name + CHILD_SUFFIX) if name else ""}, "spec": tpl}
        for v in check_rayjob(wrapped, rules.minor, rules.gates(feature_gates)):
            if v.rule == "ValidateRayJobMetadata/name-not-dns1035":
                # Not part of ValidateRayCronJobSpec (the wrapper has no metadata), but the RayJob
                # controller checks every child's name (rayjob_controller.go:144-162, VAL:537-539);
                # its length is the RayCronJob's own check (MAX_CRON_NAME).
                child.append(("raycronjob-child-name", ("metadata", "name"), v.message))
                continue
            if v.rule.startswith("ValidateRayJobMetadata/"):
                continue
            path = TEMPLATE + tuple(v.path[1:]) if v.path[:1] == ("spec",) else TEMPLATE
            out.append((v.code, path, f"invalid RayJob template: {v.message} (validation.go:993-1000)"))
    return CronCheck(tuple(out), tuple(child), schedule)


def known_zone(zone: str) -> bool:
    """``time.LoadLocation`` accepts it: ``UTC``, ``Local`` or a name of the time zone database
    the operator embeds (validation.go:9 imports time/tzdata; names are case-sensitive, and
    ``..`` or a leading slash is refused outright)."""
    if zone in ("UTC", "Local"):
        return True
    if ".." in zone or zone.startswith(("/", "\\")):
        return False
    return zone in ZONES
