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
from collections.abc import Iterable, Mapping, Sequence
from fractions import Fraction
from functools import lru_cache

from diffing.hints import Any
from diffing.kube.pods import is_extended
from diffing.kube.quantity import BINARY_SI, DECIMAL_SI, Quantity, QuantityError, format_amount
from diffing.kube.values import dig, mapping, seq
from diffing.record import Record, set_field

MAX_INT32 = 2**31 - 1
_GPU = re.compile(r"(gpu$)|(^nvidia\.com/mig-\d+g\.\d+gb$)")
# common/pod.go: the autoscaler sidecar's default requests = limits.
AUTOSCALER_SIDECAR = {"cpu": Fraction(1, 2), "memory": Fraction(512 * 2**20)}
# common/pod.go: the injected wait-gcs-ready init container of worker pods.
WAIT_GCS_INIT = {"cpu": Fraction(1, 5), "memory": Fraction(256 * 2**20)}

Amounts = dict[str, Fraction]


@lru_cache(maxsize=1024)
def is_gpu(name: str) -> bool:
    """``utils.IsGPUResourceKey``: names ending in ``gpu``, and NVIDIA MIG profiles."""
    return bool(_GPU.search(name))


# The accelerator families the report names, first match wins. Matching a family only adds a
# name for people: every extended resource counts (is_accelerator), named or not.
_FAMILIES = (
    (re.compile(r"^nvidia\.com/mig-"), "NVIDIA MIG slice"),
    (re.compile(r"^nvidia\.com/gpu\.shared$"), "NVIDIA GPU shared by time-slicing or MPS"),
    (re.compile(r"^nvidia\.com/"), "NVIDIA GPU"),
    (re.compile(r"^amd\.com/gpu"), "AMD GPU"),
    (re.compile(r"^gpu\.intel\.com/"), "Intel GPU"),
    (re.compile(r"^habana\.ai/"), "Habana Gaudi accelerator"),
    (re.compile(r"^google\.com/tpu$"), "Google TPU"),
    (re.compile(r"^aws\.amazon\.com/neuron"), "AWS Neuron device"),
    (re.compile(r"^(xilinx\.com|amd\.com/xilinx)"), "FPGA"),
    (re.compile(r"^qualcomm\.com/qaic"), "Qualcomm Cloud AI accelerator"),
)
# What this tool counted before every extended resource did: reports that name only these
# read as they always did (no family note).
_PLAIN = re.compile(r"^(google\.com/tpu|aws\.amazon\.com/neuron.*)$")


def family(name: str) -> str:
    """The accelerator family of a resource name for people (``habana.ai/gaudi`` → Habana Gaudi
    accelerator), or ``""`` for one no family matches."""
    return next((label for pattern, label in _FAMILIES if pattern.search(name)), "")


def is_known_accelerator(name: str) -> bool:
    """A name of a known accelerator family (or a GPU by KubeRay's rule): always counted, the
    policy cannot exclude it."""
    return is_gpu(name) or bool(family(name))


def is_accelerator(name: str, extra: Iterable[str] = (), excluded: Iterable[str] = ()) -> bool:
    """A scarce device the rollout must find free: every extended resource, GPUs by KubeRay's
    rule, and the policy's ``accelerators``; minus the policy's ``notAccelerators``.

    An extended resource is a device a plugin advertises in whole units; doubling one is what
    a second RayCluster does, so an unknown name counts like a GPU (fail closed) until the
    policy says it is not scarce.
    """
    if is_gpu(name) or name in extra:
        return True
    return is_extended(name) and name not in excluded


def family_note(name: str) -> str:
    """`` (Intel GPU)`` after a name the report did not always count; ``""`` for a GPU by
    KubeRay's rule, a TPU or a Neuron device, so reports about those read as before."""
    if is_gpu(name) or _PLAIN.match(name) or not is_extended(name):
        return ""
    label = family(name)
    if label:
        return f" ({label})"
    return " (an extended resource, counted as an accelerator; policy notAccelerators excludes it)"


# Per resource name, how many quantities the manifest wrote in the decimal and the binary
# family ([decimal, binary]): sums are shown in the family the manifest used.
Families = dict[str, list[int]]


def _amounts(resources: Any, families: Families | None = None) -> Amounts:
    out: Amounts = {}
    if not isinstance(resources, Mapping):
        return out
    for name, raw in resources.items():
        try:
            q = Quantity.parse(raw)
        except QuantityError:
            continue
        out[str(name)] = q.value
        if families is not None:
            families.setdefault(str(name), [0, 0])[q.format == BINARY_SI] += 1
    return out


