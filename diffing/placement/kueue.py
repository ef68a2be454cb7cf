"""Kueue admission of the rollout's new cluster: quota, not nodes (issue 21, kueue #11264).

An object labelled ``kueue.x-k8s.io/queue-name`` is a Kueue workload: its pods are created only
once the ClusterQueue behind that LocalQueue (in the object's namespace) reserves quota for all of
them. Kueue v1beta1 shapes: a ClusterQueue's ``spec.resourceGroups[].flavors[].resources[]`` give
``nominalQuota``, ``borrowingLimit`` and ``lendingLimit`` per flavor and resource, ``spec.cohort``
the ClusterQueues it borrows from; ``status.flavorsReservation`` (else ``status.flavorsUsage``)
what is reserved now, which counts the old cluster: it holds its quota while the new one waits.

Flavors are tried in order (Kueue's flavor assignment, pkg/scheduler/flavorassigner): the first
flavor of the resource group where every requested resource fits within nominal quota plus what
it may borrow wins. What it may borrow: the cohort's unused lendable quota (per other
ClusterQueue: its ``lendingLimit``, else its nominal quota, minus what it uses beyond the part it
keeps), capped by ``borrowingLimit``. Not modelled: preemption within the ClusterQueue or cohort,
fair sharing, hierarchical cohorts, ResourceFlavor node labels and taints, admission checks.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from fractions import Fraction

from diffing.hints import Any
from diffing.kube.quantity import Quantity, QuantityError, format_amount
from diffing.kube.resources import human, is_bytes
from diffing.kube.values import dig, mapping, seq

QUEUE_LABEL = "kueue.x-k8s.io/queue-name"

Table = dict[tuple[str, str], Fraction]  # (flavor, resource) -> amount


def _q(raw: Any) -> Fraction | None:
    try:
        return Quantity.parse(raw).value
    except QuantityError:
        return None


def _show(name: str, value: Fraction) -> str:
    if value.denominator == 1 and not is_bytes(name) and name != "cpu":
        return str(value.numerator)
    return human(name, format_amount(value, is_bytes(name)))


def queue_name(obj: Mapping[str, Any]) -> str | None:
    name = mapping(dig(obj, "metadata").get("labels")).get(QUEUE_LABEL)
    return str(name) if name else None


def _quota(cq: Mapping[str, Any]) -> tuple[list[tuple[list[str], list[str]]], Table, Table, Table]:
    """(resource groups as (covered resources, flavors)), nominal, borrowing and lending limits."""
    groups: list[tuple[list[str], list[str]]] = []
    nominal: Table = {}
    borrow: Table = {}
    lend: Table = {}
    for g in seq(dig(cq, "spec").get("resourceGroups")):
        g = mapping(g)
        flavors = []
        for f in seq(g.get("flavors")):
            f = mapping(f)
            name = str(f.get("name"))
            flavors.append(name)
            for r in seq(f.get("resources")):
                r = mapping(r)
                key = (name, str(r.get("name")))
                for table, field in ((nominal, "nominalQuota"), (borrow, "borrowingLimit"),
                                     (lend, "lendingLimit")):
                    v = _q(r.get(field)) if field in r else None
                    if v is not None:
                        table[key] = v
        groups.append(([str(x) for x in seq(g.get("coveredResources"))], flavors))
    return groups, nominal, borrow, lend


def _usage(cq: Mapping[str, Any]) -> Table:
    status = dig(cq, "status")
    rows = seq(status.get("flavorsReservation")) or seq(status.get("flavorsUsage"))
    out: Table = {}
    for f in rows:
        f = mapping(f)
        for r in seq(f.get("resources")):
            v = _q(mapping(r).get("total"))
            if v is not None:
                out[(str(f.get("name")), str(mapping(r).get("name")))] = v
    return out


def _lendable_free(cq: Mapping[str, Any], key: tuple[str, str]) -> Fraction:
    _, nominal, _, lend = _quota(cq)
    n = nominal.get(key, Fraction(0))
    lendable = min(lend.get(key, n), n)
    used = _usage(cq).get(key, Fraction(0))
    return max(Fraction(0), lendable - max(Fraction(0), used - (n - lendable)))


def admission(obj: Mapping[str, Any], demand: Mapping[str, Fraction],
              local_queues: Iterable[Mapping[str, Any]], cluster_queues: Iterable[Mapping[str, Any]], *,
              held: Mapping[str, Fraction] | None = None) -> dict[str, Any] | None:
    """Admitted, or waits for quota, with the numbers; ``None`` when ``obj`` names no queue.

    ``demand`` is what the new cluster requests in all (every pod set); ``held`` what the old
    cluster holds that the ClusterQueue's status does not count yet (normally nothing: an admitted
    old cluster is in its reservation).
    """
    queue = queue_name(obj)
    if queue is None:
        return None
    ns = str(dig(obj, "metadata").get("namespace") or "default")
    lq = next((q for q in local_queues if dig(q, "metadata").get("name") == queue
               and str(dig(q, "metadata").get("namespace") or "default") == ns), None)
    out: dict[str, Any] = {"queue": f"{ns}/{queue}"}
    if lq is None:
        return {**out, "admitted": False, "message": f"LocalQueue {ns}/{queue} does not exist: the workload "
                "is never admitted (its pods are never created)"}
    cq_name = str(dig(lq, "spec").get("clusterQueue") or "")
    queues = {str(dig(c, "metadata").get("name")): c for c in cluster_queues}
    out["clusterQueue"] = cq_name
    cq = queues.get(cq_name)
    if cq is None:
        return {**out, "admitted": False, "message": f"ClusterQueue {cq_name} does not exist: the workload "
                "is never admitted"}
    groups, nominal, borrow, _ = _quota(cq)
    usage = _usage(cq)
    cohort = dig(cq, "spec").get("cohort")
    peers = [c for n, c in queues.items()
             if n != cq_name and cohort and dig(c, "spec").get("cohort") == cohort]
    rows: list[dict[str, Any]] = []
    admitted = True
    wanted = {k: v for k, v in demand.items() if v > 0}
    for name in sorted(wanted):
        group = next(((res, flv) for res, flv in groups if name in res), None)
        if group is None:
            admitted = False
            rows.append({"resource": name, "needs": _show(name, wanted[name]), "fits": False,
                         "why": "no resource group of the ClusterQueue covers it"})
    for covered, flavors in groups:
        needed = [r for r in sorted(wanted) if r in covered]
        if not needed:
            continue
        chosen, tried = None, []
        for flavor in flavors:
            lines, ok = [], True
            for r in needed:
                key = (flavor, r)
                used = usage.get(key, Fraction(0)) + (held or {}).get(r, Fraction(0))
                n = nominal.get(key, Fraction(0))
                can_borrow = sum((_lendable_free(p, key) for p in peers), Fraction(0))
                if key in borrow:
                    can_borrow = min(can_borrow, borrow[key])
                free = max(Fraction(0), n + can_borrow - used)
                fits = wanted[r] <= free
                ok = ok and fits
                lines.append({"resource": r, "flavor": flavor, "needs": _show(r, wanted[r]),
                              "used": _show(r, used), "nominal": _show(r, n),
                              "borrowable": _show(r, can_borrow), "free": _show(r, free), "fits": fits})
            tried.append(lines)
            if ok:
                chosen = lines
                break
        if chosen is None:
            admitted = False
            rows.extend(tried[0] if tried else [])
        else:
            rows.extend(chosen)
    out.update({"admitted": admitted, "resources": rows})
    if cohort:
        out["cohort"] = str(cohort)
    if not admitted:
        short = [r for r in rows if not r.get("fits")]
        out["message"] = "waits for quota in ClusterQueue " + cq_name + ": " + "; ".join(
            f"{r['resource']} needs {r['needs']}" + (
                f" in flavor {r['flavor']}, {r['free']} free ({r['used']} used of {r['nominal']} nominal, "
                f"{r['borrowable']} borrowable)" if "flavor" in r else f": {r['why']}") for r in short)
    return out
