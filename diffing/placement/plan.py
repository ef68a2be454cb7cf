"""Place a rollout's pods on the live nodes, first-fit-decreasing, through the scheduler's filters.

The pods already Pending go first (they queue ahead of the rollout's), then the rollout's kinds
of pod, largest first (:meth:`Ask.size`). A pod goes on the first node, in the nodes' order, that
every filter passes (:mod:`diffing.placement.filters`); the amounts it requests leave that node's
free allocatable. A multi-host replica (``numOfHosts`` > 1) places its hosts together on the nodes
of one slice (the nodes sharing a pool label, :data:`GANG_LABELS`) or not at all: a slice is one
node pool on GKE, and a replica split across slices never forms. A pod that finds no node gets
the scheduler's ``FitError`` message for the state it found (kubernetes
pkg/scheduler/framework/types.go, ``FitError.Error``: ``0/N nodes are available:`` and the
``<count> <reason>`` histogram sorted as strings).

Speed: the filters that do not depend on what is placed (cordon, taints, affinity) run once per
kind of pod and *node signature* (the labels the pods select on, the taints, the cordon), not per
node; and a node too full for a kind of pod stays too full (free amounts only shrink), so each
kind scans the nodes once, whatever its count (bench/bench_place.py).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from diffing.hints import Any
from diffing.kube.values import dig, mapping
from diffing.placement import filters as f
from diffing.placement.asks import Ask, pod_requests
from diffing.placement.nodes import POOL_LABELS, Node, is_terminal, read_nodes

# The label whose value names a multi-host replica's slice: the node pool first.
GANG_LABELS = POOL_LABELS + ("cloud.google.com/gke-tpu-topology",)
MAX_ADDED = 10_000  # nodes of one shape the "nodes to add" simulation opens at most


class GroupPlan:
    __slots__ = ("group", "pods", "placed", "pools", "message")

    def __init__(self, group: str, pods: int) -> None:
        self.group, self.pods, self.placed = group, pods, 0
        self.pools: dict[str, int] = {}
        self.message: str | None = None

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"group": self.group, "pods": self.pods, "placed": self.placed,
                               "pools": dict(sorted(self.pools.items()))}
        if self.placed < self.pods:
            out["unplaced"] = self.pods - self.placed
            out["message"] = self.message
        return out


class Plan:
    __slots__ = ("nodes", "queued", "groups", "additions", "by_pool")

    def __init__(self, nodes: int, queued: int, groups: list[GroupPlan],
                 additions: list[dict[str, Any]], by_pool: dict[str, Any] | None = None) -> None:
        self.nodes, self.queued, self.groups, self.additions = nodes, queued, groups, additions
        self.by_pool = by_pool

    @property
    def fits(self) -> bool:
        return all(g.placed == g.pods for g in self.groups)

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"fits": self.fits, "nodes": self.nodes,
                               "pods": sum(g.pods for g in self.groups), "queuedAhead": self.queued,
                               "groups": [g.as_dict() for g in self.groups]}
        if not self.fits:
            out["addNodes"] = self.additions
        if self.by_pool is not None:
            out["byPool"] = self.by_pool
        return out


class _State:
    """The nodes, the static-filter cache and the pods placed so far (for topology spread)."""

    def __init__(self, nodes: Sequence[Node], asks: Iterable[Ask],
                 bound: Sequence[tuple[str, Mapping[str, str], str]]) -> None:
        self.nodes = nodes
        asks = list(asks)
        keys: set[str] = set()
        by_name = False
        for a in asks:
            keys.update(a.selector)
            for t in a.terms:
                exprs = t.get("matchExpressions") or []
                keys.update(str(e.get("key")) for e in exprs if isinstance(e, Mapping))
                by_name = by_name or bool(t.get("matchFields"))
        ordered = sorted(keys)
        sigs: dict[tuple[Any, ...], int] = {}
        self.sample: list[Node] = []
        for n in nodes:
            key = (tuple(n.labels.get(k) for k in ordered), tuple(n.taints), n.unschedulable,
                   n.name if by_name else None)
            sig = sigs.get(key)
            if sig is None:
                sig = sigs[key] = len(sigs)
                self.sample.append(n)
            n.sig = sig
        self.reasons: dict[int, list[str | None]] = {}
        self.pods: list[tuple[str, Mapping[str, str], Node | None]] = []  # bound and placed, for spread
        index = {n.name: n for n in nodes}
        self.pods.extend((ns, labels, index.get(node)) for ns, labels, node in bound)

    def static(self, ask: Ask) -> list[str | None]:
        got = self.reasons.get(id(ask))
        if got is None:
            got = self.reasons[id(ask)] = [f.static_reason(ask, n) for n in self.sample]
        return got

    def eligible(self, ask: Ask) -> list[Node]:
        by_sig = self.static(ask)
        return [n for n in self.nodes if by_sig[n.sig] is None]

    def take(self, ask: Ask, node: Node) -> None:
        free = node.free
        for k, v in ask.requests.items():
            free[k] = free.get(k, 0) - v
        node.pods_free -= 1
        if self._spreading:
            self.pods.append((ask.namespace, ask.labels, node))

    def give_back(self, ask: Ask, node: Node) -> None:
        free = node.free
        for k, v in ask.requests.items():
            free[k] += v
        node.pods_free += 1
        if self._spreading:
            for i in range(len(self.pods) - 1, -1, -1):
                if self.pods[i][2] is node and self.pods[i][1] is ask.labels:
                    del self.pods[i]
                    break

    _spreading = False

    # -- PodTopologySpread (filtering.go): skew = matching pods in the node's domain (+1 when the
    # pod matches its own selector) - the fewest in any domain of the nodes the pod's node
    # affinity admits (nodeAffinityPolicy Honor, nodeTaintsPolicy Ignore: the defaults).

    def spread_reason(self, ask: Ask, node: Node) -> str | None:
        by_sig = self.static(ask)
        for c in ask.spreads:
            key = str(c["topologyKey"])
            if key not in node.labels:
                return f.SPREAD_LABEL_REASON
            raw = c.get("maxSkew")
            skew = raw if isinstance(raw, int) else 1
            counts: dict[str, int] = {}
            for n in self.nodes:
                r = by_sig[n.sig]
                if (r is None or r != f.AFFINITY_REASON) and key in n.labels:
                    counts.setdefault(n.labels[key], 0)
            for ns, labels, where in self.pods:
                if where is not None and ns == ask.namespace and key in where.labels \
                        and where.labels[key] in counts and f.selects(c.get("labelSelector"), labels):
                    counts[where.labels[key]] += 1
            low = min(counts.values()) if counts else 0
            own = 1 if f.selects(c.get("labelSelector"), ask.labels) else 0
            if counts.get(node.labels[key], 0) + own - low > skew:
                return f.SPREAD_REASON
        return None

    def message(self, ask: Ask, gang_note: str = "") -> str:
        by_sig = self.static(ask)
        hist: dict[str, int] = {}
        for n in self.nodes:
            r = by_sig[n.sig]
            reasons = [r] if r is not None else f.resource_reasons(ask.requests, n)
            if not reasons and ask.spreads:
                s = self.spread_reason(ask, n)
                reasons = [s] if s else []
            for reason in reasons:
                hist[reason] = hist.get(reason, 0) + 1
        text = f"0/{len(self.nodes)} nodes are available"
        parts = sorted(f"{v} {k}" for k, v in hist.items())
        if parts:
            text += ": " + ", ".join(parts) + "."
        else:
            text += "."
        return text + gang_note


def _gang_key(ask: Ask, eligible: Sequence[Node]) -> str | None:
    for key in (*GANG_LABELS, *sorted(ask.selector)):
        if eligible and all(key in n.labels for n in eligible):
            return key
    return None


def _pool(node: Node) -> str:
    return node.shape_name()


def _place_simple(state: _State, ask: Ask, plan: GroupPlan | None) -> int:
    """First fit for ``ask.count`` single pods; returns how many found a node."""
    nodes = state.eligible(ask)
    i, placed, reqs = 0, 0, ask.requests
    for _ in range(ask.count):
        while i < len(nodes) and not f.fits(reqs, nodes[i]):
            i += 1
        if i == len(nodes):
            break
        state.take(ask, nodes[i])
        placed += 1
        if plan is not None:
            name = _pool(nodes[i])
            plan.pools[name] = plan.pools.get(name, 0) + 1
    return placed


def _place_spread(state: _State, ask: Ask, plan: GroupPlan | None) -> int:
    nodes = state.eligible(ask)
    placed = 0
    for _ in range(ask.count):
        node = next((n for n in nodes if f.fits(ask.requests, n)
                     and state.spread_reason(ask, n) is None), None)
        if node is None:
            break
        state.take(ask, node)
        placed += 1
        if plan is not None:
            name = _pool(node)
            plan.pools[name] = plan.pools.get(name, 0) + 1
    return placed


def _place_gang(state: _State, ask: Ask, plan: GroupPlan | None) -> tuple[int, str]:
    """Each replica's hosts on the nodes of one slice, or none of them. Returns pods placed and,
    when a replica found no slice although single hosts would fit, the note for the message."""
    nodes = state.eligible(ask)
    key = _gang_key(ask, nodes)
    domains: dict[str, list[Node]] = {}
    for n in nodes:
        domains.setdefault(n.labels.get(key, "") if key else "", []).append(n)
    placed = 0
    for _ in range(ask.count):
        done = False
        for members in domains.values():
            taken: list[Node] = []
            for _host in range(ask.hosts):
                node = next((n for n in members if f.fits(ask.requests, n)
                             and (not ask.spreads or state.spread_reason(ask, n) is None)), None)
                if node is None:
                    break
                state.take(ask, node)
                taken.append(node)
            if len(taken) == ask.hosts:
                done = True
                placed += ask.hosts
                if plan is not None:
                    for node in taken:
                        name = _pool(node)
                        plan.pools[name] = plan.pools.get(name, 0) + 1
                break
            for node in reversed(taken):
                state.give_back(ask, node)
        if not done:
            where = f"one {key}" if key else "the same nodes"
            return placed, (f" (rayservice-impact: the {ask.hosts} hosts of a replica must land together on "
                            f"{where}; no {key or 'set of nodes'} has room for all of them)")
    return placed, ""


def _place(state: _State, ask: Ask, plan: GroupPlan | None) -> tuple[int, str]:
    if ask.hosts > 1:
        return _place_gang(state, ask, plan)
    if ask.spreads:
        return _place_spread(state, ask, plan), ""
    return _place_simple(state, ask, plan), ""


def bound_pods(pods: Iterable[Mapping[str, Any]]) -> list[tuple[str, Mapping[str, str], str]]:
    """(namespace, labels, node name) of every bound, non-terminal pod: what topology spread counts."""
    out = []
    for p in pods:
        node = dig(p, "spec").get("nodeName")
        if node and not is_terminal(p):
            meta = dig(p, "metadata")
            out.append((str(meta.get("namespace") or ""), mapping(meta.get("labels")), str(node)))
    return out


def pending_asks(pods: Iterable[Mapping[str, Any]]) -> list[Ask]:
    """The pods already waiting (Pending, bound to no node), alike ones merged into one ask."""
    merged: dict[str, Ask] = {}
    for p in pods:
        spec = dig(p, "spec")
        if spec.get("nodeName") or dig(p, "status").get("phase") != "Pending":
            continue
        meta = dig(p, "metadata")
        ask = Ask("pending", pod_requests(spec), namespace=str(meta.get("namespace") or ""), spec=spec,
                  labels={str(k): str(v) for k, v in mapping(meta.get("labels")).items()}, pending=True)
        key = repr((ask.requests, ask.selector, ask.terms, ask.tolerations, ask.spreads,
                    ask.namespace if ask.spreads else "", ask.labels if ask.spreads else {}))
        if key in merged:
            merged[key].count += 1
        else:
            merged[key] = ask
    return list(merged.values())


def plan_for(asks: Sequence[Ask], nodes: Iterable[Mapping[str, Any]],
             pods: Iterable[Mapping[str, Any]]) -> Plan:
    """The plan for ``asks`` on the listed Node and Pod objects (one list of each)."""
    pods = list(pods)
    return place(asks, read_nodes(nodes, pods), pending=pending_asks(pods), bound=bound_pods(pods))


def place(asks: Sequence[Ask], nodes: Sequence[Node], *, pending: Sequence[Ask] = (),
          bound: Sequence[tuple[str, Mapping[str, str], str]] = ()) -> Plan:
    """The plan for ``asks`` (the rollout's pods) on ``nodes`` (free amounts already net of the bound
    pods; they are consumed), after ``pending`` (the pods already waiting)."""
    state = _State(nodes, [*pending, *asks], bound)
    state._spreading = any(a.spreads for a in [*pending, *asks])
    for ask in pending:
        _place(state, ask, None)
    resource = charted(asks)
    held = {id(n): n.allocatable.get(resource, 0) - n.free.get(resource, 0) for n in nodes}
    groups: dict[str, GroupPlan] = {}
    for ask in asks:
        groups.setdefault(ask.group, GroupPlan(ask.group, 0)).pods += ask.pods
    unplaced: list[tuple[Ask, int]] = []
    for ask in sorted(asks, key=Ask.size, reverse=True):
        plan = groups[ask.group]
        placed, note = _place(state, ask, plan)
        plan.placed += placed
        if placed < ask.pods:
            unplaced.append((ask, ask.pods - placed))
            if plan.message is None:
                plan.message = state.message(ask, note)
    return Plan(len(nodes), sum(a.pods for a in pending), list(groups.values()), additions(unplaced, nodes),
                _by_pool(state, asks, resource, held, unplaced))


MAX_POOLS = 8  # pools in the picture at most (those taking the rollout's pods first)


def charted(asks: Sequence[Ask]) -> str:
    """The resource the picture counts: the extended resource (an accelerator) the rollout asks
    most of, else cpu."""
    totals: dict[str, int] = {}
    for a in asks:
        for k, v in a.requests.items():
            if "/" in k and v > 0:
                totals[k] = totals.get(k, 0) + v * a.pods
    return max(sorted(totals), key=lambda k: totals[k]) if totals else "cpu"


def _amount(resource: str, value: int) -> int | float:
    """Thousandths back to the resource's unit (cores, bytes, devices), whole when it is."""
    value = max(value, 0)
    whole, rest = divmod(value, 1000)
    return whole if rest == 0 else round(value / 1000, 3)


