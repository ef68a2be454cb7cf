"""What the operator does with a change (semantics §1.4), and the decision on it."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from diffing.engine import RCC, Engine
from diffing.holds import known_headroom, replacement_headline, replacement_reason, shortfalls
from diffing.kube import resources as cap
from diffing.kube.gojson import ABSENT
from diffing.kube.manifests import Manifest
from diffing.kube.paths import Key, Path, format_path
from diffing.kube.values import dig
from diffing.live import LiveCluster
from diffing.managed import external_manager
from diffing.policy import Policy
from diffing.rayservice.rules import Category
from diffing.report import APPROVE, HOLD, IGNORE, Capacity, Change, Finding
from diffing.versions import VersionRules


@dataclass
class Pair:
    """Working state for one RayService while it is analysed."""

    key: tuple[str, str]
    before: Manifest | None
    after: Manifest | None
    changes: list[Change]
    real: set[Category]
    reasons: list[str]
    findings: list[Finding]
    why_not_applied: str = ""  # a short cause for the summary line of a not-applied hold
    cause: str = ""  # what keeps the change from the cluster: schema | validation | suspended |
    #                  strategy-none | bounds | replicas | ignored (for the next steps)


def rcc_of(obj: Mapping[str, Any] | None) -> dict[str, Any]:
    return dict(dig(obj, "spec", "rayClusterConfig"))


def is_true(value: Any) -> bool:
    return value is True


def resolve_strategy(spec: Mapping[str, Any], policy: Policy, rules: VersionRules) -> tuple[str, str]:
    """(``new-cluster`` | ``incremental`` | ``not-applied``, how it was resolved)."""
    gate = policy.feature_gates.get("RayServiceIncrementalUpgrade", rules.incremental_gate_default)
    kind = dig(spec, "upgradeStrategy").get("type")
    if kind == "NewCluster":
        return "new-cluster", "upgradeStrategy.type NewCluster"
    if kind == "NewClusterWithIncrementalUpgrade":
        if gate:
            return "incremental", "upgradeStrategy.type NewClusterWithIncrementalUpgrade"
        return "not-applied", ("upgradeStrategy.type NewClusterWithIncrementalUpgrade with the "
                               "RayServiceIncrementalUpgrade feature gate off behaves like None")
    if kind == "None":
        return "not-applied", "upgradeStrategy.type None"
    env = policy.operator_env.get("ENABLE_ZERO_DOWNTIME", "")
    if env.lower() == "false":
        return "not-applied", "no upgradeStrategy.type and operator env ENABLE_ZERO_DOWNTIME=false"
    return "new-cluster", "default strategy NewCluster (no upgradeStrategy.type)"


def mark_appended(change: Change, n: int) -> Change:
    """Worker groups added after the first ``n`` while those stay hash-equal: appended."""
    p = change.path
    if (len(p) == 4 and p[:3] == RCC + ("workerGroupSpecs",) and change.before is ABSENT
            and change.category == Category.CLUSTER_RECREATE.value
            and (isinstance(p[3], Key) or (isinstance(p[3], int) and p[3] >= n))):
        return dataclasses.replace(change, category=Category.WORKER_GROUP_APPENDED.value)
    return change


BOUNDS = ("minReplicas", "maxReplicas")


def bound_changes(changes: list[Change]) -> list[Change]:
    """minReplicas/maxReplicas edits of existing worker groups."""
    return [c for c in changes if c.category == Category.AUTOSCALER_OWNED.value and c.path[-1] in BOUNDS]


def predict_rollout(pair: Pair, engine: Engine, b_spec: Mapping[str, Any], a_spec: Mapping[str, Any],
                    full_equal: bool, partial_equal: bool, autoscaling: bool,
                    schema_errors: list[tuple[Path, str]], op_problems: list[tuple[str, Path, str]]) -> str:
    """The rollout of an update (CONTRACT rules 2-7, first match wins), its reasons appended.

    The order is the API server's, then ``Reconcile``'s (rayservice_controller.go:112-199):
    schema rejection, ``managedBy`` another controller, the operator's validation, suspend,
    then the cluster hash and the upgrade strategy.
    """
    rules, policy, real = engine.rules, engine.policy, pair.real
    if schema_errors:
        path, msg = schema_errors[0]
        pair.reasons.append(f"the API server rejects the new manifest ({format_path(path)} {msg}); "
                            "nothing is applied")
        pair.why_not_applied = f"the API server rejects it at {format_path(path)}"
        pair.cause = "schema"
        return "not-applied"
    manager = external_manager({"spec": a_spec})
    if manager is not None:
        handed_over = external_manager({"spec": b_spec}) is None
        pair.reasons.append(f"spec.managedBy is {manager}: this KubeRay operator skips the RayService "
                            "entirely (no validation, no RayCluster, no Service)" +
                            ("; the RayClusters it runs now are left as they are" if handed_over else ""))
        return "none"
    if op_problems:
        _, path, msg = op_problems[0]
        pair.reasons.append(f"KubeRay's validation fails ({format_path(path)}: {msg}): the operator marks "
                            "the RayService ValidationFailed and does nothing")
        pair.why_not_applied = f"KubeRay's validation rejects {format_path(path)}"
        pair.cause = "validation"
        return "not-applied"
    if rules.has_rayservice_suspend:
        was, now = is_true(b_spec.get("suspend")), is_true(a_spec.get("suspend"))
        if now and not was:
            pair.reasons.append("spec.suspend turns true: every RayCluster and Service of this "
                                "RayService is deleted and serving stops")
            return "suspend"
        if was and not now:
            pair.reasons.append("spec.suspend turns false: a brand-new RayCluster is built at full size")
            return "resume"
        if now and was and real:
            pair.reasons.append("the RayService stays suspended: nothing is applied until it resumes")
            pair.why_not_applied = "the RayService stays suspended"
            pair.cause = "suspended"
            return "not-applied"
    if external_manager({"spec": b_spec}) is not None:
        pair.reasons.append("spec.managedBy no longer names another controller: this operator takes the "
                            "RayService over and builds its first RayCluster at full size")
        return "new-cluster"
    if not full_equal:
        if partial_equal:
            pair.reasons.append("only worker groups were appended: KubeRay updates the running "
                                "RayCluster in place (no new cluster)")
            return "cluster-in-place"
        strategy, how = resolve_strategy(a_spec, policy, rules)
        if strategy == "not-applied":
            pair.reasons.append(f"the cluster spec changed but {how}: the change is silently not "
                                "applied (only an operator log line)")
            pair.why_not_applied = f"{how.split(' with the ')[0]}: the cluster change is silently not applied"
            pair.cause = "strategy-none"
            return "not-applied"
        if strategy == "incremental":
            pair.reasons.append("the cluster spec changed: KubeRay builds a new RayCluster and shifts "
                                "capacity and traffic to it step by step through the Gateway")
            return "incremental"
        pair.reasons.append("the cluster spec changed: KubeRay builds a whole new RayCluster next to "
                            "the old one and switches traffic when its Serve apps are RUNNING")
        return "new-cluster"
    b_rc_suspend = is_true(rcc_of({"spec": b_spec}).get("suspend"))
    a_rc_suspend = is_true(rcc_of({"spec": a_spec}).get("suspend"))
    if rules.cluster_suspend_in_place and b_rc_suspend != a_rc_suspend:
        pair.reasons.append("rayClusterConfig.suspend toggled: KubeRay v1.6 updates the RayCluster in place")
        return "cluster-in-place"
    if Category.SERVE_IN_PLACE in real:
        pair.reasons.append("only serveConfigV2 changed: KubeRay re-submits it to the running "
                            "cluster and Ray Serve applies it in place")
        return "serve-in-place"
    if Category.AUTOSCALER_OWNED in real:
        bounds = bound_changes(pair.changes)
        if bounds:
            fields = sorted({str(c.path[-1]) for c in bounds})
            pair.reasons.append(
                f"{' and '.join(fields)} changed: KubeRay mutes them in its comparison and never copies "
                "them to the running RayCluster, with or without autoscaling (the autoscaler reads the "
                "bounds from the RayCluster); they take effect only at the next new-cluster rollout or "
                "when a worker group is appended (kuberay#2331, #4568)")
            pair.why_not_applied = f"{' and '.join(fields)} never reach the running RayCluster"
            pair.cause = "bounds"
            return "not-applied"
        if autoscaling:
            pair.reasons.append("only replicas/workersToDelete changed and in-tree autoscaling is on: "
                                "KubeRay does nothing and the autoscaler keeps sizing the cluster")
            return "none"
        pair.reasons.append("only replicas/workersToDelete changed: KubeRay never propagates them to the "
                            "running RayCluster on their own")
        pair.why_not_applied = "replica fields alone never reach the running RayCluster"
        pair.cause = "replicas"
        return "not-applied"
    if Category.OPERATOR_IGNORED in real:
        pair.reasons.append("only fields KubeRay leaves out of its comparison changed (tolerations, "
                            "schedulingGates, rayClusterConfig.suspend...): nothing reaches the cluster")
        pair.why_not_applied = "KubeRay leaves these fields out of its comparison"
        pair.cause = "ignored"
        return "not-applied"
    if real:
        pair.reasons.append("only RayService-level fields changed: no RayCluster is touched")
    elif pair.changes:
        pair.reasons.append("every difference vanishes under the operator's normalisation")
    else:
        pair.reasons.append("no change to this RayService")
    return "none"


def lifecycle_rollout(pair: Pair, engine: Engine, rollout: str, b_def: Mapping[str, Any] | None,
                      a_def: Mapping[str, Any] | None) -> str:
    """The rollout of a created or deleted RayService that the operator leaves alone.

    ``managedBy`` another controller: nothing happens in this cluster, created or deleted
    (``none``). Created with ``spec.suspend: true`` (v1.7): ``handleSuspend`` moves it straight
    to Suspended and no RayCluster is built; the rollout stays ``create`` with no capacity.
    """
    if rollout not in ("create", "delete"):
        return rollout
    manager = external_manager(a_def if rollout == "create" else b_def)
    if manager is not None:
        pair.reasons[:] = [f"spec.managedBy is {manager}: this KubeRay operator never reconciles the "
                           "RayService; it builds and deletes nothing in this cluster"]
        return "none"
    if rollout == "create" and engine.rules.has_rayservice_suspend and is_true(
            dig(a_def, "spec").get("suspend")):
        pair.reasons[:] = ["the RayService is created with spec.suspend: true: KubeRay builds no "
                           "RayCluster until spec.suspend turns false (then one at full size)"]
    return rollout


def decide(pair: Pair, engine: Engine, rollout: str, capacity: Capacity,
           headroom: Mapping[str, Fraction] | None, live: LiveCluster | None,
           replacing: Sequence[str] = ()) -> tuple[str, str]:
    """(decision, a short headline of the first hold reason).

    ``replacing`` names the objects the same change deletes: a created RayService then runs
    next to them, and its accelerators are extra capacity as in a new-cluster rollout.
    """
    policy = engine.policy
    errors = [f for f in pair.findings if f.severity == "error"]
    hold: list[str] = []
    headline = ""
    if rollout == "suspend":
        hold.append("suspending stops serving: hold until someone confirms the outage is intended")
        headline = headline or "suspending stops serving"
    if errors and policy.hold_on_errors:
        hold.append(f"{len(errors)} error finding(s): {errors[0].message}")
        headline = headline or f"{errors[0].code} at {errors[0].path}"
    if rollout == "not-applied":
        if policy.not_applied == "hold":
            hold.append("the operator will not apply what this change asks (see the reasons)")
            headline = headline or pair.why_not_applied or "the operator will not apply this change"
        else:
            pair.reasons.append("policy notApplied=warn: not holding a change the operator will not apply")
    if rollout in ("new-cluster", "incremental"):
        known = known_headroom(headroom, live)
        capacity_holds = _capacity_holds(engine, capacity, known)
        hold.extend(capacity_holds)
        if capacity_holds and not headline:
            headline = ("no headroom is known" if known is None else
                        f"the known headroom ({_render(known, policy, capacity.extra) or 'none'}) does "
                        "not cover it")
    if rollout == "create" and replacing and capacity.extra:
        pair.reasons.append(replacement_reason("RayService", replacing))
        known = known_headroom(headroom, live)
        capacity_holds = _capacity_holds(engine, capacity, known, who="the new RayService",
                                         beside="the deleted one still runs")
        hold.extend(capacity_holds)
        if capacity_holds and not headline:
            headline = replacement_headline(replacing, known is None)
    if live is not None and live.upgrade_in_progress and rollout in ("new-cluster", "incremental"):
        pair.reasons.append(f"an upgrade is already in flight (pending RayCluster {live.pending_cluster}): "
                            "this change supersedes it and the superseded cluster runs until its "
                            "deletion delay ends")
    if hold:
        pair.reasons.extend(hold)
        return HOLD, headline or hold[0]
    if rollout == "none" and pair.real and pair.real <= {Category.AUTOSCALER_OWNED}:
        pair.reasons.append("Git is fighting the autoscaler: ignore these fields in Argo CD instead of "
                            "syncing them")
        return IGNORE, ""
    return APPROVE, ""


def _render(amounts: Mapping[str, Fraction], policy: Policy, like: Mapping[str, Any]) -> str:
    """``amounts`` for people, each in the unit family of the same resource in ``like``."""
    return ", ".join(f"{k}: {cap.human(k, v)}" for k, v in cap.render_amounts(
        amounts, policy.accelerators, keep_zero=True, units=_families(like)).items())


def _families(rendered: Mapping[str, Any]) -> dict[str, str]:
    out = {}
    for name, raw in rendered.items():
        if isinstance(raw, str):
            try:
                out[name] = cap.Quantity.parse(raw).format
            except cap.QuantityError:
                continue
    return out


def _capacity_holds(engine: Engine, capacity: Capacity, known: Mapping[str, Fraction] | None, *,
                    who: str = "the rollout", beside: str = "the old cluster still runs") -> list[str]:
    policy = engine.policy
    if policy.hold_on_recreate == "never":
        return []
    if policy.hold_on_recreate == "always":
        return ["policy holdOnRecreate=always: every cluster recreation is held"]
    out = []
    for name, _, free in shortfalls(policy, capacity.extra, known):
        raw = capacity.extra[name]
        covered = cap.render_amounts({name: free}, policy.accelerators, keep_zero=True,
                                     units=_families({name: raw})).get(name, 0)
        where = (f"the known headroom covers {cap.human(name, covered)}"
                 if known is not None else "no headroom is known")
        out.append(f"{who} needs {cap.human(name, raw)} extra {name}{cap.family_note(name)} while {beside}; "
                   f"{where}"
                   " (without room the new pods stay Pending and the rollout never finishes)")
    return out


def ignore_differences_entry(key: tuple[str, str]) -> dict[str, Any]:
    return {
        "group": "ray.io", "kind": "RayService", "name": key[1], "namespace": key[0],
        "jqPathExpressions": [
            ".spec.rayClusterConfig.workerGroupSpecs[]?.replicas",
            ".spec.rayClusterConfig.workerGroupSpecs[]?.scaleStrategy",
        ],
    }
