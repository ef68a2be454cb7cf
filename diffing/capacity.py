"""Pod resources the way the scheduler counts them, and the extra a rollout needs.

Per pod: for each regular container, its requests, and a resource that appears only in
limits counts its limit; an init container (KubeRay injects ``wait-gcs-ready`` into workers)
only matters when it is larger than that sum. The head pod also carries the autoscaler
sidecar when in-tree autoscaling is on. Pods per worker group follow
``GetWorkerGroupDesiredReplicas``: clamp(replicas, min, max) x numOfHosts, 0 when suspended.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from .quantity import Quantity, QuantityError, format_amount
from .values import dig, mapping, seq

MAX_INT32 = 2**31 - 1
_GPU = re.compile(r"(gpu$)|(^nvidia\.com/mig-\d+g\.\d+gb$)")
# common/pod.go: the autoscaler sidecar's default requests = limits.
AUTOSCALER_SIDECAR = {"cpu": Fraction(1, 2), "memory": Fraction(512 * 2**20)}
# common/pod.go: the injected wait-gcs-ready init container of worker pods.
WAIT_GCS_INIT = {"cpu": Fraction(1, 5), "memory": Fraction(256 * 2**20)}

Amounts = dict[str, Fraction]


def is_gpu(name: str) -> bool:
    """``utils.IsGPUResourceKey``: names ending in ``gpu``, and NVIDIA MIG profiles."""
    return bool(_GPU.search(name))


def is_accelerator(name: str, extra: Iterable[str] = ()) -> bool:
    return (is_gpu(name) or name == "google.com/tpu" or name.startswith("aws.amazon.com/neuron")
            or name in extra)


def _amounts(resources: Any) -> Amounts:
    out: Amounts = {}
    if not isinstance(resources, Mapping):
        return out
    for name, raw in resources.items():
        try:
            out[str(name)] = Quantity.parse(raw).value
        except QuantityError:
            continue
    return out


def container_resources(container: Any) -> Amounts:
    res = dig(container, "resources")
    requests, limits = _amounts(res.get("requests")), _amounts(res.get("limits"))
    out = dict(limits)
    out.update(requests)
    return out


def add(a: Amounts, b: Mapping[str, Fraction], times: int | Fraction = 1) -> Amounts:
    out = dict(a)
    for k, v in b.items():
        out[k] = out.get(k, Fraction(0)) + v * times
    return out


def pod_resources(pod_spec: Any, *, sidecar: Amounts | None = None,
                  injected_init: Amounts | None = None) -> Amounts:
    spec = mapping(pod_spec)
    total: Amounts = {}
    for c in seq(spec.get("containers")):
        total = add(total, container_resources(c))
    if sidecar:
        total = add(total, sidecar)
    inits = [container_resources(c) for c in seq(spec.get("initContainers"))]
    if injected_init:
        inits.append(injected_init)
    for init in inits:
        for k, v in init.items():
            if v > total.get(k, Fraction(0)):
                total[k] = v
    return total


def _int(value: Any, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


@dataclass(frozen=True, slots=True)
class GroupSize:
    name: str
    replicas: int  # after clamping
    hosts: int
    min_replicas: int
    max_replicas: int
    per_pod: Mapping[str, Fraction]
    suspended: bool = False

    @property
    def pods(self) -> int:
        return 0 if self.suspended else self.replicas * self.hosts

    def resources(self, replicas: int | None = None) -> Amounts:
        n = self.replicas if replicas is None else replicas
        return add({}, self.per_pod, 0 if self.suspended else n * self.hosts)


def clamp(replicas: int | None, lo: int, hi: int) -> int:
    if replicas is None or replicas < lo:
        return lo
    return min(replicas, hi)


@dataclass(frozen=True, slots=True)
class ClusterShape:
    head: Mapping[str, Fraction]
    groups: tuple[GroupSize, ...]

    def total(self, replicas: Mapping[str, int] | None = None) -> Amounts:
        out = dict(self.head)
        for g in self.groups:
            n = None if replicas is None or g.name not in replicas else replicas[g.name]
            out = add(out, g.resources(n))
        return out

    def group(self, name: str) -> GroupSize | None:
        return next((g for g in self.groups if g.name == name), None)


def cluster_shape(rcc: Any, *, init_injection: bool = True) -> ClusterShape:
    """Head and worker-group sizes of a (defaulted) ``rayClusterConfig``."""
    rcc = mapping(rcc)
    head_spec = dig(rcc, "headGroupSpec", "template", "spec")
    sidecar = None
    if rcc.get("enableInTreeAutoscaling") is True:
        custom = dig(rcc, "autoscalerOptions").get("resources")
        sidecar = container_resources({"resources": custom}) if custom else dict(AUTOSCALER_SIDECAR)
    head = pod_resources(head_spec, sidecar=sidecar)
    groups = []
    for i, g in enumerate(seq(rcc.get("workerGroupSpecs"))):
        if not isinstance(g, Mapping):
            continue
        lo = _int(g.get("minReplicas"), 0)
        hi = _int(g.get("maxReplicas"), MAX_INT32)
        hosts = max(_int(g.get("numOfHosts"), 1), 1)
        reps = g.get("replicas")
        spec = dig(g, "template", "spec")
        groups.append(GroupSize(
            name=str(g.get("groupName", f"#{i}")),
            replicas=clamp(reps if isinstance(reps, int) and not isinstance(reps, bool) else None, lo, hi),
            hosts=hosts, min_replicas=lo, max_replicas=hi,
            per_pod=pod_resources(spec, injected_init=WAIT_GCS_INIT if init_injection else None),
            suspended=g.get("suspend") is True,
        ))
    return ClusterShape(head, tuple(groups))


def surge_replicas(group: GroupSize, full: int, surge_percent: int) -> int:
    """Replicas the new cluster of an incremental upgrade grows to in its first capacity step.

    It starts at minReplicas and its target capacity rises by maxSurgePercent, so it needs
    ceil(M/100 x W) replicas for W at 100 % (semantics §4.4), never fewer than min nor more
    than max. With M = 100 this is the whole group, as for a new cluster.
    """
    need = math.ceil(Fraction(surge_percent, 100) * full)
    return min(max(group.min_replicas, need), group.max_replicas)


def render_amounts(amounts: Mapping[str, Fraction], accelerators: Iterable[str] = (), *,
                   keep_zero: bool = False) -> dict[str, Any]:
    """Accelerators as integers first, then cpu, memory and the rest as quantity strings.

    Zero amounts are dropped unless ``keep_zero`` (a measured headroom of 0 is information).
    """
    extra = tuple(accelerators)
    out: dict[str, Any] = {}
    keys = sorted(amounts, key=lambda k: (not is_accelerator(k, extra), k not in ("cpu", "memory"), k))
    for k in keys:
        v = amounts[k]
        if v < 0 or (v == 0 and not keep_zero):
            continue
        if is_accelerator(k, extra):
            out[k] = math.ceil(v)
        else:
            out[k] = format_amount(v, binary=k in ("memory", "ephemeral-storage") or
                                   k.startswith("hugepages-"))
    return out


def positive(amounts: Mapping[str, Fraction]) -> Amounts:
    return {k: v for k, v in amounts.items() if v > 0}



def human(name: str, value: Any) -> str:
    """``11500m`` CPU as ``11.5``, ``45568Mi`` memory as ``44.5Gi``: the JSON keeps exact quantities."""
    if isinstance(value, int) or name not in ("cpu", "memory"):
        return str(value)
    try:
        amount = Quantity.parse(value).value
    except QuantityError:
        return str(value)
    if name == "cpu":
        return f"{float(amount):.3f}".rstrip("0").rstrip(".")
    for unit, size in (("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20)):
        if amount >= size:
            return f"{float(amount) / size:.1f}".rstrip("0").rstrip(".") + unit
    return str(value)