def container_resources(container: Any, families: Families | None = None) -> Amounts:
    res = dig(container, "resources")
    requests = _amounts(res.get("requests"), families)
    limits = _amounts(res.get("limits"), families)
    out = dict(limits)
    out.update(requests)
    return out


def units_of(families: Families) -> dict[str, str]:
    """The family each resource is shown in: the one most of its quantities used (binary on a tie)."""
    return {name: BINARY_SI if binary and binary >= decimal else DECIMAL_SI
            for name, (decimal, binary) in families.items()}


def add(a: Amounts, b: Mapping[str, Fraction], times: int | Fraction = 1) -> Amounts:
    out = dict(a)
    get = out.get
    for k, v in b.items():
        if times != 1:
            v = v * times
        current = get(k)
        out[k] = v if current is None else current + v  # no Fraction(0) + v: half the arithmetic
    return out


def pod_resources(pod_spec: Any, *, sidecar: Amounts | None = None,
                  injected_init: Amounts | None = None, families: Families | None = None) -> Amounts:
    spec = mapping(pod_spec)
    total: Amounts = {}
    for c in seq(spec.get("containers")):
        total = add(total, container_resources(c, families))
    if sidecar:
        total = add(total, sidecar)
    inits = [container_resources(c, families) for c in seq(spec.get("initContainers"))]
    if injected_init:
        inits.append(injected_init)
    for init in inits:
        for k, v in init.items():
            current = total.get(k)
            if (v > current) if current is not None else v.numerator > 0:
                total[k] = v
    return total


