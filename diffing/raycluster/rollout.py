"""What the RayCluster controller does about a change: the rollout and its reasons.

The controller never touches a running pod. A change either moves pods now (``scale``: the
desired count per group changed, RCC:1069-1257), deletes every pod first (``recreate``:
``upgradeStrategy.type: Recreate`` and a change of the hash, RCC:968-982), or waits for pods
built later (``latent``). Pods of a group that is no longer in the spec are never visited again
(RCC:1069, 1079): they keep running, orphaned. First match wins (docs/semantics/raycluster.md
§1.2): the API server rejects the manifest · ``managedBy`` another controller · the operator's
validation · suspend · Recreate · the pods that move · nothing applied · latent · nothing.

RCC = KubeRay v1.7.0 ``ray-operator/controllers/ray/raycluster_controller.go``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from diffing.engine import recreate_hash
from diffing.kube import resources as cap
from diffing.kube.gojson import ABSENT
from diffing.kube.paths import format_path
from diffing.kube.values import dig, mapping, seq
from diffing.managed import external_manager
from diffing.raycluster.changes import real, rule_reason, why_unapplied
from diffing.raycluster.rules import ClusterCategory as C
from diffing.vocab import Rollout

if TYPE_CHECKING:
    from diffing.raycluster.analyze import RayClusterAnalysis

DELETED = "the RayCluster is removed: every pod and Service of it is deleted"
NEVER_BUILT = ("KubeRay's validation fails: the RayCluster is stored but frozen, and no pod of it is ever "
               "built (RCC:165-177)")


def created_reason(a: RayClusterAnalysis) -> str:
    if a.a_spec.get("suspend") is not True:
        return ("the RayCluster is new: KubeRay builds the head and every worker group at their clamped "
                "replicas")
    return "the RayCluster is created suspended: no pod runs until spec.suspend is false"


# -- pods ----------------------------------------------------------------------------------------


@dataclass
class Moves:
    """Pods per worker group, now and after the change (head excluded)."""

    created: dict[str, int] = field(default_factory=dict)  # by group of the new spec
    deleted: dict[str, int] = field(default_factory=dict)
    orphaned: dict[str, int] = field(default_factory=dict)  # pods of groups the new spec no longer has
    hosts_changed: list[str] = field(default_factory=list)
    head_built: bool = False  # the head pod is built too (a cluster frozen since it was applied)
    new_shape: cap.ClusterShape | None = None
    old_shape: cap.ClusterShape | None = None
    current: dict[str, int] = field(default_factory=dict)  # pods per group running now

    @property
    def any(self) -> bool:
        return any(self.created.values()) or any(self.deleted.values())


def current_pods(a: RayClusterAnalysis, old: cap.ClusterShape) -> dict[str, int]:
    """Worker pods per group running now: what the live basis counted, else what the running
    manifest asks for (clamped replicas × hosts), or live replicas × hosts."""
    current = {g.name: g.pods for g in old.groups}
    if a.live is not None:
        for g in old.groups:
            if g.name in a.live.worker_replicas:
                reps = cap.clamp(a.live.worker_replicas[g.name], g.min_replicas, g.max_replicas)
                current[g.name] = 0 if g.suspended else reps * g.hosts
        current.update(a.live.group_pods)
    return current


def pod_moves(a: RayClusterAnalysis) -> Moves:
    """The pods the change creates, deletes and orphans, per worker group."""
    old, new = cap.cluster_shape(a.b_spec), cap.cluster_shape(a.a_spec)
    m = Moves(new_shape=new, old_shape=old)
    m.current = current_pods(a, old)
    if a.frozen_before and a.live is None:
        m.current, m.head_built = {g.name: 0 for g in old.groups}, True
    old_groups = {g.name: g for g in old.groups}
    multi_host = bool(a.rules.gates(a.policy.feature_gates).get("RayMultiHostIndexing", False))
    for g in new.groups:
        running = m.current.get(g.name, 0)
        before = old_groups.get(g.name)
        if before is not None and before.hosts != g.hosts and g.hosts > 1 and multi_host:
            # The old layout's pods are invisible to the multi-host path (common/pod.go:673-681): they
            # stay, and the new layout is built next to them (inferred, docs/semantics/raycluster.md §4.3).
            # One host per replica (or the gate off) takes the plain path, which counts every pod of
            # the group and scales to replicas × hosts (RCC:1095-1101, 1160-1170).
            m.hosts_changed.append(g.name)
            if running:
                m.orphaned[g.name] = running
            running = 0
        if g.pods > running:
            m.created[g.name] = g.pods - running
        elif g.pods < running:
            # Scale-in: the operator deletes only with autoscaling off (RCC:1218-1256); with it on,
            # a lower maxReplicas is carried out by the autoscaler, a lower replicas by nobody.
            lowered_max = before is not None and g.max_replicas < before.max_replicas
            if g.suspended or not a.autoscaling or lowered_max:
                m.deleted[g.name] = running - g.pods
        doomed = [x for x in seq(dig(_group(a.a_spec, g.name), "scaleStrategy").get("workersToDelete"))
                  if isinstance(x, str)]
        old_doomed = seq(dig(_group(a.b_spec, g.name), "scaleStrategy").get("workersToDelete"))
        if doomed and doomed != old_doomed and g.name not in m.deleted:
            m.deleted[g.name] = len(doomed)  # deleted whatever replicas says (RCC:1132-1153)
    new_names = {g.name for g in new.groups}
    for name, pods in m.current.items():
        if name not in new_names and pods:
            m.orphaned[name] = pods
    return m


def _group(spec: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    return next((mapping(g) for g in seq(spec.get("workerGroupSpecs"))
                 if mapping(g).get("groupName") == name), {})


# -- Recreate ------------------------------------------------------------------------------------


def recreate(a: RayClusterAnalysis) -> tuple[bool, str]:
    """(Recreate deletes every pod now, why) — ``shouldRecreatePodsForUpgrade`` (RCC:1463-1502).

    The reference is the head pod's hash annotation, i.e. the spec the head was built from,
    not the previous commit: with a live basis that is compared; without, the running
    manifest stands in for it.
    """
    if not a.recreate_on or a.after is None or a.before is None:
        return False, ""
    live = a.live
    if live is not None and live.head_hash:
        version = f"v{a.rules.version}"
        if live.head_kuberay_version and live.head_kuberay_version != version:
            return False, (f"the head pod was built by KubeRay {live.head_kuberay_version}, not {version}: "
                           "the operator rewrites its hash instead of recreating (RCC:1481-1494), so this "
                           "change is absorbed and never applied to running pods")
        target = recreate_hash(a.engine, a.after.obj.get("spec"), a.after.api_version)
        if target == live.head_hash:
            return False, "the head pod already carries the new spec's hash: nothing is recreated"
        running = recreate_hash(a.engine, a.before.obj.get("spec"), a.before.api_version)
        if running == live.head_hash:
            return True, "the new spec's hash differs from the head pod's"
        return True, ("the head pod's hash matches neither the running nor the new spec: it was built "
                      "from an older spec (changes that waited for new pods), or this tool's hash "
                      "differs from the operator's; either way the operator sees a mismatch")
    if a.hash_equal:
        return False, ""
    return True, "the Recreate hash of the spec changes"


# -- the rollout ---------------------------------------------------------------------------------


def updated(a: RayClusterAnalysis) -> str:
    """The rollout of a change to an existing RayCluster; its reason is appended."""
    return _refused(a) or _suspend(a) or _moved(a)


def _refused(a: RayClusterAnalysis) -> str:
    """``not-applied`` when the API server, ``managedBy`` or KubeRay's validation stops it."""
    if a.schema_errors:
        path, msg = a.schema_errors[0]
        a.reasons.append(f"the API server rejects the new manifest ({format_path(path)} {msg}); nothing "
                         "is applied")
        return Rollout.NOT_APPLIED
    manager = external_manager({"spec": a.a_spec})
    if manager is not None and external_manager({"spec": a.b_spec}) is None:
        a.reasons.append(f"spec.managedBy hands the RayCluster to {manager}: KubeRay stops reconciling it "
                         "(RCC:158-161) and its pods stay as they are")
        return Rollout.NOT_APPLIED
    if a.problems:
        a.reasons.append("KubeRay's validation fails: the RayCluster is frozen (an InvalidRayClusterSpec "
                         "event, no status update; not even failed pods are replaced) until the spec is "
                         "fixed (RCC:172-177)")
        return Rollout.NOT_APPLIED
    return ""


