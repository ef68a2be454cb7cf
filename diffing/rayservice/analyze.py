"""A RayService's change through the stages (the pipeline is :mod:`diffing.pipeline`).

The operator's decision procedure (docs/semantics/rayservice.md §1.4) is followed literally:
validation first, then suspend, then the cluster hash (full, then "only groups appended"), then
the upgrade strategy; serveConfigV2 and muted fields are judged only when the cluster is left
alone.

The folder: :mod:`.rules` (the category of each field's change), :mod:`.serve` (serveConfigV2
read and compared), :mod:`.rollout`, :mod:`.capacity` (and the holds on it), :mod:`.checks`,
:mod:`.ways_out`, :mod:`.validation` (KubeRay's ``ValidateRayService*``) and :mod:`.live` (the
running RayCluster). Citations are KubeRay v1.7.0, ``ray-operator/controllers/ray/``.
"""

from __future__ import annotations

from collections.abc import Iterable

from diffing.engine import RCC
from diffing.hints import Any
from diffing.holds import replacement_headline
from diffing.kube.gojson import ABSENT
from diffing.kube.manifests import Manifest
from diffing.kube.paths import Path, schema_path
from diffing.kube.schema import Schema, SchemaSet
from diffing.kube.values import dig, seq
from diffing.pipeline import Analysis, Target
from diffing.rayservice import rollout, serve
from diffing.rayservice.capacity import (
    capacity_holds,
    cost_holds,
    estimate_capacity,
    in_place_holds,
    kueue_holds,
    placement_holds,
    render,
)
from diffing.rayservice.checks import collect_findings
from diffing.rayservice.rollout import is_true, mark_appended, rcc_of
from diffing.rayservice.rules import Category
from diffing.rayservice.validation import validate_rayservice
from diffing.rayservice.ways_out import next_steps
from diffing.report import Capacity, Change, Finding, WayOut
from diffing.vocab import Decision, Rollout

# What the operator can do about a RayService change (:mod:`.rollout`).
ROLLOUTS = (Rollout.NONE, Rollout.CREATE, Rollout.DELETE, Rollout.NOT_APPLIED, Rollout.SUSPEND,
            Rollout.RESUME, Rollout.SERVE_IN_PLACE, Rollout.CLUSTER_IN_PLACE, Rollout.NEW_CLUSTER,
            Rollout.INCREMENTAL)


