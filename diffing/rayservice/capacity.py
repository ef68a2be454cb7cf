"""The extra capacity a rollout needs while it runs (docs/semantics/rayservice.md §4.4, §5), and
the holds on it: a new cluster next to the old one, or a renamed RayService next to the deleted
one, needs what the known headroom may not cover."""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction

from diffing import placement
from diffing.hints import TYPE_CHECKING, Any
from diffing.holds import known_headroom, shortfalls
from diffing.kube import resources as cap
from diffing.kube.values import dig, mapping, seq
from diffing.live import LiveCluster
from diffing.managed import external_manager
from diffing.placement import cost, kueue
from diffing.policy import Policy
from diffing.rayservice import serve
from diffing.rayservice.rollout import rcc_of
from diffing.report import Capacity
from diffing.vocab import Rollout

if TYPE_CHECKING:
    from diffing.rayservice.analyze import RayServiceAnalysis

Phases = list[tuple[str, cap.Amounts]]


def estimate_capacity(a: RayServiceAnalysis) -> Capacity:
    """Extra, peak and per-phase capacity of ``a.rollout``; basis ``live`` when the caller knows it."""
    policy, live = a.policy, a.live
    init = policy.operator_env.get("ENABLE_INIT_CONTAINER_INJECTION", "true").lower() != "false"
    accel = policy.accelerators
    basis = "live" if live is not None and (live.active_cluster or live.worker_replicas) else "manifest"
    old, new = _shapes(a, init)
    current = _running(old, basis, live)
    old_total = old.total(current) if old else {}
    extra, phases = _during(a, new, old_total, current, basis)
    extra = cap.positive(extra)
    peak = cap.add(old_total, extra) if extra and a.rollout not in (Rollout.CREATE, Rollout.RESUME) \
        else dict(extra)
    known = known_headroom(a.headroom, live)
    serve_info = None
    if a.b_def is not None or a.a_def is not None:
        shape = new or (cap.cluster_shape(rcc_of(a.a_def), init_injection=init) if a.a_def else None)
        serve_info = _serve_gpus(a, shape)
    units = {**(old.units if old else {}), **(new.units if new else {})}
    placement = None
    if live is not None and live.cluster is not None and new is not None:
        placement = plan_rollout(a, new, current, basis, init)
    queued = None
    if live is not None and live.kueue is not None and extra and a.a_def is not None:
        meta = dig(a.a_def, "metadata")
        local_queues, cluster_queues = live.kueue
        queued = kueue.admission({"metadata": {"namespace": a.key[0], "labels": meta.get("labels")}},
                                 extra, local_queues, cluster_queues)
    return Capacity(
        basis=basis,
        extra=cap.render_amounts(extra, accel, units=units),
        peak=cap.render_amounts(peak, accel, units=units) if extra else {},
        headroom=cap.render_amounts(known, accel, keep_zero=True, units=units) if known is not None else None,
        phases=tuple((label, cap.render_amounts(amounts, accel, units=units)) for label, amounts in phases),
        serve=serve_info, placement=placement, kueue=queued,
        cost=_cost(a, old_total, new, current, extra) if policy.prices else None,
    )


def _shapes(a: RayServiceAnalysis, init: bool) -> tuple[cap.ClusterShape | None, cap.ClusterShape | None]:
    """The running cluster and the one the after side asks for (``None``: none runs, none is built).

    A RayService another controller manages has no RayCluster here; one created suspended
    gets none until it resumes (handleSuspend, rayservice_controller.go:383-464). A RayCluster
    built from a ``rayClusterConfig`` with ``suspend: true`` is created suspended and gets no pod
    (docs/semantics/rayservice.md §1.3).
    """
    runs_before = a.b_def is not None and external_manager(a.b_def) is None
    old = cap.cluster_shape(rcc_of(a.b_def), init_injection=init) if a.b_def and runs_before else None
    new = cap.cluster_shape(rcc_of(a.a_def), init_injection=init) if a.a_def else None
    suspended = dig(a.a_def, "spec").get("suspend") is True
    if a.rollout == Rollout.CREATE and a.rules.has_rayservice_suspend and suspended:
        new = None
    if builds_suspended(a):
        new = None
    return old, new


def builds_suspended(a: RayServiceAnalysis) -> bool:
    """The rollout leaves a suspended RayCluster (``rayClusterConfig.suspend``): a new one is
    created suspended; v1.6's in-place update also copies ``suspend`` (§1.3)."""
    rollouts = (Rollout.CREATE, Rollout.NEW_CLUSTER, Rollout.INCREMENTAL) + (
        (Rollout.CLUSTER_IN_PLACE,) if a.rules.cluster_suspend_in_place else ())
    return a.rollout in rollouts and rcc_of(a.a_def).get("suspend") is True


