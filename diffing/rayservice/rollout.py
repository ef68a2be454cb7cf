"""What the RayService controller does about a change: the rollout and its reasons.

The operator's decision procedure (docs/semantics/rayservice.md §1.4), first match wins: the
API server rejects the manifest · ``managedBy`` another controller · the operator's validation
· suspend · the cluster hash (full, then "only groups appended") and the upgrade strategy ·
``rayClusterConfig.suspend`` (v1.6) · serveConfigV2 · muted fields · nothing. Citations are
KubeRay v1.7.0, ``ray-operator/controllers/ray/rayservice_controller.go`` unless noted.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from diffing import record
from diffing.engine import RCC
from diffing.hints import TYPE_CHECKING, Any
from diffing.kube.gojson import ABSENT
from diffing.kube.paths import Key, format_path, schema_path
from diffing.kube.values import dig
from diffing.managed import external_manager
from diffing.policy import Policy
from diffing.rayservice import serve
from diffing.rayservice.rules import Category
from diffing.report import Change
from diffing.versions import VersionRules
from diffing.vocab import Rollout

if TYPE_CHECKING:
    from diffing.rayservice.analyze import RayServiceAnalysis

CREATED = "the RayService is new: KubeRay builds its first RayCluster at full size"
DELETED = "the RayService is removed: its RayClusters and Services are deleted"
BOUNDS = ("minReplicas", "maxReplicas")


def rcc_of(obj: Mapping[str, Any] | None) -> dict[str, Any]:
    return dict(dig(obj, "spec", "rayClusterConfig"))


def is_true(value: Any) -> bool:
    return value is True


def resolve_strategy(spec: Mapping[str, Any], policy: Policy, rules: VersionRules) -> tuple[Rollout, str]:
    """(``new-cluster`` | ``incremental`` | ``not-applied``, how it was resolved)."""
    gate = policy.feature_gates.get("RayServiceIncrementalUpgrade", rules.incremental_gate_default)
    kind = dig(spec, "upgradeStrategy").get("type")
    if kind == "NewCluster":
        return Rollout.NEW_CLUSTER, "upgradeStrategy.type NewCluster"
    if kind == "NewClusterWithIncrementalUpgrade":
        if gate:
            return Rollout.INCREMENTAL, "upgradeStrategy.type NewClusterWithIncrementalUpgrade"
        return Rollout.NOT_APPLIED, ("upgradeStrategy.type NewClusterWithIncrementalUpgrade with the "
                                     "RayServiceIncrementalUpgrade feature gate off behaves like None")
    if kind == "None":
        return Rollout.NOT_APPLIED, "upgradeStrategy.type None"
    env = policy.operator_env.get("ENABLE_ZERO_DOWNTIME", "")
    if env.lower() == "false":
        return Rollout.NOT_APPLIED, "no upgradeStrategy.type and operator env ENABLE_ZERO_DOWNTIME=false"
    return Rollout.NEW_CLUSTER, "default strategy NewCluster (no upgradeStrategy.type)"


def mark_appended(change: Change, n: int) -> Change:
    """Worker groups added after the first ``n`` while those stay hash-equal: appended."""
    p = change.path
    if (len(p) == 4 and p[:3] == RCC + ("workerGroupSpecs",) and change.before is ABSENT
            and change.category == Category.CLUSTER_RECREATE.value
            and (isinstance(p[3], Key) or (isinstance(p[3], int) and p[3] >= n))):
        return record.replace(change, category=Category.WORKER_GROUP_APPENDED.value)
    return change


def replica_changes(a: RayServiceAnalysis) -> list[Change]:
    """Edits of worker ``replicas``, ``minReplicas``/``maxReplicas`` and ``workersToDelete``, which
    KubeRay mutes in its hash: ``autoscaler-owned`` with in-tree autoscaling on (the Ray autoscaler
    writes them), ``operator-ignored`` without (nothing owns them; the name says so)."""
    muted = (Category.AUTOSCALER_OWNED.value, Category.OPERATOR_IGNORED.value)
    return [c for c in a.changes if c.category in muted
            and a.rules.category_of(schema_path(c.path)).category == Category.AUTOSCALER_OWNED]


def bound_changes(a: RayServiceAnalysis) -> list[Change]:
    """minReplicas/maxReplicas edits of existing worker groups."""
    return [c for c in replica_changes(a) if c.path[-1] in BOUNDS]


# -- an update: one step per branch of Reconcile, first match wins ---------------------------------

Step = Callable[["RayServiceAnalysis"], "Rollout | None"]


def updated(a: RayServiceAnalysis) -> Rollout:
    """The rollout of an update, its reasons appended (first match of :data:`STEPS` wins).

    The order is the API server's, then ``Reconcile``'s (rayservice_controller.go:112-199):
    schema rejection, ``managedBy`` another controller, the operator's validation, suspend,
    then the cluster hash and the upgrade strategy.
    """
    rollout = Rollout.NONE
    for step in STEPS:
        found = step(a)
        if found is not None:
            rollout = found
            break
    if rollout in (Rollout.NEW_CLUSTER, Rollout.INCREMENTAL, Rollout.NOT_APPLIED) and \
            not a.full_equal and not a.partial_equal:
        a.strategy = resolve_strategy(a.a_spec, a.policy, a.rules)[1]
        a.reasons.insert(0, f"strategy: {a.strategy}")
    return rollout


def _not_applied(a: RayServiceAnalysis, reason: str, why: str, cause: str) -> Rollout:
    """``not-applied``: ``why`` is the short cause of the summary line, ``cause`` the key of the
    ways out (:data:`diffing.rayservice.ways_out._NOT_APPLIED`)."""
    a.reasons.append(reason)
    a.why_not_applied, a.cause = why, cause
    return Rollout.NOT_APPLIED


def _rejected(a: RayServiceAnalysis) -> Rollout | None:
    """The API server rejects the new manifest: the operator never sees it."""
    if not a.schema_errors:
        return None
    path, msg = a.schema_errors[0]
    return _not_applied(a, f"the API server rejects the new manifest ({format_path(path)} {msg}); "
                           "nothing is applied",
                        f"the API server rejects it at {format_path(path)}", "schema")


def _managed(a: RayServiceAnalysis) -> Rollout | None:
    """``managedBy`` another controller: KubeRay skips the object (rayservice_controller.go:121-124)."""
    manager = external_manager({"spec": a.a_spec})
    if manager is None:
        return None
    handed_over = external_manager({"spec": a.b_spec}) is None
    a.reasons.append(f"spec.managedBy is {manager}: this KubeRay operator skips the RayService "
                     "entirely (no validation, no RayCluster, no Service)" +
                     ("; the RayClusters it runs now are left as they are" if handed_over else ""))
    return Rollout.NONE


def _invalid(a: RayServiceAnalysis) -> Rollout | None:
    """KubeRay's validation fails: ValidationFailed, nothing else (rayservice_controller.go:156-171)."""
    if not a.problems:
        return None
    _, path, msg = a.problems[0]
    return _not_applied(a, f"KubeRay's validation fails ({format_path(path)}: {msg}): the operator marks "
                           "the RayService ValidationFailed and does nothing",
                        f"KubeRay's validation rejects {format_path(path)}", "validation")


