"""The extra capacity a rollout needs while it runs (semantics §4.4, §5)."""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction
from typing import Any

from diffing.engine import Engine
from diffing.holds import known_headroom
from diffing.kube import resources as cap
from diffing.kube.values import dig, mapping, seq
from diffing.live import LiveCluster
from diffing.managed import external_manager
from diffing.rayservice import serve
from diffing.rayservice.rollout import Pair, rcc_of
from diffing.report import Capacity


def estimate_capacity(engine: Engine, rollout: str, b_def: Mapping[str, Any] | None,
                      a_def: Mapping[str, Any] | None, pair: Pair, headroom: Mapping[str, Fraction] | None,
                      live: LiveCluster | None, autoscaling: bool,
                      serves: tuple[serve.ServeConfig, serve.ServeConfig]) -> Capacity:
    """Extra, peak and per-phase capacity of ``rollout``; basis ``live`` when the caller knows it."""
    policy = engine.policy
    init = policy.operator_env.get("ENABLE_INIT_CONTAINER_INJECTION", "true").lower() != "false"
    accel = policy.accelerators
    basis = "live" if live is not None and (live.active_cluster or live.worker_replicas) else "manifest"
    # A RayService another controller manages has no RayCluster here; one created suspended
    # gets none until it resumes (handleSuspend, rayservice_controller.go:383-464).
    runs_before = b_def is not None and external_manager(b_def) is None
    old = cap.cluster_shape(rcc_of(b_def), init_injection=init) if b_def and runs_before else None
    new = cap.cluster_shape(rcc_of(a_def), init_injection=init) if a_def else None
    suspended = dig(a_def, "spec").get("suspend") is True
    if rollout == "create" and engine.rules.has_rayservice_suspend and suspended:
        new = None
    current: dict[str, int] = {}
    if old is not None:
        current = {g.name: g.replicas for g in old.groups}
        if basis == "live" and live is not None:
            current.update({k: v for k, v in live.worker_replicas.items() if k in current})
    old_total = old.total(current) if old else {}
    extra: cap.Amounts = {}
    phases: list[tuple[str, cap.Amounts]] = []
    if new is not None and rollout in ("create", "resume"):
        extra = new.total()
        phases = [("before", {}), ("after", extra)]
    elif new is not None and rollout == "new-cluster":
        reps = {}
        for g in new.groups:
            if autoscaling and basis == "live" and g.name in current:
                reps[g.name] = cap.clamp(current[g.name], g.min_replicas, g.max_replicas)
        extra = new.total(reps)
        phases = [("before", old_total), ("both clusters", cap.add(old_total, extra)), ("after", extra)]
    elif new is not None and rollout == "incremental":
        opts = dig(a_def, "spec", "upgradeStrategy", "clusterUpgradeOptions")
        surge = opts.get("maxSurgePercent", 100)
        surge = surge if isinstance(surge, int) and 0 <= surge <= 100 else 100
        reps = {g.name: cap.surge_replicas(g, current.get(g.name, g.replicas), surge) for g in new.groups}
        extra = new.total(reps)
        full = new.total({g.name: current.get(g.name, g.replicas) for g in new.groups})
        phases = [("before", old_total), (f"first step (+{surge}%)", cap.add(old_total, extra)),
                  ("after", full)]
    elif new is not None and rollout == "cluster-in-place":
        for g in new.groups:
            if g.name not in current:
                extra = cap.add(extra, g.resources())
            elif g.replicas > current[g.name]:
                extra = cap.add(extra, g.per_pod, (g.replicas - current[g.name]) * g.hosts)
        phases = [("before", old_total), ("after", cap.add(old_total, extra))]
    extra = cap.positive(extra)
    peak = cap.add(old_total, extra) if extra and rollout not in ("create", "resume") else dict(extra)
    known = known_headroom(headroom, live)
    serve_info = None
    if b_def is not None or a_def is not None:
        shape = new or (cap.cluster_shape(rcc_of(a_def), init_injection=init) if a_def else None)
        serve_info = _serve_gpus(pair, shape, serves)
    units = {**(old.units if old else {}), **(new.units if new else {})}
    return Capacity(
        basis=basis,
        extra=cap.render_amounts(extra, accel, units=units),
        peak=cap.render_amounts(peak, accel, units=units) if extra else {},
        headroom=cap.render_amounts(known, accel, keep_zero=True, units=units) if known is not None else None,
        phases=tuple((label, cap.render_amounts(a, accel, units=units)) for label, a in phases),
        serve=serve_info,
    )


def _serve_gpus(pair: Pair, new: cap.ClusterShape | None,
                serves: tuple[serve.ServeConfig, serve.ServeConfig]) -> dict[str, Any] | None:
    before, after = serve.gpu_demand(serves[0]), serve.gpu_demand(serves[1])
    if before.gpus == after.gpus == 0:
        return None
    out: dict[str, Any] = {"before": _num(before.gpus), "after": _num(after.gpus)}
    if new is not None:
        out["ceiling"] = _num(float(logical_gpu_ceiling(pair.after.obj if pair.after else {}, new)))
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