def _running(old: cap.ClusterShape | None, basis: str, live: LiveCluster | None) -> dict[str, int]:
    """Worker replicas per group of the running cluster: the manifest's, or the live ones."""
    current: dict[str, int] = {}
    if old is not None:
        current = {g.name: g.replicas for g in old.groups}
        if basis == "live" and live is not None:
            current.update({k: v for k, v in live.worker_replicas.items() if k in current})
    return current


def _during(a: RayServiceAnalysis, new: cap.ClusterShape | None, old_total: cap.Amounts,
            current: Mapping[str, int], basis: str) -> tuple[cap.Amounts, Phases]:
    """What the rollout adds to the running cluster, and its phases."""
    if new is None:
        return {}, []
    if a.rollout in (Rollout.CREATE, Rollout.RESUME):
        extra = new.total()
        return extra, [("before", {}), ("after", extra)]
    if a.rollout == Rollout.NEW_CLUSTER:
        reps = {}
        for g in new.groups:
            if a.autoscaling and basis == "live" and g.name in current:
                reps[g.name] = cap.clamp(current[g.name], g.min_replicas, g.max_replicas)
        extra = new.total(reps)
        return extra, [("before", old_total), ("both clusters", cap.add(old_total, extra)), ("after", extra)]
    if a.rollout == Rollout.INCREMENTAL:
        return _first_step(a, new, old_total, current)
    if a.rollout == Rollout.CLUSTER_IN_PLACE:
        extra = {}
        for g in new.groups:
            if g.name not in current:
                extra = cap.add(extra, g.resources())
            elif g.replicas > current[g.name]:
                extra = cap.add(extra, g.per_pod, (g.replicas - current[g.name]) * g.hosts)
        return extra, [("before", old_total), ("after", cap.add(old_total, extra))]
    return {}, []


def _first_step(a: RayServiceAnalysis, new: cap.ClusterShape, old_total: cap.Amounts,
                current: Mapping[str, int]) -> tuple[cap.Amounts, Phases]:
    """An incremental upgrade's first step: ``maxSurgePercent`` of each group next to the old cluster."""
    opts = dig(a.a_def, "spec", "upgradeStrategy", "clusterUpgradeOptions")
    surge = opts.get("maxSurgePercent", 100)
    surge = surge if isinstance(surge, int) and 0 <= surge <= 100 else 100
    reps = {g.name: cap.surge_replicas(g, current.get(g.name, g.replicas), surge) for g in new.groups}
    extra = new.total(reps)
    full = new.total({g.name: current.get(g.name, g.replicas) for g in new.groups})
    return extra, [("before", old_total), (f"first step (+{surge}%)", cap.add(old_total, extra)),
                   ("after", full)]


def plan_rollout(a: RayServiceAnalysis, new: cap.ClusterShape, current: Mapping[str, int], basis: str,
                 init: bool) -> dict[str, Any] | None:
    """The placement plan of the pods the rollout adds (docs/placement.md): a new cluster whole
    (its autoscaled groups at the running replicas, as :func:`_during`), an incremental upgrade's
    first step, the pods an in-place update appends; ``None`` for a rollout that adds none."""
    assert a.live is not None and a.live.cluster is not None
    rcc, ns = rcc_of(a.a_def), a.key[0]
    replicas: dict[str, int] | None = None
    head = True
    if a.rollout in (Rollout.CREATE, Rollout.RESUME):
        pass
    elif a.rollout == Rollout.NEW_CLUSTER:
        replicas = {g.name: g.replicas for g in new.groups}
        for g in new.groups:
            if a.autoscaling and basis == "live" and g.name in current:
                replicas[g.name] = cap.clamp(current[g.name], g.min_replicas, g.max_replicas)
    elif a.rollout == Rollout.INCREMENTAL:
        opts = dig(a.a_def, "spec", "upgradeStrategy", "clusterUpgradeOptions")
        surge = opts.get("maxSurgePercent", 100)
        surge = surge if isinstance(surge, int) and 0 <= surge <= 100 else 100
        replicas = {g.name: cap.surge_replicas(g, current.get(g.name, g.replicas), surge) for g in new.groups}
    elif a.rollout == Rollout.CLUSTER_IN_PLACE:
        head = False
        replicas = {g.name: g.replicas - current.get(g.name, 0) for g in new.groups}
    else:
        return None
    asks = placement.rollout_asks(rcc, replicas, head=head, namespace=ns, init_injection=init)
    if not asks:
        return None
    nodes, pods = a.live.cluster
    return placement.plan_for(asks, nodes, pods).as_dict()