def _by_pool(state: _State, asks: Sequence[Ask], resource: str, held: Mapping[int, int],
             unplaced: Sequence[tuple[Ask, int]]) -> dict[str, Any]:
    """The plan per node pool for one resource (:func:`charted`): what the pool has, what its
    running and queued-ahead pods hold, what the rollout's pods take, what is left; and what the
    pods that found no node would ask. Pools whose nodes pass the filters that do not depend on
    room (cordon, taints, affinity) for one of the rollout's pods, or that take one, and have some
    of the resource."""
    rows: dict[str, list[int]] = {}
    for n in state.nodes:
        alloc = n.allocatable.get(resource, 0)
        if alloc <= 0:
            continue
        row = rows.setdefault(_pool(n), [0, 0, 0, 0, 0, 0])  # nodes, alloc, used, placed, free, eligible
        now = alloc - n.free.get(resource, 0)
        row[0] += 1
        row[1] += alloc
        row[2] += held[id(n)]
        row[3] += now - held[id(n)]
        row[4] += max(n.free.get(resource, 0), 0)
        if not row[5] and any(state.static(a)[n.sig] is None for a in asks):
            row[5] = 1
    shown = sorted(((name, r) for name, r in rows.items() if r[3] > 0 or r[5]),
                   key=lambda item: (-item[1][3], item[0]))
    pools = [{"pool": name, "nodes": r[0], "allocatable": _amount(resource, r[1]),
              "used": _amount(resource, r[2]), "placed": _amount(resource, r[3]),
              "free": _amount(resource, r[4])}
             for name, r in shown[:MAX_POOLS]]
    short = sum(a.requests.get(resource, 0) * n for a, n in unplaced)
    out: dict[str, Any] = {"resource": resource, "pools": pools, "notPlaced": _amount(resource, short)}
    if len(shown) > MAX_POOLS:
        out["morePools"] = len(shown) - MAX_POOLS
    return out


