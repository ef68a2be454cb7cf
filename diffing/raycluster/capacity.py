"""The capacity a standalone RayCluster's rollout needs, and the holds on it.

``create``/``resume`` build the whole cluster; ``scale`` adds the pods it creates to what runs;
``recreate`` deletes every pod before it builds the cluster again, so only its growth over what
is freed is extra (docs/semantics/raycluster.md §6).
"""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction
from typing import TYPE_CHECKING

from diffing import placement
from diffing.hints import Any
from diffing.holds import known_headroom, replacement_headline, shortfalls
from diffing.kube import resources as cap
from diffing.kube.values import dig
from diffing.placement import cost, kueue
from diffing.raycluster.ways_out import Cause, Hold
from diffing.rayservice.capacity import add_nodes
from diffing.report import Capacity
from diffing.vocab import Rollout

if TYPE_CHECKING:
    from diffing.raycluster.analyze import RayClusterAnalysis


def estimate(a: RayClusterAnalysis) -> Capacity:
    """Stage 4: the extra and peak amounts of the rollout, and the known headroom."""
    accel = a.policy.accelerators
    moves, rollout = a.moves, a.rollout
    basis = "live" if a.live is not None and (a.live.worker_replicas or a.live.group_pods) else "manifest"
    new = moves.new_shape or (cap.cluster_shape(a.a_spec) if a.after else None)
    extra: cap.Amounts = {}
    peak: cap.Amounts = {}
    reps: dict[str, int] = {}
    before: cap.Amounts = {}  # what runs before, for the cost of the pods the rollout adds
    if new is not None and rollout in (Rollout.CREATE, Rollout.RESUME) and not (
            rollout == Rollout.CREATE and a.a_spec.get("suspend") is True):
        extra = peak = new.total()
    elif rollout == Rollout.SCALE and new is not None:
        for g in new.groups:
            if moves.created.get(g.name):
                extra = cap.add(extra, g.per_pod, moves.created[g.name])
        if moves.head_built:
            extra = cap.add(extra, new.head)
        old = moves.old_shape
        running = cap.add(dict(old.head), _groups_total(old, moves.current)) if old and not moves.head_built \
            else {}
        peak = cap.add(running, extra)
        before = running
    elif rollout == Rollout.RECREATE and new is not None and moves.old_shape is not None:
        # No surge: the old pods go first (docs/semantics/raycluster.md §6.1). The new cluster comes
        # up at the clamped replicas of the spec: Git's new ones, or with autoscaling the ones the
        # autoscaler keeps; what must be free is its growth over what is freed.
        reps = {g.name: cap.clamp(moves.current.get(g.name, g.pods) // max(g.hosts, 1),
                                  g.min_replicas, g.max_replicas) if a.autoscaling else g.replicas
                for g in new.groups}
        peak = new.total(reps)
        old = moves.old_shape
        freed = cap.add(dict(old.head), _groups_total(old, moves.current))
        extra = cap.add(peak, freed, -1)
        before = freed
    extra = cap.positive(extra)
    known = known_headroom(a.headroom, a.live)
    units = {**(moves.old_shape.units if moves.old_shape else {}), **(new.units if new else {})}
    return Capacity(
        basis=basis,
        extra=cap.render_amounts(extra, accel, units=units),
        peak=cap.render_amounts(cap.positive(peak), accel, units=units) if peak else {},
        headroom=cap.render_amounts(known, accel, keep_zero=True, units=units) if known is not None else None,
        placement=plan_rollout(a, reps) if new is not None and peak else None,
        kueue=_queued(a, extra),
        cost=cost.rollout_cost(extra, before, cap.positive(peak), a.policy.prices, a.policy.currency,
                               overlap=False) if a.policy.prices and peak else None,
    )


def _queued(a: RayClusterAnalysis, extra: cap.Amounts) -> dict[str, Any] | None:
    """Kueue's answer for the pods the rollout adds (a RayCluster labelled
    ``kueue.x-k8s.io/queue-name``; docs/placement.md): reported, not held on."""
    live = a.live
    if live is None or live.kueue is None or not extra or a.a_def is None:
        return None
    labels = dig(a.a_def, "metadata").get("labels")
    return kueue.admission({"metadata": {"namespace": a.key[0], "labels": labels}}, extra, *live.kueue)