def _cost(a: RayServiceAnalysis, before: cap.Amounts, new: cap.ClusterShape | None,
          current: Mapping[str, int], extra: cap.Amounts) -> dict[str, Any]:
    after = new.total({g.name: current.get(g.name, g.replicas) for g in new.groups}) if new else {}
    return cost.rollout_cost(extra, before, after, a.policy.prices, a.policy.currency,
                             overlap=a.rollout in (Rollout.NEW_CLUSTER, Rollout.INCREMENTAL))


def cost_holds(policy: Policy, priced: Mapping[str, Any] | None) -> list[str]:
    """The hold when the two-cluster window costs more per hour than the policy allows."""
    limit = policy.cost_hold_per_hour
    if priced is None or limit is None or "overlapPerHour" not in priced:
        return []
    if Fraction(str(priced["overlapPerHour"])) <= limit:
        return []
    unit = f" {policy.currency}" if policy.currency else ""
    return [f"while both clusters run the new one costs {priced['overlapPerHour']:g}{unit} per hour, above "
            f"the policy's cost.holdAbovePerHour ({float(limit):g}{unit})"]


def placement_holds(policy: Policy, plan: Mapping[str, Any]) -> list[str]:
    """One hold per worker group (or the head) whose pods the live nodes cannot take."""
    if policy.hold_on_recreate == "never":
        return []
    if policy.hold_on_recreate == "always":
        return ["policy holdOnRecreate=always: every cluster recreation is held"]
    out = []
    for g in plan.get("groups") or []:
        if g.get("unplaced"):
            out.append(f"{g['unplaced']} of {g['pods']} pod(s) of {_who(g['group'])} cannot be placed on the "
                       f"live nodes: {g['message']}{add_nodes(plan)}")
    return out


def in_place_holds(policy: Policy, plan: Mapping[str, Any] | None) -> list[str]:
    """The hold on pods an in-place update adds (appended groups, more replicas) that the live
    nodes cannot take: they would stay Pending while the old pods serve. ``holdOnRecreate: never``
    (no hold for lack of room) releases it; ``always`` does not add one (nothing is recreated)."""
    if plan is None or policy.hold_on_recreate == "never":
        return []
    return [f"{g['unplaced']} of {g['pods']} pod(s) the update adds to {_who(g['group'])} cannot be placed "
            f"on the live nodes, they would stay Pending: {g['message']}{add_nodes(plan)}"
            for g in plan.get("groups") or [] if g.get("unplaced")]


def kueue_holds(policy: Policy, queued: Mapping[str, Any] | None) -> list[str]:
    """The hold when Kueue will not admit the new cluster next to the old one."""
    if queued is None or queued.get("admitted") or policy.hold_on_recreate == "never":
        return []
    return [f"Kueue: the new cluster {queued.get('message')}; it stays unadmitted (no pods) while the old "
            "cluster holds its quota (kueue #11264)"]


def _who(group: str) -> str:
    return "the head" if group == "head" else f"worker group {group}"


def add_nodes(plan: Mapping[str, Any]) -> str:
    adds = [a for a in plan.get("addNodes") or [] if a.get("placesAll")]
    if not adds:
        return ""
    best = adds[0]
    return f" ({best['nodes']} more node(s) like {best['shape']} would take them)"


def _serve_gpus(a: RayServiceAnalysis, new: cap.ClusterShape | None) -> dict[str, Any] | None:
    before, after = serve.gpu_demand(a.b_serve), serve.gpu_demand(a.a_serve)
    if before.gpus == after.gpus == 0:
        return None
    out: dict[str, Any] = {"before": _num(before.gpus), "after": _num(after.gpus)}
    if new is not None:
        out["ceiling"] = _num(float(logical_gpu_ceiling(a.after.obj if a.after else {}, new)))
    return out


# -- the holds on it ---------------------------------------------------------------------------------


def capacity_holds(policy: Policy, extra: Mapping[str, Any], known: Mapping[str, Fraction] | None, *,
                   who: str = "the rollout", beside: str = "the old cluster still runs") -> list[str]:
    """One hold per accelerator (or resource with a threshold) of ``extra`` (rendered) that the
    known headroom does not cover; the policy's ``holdOnRecreate`` overrides."""
    if policy.hold_on_recreate == "never":
        return []
    if policy.hold_on_recreate == "always":
        return ["policy holdOnRecreate=always: every cluster recreation is held"]
    out = []
    for name, _, free in shortfalls(policy, extra, known):
        raw = extra[name]
        covered = cap.render_amounts({name: free}, policy.accelerators, keep_zero=True,
                                     units=_families({name: raw})).get(name, 0)
        where = (f"the known headroom covers {cap.human(name, covered)}"
                 if known is not None else "no headroom is known")
        out.append(f"{who} needs {cap.human(name, raw)} extra {name}{cap.family_note(name)} while {beside}; "
                   f"{where}"
                   " (without room the new pods stay Pending and the rollout never finishes)")
    return out


