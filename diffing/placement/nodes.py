"""The nodes as the scheduler's filters see them: labels, blocking taints, cordon, and the free
allocatable (``status.allocatable`` minus the requests of the pods bound there and not finished,
as the scheduler's NodeInfo counts them: kubernetes pkg/scheduler/framework/types.go, AddPod)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from diffing.hints import Any
from diffing.kube.quantity import Quantity, QuantityError
from diffing.kube.values import dig, mapping, seq
from diffing.placement.asks import Milli, milli, pod_requests

BLOCKING = ("NoSchedule", "NoExecute")  # TaintToleration filters on these (PreferNoSchedule scores only)
# The node lifecycle controller taints a node whose Ready condition is False / Unknown with these
# (kubernetes pkg/controller/nodelifecycle, TaintNodesByCondition); a node the list shows not Ready
# without them yet gets them within seconds, so they stand in for "not Ready".
NOT_READY, UNREACHABLE = "node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"
UNSCHEDULABLE = "node.kubernetes.io/unschedulable"  # what NodeUnschedulable asks a pod to tolerate
TERMINAL = ("Succeeded", "Failed")
# Labels that name a node's pool or machine, most specific first: the node's shape.
POOL_LABELS = ("cloud.google.com/gke-nodepool", "eks.amazonaws.com/nodegroup", "karpenter.sh/nodepool",
               "kubernetes.azure.com/agentpool", "agentpool")
INSTANCE_TYPE = "node.kubernetes.io/instance-type"
HOSTNAME = "kubernetes.io/hostname"


class Node:
    """One node: what the filters read, and the free amounts the placement consumes."""

    __slots__ = ("name", "labels", "taints", "unschedulable", "allocatable", "free", "pods_free", "sig",
                 "index", "pods_total")

    def __init__(self, name: str, labels: Mapping[str, str], taints: list[tuple[str, str, str]],
                 unschedulable: bool, allocatable: Milli, pods: int, index: int = 0) -> None:
        self.name, self.labels, self.taints, self.unschedulable = name, labels, taints, unschedulable
        self.allocatable, self.free = allocatable, dict(allocatable)
        self.pods_free = self.pods_total = pods
        self.sig = 0
        self.index = index

    def copy_empty(self, name: str) -> Node:
        """A new node of the same shape, nothing bound to it (a node the pool would add)."""
        labels = {**self.labels, HOSTNAME: name}
        return Node(name, labels, self.taints, False, self.allocatable, self.pods_total)

    def shape(self) -> tuple[Any, ...]:
        pool = next((f"{k}={self.labels[k]}" for k in POOL_LABELS if k in self.labels), "")
        return (pool, self.labels.get(INSTANCE_TYPE, ""), tuple(sorted(self.allocatable.items())),
                tuple(self.taints))

    def shape_name(self) -> str:
        pool = next((self.labels[k] for k in POOL_LABELS if k in self.labels), None)
        kind = self.labels.get(INSTANCE_TYPE)
        if pool and kind:
            return f"{pool} ({kind})"
        return pool or kind or f"node {self.name}"


def _ready(node: Mapping[str, Any]) -> str:
    for cond in seq(dig(node, "status").get("conditions")):
        if mapping(cond).get("type") == "Ready":
            return str(mapping(cond).get("status"))
    return "Unknown"


def _allocatable(node: Mapping[str, Any]) -> Milli:
    out = {}
    for name, raw in dig(node, "status", "allocatable").items():
        try:
            out[str(name)] = milli(Quantity.parse(raw).value) if name != "pods" else \
                int(Quantity.parse(raw).value) * 1000
        except QuantityError:
            continue
    return out


def read_node(node: Mapping[str, Any], index: int = 0) -> Node:
    meta, spec = dig(node, "metadata"), dig(node, "spec")
    labels = {str(k): str(v) for k, v in mapping(meta.get("labels")).items()}
    taints = [(str(t.get("key") or ""), str(t.get("value") or ""), str(t.get("effect") or ""))
              for t in (mapping(t) for t in seq(spec.get("taints"))) if t.get("effect") in BLOCKING]
    ready = _ready(node)
    keys = {t[0] for t in taints}
    if ready == "False" and NOT_READY not in keys:
        taints.append((NOT_READY, "", "NoSchedule"))
    elif ready != "True" and ready != "False" and UNREACHABLE not in keys:
        taints.append((UNREACHABLE, "", "NoSchedule"))
    alloc = _allocatable(node)
    pods = alloc.pop("pods", 110_000) // 1000
    return Node(str(meta.get("name") or f"#{index}"), labels, taints, spec.get("unschedulable") is True,
                alloc, pods, index)


def is_terminal(pod: Mapping[str, Any]) -> bool:
    return dig(pod, "status").get("phase") in TERMINAL


def read_nodes(nodes: Iterable[Mapping[str, Any]], pods: Iterable[Mapping[str, Any]]) -> list[Node]:
    """The nodes, each with its free allocatable: minus what every bound, non-terminal pod requests."""
    out = [read_node(n, i) for i, n in enumerate(nodes)]
    by_name = {n.name: n for n in out}
    cache: dict[str, Milli] = {}  # pods come in few shapes: compute each shape's requests once
    for pod in pods:
        spec = dig(pod, "spec")
        node = by_name.get(str(spec.get("nodeName") or ""))
        if node is None or is_terminal(pod):
            continue
        key = repr(([mapping(c).get("resources") for c in seq(spec.get("containers"))],
                    [(mapping(c).get("resources"), mapping(c).get("restartPolicy"))
                     for c in seq(spec.get("initContainers"))], spec.get("overhead")))
        reqs = cache.get(key)
        if reqs is None:
            reqs = cache[key] = pod_requests(spec)
        free = node.free
        for k, v in reqs.items():
            free[k] = free.get(k, 0) - v
        node.pods_free -= 1
    return out