class RayServiceAnalysis(Analysis):
    """One RayService through the stages. Besides the pipeline's state: both sides' serveConfigV2
    (``b_serve``/``a_serve``) and specs, the cluster hash's verdict (``full_equal``,
    ``partial_equal``: only groups appended), ``autoscaling``, the categories that really
    changed (``real``) and, for a change the operator will not apply, ``why_not_applied`` (the
    summary line) and ``cause`` (schema | validation | suspended | strategy-none | bounds |
    replicas | ignored: the key of its ways out)."""

    kind = "RayService"
    categories = tuple(Category)
    holding = {
        "new-cluster": ("cluster-recreate",), "incremental": ("cluster-recreate",),
        "not-applied": ("cluster-recreate", "autoscaler-owned", "operator-ignored", "worker-group-appended"),
    }

    def __init__(self, t: Target) -> None:
        super().__init__(t)
        b_text = dig(t.before.obj, "spec").get("serveConfigV2", ABSENT) if t.before else ABSENT
        a_text = dig(t.after.obj, "spec").get("serveConfigV2", ABSENT) if t.after else ABSENT
        self.b_serve, self.a_serve = self.engine.serve_config(b_text), self.engine.serve_config(a_text)
        self.autoscaling = is_true(rcc_of(self.a_def or self.b_def).get("enableInTreeAutoscaling"))
        self.full_equal = self.partial_equal = True
        self.real: set[Category] = set()
        self.why_not_applied = ""
        self.cause = ""

    def defaulted(self, m: Manifest) -> dict[str, Any]:
        return self.engine.defaulted(m)

    # 1. changes: the field walk, serveConfigV2's content, and the cluster hash
    def diff(self) -> None:
        before, after = self.before, self.after
        if before is None or after is None:
            return
        for d in self.engine.differences(before, after):
            category = Category.NO_OP if d.noop else self.rules.category_of(schema_path(d.path)).category
            if category == Category.AUTOSCALER_OWNED and not self.autoscaling:
                category = Category.OPERATOR_IGNORED  # no autoscaler owns them: only the hash mutes them
            self.changes.append(Change(d.path, category.value, d.before, d.after, d.note,
                                       after.line(d.path) or before.line(d.path)))
        for s in serve.diff(self.b_serve, self.a_serve):
            # A new text is re-submitted even when Ray Serve reads the same content from it.
            category = Category.SERVE_IN_PLACE
            self.changes.append(Change(s.path, category.value, s.before, s.after, s.detail,
                                       after.line(("spec", "serveConfigV2"))))
        self.full_equal, self.partial_equal = self.engine.hash_compare(before, after)
        if not self.full_equal and self.partial_equal:
            n = len(seq(rcc_of(before.obj).get("workerGroupSpecs")))
            self.changes = [mark_appended(c, n) for c in self.changes]
        if self.engine.before_is_live:
            self.changes = [c for c in self.changes if c.category != Category.NO_OP.value]
        self.real = {Category(c.category) for c in self.changes} - {Category.NO_OP}
        if not self.full_equal and not (self.real & {Category.CLUSTER_RECREATE,
                                                     Category.WORKER_GROUP_APPENDED}):
            # The walk and the hash disagree only if a difference hides in a value that the
            # walk judged as a whole; report the cluster spec itself so nothing is lost.
            self.changes.append(Change(RCC, Category.CLUSTER_RECREATE.value, None, None,
                                       "the cluster hash input differs"))
            self.real.add(Category.CLUSTER_RECREATE)

    # 2. validation: the API server first; the operator never sees an object it rejects
    def schemas(self) -> tuple[SchemaSet, Schema | None]:
        assert self.after is not None
        return self.engine.schemas, self.engine.spec_schema(self.after)

    def operator_problems(self) -> list[tuple[str, Path, str]]:
        assert self.a_def is not None
        return validate_rayservice(self.a_def, self.rules, feature_gates=self.policy.feature_gates)

    # 3. rollout
    def created(self) -> None:
        self.reasons.append(rollout.CREATED)

    def deleted(self) -> None:
        self.reasons.append(rollout.DELETED)

    def updated(self) -> str:
        return rollout.updated(self)

    def settle(self) -> None:
        rollout.settle(self)

    # 4. capacity
    def size(self) -> Capacity:
        return estimate_capacity(self)

    # 5. findings
    def check(self) -> Iterable[Finding]:
        return collect_findings(self)

    # 6. decision
    def decide(self) -> None:
        hold: list[str] = []
        headlines = (self._operator_holds(hold), self._capacity_holds(hold))
        live = self.live
        if live is not None and live.upgrade_in_progress and self.rollout in (Rollout.NEW_CLUSTER,
                                                                              Rollout.INCREMENTAL):
            self.reasons.append(f"an upgrade is already in flight (pending RayCluster "
                                f"{live.pending_cluster}): this change supersedes it and the superseded "
                                "cluster runs until its deletion delay ends")
        if hold:
            self.reasons.extend(hold)
            self.decision = Decision.HOLD
            self.headline = next((h for h in headlines if h), hold[0])
        elif self.rollout == Rollout.NONE and self.real and self.real <= {Category.AUTOSCALER_OWNED}:
            self.reasons.append("Git is fighting the autoscaler: ignore these fields in Argo CD instead of "
                                "syncing them")
            self.decision = Decision.IGNORE

    def _operator_holds(self, hold: list[str]) -> str:
        """Holds on what the operator does (suspend, errors, not applied); the first headline."""
        headline = ""
        if self.rollout == Rollout.SUSPEND:
            hold.append("suspending stops serving: hold until someone confirms the outage is intended")
            headline = "suspending stops serving"
        return self.operator_holds(hold, headline,
                                   self.why_not_applied or "the operator will not apply this change")

    def _capacity_holds(self, hold: list[str]) -> str:
        """Holds on the capacity a second cluster (or a renamed RayService next to the deleted
        one) needs beyond the known headroom; their headline."""
        assert self.capacity is not None
        extra = self.capacity.extra
        plan = self.capacity.placement
        if self.rollout in (Rollout.NEW_CLUSTER, Rollout.INCREMENTAL):
            # Beside the nodes: Kueue's quota and the policy's cost limit (docs/placement.md).
            c = self.capacity
            queued = kueue_holds(self.policy, c.kueue) + cost_holds(self.policy, c.cost)
            hold.extend(queued)
            if plan is not None:
                holds = placement_holds(self.policy, plan)  # with the live nodes, the plan decides
                hold.extend(holds)
                if holds:
                    return "the new cluster's pods do not fit on the live nodes"
                return queued[0] if queued else ""
        if self.rollout in (Rollout.NEW_CLUSTER, Rollout.INCREMENTAL):
            known = self.known
            holds = capacity_holds(self.policy, extra, known)
            hold.extend(holds)
            if holds:
                if known is None:
                    return "no headroom is known"
                return f"the known headroom ({render(known, self.policy, extra) or 'none'}) does not cover it"
        if self.rollout == Rollout.CLUSTER_IN_PLACE:
            # with the live nodes, the pods the update adds must fit; without them nothing holds
            holds = in_place_holds(self.policy, plan)
            hold.extend(holds)
            if holds:
                return "the pods the update adds do not fit on the live nodes"
        if self.created_beside_deleted(extra):
            known = self.known
            holds = capacity_holds(self.policy, extra, known, who="the new RayService",
                                   beside="the deleted one still runs")
            hold.extend(holds)
            if holds:
                return replacement_headline(self.replacing, known is None)
        return ""

    # 7. ways out
    def ways_out(self) -> tuple[WayOut, ...]:
        assert self.capacity is not None
        policy = self.policy
        extra = self.capacity.extra
        return next_steps(rollout=self.rollout, cause=self.cause, strategy=self.strategy,
                          changes=self.changes, findings=self.findings, extra=extra,
                          is_accelerator=policy.counts, replacing=bool(self.replacing),
                          declared=policy.accelerators, hold_on_recreate=policy.hold_on_recreate,
                          capacity_held=self._capacity_held())

    def _capacity_held(self) -> bool:
        assert self.capacity is not None
        plan = self.capacity.placement
        if self.rollout in (Rollout.NEW_CLUSTER, Rollout.INCREMENTAL):
            if kueue_holds(self.policy, self.capacity.kueue) or cost_holds(self.policy, self.capacity.cost):
                return True
            if plan is not None:
                return bool(placement_holds(self.policy, plan))
        if self.rollout == Rollout.CLUSTER_IN_PLACE:
            return bool(in_place_holds(self.policy, plan))
        return bool(capacity_holds(self.policy, self.capacity.extra, self.known))

    def ignore_entry(self) -> dict[str, Any]:
        return {
            "group": "ray.io", "kind": "RayService", "name": self.key[1], "namespace": self.key[0],
            "jqPathExpressions": [
                ".spec.rayClusterConfig.workerGroupSpecs[]?.replicas",
                ".spec.rayClusterConfig.workerGroupSpecs[]?.scaleStrategy",
            ],
        }


ANALYSIS = RayServiceAnalysis