def additions(unplaced: Sequence[tuple[Ask, int]], nodes: Sequence[Node]) -> list[dict[str, Any]]:
    """Per existing node shape (pool, machine type, allocatable, taints): how many more empty nodes
    of it would take the pods left over, on the new nodes alone (each filled before the next is
    opened); a multi-host replica gets nodes of its own (a new slice). Shapes that take every pod
    come first, fewest nodes first."""
    if not unplaced:
        return []
    total = sum(n for _, n in unplaced)
    shapes: dict[tuple[Any, ...], Node] = {}
    for n in nodes:
        shapes.setdefault(n.shape(), n)
    out: list[dict[str, Any]] = []
    for template in shapes.values():
        blank = template.copy_empty("new-0")
        opened: list[Node] = []
        taken = 0
        for ask, count in unplaced:
            if f.static_reason(ask, blank) is not None or not f.fits(ask.requests, blank):
                continue
            if ask.hosts > 1:
                for _ in range(count // ask.hosts):
                    own: list[Node] = []
                    for _host in range(ask.hosts):
                        node = next((n for n in own if f.fits(ask.requests, n)), None)
                        if node is None:
                            node = template.copy_empty(f"new-{len(opened) + len(own)}")
                            own.append(node)
                        _consume(ask, node)
                    opened.extend(own)
                    taken += ask.hosts
            else:
                for _ in range(count):
                    node = next((n for n in reversed(opened) if f.fits(ask.requests, n)), None)
                    if node is None:
                        if len(opened) >= MAX_ADDED:
                            break
                        node = template.copy_empty(f"new-{len(opened)}")
                        opened.append(node)
                    _consume(ask, node)
                    taken += 1
        if taken:
            out.append({"shape": template.shape_name(), "nodes": len(opened), "pods": taken,
                        "placesAll": taken == total})
    out.sort(key=lambda a: (not a["placesAll"], -int(a["pods"]), int(a["nodes"]), str(a["shape"])))
    return out[:5]


def _consume(ask: Ask, node: Node) -> None:
    for k, v in ask.requests.items():
        node.free[k] = node.free.get(k, 0) - v
    node.pods_free -= 1