def _suspend(a: RayServiceAnalysis) -> Rollout | None:
    """``spec.suspend`` (v1.7): turned on, turned off, or kept on while something else changes."""
    if not a.rules.has_rayservice_suspend:
        return None
    was, now = is_true(a.b_spec.get("suspend")), is_true(a.a_spec.get("suspend"))
    if now and not was:
        a.reasons.append("spec.suspend turns true: every RayCluster and Service of this "
                         "RayService is deleted and serving stops")
        return Rollout.SUSPEND
    if was and not now:
        a.reasons.append("spec.suspend turns false: a brand-new RayCluster is built at full size")
        return Rollout.RESUME
    if now and was and a.real:
        return _not_applied(a, "the RayService stays suspended: nothing is applied until it resumes",
                            "the RayService stays suspended", "suspended")
    return None


def _taken_over(a: RayServiceAnalysis) -> Rollout | None:
    """``managedBy`` no longer names another controller: this operator starts from scratch."""
    if external_manager({"spec": a.b_spec}) is None:
        return None
    a.reasons.append("spec.managedBy no longer names another controller: this operator takes the "
                     "RayService over and builds its first RayCluster at full size")
    return Rollout.NEW_CLUSTER


def _cluster_hash(a: RayServiceAnalysis) -> Rollout | None:
    """The cluster hash differs: groups appended (in place), else the upgrade strategy decides."""
    if a.full_equal:
        return None
    if a.partial_equal:
        a.reasons.append("only worker groups were appended: KubeRay updates the running "
                         "RayCluster in place (no new cluster)")
        return Rollout.CLUSTER_IN_PLACE
    strategy, how = resolve_strategy(a.a_spec, a.policy, a.rules)
    if strategy == Rollout.NOT_APPLIED:
        return _not_applied(a, f"the cluster spec changed but {how}: the change is silently not "
                               "applied (only an operator log line)",
                            f"{how.split(' with the ')[0]}: the cluster change is silently not applied",
                            "strategy-none")
    if strategy == Rollout.INCREMENTAL:
        a.reasons.append("the cluster spec changed: KubeRay builds a new RayCluster and shifts "
                         "capacity and traffic to it step by step through the Gateway")
        return Rollout.INCREMENTAL
    a.reasons.append("the cluster spec changed: KubeRay builds a whole new RayCluster next to "
                     "the old one and switches traffic when its Serve apps are RUNNING")
    return Rollout.NEW_CLUSTER


