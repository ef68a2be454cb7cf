"""The findings about a RayCronJob change: what the schedule really does, what each run leaves behind.

Citations are KubeRay v1.7.0, ``ray-operator/``: RCJC = ``controllers/ray/raycronjob_controller.go``,
TYPES = ``apis/ray/v1/raycronjob_types.go``, RJC = ``controllers/ray/rayjob_controller.go``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

from diffing.kube import resources as cap
from diffing.kube.paths import Path
from diffing.kube.values import mapping
from diffing.managed import external_manager
from diffing.raycronjob.capacity import overlap, per_day, runs_here
from diffing.raycronjob.cron import duration_text, sample
from diffing.raycronjob.validation import TEMPLATE
from diffing.rayjob import checks as job_checks
from diffing.report import Finding
from diffing.vocab import Rollout

if TYPE_CHECKING:
    from diffing.raycronjob.analyze import RayCronJobAnalysis

# Go's zero time.Time, in minutes since 1970: the name suffix of the RayJob a never-firing schedule gets.
ZERO_MINUTE = -62135596800 // 60
_RUNS = (Rollout.CREATE, Rollout.NEXT_RUN, Rollout.RESUME)


def _count(n: int, at_least: bool) -> str:
    return f"{'at least ' if at_least else ''}{n}"


def feature_gate(a: RayCronJobAnalysis) -> Iterator[Finding]:
    if a.gate_on or a.after is None or a.action == "unchanged":
        return
    yield a.finding(
        "warning", "raycronjob-feature-gate-off", ("kind",),
        "the RayCronJob feature gate is off by default in KubeRay v1.7.0 (alpha, "
        "pkg/features/features.go:110), and the operator starts the RayCronJob controller only when it is "
        "on (main.go:353-359): the API server stores this RayCronJob, but no RayJob is ever created. If "
        "your operator runs with --feature-gates=RayCronJob=true, say so in the policy "
        "(operator.featureGates.RayCronJob: true). Turning the gate on later starts the schedule from the "
        "object's creation time, not from then: every activation since gets its RayJob at once, one after "
        "another (RCJC:102-108, 130-143)")


def rejected(a: RayCronJobAnalysis) -> Iterator[Finding]:
    """KubeRay's own validation, and the RayJob controller's check of every RayJob's name."""
    check = a.after_check
    if check is None or a.schema_errors or a.action == "unchanged":
        return
    severity = "error" if a.gate_on else "warning"
    prefix = "KubeRay rejects the RayCronJob" if a.gate_on else \
        "once the RayCronJob gate is on, KubeRay rejects the RayCronJob"
    for code, path, message in a.problems:
        yield a.finding(severity, code, path,
                        f"{prefix}: {message}. It records a Warning event InvalidRayCronJobSpec and creates "
                        "no RayJob until the spec changes (RCJC:77-82)")
    for code, path, message in check.child_problems:
        yield a.finding(
            severity, code, path,
            "every RayJob this RayCronJob creates is named <name>-<minute> (RCJC:160-168) and KubeRay "
            f"rejects that name: {message}; each RayJob is created, then marked ValidationFailed for good "
            "and never runs (rayjob_controller.go:144-162). Use a name that starts with a letter and has "
            "only lower-case letters, digits and '-'")


def never_fires(a: RayCronJobAnalysis) -> Iterator[Finding]:
    rollouts = _RUNS if a.gate_on else (Rollout.NONE,)
    if not a.never or a.rollout not in rollouts or a.action == "unchanged" or (
            a.rollout == Rollout.NEXT_RUN and not a.schedule_changed) or a.a_spec.get("suspend") is True:
        return
    name = a.key[1]
    yield a.finding(
        "error" if a.gate_on else "warning", "raycronjob-never-fires", ("spec", "schedule"),
        f"the schedule {a.a_spec.get('schedule')!r} has no activation within five years, so the cron "
        "library returns Go's zero time (robfig/cron v3.0.1 spec.go:87-93); KubeRay does not check for it, "
        "and the zero time is not after now (RCJC:108-112): it creates one RayJob at once, named "
        f"{name}-{ZERO_MINUTE}, and no other while that one exists. An impossible date does not disable a "
        "RayCronJob; suspend: true does")


