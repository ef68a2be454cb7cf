"""A RayCronJob's change through the stages (docs/semantics/raycronjob.md).

A RayCronJob creates a RayJob from ``spec.jobTemplate`` at every activation of
``spec.schedule`` and does nothing else to it. The folder: :mod:`.rules` (what each field's
edit does), :mod:`.validation` (KubeRay's ``ValidateRayCronJobSpec``, reusing the RayJob kind's
rules for the template), :mod:`.cron` (the cron library KubeRay schedules with),
:mod:`.rollout`, :mod:`.capacity` (one run's pods, from the RayJob kind, times the runs a change
starts at once), :mod:`.checks`, :mod:`.ways_out` and :mod:`.schema` (the CRD). Citations are
KubeRay v1.7.0, ``ray-operator/``: RCJC = ``controllers/ray/raycronjob_controller.go``.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import cached_property
from typing import Any

from diffing.engine import Engine, envelope_differences
from diffing.holds import replacement_headline
from diffing.kube import resources as cap
from diffing.kube.diff import Differ, Difference
from diffing.kube.gojson import ABSENT
from diffing.kube.manifests import Manifest
from diffing.kube.schema import Schema, SchemaSet
from diffing.kube.values import dig, mapping
from diffing.pipeline import Analysis, Target
from diffing.raycronjob import checks, rollout
from diffing.raycronjob.capacity import burst_holds, catch_up_bound, run_amounts
from diffing.raycronjob.cron import Schedule, sample
from diffing.raycronjob.rules import (
    APPLIES_NOW,
    NEXT_RUN,
    NO_OP,
    SUSPEND,
    CronCategory,
    category_of,
    same_as_absent,
)
from diffing.raycronjob.schema import cron_defaulted, cron_schemas, cron_spec_schema
from diffing.raycronjob.validation import TEMPLATE, CronCheck, check_raycronjob
from diffing.raycronjob.ways_out import next_steps
from diffing.rayjob.analyze import job_differences
from diffing.rayjob.capacity import capacity_holds
from diffing.rayjob.validation import cel_errors as job_cel_errors
from diffing.record import replace
from diffing.report import APPROVE, HOLD, Capacity, Finding, WayOut
from diffing.vocab import Rollout


class RayCronJobAnalysis(Analysis):
    kind = "RayCronJob"
    categories = tuple(CronCategory)
    # A hold is about a rejected manifest (every change), a resume's catch-up (the suspend
    # change) or what the next runs need (the template and the schedule).
    holding = {
        Rollout.NOT_APPLIED: ("next-run", "applies-now", "suspend", "service-level"),
        Rollout.RESUME: ("suspend", "applies-now", "next-run"),
        Rollout.NEXT_RUN: ("next-run", "applies-now"),
    }

    def __init__(self, t: Target) -> None:
        super().__init__(t)
        self.real: set[str] = set()
        self.one_run: cap.Amounts = {}  # one run of the after template
        self.units: dict[str, str] = {}
        self.extra: cap.Amounts = {}
        self.rendered: dict[str, Any] = {}
        self.burst: tuple[int, bool] | None = None  # RayJobs a schedule change creates at once

    def defaulted(self, m: Manifest) -> dict[str, Any]:
        return cron_defaulted(m.obj, m.api_version)

    # -- what the stages share --------------------------------------------------------------

    @cached_property
    def after_check(self) -> CronCheck | None:
        """``ValidateRayCronJobSpec`` on the after side (defaulted), with its parsed schedule."""
        if self.a_def is None:
            return None
        return check_raycronjob(self.a_def, self.rules, self.policy.feature_gates)

    @cached_property
    def before_check(self) -> CronCheck:
        """``ValidateRayCronJobSpec`` on the before side (an empty object when there is none)."""
        return check_raycronjob(self.b_def or {}, self.rules, self.policy.feature_gates)

    @cached_property
    def was_rejected(self) -> bool:
        """KubeRay rejected the before side: its scheduling was stopped."""
        if self.b_def is None or not self.gate_on:
            return False
        return bool(self.before_check.problems)

    @property
    def schedule(self) -> Schedule | None:
        return self.after_check.schedule if self.after_check is not None else None

    @cached_property
    def never(self) -> bool:
        """The after schedule parses but never fires within five years."""
        return self.schedule is not None and sample(self.schedule).never

    @property
    def schedule_changed(self) -> bool:
        return APPLIES_NOW in self.real

    @property
    def template_changed(self) -> bool:
        return NEXT_RUN in self.real

    @property
    def suspend_changed(self) -> bool:
        return SUSPEND in self.real

    # 1. changes
    def diff(self) -> None:
        if self.before and self.after:
            self.add_changes(cron_differences(self.engine, self.before, self.after), category_of)
        self.real = {c.category for c in self.changes} - {NO_OP}

    # 2. validation: the API server first, then the operator (on every pass)
    def schemas(self) -> tuple[SchemaSet, Schema | None]:
        assert self.after is not None
        return cron_schemas(), cron_spec_schema(self.after.api_version)

    def cel_errors(self) -> list[tuple[Any, str]]:
        """The jobTemplate carries the RayJob CRD's deletionStrategy rules (ray.io_raycronjobs.yaml:
        82-88, 124-130), checked by the RayJob kind."""
        assert self.after is not None
        tpl = dig(self.after.obj, "spec").get("jobTemplate")
        return [(TEMPLATE + tuple(path[1:]), message) for path, message in job_cel_errors(tpl)]

    def operator_problems(self) -> list[tuple[str, Any, str]]:
        check = self.after_check
        return list(check.problems) if check is not None else []

    # 3. rollout
    def created(self) -> None:
        self.reasons.append(rollout.created_reason(self))

    def deleted(self) -> None:
        self.reasons.append(rollout.deleted_reason(self))

    def updated(self) -> str:
        return rollout.updated(self)

    def settle(self) -> None:
        rollout.settle(self)

    # 4. capacity: one run's pods, times the runs the change starts at once
    def size(self) -> Capacity:
        init = self.policy.operator_env.get("ENABLE_INIT_CONTAINER_INJECTION", "true").lower() != "false"
        tpl = mapping(self.a_spec.get("jobTemplate"))
        self.one_run, self.units = run_amounts(tpl, init_injection=init)
        runs = 0
        suspended = self.a_spec.get("suspend") is True
        peak: cap.Amounts = {}
        if self.rollout in (Rollout.CREATE, Rollout.RESUME) and not suspended:
            runs = 1  # the first run (a resume's catch-up may add more: see the findings)
        elif self.rollout == Rollout.NEXT_RUN and not suspended:
            if self.schedule_changed:
                before_schedule = self.before_check.schedule
                if self.never:
                    runs = 1
                elif before_schedule is not None and self.schedule is not None:
                    self.burst = catch_up_bound(before_schedule, self.schedule)
                    runs = self.burst[0] if self.burst is not None else 1
            else:  # the template alone: what the next run needs beyond the old one
                old, _ = run_amounts(mapping(self.b_spec.get("jobTemplate")), init_injection=init)
                self.extra = cap.positive(cap.add(self.one_run, old, -1))
                peak = dict(self.one_run)
        if runs:
            self.extra = cap.positive(cap.add({}, self.one_run, runs))
            peak = dict(self.extra)
        accelerators = self.policy.accelerators
        self.rendered = cap.render_amounts(self.extra, accelerators, units=self.units)
        rendered_peak = cap.render_amounts(peak, accelerators, units=self.units)
        return Capacity(
            basis="manifest", extra=self.rendered, peak=rendered_peak,
            headroom=cap.render_amounts(self.known, accelerators, keep_zero=True, units=self.units)
            if self.known is not None else None,
            phases=(("before", {}), ("after", self.rendered)) if self.extra else ())

    # 5. findings
    def check(self) -> Iterator[Finding]:
        yield from self.schema_findings()
        yield from checks.all_checks(self)

    # 6. decision
    def decide(self) -> None:
        hold: list[str] = []
        headline = ""
        rejected = ("the API server rejects it" if self.schema_errors else
                    "KubeRay rejects the RayCronJob: no RayJob until it is fixed")
        headline = self.operator_holds(hold, headline, rejected)
        renamed = self.created_beside_deleted(self.extra)
        if self.rollout in (Rollout.CREATE, Rollout.RESUME, Rollout.NEXT_RUN):
            if self.burst is not None and self.burst[0] > 1:
                run_holds = burst_holds(self.policy, self.extra, self.known, self.burst[0])
            else:
                run_holds = capacity_holds(self.engine, self.extra, self.known, renamed)
            hold.extend(run_holds)
            if run_holds:
                short = (replacement_headline(self.replacing, self.known is None) if renamed
                         else "the known headroom does not cover the runs' accelerators")
                headline = headline or short
        self.decision = HOLD if hold else APPROVE
        self.headline = headline
        self.reasons.extend(hold)

    # 7. ways out
    def ways_out(self) -> tuple[WayOut, ...]:
        return next_steps(self)


ANALYSIS = RayCronJobAnalysis


def cron_differences(engine: Engine, b: Manifest, a: Manifest) -> list[Difference]:
    """apiVersion, metadata (name and namespace are the key) and spec differences of two
    RayCronJobs; the jobTemplate is compared as the RayJob kind compares two RayJob specs."""
    differ = Differ(cron_schemas(), engine.gotypes)
    out = envelope_differences(differ, b, a)
    bspec, aspec = mapping(b.obj.get("spec")), mapping(a.obj.get("spec"))
    sch = cron_spec_schema(a.api_version)
    for key in list(bspec) + [k for k in aspec if k not in bspec]:
        bv, av = bspec.get(key, ABSENT), aspec.get(key, ABSENT)
        if type(bv) is type(av) and bv == av:
            continue
        kind = "added" if bv is ABSENT else "removed" if av is ABSENT else "modified"
        if cron_schemas().child(sch, key) is None:
            out.append(Difference(("spec", key), bv, av, kind, True, "unknown field, pruned"))
        elif key == "jobTemplate" and isinstance(bv, dict) and isinstance(av, dict):
            out.extend(_template_differences(engine, b, a, bv, av))
        elif (bv is ABSENT or same_as_absent(key, bv)) and (av is ABSENT or same_as_absent(key, av)):
            out.append(Difference(("spec", key), bv, av, kind, True, "the same as absent"))
        else:
            out.append(Difference(("spec", key), bv, av, kind))
    return out


def _template_differences(engine: Engine, b: Manifest, a: Manifest, bt: dict[str, Any],
                          at: dict[str, Any]) -> list[Difference]:
    """The RayJob kind's spec differences of the two templates, moved under ``spec.jobTemplate``."""
    def as_job(m: Manifest, spec: dict[str, Any]) -> Manifest:
        return replace(m, obj={"apiVersion": "ray.io/v1", "kind": "RayJob", "metadata": {}, "spec": spec})

    return [replace(d, path=TEMPLATE + tuple(d.path[1:]))
            for d in job_differences(engine, as_job(b, bt), as_job(a, at))]