def _suspend(a: RayClusterAnalysis) -> str:
    """What ``spec.suspend`` decides (RCC:940-966, 2084-2091), if anything."""
    b_susp = a.b_spec.get("suspend") is True
    a_susp = a.a_spec.get("suspend", ABSENT)
    if not b_susp and a_susp is True:
        a.reasons.append("spec.suspend turns true: every pod, head included, is deleted (RCC:940-966)")
        return Rollout.SUSPEND
    if b_susp and a_susp is False:
        a.reasons.append("spec.suspend turns false: the head and every worker group are created again "
                         "from the new spec (RCC:2084-2091)")
        return Rollout.RESUME
    if b_susp and a_susp is ABSENT:
        a.reasons.append("the suspend: true line is removed, but only an explicit false resumes: the "
                         "cluster stays suspended (RCC:2084-2091)")
        return Rollout.NOT_APPLIED
    if b_susp:
        a.reasons.append("the cluster stays suspended: the changes reach the pods built when it resumes")
        return Rollout.NONE
    return ""


HEAD = ("spec", "headGroupSpec")
# When a head pod is built again, i.e. when a head change reaches it (KubeRay v1.7.0 reconcilePods).
HEAD_REBUILT = ("KubeRay creates a head pod only when there is none (RCC:1025-1055): after the head pod is "
                "deleted or evicted, or has failed (a head pod in phase Failed, or whose Ray container "
                "exited under restartPolicy Never, is deleted and built again: RCC:1010-1023, 1512-1529), "
                "and when the cluster resumes or is recreated; a scale-up never rebuilds the head")