def render(amounts: Mapping[str, Fraction], policy: Policy, like: Mapping[str, Any]) -> str:
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


def logical_gpu_ceiling(obj: Mapping[str, Any], shape: cap.ClusterShape) -> float:
    """Ray GPUs the cluster can ever offer: head + every group at maxReplicas x numOfHosts."""
    rcc = rcc_of(obj)
    total = _logical_gpus(mapping(rcc.get("headGroupSpec")))
    groups = [g for g in seq(rcc.get("workerGroupSpecs")) if isinstance(g, Mapping)]
    for g, size in zip(groups, shape.groups, strict=False):
        if size.suspended or size.max_replicas >= cap.MAX_INT32:
            if size.max_replicas >= cap.MAX_INT32 and _logical_gpus(g) > 0:
                return float("inf")
            continue
        total += _logical_gpus(g) * size.max_replicas * size.hosts
    return total


def _logical_gpus(group: Mapping[str, Any]) -> float:
    """``num-gpus`` as KubeRay passes it to ``ray start`` (rayStartParams > resources > limits)."""
    if not isinstance(group, Mapping):
        return 0.0
    params = mapping(group.get("rayStartParams"))
    if "num-gpus" in params:
        try:
            return float(params["num-gpus"])
        except (TypeError, ValueError):
            return 0.0
    res = mapping(group.get("resources"))
    if res:
        for k, v in res.items():
            if cap.is_gpu(str(k).lower()):  # pod.go:1665 lower-cases the names
                try:
                    return float(cap.Quantity.parse(v).ceil())
                except cap.QuantityError:
                    return 0.0
    containers = seq(dig(group, "template", "spec").get("containers"))
    if containers:
        limits = dig(containers[0], "resources", "limits")
        for k in sorted(limits):
            if cap.is_gpu(str(k)):
                try:
                    value = cap.Quantity.parse(limits[k]).value
                except cap.QuantityError:
                    continue
                if value > 0:
                    return float(value)
    return 0.0


def _num(value: float) -> int | float:
    if value == float("inf"):
        return -1
    return int(value) if float(value).is_integer() else round(value, 3)


def _logical_cpus(group: Mapping[str, Any]) -> float | None:
    """``num-cpus`` as KubeRay passes it (rayStartParams > resources > CPU limit > request), or None."""
    params = mapping(group.get("rayStartParams"))
    raw: Any = params.get("num-cpus")
    if raw is None:
        raw = next((v for k, v in mapping(group.get("resources")).items() if str(k).lower() == "cpu"), None)
    if raw is None:
        containers = seq(dig(group, "template", "spec").get("containers"))
        res = dig(containers[0], "resources") if containers else {}
        raw = mapping(res.get("limits")).get("cpu", mapping(res.get("requests")).get("cpu"))
    if raw is None:
        return None
    try:
        return float(cap.Quantity.parse(raw).ceil())
    except cap.QuantityError:
        return None


Node = tuple[float | None, float, int | None]  # (logical CPUs, logical GPUs, how many; None = unbounded)


def ray_nodes(rcc: Mapping[str, Any], autoscaling: bool) -> list[Node]:
    """The Ray nodes a cluster can ever have: the head, and per worker group maxReplicas x hosts
    with autoscaling (unbounded at the default maxReplicas), else its clamped replicas x hosts."""
    out: list[Node] = [(_logical_cpus(mapping(rcc.get("headGroupSpec"))),
                        _logical_gpus(mapping(rcc.get("headGroupSpec"))), 1)]
    for g in seq(rcc.get("workerGroupSpecs")):
        if not isinstance(g, Mapping) or g.get("suspend") is True:
            continue
        replicas, hosts, _, most = cap.group_counts(g)
        if autoscaling:
            count = None if most >= cap.MAX_INT32 else most * hosts
        else:
            count = replicas * hosts
        out.append((_logical_cpus(g), _logical_gpus(g), count))
    return out


def eligible_nodes(nodes: list[Node], cpus: float, gpus: float) -> int | None:
    """How many of ``nodes`` can hold one replica needing ``cpus``/``gpus``; None = unbounded."""
    total = 0
    for node_cpus, node_gpus, count in nodes:
        if (gpus > 0 and node_gpus < gpus) or (cpus > 0 and node_cpus is not None and node_cpus < cpus):
            continue
        if count is None:
            return None
        total += count
    return total