def _int(value: Any, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


class GroupSize(Record):
    __slots__ = ("name", "replicas", "hosts", "min_replicas", "max_replicas", "per_pod", "suspended")

    name: str
    replicas: int  # after clamping
    hosts: int
    min_replicas: int
    max_replicas: int
    per_pod: Mapping[str, Fraction]
    suspended: bool

    def __init__(self, name: str, replicas: int, hosts: int, min_replicas: int, max_replicas: int,
                 per_pod: Mapping[str, Fraction], suspended: bool = False) -> None:
        set_field(self, "name", name)
        set_field(self, "replicas", replicas)
        set_field(self, "hosts", hosts)
        set_field(self, "min_replicas", min_replicas)
        set_field(self, "max_replicas", max_replicas)
        set_field(self, "per_pod", per_pod)
        set_field(self, "suspended", suspended)

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


class ClusterShape(Record):
    __slots__ = ("head", "groups", "units")

    head: Mapping[str, Fraction]
    groups: tuple[GroupSize, ...]
    units: Mapping[str, str]  # resource -> quantity family written

    def __init__(self, head: Mapping[str, Fraction], groups: tuple[GroupSize, ...],
                 units: Mapping[str, str] | None = None) -> None:
        set_field(self, "head", head)
        set_field(self, "groups", groups)
        set_field(self, "units", {} if units is None else units)

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
    families: Families = {}
    head_spec = dig(rcc, "headGroupSpec", "template", "spec")
    sidecar = None
    if rcc.get("enableInTreeAutoscaling") is True:
        custom = dig(rcc, "autoscalerOptions").get("resources")
        sidecar = container_resources({"resources": custom}, families) if custom else dict(AUTOSCALER_SIDECAR)
    head = pod_resources(head_spec, sidecar=sidecar, families=families)
    groups = []
    for i, g in enumerate(seq(rcc.get("workerGroupSpecs"))):
        if not isinstance(g, Mapping):
            continue
        reps, hosts, lo, hi = group_counts(g)
        spec = dig(g, "template", "spec")
        groups.append(GroupSize(
            name=str(g.get("groupName", f"#{i}")),
            replicas=reps, hosts=hosts, min_replicas=lo, max_replicas=hi,
            per_pod=pod_resources(spec, injected_init=WAIT_GCS_INIT if init_injection else None,
                                  families=families),
            suspended=g.get("suspend") is True,
        ))
    return ClusterShape(head, _one_per_name(groups), units_of(families))


def shared_group_names(rcc: Any) -> list[tuple[int, str]]:
    """``(index, name)`` of every worker group whose name an earlier group already has."""
    seen: set[str] = set()
    out = []
    for i, g in enumerate(seq(mapping(rcc).get("workerGroupSpecs"))):
        name = str(mapping(g).get("groupName"))
        if name in seen:
            out.append((i, name))
        seen.add(name)
    return out


SHARED_NAME = ("worker group {name} is declared more than once: KubeRay lists a group's pods by name, "
               "so the entries share one set of pods and each resizes it to its own count in turn; "
               "KubeRay's validating webhook, where it is enabled, rejects the object")


def _one_per_name(groups: Sequence[GroupSize]) -> tuple[GroupSize, ...]:
    """Worker groups that share a name share their pods: KubeRay lists a group's pods by the
    ``ray.io/group`` label alone (common/association.go:113-121, raycluster_controller.go:1079), so
    each entry in turn moves that one set of pods to its own count, and the most it holds is the
    largest entry's (docs/semantics/raycluster.md §9). One entry per name stays, in the first's place."""
    kept: dict[str, GroupSize] = {}
    for g in groups:
        seen = kept.get(g.name)
        if seen is None or g.pods > seen.pods:
            kept[g.name] = g
    return tuple(kept.values())


def group_counts(group: Mapping[str, Any]) -> tuple[int, int, int, int]:
    """(clamped replicas, hosts, minReplicas, maxReplicas) of a worker group, as
    ``GetWorkerGroupDesiredReplicas`` reads them (utils/util.go:389-407)."""
    lo = _int(group.get("minReplicas"), 0)
    hi = _int(group.get("maxReplicas"), MAX_INT32)
    hosts = max(_int(group.get("numOfHosts"), 1), 1)
    reps = group.get("replicas")
    explicit = reps if isinstance(reps, int) and not isinstance(reps, bool) else None
    return clamp(explicit, lo, hi), hosts, lo, hi


def surge_replicas(group: GroupSize, full: int, surge_percent: int) -> int:
    """Replicas the new cluster of an incremental upgrade grows to in its first capacity step.

    It starts at minReplicas and its target capacity rises by maxSurgePercent, so it needs
    ceil(M/100 x W) replicas for W at 100 % (semantics §4.4), never fewer than min nor more
    than max. With M = 100 this is the whole group, as for a new cluster.
    """
    need = math.ceil(Fraction(surge_percent, 100) * full)
    return min(max(group.min_replicas, need), group.max_replicas)


def render_amounts(amounts: Mapping[str, Fraction], accelerators: Iterable[str] = (), *,
                   keep_zero: bool = False, units: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Accelerators as integers first, then cpu, memory and the rest as quantity strings.

    Quantities are exact canonical strings in the family ``units`` names for the resource
    (the one the manifest used: ``20G`` stays ``20G`` rather than ``19531250Ki``); without
    one, memory-like resources use the binary family. Zero amounts are dropped unless
    ``keep_zero`` (a measured headroom of 0 is information).
    """
    extra = tuple(accelerators)
    out: dict[str, Any] = {}
    accel = {k: is_accelerator(k, extra) for k in amounts}
    keys = sorted(amounts, key=lambda k: (not accel[k], k not in ("cpu", "memory"), k))
    for k in keys:
        v = amounts[k]
        sign = v.numerator  # the sign of a Fraction (or int) without Fraction's comparison machinery
        if sign < 0 or (sign == 0 and not keep_zero):
            continue
        if accel[k]:
            out[k] = math.ceil(v)
        else:
            family = (units or {}).get(k)
            binary = family == BINARY_SI if family else is_bytes(k)
            out[k] = format_amount(v, binary=binary)
    return out


def is_bytes(name: str) -> bool:
    return name in ("memory", "ephemeral-storage") or name.startswith("hugepages-")


def positive(amounts: Mapping[str, Fraction]) -> Amounts:
    return {k: v for k, v in amounts.items() if v.numerator > 0}



_BINARY_UNITS = (("Ei", 2**60), ("Pi", 2**50), ("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10))
_DECIMAL_UNITS = (("E", 10**18), ("P", 10**15), ("T", 10**12), ("G", 10**9), ("M", 10**6), ("k", 10**3))


def human(name: str, value: Any) -> str:
    """A quantity for people, in the family it is written in; the JSON keeps exact quantities.

    ``11500m`` CPU reads ``11.5``; ``45568Mi`` memory ``44.5Gi``; ``20G`` stays ``20G`` and
    ``1536870912`` bytes (``1G`` + ``512Mi``) reads ``1.5G``: one decimal below 100 units,
    whole units above.
    """
    if isinstance(value, int) or not (name == "cpu" or is_bytes(name)):
        return str(value)
    try:
        q = Quantity.parse(value)
    except QuantityError:
        return str(value)
    amount = q.value
    if name == "cpu":
        return f"{float(amount):.3f}".rstrip("0").rstrip(".")
    for unit, size in (_BINARY_UNITS if q.format == BINARY_SI else _DECIMAL_UNITS):
        if abs(amount) >= size:
            x = float(amount) / size
            text = f"{x:.0f}" if abs(x) >= 100 else f"{x:.1f}".rstrip("0").rstrip(".")
            return text + unit
    return str(value)