def _moved(a: RayClusterAnalysis) -> str:
    """A running cluster: Recreate, pods that move now, or what waits for pods built later."""
    if a.recreate:
        a.reasons.append(f"upgradeStrategy Recreate: {a.recreate_note}; every pod is deleted at once, then "
                         "the cluster is built again from the new spec (RCC:968-982)")
        return Rollout.RECREATE
    if a.recreate_note:
        a.reasons.append(a.recreate_note)
    changed = real(a)
    moves = a.moves
    if a.frozen_before:
        a.reasons.append("the running spec fails KubeRay's validation, so the cluster has been frozen "
                         "since it was applied (RCC:172-177): the fixed spec is reconciled now, and if "
                         "the cluster never ran, its head and every worker are built at once")
    if moves.any:
        parts = [f"+{n} pod(s) in {g}" for g, n in moves.created.items() if n] + \
                [f"-{n} pod(s) in {g}" for g, n in moves.deleted.items() if n]
        a.reasons.append("the desired pod count changes now: " + ", ".join(parts))
        if not moves.head_built and any(c.path[:2] == HEAD and c.category == C.LATENT.value for c in changed):
            a.reasons.append(f"the head's change waits for a new head pod: {HEAD_REBUILT}")
        return Rollout.SCALE
    if changed and all(c in a.unapplied for c in changed):
        a.reasons.append("nothing in the change is ever carried out: " +
                         "; ".join(sorted({why_unapplied(a, c) for c in changed})))
        return Rollout.NOT_APPLIED
    # Under Recreate a hashed change that does not recreate (the head already has the hash, or
    # an operator upgrade absorbed it) still reaches every pod built later.
    waiting = [c for c in changed if c.category in (C.LATENT.value, C.RECREATE.value)]
    if waiting and all(c.path[:2] == HEAD for c in waiting):
        a.reasons.append(f"the change reaches only the head pod, and only when one is built again: "
                         f"{HEAD_REBUILT}")
        return Rollout.LATENT
    if waiting:
        a.reasons.append("the change reaches only pods created later (a scale-up, a replaced pod); "
                         "running pods keep the old spec")
        if any(c.path[:2] == HEAD for c in waiting):
            a.reasons.append(f"the head's change waits for a new head pod: {HEAD_REBUILT}")
        return Rollout.LATENT
    if changed:
        a.reasons.append("nothing moves now: " + "; ".join(sorted({rule_reason(a, c) for c in changed})))
    return Rollout.NONE


def settle(a: RayClusterAnalysis) -> None:
    """A new RayCluster the API server or KubeRay refuses builds nothing (``not-applied``); one
    that ``managedBy`` gives another controller is neither built nor torn down here (``none``)."""
    if a.refuse_new():
        a.reasons[:] = ["the API server rejects the manifest: nothing of it is stored" if a.schema_errors
                        else NEVER_BUILT]
    a.leave_to_manager("RCC:158-161")