def plan_rollout(a: RayClusterAnalysis, recreate_replicas: Mapping[str, int]) -> dict[str, Any] | None:
    """The placement plan of the pods the rollout adds, with the live nodes (docs/placement.md):
    the whole cluster for a create or resume; the pods a scale-up creates (and the head when it is
    built too); for a Recreate the rebuilt cluster at ``recreate_replicas``, on the nodes the old
    cluster's pods leave (they are deleted first: their requests are not counted)."""
    live = a.live
    if live is None or live.cluster is None:
        return None
    init = a.policy.operator_env.get("ENABLE_INIT_CONTAINER_INJECTION", "true").lower() != "false"
    namespace, name = a.key[0], a.key[1]
    nodes, pods = live.cluster
    moves = a.moves
    replicas: dict[str, int] | None = None
    head = True
    if a.rollout in (Rollout.CREATE, Rollout.RESUME):
        pass
    elif a.rollout == Rollout.SCALE and moves.new_shape is not None:
        hosts = {g.name: max(g.hosts, 1) for g in moves.new_shape.groups}
        replicas = {g: n // hosts.get(g, 1) for g, n in moves.created.items() if n > 0}
        head = moves.head_built
    elif a.rollout == Rollout.RECREATE:
        replicas = dict(recreate_replicas)
        pods = [p for p in pods if not (dig(p, "metadata").get("namespace") == namespace
                                        and dig(p, "metadata", "labels").get(CLUSTER_LABEL) == name)]
    else:
        return None
    asks = placement.rollout_asks(a.a_spec, replicas, head=head, namespace=namespace, init_injection=init)
    return placement.plan_for(asks, nodes, pods).as_dict() if asks else None


CLUSTER_LABEL = "ray.io/cluster"  # on every pod KubeRay builds for a RayCluster (utils/constant.go)


def _groups_total(shape: cap.ClusterShape, pods: Mapping[str, int]) -> cap.Amounts:
    out: cap.Amounts = {}
    for g in shape.groups:
        out = cap.add(out, g.per_pod, pods.get(g.name, g.pods))
    return out


def _where(name: str, known: Mapping[str, Fraction] | None) -> str:
    return "no headroom is known" if known is None else \
        f"the known headroom covers {cap.human(name, known.get(name, 0))}"


def capacity_holds(a: RayClusterAnalysis, known: Mapping[str, Fraction] | None,
                   only_owned: bool) -> list[Hold]:
    """Holds on the pods a scale-out, resume or Recreate needs beyond the known headroom (not for
    a change only the autoscaler's fields make), and on a RayCluster created while the change
    deletes another object."""
    assert a.capacity is not None
    extra = a.capacity.extra
    out: list[Hold] = []
    plan = a.capacity.placement
    if a.rollout in (Rollout.SCALE, Rollout.RESUME, Rollout.RECREATE) and not only_owned and plan is not None:
        # with the live nodes, the plan decides: a hold only for pods that find no node
        out.extend(Hold(Cause.PLACEMENT, f"{g['unplaced']} of {g['pods']} new pod(s) of "
                        f"{'the head' if g['group'] == 'head' else 'worker group ' + g['group']} cannot be "
                        f"placed on the live nodes (they stay Pending): {g['message']}{add_nodes(plan)}",
                        "the new pods do not fit on the live nodes")
                   for g in plan.get("groups") or [] if g.get("unplaced"))
    elif a.rollout in (Rollout.SCALE, Rollout.RESUME, Rollout.RECREATE) and not only_owned:
        for name, _, _ in shortfalls(a.policy, extra, known):
            headline = "no headroom is known" if known is None else \
                f"the known headroom ({name}: {cap.human(name, known.get(name, 0))}) does not cover it"
            out.append(Hold(Cause.HEADROOM,
                            f"the new pods need {cap.human(name, extra[name])} more {name}"
                            f"{cap.family_note(name)}; {_where(name, known)} (without room they stay "
                            "Pending)", headline))
    if a.created_beside_deleted(extra):
        out.extend(_replacement_holds(a, known))
    return out


def _replacement_holds(a: RayClusterAnalysis, known: Mapping[str, Fraction] | None) -> list[Hold]:
    """A RayCluster created while the change deletes another object (a rename): both run until
    the old one is pruned, so its accelerators must be free, as for a scale-up (holdOnRecreate
    never / always weighs it like a RayService's second cluster)."""
    assert a.capacity is not None
    policy, extra = a.policy, a.capacity.extra
    if policy.hold_on_recreate == "never":
        return []
    headline = replacement_headline(a.replacing, known is None)
    if policy.hold_on_recreate == "always":
        return [Hold(Cause.REPLACEMENT_POLICY,
                     "policy holdOnRecreate=always: every cluster recreation is held", headline)]
    return [Hold(Cause.REPLACEMENT,
                 f"the new RayCluster needs {cap.human(name, extra[name])} extra {name}"
                 f"{cap.family_note(name)} while the deleted one still runs; {_where(name, known)} "
                 "(without room its pods stay Pending)", headline)
            for name, _, _ in shortfalls(policy, extra, known)]