def catch_up(a: RayCronJobAnalysis) -> Iterator[Finding]:
    if not a.gate_on or a.rollout not in (Rollout.NEXT_RUN, Rollout.RESUME) or a.never:
        return
    how = ("each pass creates the RayJob of the oldest missed activation and records that activation, not "
           "the current time, as status.lastScheduleTime, and the status update starts the next pass at once "
           "-- RCJC:102-143, 193-207; there is no startingDeadlineSeconds and no limit on missed runs")
    if a.rollout == Rollout.RESUME and a.schedule is not None:
        n, more = per_day(a.schedule)
        yield a.finding(
            "warning", "raycronjob-catch-up", ("spec", "suspend" if a.suspend_changed else "schedule"),
            "scheduling resumes where it stopped: every activation since status.lastScheduleTime gets its "
            f"RayJob at once, one after another ({how}); this schedule has up to {_count(n, more)} "
            f"activation{'s' if n != 1 else ''} a day. To skip them, recreate the RayCronJob instead (a new "
            "object starts from its creation time; its RayJobs are deleted with the old one)")
    elif a.rollout == Rollout.NEXT_RUN and a.schedule_changed and a.burst is not None:
        n, more = a.burst
        if n < 1:
            return
        if n == 1 and not more:
            yield a.finding(
                "info", "raycronjob-catch-up", ("spec", "schedule"),
                "depending on when it lands, the change may start one RayJob at once, outside both "
                "schedules: the next activation is computed from the old schedule's last run "
                "(RCJC:102-112), and one that falls between that run and now is created right away")
            return
        yield a.finding(
            "warning", "raycronjob-catch-up", ("spec", "schedule"),
            f"the new schedule can start up to {_count(n, more)} RayJobs at once: the next activation is "
            "computed from the old schedule's last run (RCJC:102-112), and every activation of the new "
            f"schedule between that run and now is created right away ({how})")


def _template(a: RayCronJobAnalysis) -> Mapping[str, Any]:
    return mapping(a.a_spec.get("jobTemplate"))


def _deletes_cluster(tpl: Mapping[str, Any], gates: Mapping[str, bool]) -> bool:
    """A policy that removes a run's RayCluster once the job is done (RJC:420-445): a deletion
    strategy (with its gate) or shutdownAfterJobFinishes."""
    if isinstance(tpl.get("deletionStrategy"), Mapping) and gates.get("RayJobDeletionPolicy", False):
        return True
    return tpl.get("shutdownAfterJobFinishes") is True


def leftovers(a: RayCronJobAnalysis) -> Iterator[Finding]:
    """What each run leaves behind, and how many runs live at once."""
    tpl = _template(a)
    if not a.gate_on or a.rollout not in _RUNS or not tpl or not runs_here(tpl) or \
            mapping(tpl.get("clusterSelector")) or a.a_spec.get("suspend") is True:
        return
    if a.rollout == Rollout.NEXT_RUN and not (a.schedule_changed or a.template_changed):
        return
    run = cap.render_amounts(a.one_run, a.policy.accelerators, units=a.units)
    devices = a.policy.devices(run)
    per_run = ", ".join(f"{v} {k}" for k, v in devices.items())
    gates = a.rules.gates(a.policy.feature_gates)
    if not _deletes_cluster(tpl, gates):
        yield a.finding(
            "error" if devices else "warning", "raycronjob-clusters-accumulate",
            TEMPLATE + ("shutdownAfterJobFinishes",),
            "every run leaves its RayCluster running: the jobTemplate has neither shutdownAfterJobFinishes: "
            "true nor a deletionStrategy, so a finished RayJob keeps its cluster (RJC:420-445), and the "
            "RayCronJob never deletes a RayJob (no history limit; it only creates them, RCJC:50) -- one "
            "more cluster at every activation" + (f", each holding {per_run}" if per_run else "")
            + ". Set shutdownAfterJobFinishes: true (with ttlSecondsAfterFinished) in the jobTemplate")
        return
    ttl = tpl.get("ttlSecondsAfterFinished")
    if a.schedule is None or tpl.get("shutdownAfterJobFinishes") is not True or \
            not isinstance(ttl, int) or ttl <= 0:
        return
    n, more = overlap(a.schedule, ttl)
    if n < 2:
        return
    total = ", ".join(f"{n * v} {k}" for k, v in devices.items())
    gap = _gap(a)
    yield a.finding(
        "warning", "raycronjob-runs-overlap", TEMPLATE + ("ttlSecondsAfterFinished",),
        f"runs overlap: each run's RayCluster stays ttlSecondsAfterFinished={ttl}s after its job ends "
        f"(RJC:1515-1534) and the schedule starts a RayJob every {gap}, so {_count(n, more)} RayClusters are "
        "alive at once even if every job ended the moment it started" + (f" ({total})" if total else "")
        + "; KubeRay has no concurrency policy and creates each RayJob whatever the earlier ones are doing "
          "(RCJC:114-129)")


