"""A standalone RayCluster's change through the stages (the pipeline is :mod:`diffing.pipeline`).

docs/semantics/raycluster.md describes the controller (KubeRay v1.7.0, with 1.6 deltas). The
layers are the RayService's, in the same order, on the same tables: the API server's schema
(the RayCluster CRD's spec is the RayService's ``rayClusterConfig`` type), the operator's
validation (a failure *freezes* the cluster: nothing is reconciled, RCC:172-177), then the
reconcile decisions. What differs from a RayService is the controller: it never touches a
running pod (:mod:`.rollout`).

The folder: :mod:`.rules` (the category of each field's change, as data), :mod:`.changes` (each
difference judged, the Recreate hash, what is never applied), :mod:`.rollout`, :mod:`.capacity`
(and the holds on it), :mod:`.checks`, :mod:`.ways_out`, and :mod:`.validation` (KubeRay's
``ValidateRayClusterSpec``, with :mod:`.validate_spec`, :mod:`.validate_spec_options` and
:mod:`.validation_subject`).

RCC = KubeRay v1.7.0 ``ray-operator/controllers/ray/raycluster_controller.go``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from diffing.engine import cluster_defaulted, cluster_schema
from diffing.holds import error_hold
from diffing.kube.manifests import Manifest
from diffing.kube.paths import Path
from diffing.kube.schema import Schema, SchemaSet
from diffing.kube.values import dig
from diffing.pipeline import Analysis, Target
from diffing.raycluster import changes, checks, rollout
from diffing.raycluster.capacity import capacity_holds, estimate
from diffing.raycluster.rollout import Moves
from diffing.raycluster.rules import ClusterCategory as C
from diffing.raycluster.validation import validate_raycluster
from diffing.raycluster.ways_out import Cause, Hold, next_steps
from diffing.report import Capacity, Change, Finding, WayOut
from diffing.vocab import Decision, Rollout

# What the RayCluster controller can do about a change (:mod:`.rollout`).
ROLLOUTS = (Rollout.NONE, Rollout.CREATE, Rollout.DELETE, Rollout.NOT_APPLIED, Rollout.SUSPEND,
            Rollout.RESUME, Rollout.RECREATE, Rollout.SCALE, Rollout.LATENT)

# What the Ray autoscaler writes: the fields Argo CD should ignore (docs/semantics/raycluster.md §5.1).
IGNORED_PATHS = (".spec.workerGroupSpecs[]?.replicas", ".spec.workerGroupSpecs[]?.scaleStrategy")


class RayClusterAnalysis(Analysis):
    """One standalone RayCluster through the stages. Besides the pipeline's state: both sides'
    defaulted specs (``b_spec``/``a_spec``), the ``live`` basis, ``autoscaling`` (in-tree),
    ``recreate_on`` (``upgradeStrategy.type: Recreate``, KubeRay ≥ 1.6), the Argo CD apps that
    drop worker-group edits (``dropped``), the hash's verdict (``hash_equal``), the changes
    never carried out (``unapplied``), the pods that move (``moves``), whether Recreate deletes
    every pod now (``recreate``, ``recreate_note``) and the ``holds`` of the decision."""

    kind = "RayCluster"
    categories = tuple(C)
    holding = {
        # Every change of a not-applied rollout is one the operator never carries out: the API
        # server or KubeRay's validation refuses the whole spec, managedBy hands it away, the
        # suspend line is removed, or each change is one KubeRay ignores (or Argo CD drops).
        Rollout.NOT_APPLIED: (C.RECREATE, C.SCALE, C.LATENT, C.SIDE_OBJECT, C.AUTOSCALER_OWNED,
                              C.OPERATOR_IGNORED),
        # spec.suspend is a scale change: suspending deletes every pod.
        Rollout.SUSPEND: (C.SCALE,),
        # spec.suspend: false (a scale change) builds the whole cluster: its accelerators.
        Rollout.RESUME: (C.SCALE,),
        # The pods a scale-out adds need the accelerators: replicas, minReplicas, groups added.
        Rollout.SCALE: (C.SCALE,),
        # The hashed changes restart every pod (holdOnRecreate) and size the rebuilt cluster.
        Rollout.RECREATE: (C.RECREATE,),
        # The changes that reach only pods built later make the version skew (or holdOnLatent:
        # always); under Recreate a hashed change the head already carries is one of them.
        Rollout.LATENT: (C.LATENT, C.RECREATE),
    }

    def __init__(self, t: Target) -> None:
        super().__init__(t)
        self.autoscaling = (self.a_spec if self.a_def else self.b_spec).get("enableInTreeAutoscaling") is True
        self.recreate_on = self.rules.has_cluster_recreate \
            and dig(self.a_spec, "upgradeStrategy").get("type") == "Recreate"
        self.strategy = "upgradeStrategy.type Recreate" if self.recreate_on else ""
        self.dropped = changes.dropping_apps(t.argo_apps, self.key)
        self.hash_equal = True
        self.unapplied: list[Change] = []
        self.moves = Moves()
        self.frozen_before = False
        self.recreate, self.recreate_note = False, ""
        self.holds: list[Hold] = []

    def defaulted(self, m: Manifest) -> dict[str, Any]:
        return cluster_defaulted(self.engine, m)

    # 1. changes, judged field by field, then the hash as a whole
    def diff(self) -> None:
        changes.diff(self)

    # 2. validation: the API server first, then KubeRay (a failure freezes the cluster)
    def schemas(self) -> tuple[SchemaSet, Schema | None]:
        assert self.after is not None
        return self.engine.schemas, cluster_schema(self.engine, self.after.api_version)

    def operator_problems(self) -> list[tuple[str, Path, str]]:
        return self._problems_of(self.a_def)

    def _problems_of(self, obj: dict[str, Any] | None) -> list[tuple[str, Path, str]]:
        assert obj is not None
        return validate_raycluster(obj, self.rules, feature_gates=self.policy.feature_gates)

    # 3. rollout
    def created(self) -> None:
        self.reasons.append(rollout.created_reason(self))

    def settle(self) -> None:
        rollout.settle(self)

    def deleted(self) -> None:
        self.reasons.append(rollout.DELETED)

    def updated(self) -> str:
        # A running spec KubeRay's validation refuses froze the cluster: nothing was reconciled,
        # so a fixed spec has every pod it lacks built now (the whole cluster if it never ran).
        self.frozen_before = bool(self.changes) and not self._problems_of(self.a_def) \
            and bool(self._problems_of(self.b_def))
        self.moves = rollout.pod_moves(self)
        self.recreate, self.recreate_note = rollout.recreate(self)
        return rollout.updated(self)

    # 4. capacity
    def size(self) -> Capacity:
        return estimate(self)

    # 5. findings
    def check(self) -> Iterator[Finding]:
        return checks.collect(self)

    # 6. decision
    def decide(self) -> None:
        real = changes.real(self)
        only_owned = bool(real) and all(c.category == C.AUTOSCALER_OWNED.value for c in real)
        known = self.known
        self.holds = self._operator_holds() + capacity_holds(self, known, only_owned)
        if self.holds:
            self.reasons.extend(h.reason for h in self.holds)
            self.decision, self.headline = Decision.HOLD, self.holds[0].headline
        elif only_owned and self.autoscaling:
            self.reasons.append("Git is fighting the Ray autoscaler: ignore replicas and scaleStrategy in "
                                "Argo CD (with ApplyOutOfSyncOnly=true) instead of syncing them")
            self.decision = Decision.IGNORE

    def _operator_holds(self) -> list[Hold]:
        """Holds on what the operator does: errors, not applied, suspend, Recreate, orphaned pods,
        version skew (or any latent change, by policy)."""
        policy = self.policy
        codes = {f.code for f in self.findings}
        out = []
        errors = error_hold(self.findings, policy)
        if errors:
            out.append(Hold(Cause.ERRORS, *errors))
        if self.rollout == Rollout.NOT_APPLIED and policy.not_applied == "hold":
            out.append(Hold(Cause.NOT_APPLIED, "the operator will not do what this change asks (see the "
                            "reasons)", "the operator will not apply this change"))
        if self.rollout == Rollout.SUSPEND:
            out.append(Hold(Cause.SUSPEND, "suspending deletes every pod: hold until someone confirms the "
                            "outage is intended", "suspending deletes every pod"))
        if self.rollout == Rollout.RECREATE and policy.cluster_hold_on_recreate:
            out.append(Hold(Cause.RECREATE, "Recreate restarts the whole cluster: plan it for a maintenance "
                            "window", "Recreate restarts every pod (downtime)"))
        if "orphaned-pods" in codes:
            out.append(Hold(Cause.ORPHANED, "pods of a removed or re-shaped worker group would keep running "
                            "unmanaged", "orphaned pods keep running"))
        latent_mode = policy.cluster_hold_on_latent
        if "version-skew" in codes and latent_mode != "never":
            out.append(Hold(Cause.VERSION_SKEW, "new pods would run a different Ray version than the running "
                            "head", "Ray version skew between old and new pods"))
        elif self.rollout == Rollout.LATENT and latent_mode == "always":
            out.append(Hold(Cause.LATENT, "policy raycluster.holdOnLatent=always: the change waits for pods "
                            "built later", "the change reaches only new pods"))
        return out

    # 7. ways out
    def ways_out(self) -> tuple[WayOut, ...]:
        return next_steps(self)

    def ignore_entry(self) -> dict[str, Any]:
        """The Argo CD ignore rule for what the Ray autoscaler writes to a RayCluster
        (docs/semantics/raycluster.md §5.1: ``replicas`` and the whole ``scaleStrategy``)."""
        return {"group": "ray.io", "kind": "RayCluster", "name": self.key[1], "namespace": self.key[0],
                "jqPathExpressions": list(IGNORED_PATHS)}


ANALYSIS = RayClusterAnalysis

