"""A standalone RayJob's change through the stages (docs/semantics/rayjob.md).

The folder: :mod:`.rules` (what each field's edit does), :mod:`.rollout`, :mod:`.capacity`
(one run's pods), :mod:`.checks`, :mod:`.ways_out`, :mod:`.validation` (KubeRay's
``ValidateRayJob*`` and the CRD's CEL rules) and :mod:`.schema` (the CRD). Citations are
KubeRay v1.7.0, ``ray-operator/``: RJC = ``controllers/ray/rayjob_controller.go``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from diffing import placement
from diffing.engine import Engine, envelope_differences, stored_view
from diffing.holds import replacement_headline
from diffing.kube import resources as cap
from diffing.kube.diff import Differ, Difference
from diffing.kube.gojson import ABSENT, TypeDesc, struct
from diffing.kube.manifests import Manifest
from diffing.kube.paths import Path
from diffing.kube.schema import Schema, SchemaSet
from diffing.kube.values import dig, mapping
from diffing.managed import external_manager
from diffing.pipeline import Analysis, Target
from diffing.placement import cost, kueue
from diffing.rayjob import checks, rollout
from diffing.rayjob.capacity import capacity_holds, job_amounts, job_asks
from diffing.rayjob.rules import (
    _GO_TYPES,
    _ZERO,
    INTERACTIVE,
    NO_OP,
    JobCategory,
    _zero,
    category_of,
    category_without,
    unread_fields,
    waiting,
)
from diffing.rayjob.schema import job_defaulted, job_schemas, job_spec_schema
from diffing.rayjob.validation import cel_errors, validate_rayjob
from diffing.rayjob.ways_out import next_steps
from diffing.rayservice.capacity import placement_holds
from diffing.report import APPROVE, HOLD, Capacity, Finding, WayOut
from diffing.vocab import Rollout


class RayJobAnalysis(Analysis):
    kind = "RayJob"
    categories = tuple(JobCategory)
    # A hold is about a suspend (the suspend change), a rejected manifest (every change) or a
    # run's accelerators (the changes that start a run).
    holding = {
        Rollout.SUSPEND: ("suspend",),
        Rollout.NOT_APPLIED: ("next-run", "applies-now", "suspend", "service-level"),
        Rollout.RESUME: ("suspend",),
    }

    def __init__(self, t: Target) -> None:
        super().__init__(t)
        # A RayJob builds a new RayCluster per run, so nothing of it runs to compare with; the live
        # basis brings only the free accelerators its pods can use (``known``).
        self.real: set[str] = set()
        self.extra: cap.Amounts = {}
        self.rendered: dict[str, Any] = {}

    def defaulted(self, m: Manifest) -> dict[str, Any]:
        return job_defaulted(m.obj, m.api_version)

    # 1. changes
    def diff(self) -> None:
        if self.before and self.after:
            unread = unread_fields(self.b_spec) & unread_fields(self.a_spec)
            self.add_changes(job_differences(self.engine, self.before, self.after),
                             category_without(unread) if unread else category_of)
        self.real = {c.category for c in self.changes} - {NO_OP}

    # 2. validation: the API server first, then the operator (on every pass)
    def schemas(self) -> tuple[SchemaSet, Schema | None]:
        assert self.after is not None
        return job_schemas(), job_spec_schema(self.after.api_version)

    def cel_errors(self) -> list[tuple[Path, str]]:
        assert self.after is not None
        return cel_errors(self.after.obj.get("spec"))

    def operator_problems(self) -> list[tuple[str, Path, str]]:
        assert self.a_def is not None
        found = validate_rayjob(self.a_def, self.rules, feature_gates=self.policy.feature_gates)
        mode = self.a_spec.get("submissionMode")
        if self.before is not None and waiting(self.b_spec) and mode != INTERACTIVE:
            found.append(("rayjob-status-invalid", ("spec", "submissionMode"),
                          "the job waits for spec.jobId (InteractiveMode), and KubeRay's status check "
                          "refuses the Waiting state under any other submissionMode (VAL:527-528)"))
        return found

    # 3. rollout
    def created(self) -> None:
        self.reasons.append(rollout.created_reason(self))

    def deleted(self) -> None:
        self.reasons.append(rollout.deleted_reason(self))

    def updated(self) -> str:
        return rollout.updated(self)

    def settle(self) -> None:
        rollout.settle(self)

    # 4. capacity: one run's pods, when the change starts a run
    def size(self) -> Capacity:
        init = self.policy.operator_env.get("ENABLE_INIT_CONTAINER_INJECTION", "true").lower() != "false"
        units: dict[str, str] = {}
        runs = self.rollout == Rollout.RESUME or (
            self.rollout == Rollout.CREATE and self.a_spec.get("suspend") is not True)
        if self.a_def is not None and runs:
            amounts, units = job_amounts(self.a_spec, init_injection=init)
            self.extra = cap.positive(amounts)
        accelerators = self.policy.accelerators
        self.rendered = cap.render_amounts(self.extra, accelerators, units=units)
        plan = None
        live = self.live
        if live is not None and live.cluster is not None and self.a_def is not None and runs:
            asks = job_asks(self.a_spec, self.key[0], init_injection=init)
            plan = placement.plan_for(asks, *live.cluster).as_dict() if asks else None
        return Capacity(
            basis="manifest", extra=self.rendered, peak=dict(self.rendered),
            headroom=cap.render_amounts(self.known, accelerators, keep_zero=True, units=units)
            if self.known is not None else None,
            phases=(("before", {}), ("after", self.rendered)) if self.extra else (), placement=plan,
            kueue=self._queued(), cost=self._cost())

    def _queued(self) -> dict[str, Any] | None:
        """Kueue's answer for the run's cluster (a RayJob labelled ``kueue.x-k8s.io/queue-name``;
        docs/placement.md): reported, not held on (a job waiting for quota is what a queue is for)."""
        live = self.live
        if live is None or live.kueue is None or not self.extra or self.a_def is None:
            return None
        labels = dig(self.a_def, "metadata").get("labels")
        return kueue.admission({"metadata": {"namespace": self.key[0], "labels": labels}}, self.extra,
                               *live.kueue)

    def _cost(self) -> dict[str, Any] | None:
        """What the run's cluster costs per hour while it runs (the policy's cost.prices)."""
        if not self.policy.prices or not self.extra:
            return None
        return {"currency": self.policy.currency,
                "runPerHour": round(float(cost.per_hour(self.extra, self.policy.prices)), 2)}

    # 5. findings
    def check(self) -> Iterator[Finding]:
        yield from self.schema_findings()
        for code, path, message in self.problems:
            yield self.finding("error", code, path,
                               f"KubeRay rejects the RayJob: {message}. {rollout.PERMANENT}")
        if self.after is not None and self.after.api_version == "ray.io/v1alpha1":
            yield self.finding("warning", "deprecated-api-version", ("apiVersion",),
                               "ray.io/v1alpha1 is deprecated; move to ray.io/v1")
        if self.after is not None and external_manager(self.a_def) is None:
            yield from checks.upgrade_strategy(self)
            yield from checks.delete_self(self)
        yield from checks.applies_now(self)
        yield from checks.cluster_selector(self)
        yield from checks.managed_by(self)
        yield from checks.created_suspended(self)

    # 6. decision
    def decide(self) -> None:
        hold: list[str] = []
        headline = ""
        if self.rollout == Rollout.SUSPEND:
            hold.append("suspending deletes the job's RayCluster: its work so far is lost; hold until "
                        "someone confirms it")
            headline = "suspending loses the job's work"
        rejected = ("the API server rejects it" if self.schema_errors else
                    "KubeRay rejects the RayJob for good (ValidationFailed)")
        headline = self.operator_holds(hold, headline, rejected)
        renamed = self.created_beside_deleted(self.extra)
        if self.rollout in (Rollout.CREATE, Rollout.RESUME):
            run_holds = self._run_holds(renamed)
            hold.extend(run_holds)
            if run_holds:
                short = (replacement_headline(self.replacing, self.known is None) if renamed
                         else "the known headroom does not cover the job's accelerators")
                headline = headline or short
        self.decision = HOLD if hold else APPROVE
        self.headline = headline
        self.reasons.extend(hold)

    def _run_holds(self, renamed: bool) -> list[str]:
        """With the live nodes the run's placement plan decides (docs/placement.md); else the
        known headroom."""
        plan = self.capacity.placement if self.capacity is not None else None
        if plan is not None:
            return placement_holds(self.policy, plan)
        return capacity_holds(self.engine, self.extra, self.known, renamed)

    # 7. ways out
    def ways_out(self) -> tuple[WayOut, ...]:
        renamed = self.rollout == Rollout.CREATE and bool(self.replacing) and bool(self.extra)
        short = self.rollout in (Rollout.CREATE, Rollout.RESUME) and bool(self._run_holds(renamed))
        return next_steps(self.rollout, bool(self.schema_errors), self.findings, self.rendered,
                          self.policy, renamed, self.a_spec, capacity_held=short)


ANALYSIS = RayJobAnalysis


def job_differences(engine: Engine, b: Manifest, a: Manifest) -> list[Difference]:
    """apiVersion, metadata (name and namespace are the key) and spec differences of two RayJobs."""
    schemas = job_schemas()
    differ = Differ(schemas, engine.gotypes)
    out = envelope_differences(differ, b, a)
    b, a = stored_view(schemas, b, job_spec_schema), stored_view(schemas, a, job_spec_schema)  # as stored
    bspec, aspec = mapping(b.obj.get("spec")), mapping(a.obj.get("spec"))
    sch = job_spec_schema(a.api_version)
    for key in list(bspec) + [k for k in aspec if k not in bspec]:
        bv, av = bspec.get(key, ABSENT), aspec.get(key, ABSENT)
        if type(bv) is type(av) and bv == av:
            continue
        kind = "added" if bv is ABSENT else "removed" if av is ABSENT else "modified"
        child = schemas.child(sch, key)
        if child is None:
            out.append(Difference(("spec", key), bv, av, kind, True, "unknown field, pruned"))
        elif key in _ZERO and _zero(key, bv) and _zero(key, av):
            out.append(Difference(("spec", key), bv, av, kind, True, "the zero value is the same as absent"))
        elif bv in (ABSENT, None) or av in (ABSENT, None):
            # a whole block added or removed: one change, not one per field inside it
            noop = differ.canonical(bv, child, None) == differ.canonical(av, child, None)
            out.append(Difference(("spec", key), bv, av, kind, noop))
        else:
            t: TypeDesc | None = None
            if key in _GO_TYPES:
                name = _GO_TYPES[key]
                t = engine.gotypes.root if name is None else struct(name)
            out.extend(differ.diff(bv, av, ("spec", key), child, t))
    return out