def _gap(a: RayCronJobAnalysis) -> str:
    assert a.schedule is not None
    gap = sample(a.schedule).shortest_gap()
    return duration_text(gap) if gap is not None else "?"


def template_notes(a: RayCronJobAnalysis) -> Iterator[Finding]:
    tpl = _template(a)
    if not a.gate_on or a.rollout not in _RUNS or not tpl:
        return
    manager = external_manager({"spec": tpl})
    if manager is not None:
        yield a.finding("info", "managed-by-other-controller", TEMPLATE + ("managedBy",),
                        f"jobTemplate.managedBy is {manager}: each RayJob is created here, but this KubeRay "
                        f"operator skips it (RJC:107-110); {manager} runs it, so no pods start in this "
                        "cluster")
    elif tpl.get("suspend") is True:
        yield a.finding("info", "created-suspended", TEMPLATE + ("suspend",),
                        "jobTemplate.suspend is true: each RayJob is created suspended and builds no "
                        "RayCluster until something (e.g. Kueue) sets suspend to false (RJC:179-181, "
                        "1043-1060)")
    view = _TemplateView(a)
    yield from job_checks.upgrade_strategy(view)  # type: ignore[arg-type]


class _TemplateView:
    """The RayJob kind's checks, run on the jobTemplate: paths under ``spec`` move under
    ``spec.jobTemplate``."""

    def __init__(self, a: RayCronJobAnalysis) -> None:
        self._a = a
        self.a_def = {"spec": _template(a)}

    def finding(self, severity: str, code: str, path: Path, message: str) -> Finding:
        moved = TEMPLATE + tuple(path[1:]) if path[:1] == ("spec",) else path
        return self._a.finding(severity, code, moved, message.replace("the RayJob's rayClusterSpec",
                                                                      "the jobTemplate's rayClusterSpec"))


def time_zone(a: RayCronJobAnalysis) -> Iterator[Finding]:
    if not a.gate_on or a.rollout not in _RUNS or a.a_spec.get("timeZone") is not None:
        return
    if a.rollout != Rollout.CREATE and not a.schedule_changed:
        return
    tz = a.policy.operator_env.get("TZ")
    where = (f"the operator's TZ={tz} (policy operator.env)" if tz else
             "the operator's TZ variable or its image's /etc/localtime, else UTC")
    yield a.finding("info", "raycronjob-operator-time-zone", ("spec", "schedule"),
                    "no timeZone: the schedule is read in the KubeRay operator's local time zone "
                    f"(TYPES:15-17), i.e. {where}; set spec.timeZone to pin it")


def deleted(a: RayCronJobAnalysis) -> Iterator[Finding]:
    if a.rollout != Rollout.DELETE or not a.gate_on:
        return
    yield a.finding(
        "warning", "raycronjob-delete-stops-runs", ("metadata", "name"),
        "deleting the RayCronJob (an Argo CD prune too) deletes every RayJob it created through their "
        "ownerReferences (RCJC:185-188), a run in progress included: its Ray job is stopped and its "
        "RayCluster removed (RJC:112-139). To let a run finish, set suspend: true first and delete the "
        "RayCronJob once its RayJobs are done")


def all_checks(a: RayCronJobAnalysis) -> Iterator[Finding]:
    for check in (feature_gate, rejected, never_fires, catch_up, leftovers, template_notes, time_zone,
                  deleted):
        yield from check(a)