def _cluster_suspend(a: RayServiceAnalysis) -> Rollout | None:
    """v1.6 applies a ``rayClusterConfig.suspend`` toggle in place (shouldUpdateCluster)."""
    b_rc_suspend = is_true(rcc_of({"spec": a.b_spec}).get("suspend"))
    a_rc_suspend = is_true(rcc_of({"spec": a.a_spec}).get("suspend"))
    if not (a.rules.cluster_suspend_in_place and b_rc_suspend != a_rc_suspend):
        return None
    a.reasons.append("rayClusterConfig.suspend toggled: KubeRay v1.6 updates the RayCluster in place, "
                     "with every other change of the cluster spec (no new cluster)")
    return Rollout.CLUSTER_IN_PLACE


def _serve(a: RayServiceAnalysis) -> Rollout | None:
    if Category.SERVE_IN_PLACE not in a.real:
        return None
    if all(c.detail in serve.SAME_CONTENT for c in a.changes if c.category == Category.SERVE_IN_PLACE):
        a.reasons.append("only the serveConfigV2 text changed, not its content: KubeRay compares the "
                         "text and re-submits it to the running cluster; Ray Serve changes nothing")
        return Rollout.SERVE_IN_PLACE
    a.reasons.append("only serveConfigV2 changed: KubeRay re-submits it to the running "
                     "cluster and Ray Serve applies it in place")
    return Rollout.SERVE_IN_PLACE


def _autoscaler_owned(a: RayServiceAnalysis) -> Rollout | None:
    """Fields muted in the hash that the autoscaler owns, when it runs: bounds, replicas,
    workersToDelete."""
    if not replica_changes(a):
        return None
    bounds = bound_changes(a)
    if bounds:
        fields = " and ".join(sorted({str(c.path[-1]) for c in bounds}))
        return _not_applied(
            a, f"{fields} changed: KubeRay mutes them in its comparison and never copies "
               "them to the running RayCluster, with or without autoscaling (the autoscaler reads the "
               "bounds from the RayCluster); they take effect only at the next new-cluster rollout or "
               "when a worker group is appended (kuberay#2331, #4568)",
            f"{fields} never reach the running RayCluster", "bounds")
    if a.autoscaling:
        a.reasons.append("only replicas/workersToDelete changed and in-tree autoscaling is on: "
                         "KubeRay does nothing and the autoscaler keeps sizing the cluster")
        return Rollout.NONE
    return _not_applied(a, "only replicas/workersToDelete changed: KubeRay never propagates them to the "
                           "running RayCluster on their own",
                        "replica fields alone never reach the running RayCluster", "replicas")


def _ignored(a: RayServiceAnalysis) -> Rollout | None:
    if Category.OPERATOR_IGNORED not in a.real:
        return None
    return _not_applied(a, "only fields KubeRay leaves out of its comparison changed (tolerations, "
                           "schedulingGates, rayClusterConfig.suspend...): nothing reaches the cluster",
                        "KubeRay leaves these fields out of its comparison", "ignored")


def _untouched(a: RayServiceAnalysis) -> Rollout:
    """No RayCluster is touched (always matches: the last step)."""
    if a.real:
        a.reasons.append("only RayService-level fields changed: no RayCluster is touched")
    elif a.changes:
        a.reasons.append("every difference vanishes under the operator's normalisation")
    else:
        a.reasons.append("no change to this RayService")
    return Rollout.NONE


# v1.6's suspend toggle comes before the hash: shouldUpdateCluster sees the toggle first and
# rewrites the active RayCluster in place with the whole new spec, which then hashes equal, so
# no new cluster is built (v1.6.2 rayservice_controller.go:990-1003, 1139-1145).
STEPS: tuple[Step, ...] = (_rejected, _managed, _invalid, _suspend, _taken_over, _cluster_suspend,
                           _cluster_hash, _serve, _autoscaler_owned, _ignored, _untouched)


# -- after the rollout -----------------------------------------------------------------------------


def settle(a: RayServiceAnalysis) -> None:
    """A created RayService the API server or KubeRay rejects is ``not-applied``; then
    :func:`lifecycle`."""
    a.refuse_new()
    lifecycle(a)


def lifecycle(a: RayServiceAnalysis) -> None:
    """The rollout of a created or deleted RayService that the operator leaves alone.

    ``managedBy`` another controller: nothing happens in this cluster, created or deleted
    (``none``). Created with ``spec.suspend: true`` (v1.7): ``handleSuspend`` moves it straight
    to Suspended and no RayCluster is built; the rollout stays ``create`` with no capacity.
    """
    if a.leave_to_manager():
        return
    if a.rollout == Rollout.CREATE and a.rules.has_rayservice_suspend and is_true(
            a.a_spec.get("suspend")):
        a.reasons[:] = ["the RayService is created with spec.suspend: true: KubeRay builds no "
                        "RayCluster until spec.suspend turns false (then one at full size)"]
