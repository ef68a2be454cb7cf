"""The live basis: what really runs behind each RayService and standalone RayCluster, read
from the Kubernetes API.

For each RayService (key ``"namespace/name"``) :func:`read_live_basis` finds

* the active RayCluster (``status.activeServiceStatus.rayClusterName``, else the oldest
  RayCluster labelled ``ray.io/originated-from-cr-name=<name>`` that is not the pending one)
  and its current, autoscaled worker replicas per group (the autoscaler writes them into the
  RayCluster, never into the RayService);
* a pending RayCluster (``status.pendingServiceStatus.rayClusterName``): an upgrade in flight;
* the latent divergence between that RayCluster's spec and the live ``rayClusterConfig``
  (:func:`diffing.cluster_divergence`);
* the free accelerators where the new pods can land (:func:`accelerator_headroom`).

For each standalone RayCluster (key ``"RayCluster/namespace/name"``, :func:`diffing.live.live_key`)
it reads what docs/semantics/raycluster.md §10 asks for: the running RayCluster's spec as served and
its live (autoscaled) worker replicas; from the cluster's pods (label ``ray.io/cluster``) the
head pod's ``ray.io/upgrade-strategy-recreate-hash`` and ``ray.io/kuberay-version`` annotations
and the worker pods per ``ray.io/group``, groups no longer in the spec included (orphans); and
the headroom as for a RayService. A RayCluster that is not running gets only the headroom. A
RayJob gets only the headroom: each run builds a new RayCluster, so nothing of it runs to compare.

Every one of them also gets the node and pod lists (read once per request, whenever an object of
the change makes pods) for the placement plan (docs/placement.md), and, when labelled
``kueue.x-k8s.io/queue-name``, the LocalQueues of its namespace and the ClusterQueues.

The functions taking nodes and pods are pure; only :func:`read_live_basis` and
:func:`live_basis_for` do I/O, through :class:`app.clients.kubernetes.KubeReader`.

For the HTTP API and the GitHub flow (service running in-cluster), call::

    from starlette.concurrency import run_in_threadpool
    live = await run_in_threadpool(live_basis_for, keys, targets=targets,
                                   kuberay_version=version, headroom=headroom)
    report = diffing.analyze(before, after, ..., live=live)   # live None = manifest basis

``keys`` are the live keys of the RayServices and RayClusters in the change
(:func:`diffing.live.live_key`: ``"namespace/name"`` for a RayService,
``"RayCluster/namespace/name"`` for a RayCluster), ``targets`` optionally maps them to the new
objects (their nodeSelector/tolerations choose the nodes counted; :func:`live_targets` finds
both in a text). ``live_basis_for`` returns ``None`` without a Kubernetes configuration and
raises :class:`~app.clients.kubernetes.KubernetesError` when one exists but does not work (a
service may log it and fall back to ``None``).
"""

from __future__ import annotations

import asyncio
import logging
import math
import os
from collections.abc import Iterable, Mapping
from fractions import Fraction
from typing import Any

import diffing
from diffing.kinds import KINDS
from diffing.kube import resources as cap
from diffing.kube.manifests import Texts
from diffing.kube.quantity import Quantity, QuantityError
from diffing.placement import filters
from diffing.placement.kueue import QUEUE_LABEL
from diffing.record import replace
from diffing.versions import DEFAULT

from .clients.kubernetes import KubeReader, KubernetesError, connect, kubeconfig_paths

log = logging.getLogger("rayservice_impact.live")

ORIGIN_LABEL = "ray.io/originated-from-cr-name"
# Pod labels and annotations of KubeRay v1.7.0 (ray-operator/controllers/ray/utils/constant.go).
CLUSTER_LABEL = "ray.io/cluster"
NODE_TYPE_LABEL = "ray.io/node-type"  # "head" | "worker"
GROUP_LABEL = "ray.io/group"
RECREATE_HASH = "ray.io/upgrade-strategy-recreate-hash"
KUBERAY_VERSION = "ray.io/kuberay-version"
# The kinds whose live basis is read: a RayService's and a RayCluster's running state, and for a
# RayJob (a new RayCluster per run, nothing to compare with) the free accelerators its pods can use.
LIVE_KINDS = tuple(k.name for k in KINDS if k.live)  # the registry's kinds this reader reads
BLOCKING_EFFECTS = ("NoSchedule", "NoExecute")

Obj = Mapping[str, Any]


def _get(obj: Any, *path: str) -> Any:
    for key in path:
        obj = obj.get(key) if isinstance(obj, Mapping) else None
    return obj


# -- scheduling: which nodes can take a pod --------------------------------------------------


def tolerates(toleration: Obj, taint: Obj) -> bool:
    """``v1.Toleration.ToleratesTaint``: the placement plan's own rule, for a taint object."""
    return filters.tolerates(toleration, str(taint.get("key") or ""), str(taint.get("value") or ""),
                             str(taint.get("effect") or ""))


def _matches_term(term: Obj, node: Obj) -> bool:
    exprs, fields = term.get("matchExpressions") or [], term.get("matchFields") or []
    if not exprs and not fields:
        return False
    labels = _get(node, "metadata", "labels") or {}
    name = {"metadata.name": _get(node, "metadata", "name") or ""}
    return (all(filters.matches_expression(e, labels) for e in exprs)
            and all(filters.matches_expression(f, name) for f in fields))


def is_node_ready(node: Obj) -> bool:
    if _get(node, "spec", "unschedulable") is True:
        return False
    for cond in _get(node, "status", "conditions") or []:
        if isinstance(cond, Mapping) and cond.get("type") == "Ready":
            return cond.get("status") == "True"
    return False


def node_accepts(node: Obj, pod_spec: Obj) -> bool:
    """Could the scheduler put a pod with this spec on this node (resources aside)?

    Readiness, ``nodeSelector``, required node affinity and NoSchedule/NoExecute taints.
    """
    if not is_node_ready(node):
        return False
    labels = _get(node, "metadata", "labels") or {}
    for key, value in (pod_spec.get("nodeSelector") or {}).items():
        if labels.get(key) != value:
            return False
    terms = _get(pod_spec, "affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution",
                 "nodeSelectorTerms") or []
    if terms and not any(_matches_term(t, node) for t in terms if isinstance(t, Mapping)):
        return False
    tolerations = [t for t in pod_spec.get("tolerations") or [] if isinstance(t, Mapping)]
    for taint in _get(node, "spec", "taints") or []:
        if taint.get("effect") in BLOCKING_EFFECTS and not any(tolerates(t, taint) for t in tolerations):
            return False
    return True


# -- resources ---------------------------------------------------------------------------------


def _accelerators(amounts: Mapping[str, Fraction], extra: Iterable[str]) -> dict[str, Fraction]:
    names = tuple(extra)
    return {k: v for k, v in amounts.items() if v > 0 and cap.is_accelerator(k, names)}


def pod_requests(pod_spec: Obj) -> dict[str, Fraction]:
    """What the scheduler reserves for a pod: containers, the largest init container, overhead."""
    total = cap.pod_resources(pod_spec)
    for name, raw in (pod_spec.get("overhead") or {}).items():
        try:
            total[name] = total.get(name, Fraction(0)) + Quantity.parse(raw).value
        except QuantityError:
            continue
    return total


def _allocatable(node: Obj) -> dict[str, Fraction]:
    out = {}
    for name, raw in (_get(node, "status", "allocatable") or {}).items():
        try:
            out[str(name)] = Quantity.parse(raw).value
        except QuantityError:
            continue
    return out


def free_accelerators(nodes: Iterable[Obj], pods: Iterable[Obj], accelerators: Iterable[str] = ()
                      ) -> dict[str, dict[str, Fraction]]:
    """Per node name: allocatable accelerators minus the requests of pods bound to it."""
    extra = tuple(accelerators)
    free = {str(_get(n, "metadata", "name")): _accelerators(_allocatable(n), extra) for n in nodes}
    for pod in pods:
        node = _get(pod, "spec", "nodeName")
        if node not in free or _get(pod, "status", "phase") in ("Succeeded", "Failed"):
            continue
        for name, amount in _accelerators(pod_requests(pod.get("spec") or {}), extra).items():
            if name in free[node]:
                free[node][name] -= amount
    return {n: {k: max(v, Fraction(0)) for k, v in amounts.items()} for n, amounts in free.items()}


def ray_cluster_spec(obj: Obj) -> Obj:
    """The RayCluster spec an object makes pods from: a RayService's ``rayClusterConfig``, a
    RayJob's ``rayClusterSpec``, a RayCluster's own ``spec``."""
    spec = obj.get("spec")
    if not isinstance(spec, Mapping):
        return {}
    kind = obj.get("kind")
    inner = spec.get("rayClusterConfig") if kind in (None, "RayService") else \
        spec.get("rayClusterSpec") if kind == "RayJob" else spec
    return inner if isinstance(inner, Mapping) else {}


def pod_templates(obj: Obj) -> list[tuple[str, Obj]]:
    """(``head`` or group name, pod spec) for every pod kind a RayService's, RayCluster's or
    RayJob's cluster creates."""
    rcc = ray_cluster_spec(obj)
    out = [("head", _get(rcc, "headGroupSpec", "template", "spec") or {})]
    for i, group in enumerate(rcc.get("workerGroupSpecs") or []):
        if isinstance(group, Mapping):
            out.append((str(group.get("groupName", f"#{i}")), _get(group, "template", "spec") or {}))
    return out


def accelerator_headroom(rayservice: Obj, nodes: list[Obj], pods: list[Obj],
                         accelerators: Iterable[str] = ()) -> dict[str, Any]:
    """Free accelerators usable by this RayService's (or RayCluster's) pods, in whole pods.

    A node counts for a pod kind when the pod could be scheduled there (:func:`node_accepts`);
    its free amount counts in multiples of that pod's request (2 free GPUs take no 4-GPU
    pod). Per node the best-fitting pod kind counts. Unbound Pending pods that could land on
    those nodes (e.g. a pending cluster's workers) are subtracted: they are waiting too.
    """
    extra = tuple(accelerators)
    kinds = []
    for _, spec in pod_templates(rayservice):
        needs = _accelerators(pod_requests(spec), extra)
        if needs:
            kinds.append((spec, needs))
    if not kinds:
        return {}
    free = free_accelerators(nodes, pods, extra)
    usable: dict[str, Fraction] = {name: Fraction(0) for _, needs in kinds for name in needs}
    eligible: dict[str, set[str]] = {name: set() for name in usable}
    for node in nodes:
        node_name = str(_get(node, "metadata", "name"))
        best: dict[str, Fraction] = {}
        for spec, needs in kinds:
            if not node_accepts(node, spec):
                continue
            for name, need in needs.items():
                have = free.get(node_name, {}).get(name, Fraction(0))
                eligible[name].add(node_name)
                best[name] = max(best.get(name, Fraction(0)), math.floor(have / need) * need)
        for name, amount in best.items():
            usable[name] += amount
    by_name = {str(_get(n, "metadata", "name")): n for n in nodes}
    for pod in pods:
        if _get(pod, "spec", "nodeName") or _get(pod, "status", "phase") != "Pending":
            continue
        spec = pod.get("spec") or {}
        for name, amount in _accelerators(pod_requests(spec), extra).items():
            if name in usable and any(node_accepts(by_name[n], spec) for n in eligible[name]):
                usable[name] = max(usable[name] - amount, Fraction(0))
    return {name: _number(v) for name, v in sorted(usable.items())}


def _number(value: Fraction) -> int | str:
    return int(value) if value.denominator == 1 else f"{float(value):g}"


# -- the live clusters ----------------------------------------------------------------------------


_POD_SPEC = ("nodeName", "containers", "initContainers", "overhead", "nodeSelector", "affinity",
             "tolerations", "topologySpreadConstraints")


def _container(c: Any) -> dict[str, Any]:
    c = c if isinstance(c, Mapping) else {}
    return {k: c[k] for k in ("resources", "restartPolicy") if k in c}


def trim_pods(pods: Iterable[Obj]) -> list[dict[str, Any]]:
    """The pods with only what the placement plan reads (requests, scheduling fields, phase)."""
    out = []
    for p in pods:
        meta, spec = p.get("metadata") or {}, p.get("spec") or {}
        small = {k: spec[k] for k in _POD_SPEC if k in spec}
        for field in ("containers", "initContainers"):
            if field in small:
                small[field] = [_container(c) for c in small[field] or []]
        out.append({"metadata": {k: meta[k] for k in ("name", "namespace", "labels") if k in meta},
                    "spec": small, "status": {"phase": _get(p, "status", "phase")}})
    return out


def trim_nodes(nodes: Iterable[Obj]) -> list[dict[str, Any]]:
    """The nodes with only what the placement plan reads."""
    out = []
    for n in nodes:
        conditions = _get(n, "status", "conditions") or []
        ready = [c for c in conditions if isinstance(c, Mapping) and c.get("type") == "Ready"]
        spec = n.get("spec") or {}
        out.append({"metadata": {"name": _get(n, "metadata", "name"),
                                 "labels": _get(n, "metadata", "labels") or {}},
                    "spec": {k: v for k, v in spec.items() if k in ("taints", "unschedulable")},
                    "status": {"allocatable": _get(n, "status", "allocatable") or {}, "conditions": ready}})
    return out


def worker_replicas(raycluster: Obj) -> dict[str, int]:
    out = {}
    for group in _get(raycluster, "spec", "workerGroupSpecs") or []:
        reps = group.get("replicas") if isinstance(group, Mapping) else None
        if isinstance(reps, int) and not isinstance(reps, bool) and "groupName" in group:
            out[str(group["groupName"])] = reps
    return out


def cluster_pod_facts(pods: Iterable[Obj], cluster: str) -> tuple[str | None, str | None, dict[str, int]]:
    """(head pod's recreate hash, head pod's KubeRay version, worker pods per ``ray.io/group``) of
    the pods labelled ``ray.io/cluster=<cluster>``.

    Pods being deleted are left out: they are on their way (a Recreate in progress, a scale-in),
    neither the head that decides the next Recreate nor an orphan that stays. Every group label
    counts, also one no longer in the spec: that is how orphaned pods show.
    """
    heads: list[Obj] = []
    groups: dict[str, int] = {}
    for pod in pods:
        meta = pod.get("metadata") or {}
        labels = meta.get("labels") or {}
        if labels.get(CLUSTER_LABEL) != cluster or meta.get("deletionTimestamp"):
            continue
        node_type = labels.get(NODE_TYPE_LABEL)
        if node_type == "head":
            heads.append(pod)
        elif node_type == "worker":
            group = str(labels.get(GROUP_LABEL) or "")
            groups[group] = groups.get(group, 0) + 1
    if not heads:
        return None, None, dict(sorted(groups.items()))
    heads.sort(key=lambda p: str(_get(p, "metadata", "creationTimestamp") or ""), reverse=True)
    annotations = _get(heads[0], "metadata", "annotations") or {}
    recreate_hash, version = annotations.get(RECREATE_HASH), annotations.get(KUBERAY_VERSION)
    return (str(recreate_hash) if recreate_hash else None, str(version) if version else None,
            dict(sorted(groups.items())))


def parse_key(key: str) -> tuple[str, str, str]:
    """``(kind, namespace, name)`` of a live key (the inverse of :func:`diffing.live.live_key`)."""
    parts = key.split("/")
    if len(parts) == 3:
        return parts[0], parts[1], parts[2]
    namespace, _, name = key.partition("/")
    return "RayService", namespace, name


def live_targets(texts: Texts, source: str = "after") -> dict[str, dict[str, Any]]:
    """The RayServices, standalone RayClusters and RayJobs of ``texts`` by live key, for the live
    reads.

    A RayCluster a RayService or RayJob owns is not one (:func:`diffing.kube.manifests.analysed_kind`).
    Raises :class:`diffing.DiffingError` on a text that cannot be read.
    """
    return {key: obj for key, obj in diffing.live_objects(texts, source).items()
            if parse_key(key)[0] in LIVE_KINDS}


MAX_NAMESPACES = 16  # namespaces one request may make the live basis read


class RequestReader:
    """The reads of one request, bounded: each kind is listed once per namespace and served from
    that list (a body naming 250 RayServices made 502 calls); nodes and pods once. At most
    ``MAX_NAMESPACES`` namespaces: more is refused (the caller falls back to the manifests).

    The pods of standalone RayClusters come from the all-namespace list of active pods when it
    was read anyway (for the headroom), else from one list per namespace (label ``ray.io/cluster``).
    """

    def __init__(self, reader: KubeReader, max_namespaces: int = MAX_NAMESPACES) -> None:
        self.reader, self.max_namespaces = reader, max_namespaces
        self._lists: dict[tuple[str, str], dict[str, Obj]] = {}
        self._pods: dict[str, list[Obj]] = {}
        self._all_pods: list[Obj] | None = None
        self._namespaces: set[str] = set()
        self._cluster_queues: list[Obj] | None = None
        self._local_queues: dict[str, list[Obj]] = {}
        self._no_kueue = False

    def _namespace(self, namespace: str) -> None:
        if namespace not in self._namespaces and len(self._namespaces) >= self.max_namespaces:
            raise KubernetesError(f"the change spans more than {self.max_namespaces} namespaces: the "
                                  "live basis is not read for it")
        self._namespaces.add(namespace)

    def _objects(self, plural: str, namespace: str) -> dict[str, Obj]:
        key = (plural, namespace)
        if key not in self._lists:
            self._namespace(namespace)
            items = self.reader.list_custom(plural, namespace)
            self._lists[key] = {str(_get(i, "metadata", "name")): i for i in items}
        return self._lists[key]

    def get_rayservice(self, namespace: str, name: str) -> Obj | None:
        return self._objects("rayservices", namespace).get(name)

    def get_raycluster(self, namespace: str, name: str) -> Obj | None:
        return self._objects("rayclusters", namespace).get(name)

    def list_rayclusters(self, namespace: str, label_selector: str) -> list[Obj]:
        label, _, value = label_selector.partition("=")
        return [c for c in self._objects("rayclusters", namespace).values()
                if (_get(c, "metadata", "labels") or {}).get(label) == value]

    def list_nodes(self) -> list[Obj]:
        return list(self.reader.list_nodes())

    def kueue(self, namespace: str) -> tuple[list[Obj], list[Obj]] | None:
        """The ClusterQueues and the LocalQueues of ``namespace``, each list read once; ``None``
        where Kueue is not installed (then its label does nothing: the pods are created as ever)."""
        if self._cluster_queues is None:
            found = self.reader.list_kueue("clusterqueues")
            self._cluster_queues, self._no_kueue = found or [], found is None
        if self._no_kueue:
            return None
        if namespace not in self._local_queues:
            self._namespace(namespace)
            self._local_queues[namespace] = list(self.reader.list_kueue("localqueues", namespace) or [])
        return self._local_queues[namespace], self._cluster_queues

    def list_active_pods(self) -> list[Obj]:
        if self._all_pods is None:
            self._all_pods = list(self.reader.list_active_pods())
        return self._all_pods

    def cluster_pods(self, namespace: str) -> list[Obj]:
        """Active pods of KubeRay clusters (label ``ray.io/cluster``) in ``namespace``."""
        if self._all_pods is not None:
            return [p for p in self._all_pods if _get(p, "metadata", "namespace") == namespace
                    and CLUSTER_LABEL in (_get(p, "metadata", "labels") or {})]
        if namespace not in self._pods:
            self._namespace(namespace)
            self._pods[namespace] = list(self.reader.list_cluster_pods(namespace))
        return self._pods[namespace]


def _active_name(reader: RequestReader, rayservice: Obj, namespace: str, name: str,
                 pending: str | None) -> str | None:
    active = _get(rayservice, "status", "activeServiceStatus", "rayClusterName")
    if active:
        return str(active)
    found = [c for c in reader.list_rayclusters(namespace, f"{ORIGIN_LABEL}={name}")
             if _get(c, "metadata", "name") != pending]
    found.sort(key=lambda c: str(_get(c, "metadata", "creationTimestamp") or ""))
    return str(_get(found[0], "metadata", "name")) if found else None


def _rayservice_basis(reader: RequestReader, rs: Obj, namespace: str, name: str, room: dict[str, Any],
                      kuberay_version: str, nodes_pods: diffing.live.NodesAndPods | None = None
                      ) -> diffing.LiveCluster:
    pending = _get(rs, "status", "pendingServiceStatus", "rayClusterName") or None
    active = _active_name(reader, rs, namespace, name, pending)
    cluster = reader.get_raycluster(namespace, active) if active else None
    divergence: tuple[str, ...] = ()
    if cluster is not None:
        try:
            divergence = diffing.cluster_divergence(rs, cluster, kuberay_version)
        except diffing.DiffingError:
            divergence = ()
    return diffing.LiveCluster(
        active_cluster=active if cluster is not None else None,
        pending_cluster=str(pending) if pending else None,
        worker_replicas=worker_replicas(cluster) if cluster is not None else {},
        headroom=room or None, divergence=divergence, cluster=nodes_pods)


def _raycluster_basis(reader: RequestReader, rc: Obj, namespace: str, name: str,
                      room: dict[str, Any], nodes_pods: diffing.live.NodesAndPods | None = None
                      ) -> diffing.LiveCluster:
    head_hash, head_version, group_pods = cluster_pod_facts(reader.cluster_pods(namespace), name)
    spec = rc.get("spec")
    return diffing.LiveCluster(
        active_cluster=name, worker_replicas=worker_replicas(rc), headroom=room or None,
        head_hash=head_hash, head_kuberay_version=head_version, group_pods=group_pods,
        cluster_spec=dict(spec) if isinstance(spec, Mapping) else {}, cluster=nodes_pods)


def read_live_basis(client: KubeReader, keys: Iterable[str], *, targets: Mapping[str, Obj] | None = None,
                    kuberay_version: str = DEFAULT, accelerators: Iterable[str] = (),
                    headroom: Mapping[str, Any] | None = None) -> dict[str, diffing.LiveCluster]:
    """One :class:`diffing.LiveCluster` per key whose RayService or RayCluster is live or has a target.

    ``keys`` are live keys (:func:`parse_key`); a RayJob's gets the headroom of its target alone.
    ``headroom`` (e.g. from ``--headroom``) wins over the measured value for the same resource.
    Reads per namespace at most one list of RayServices, one of RayClusters and (for a standalone
    RayCluster, unless the all-namespace pod list was read for the headroom) one of its pods;
    plus nodes and pods once when an object makes pods (:class:`RequestReader`).
    """
    reader = RequestReader(client)
    targets = targets or {}
    extra = tuple(accelerators)
    live: dict[str, tuple[str, str, str, Obj | None]] = {}
    for key in dict.fromkeys(keys):
        kind, namespace, name = parse_key(key)
        if kind == "RayService":
            live[key] = (kind, namespace, name, reader.get_rayservice(namespace, name))
        elif kind == "RayCluster":
            live[key] = (kind, namespace, name, reader.get_raycluster(namespace, name))
        elif kind == "RayJob":
            live[key] = (kind, namespace, name, None)  # only its target's pods matter: the headroom
    # Nodes and pods for any object of the change that makes pods (the placement plan of whatever
    # rollout adds some, cpu-only ones included; the headroom when an accelerator is involved):
    # which rollout it is is known only after the analysis, and the lists are read once anyway.
    wants_nodes = any(pod_templates(shape) for key, (*_, obj) in live.items()
                      for shape in (targets.get(key), obj) if shape)
    nodes = reader.list_nodes() if wants_nodes else []
    pods = reader.list_active_pods() if wants_nodes else []
    # The same two lists give the placement plan of a rollout (diffing.placement),
    # trimmed to what the plan reads: the basis may travel to a worker process.
    cluster = (trim_nodes(nodes), trim_pods(pods)) if wants_nodes else None
    out: dict[str, diffing.LiveCluster] = {}
    for key, (kind, namespace, name, obj) in live.items():
        shape = targets.get(key) or obj
        if shape is None:
            continue
        room: dict[str, Any] = dict(accelerator_headroom(shape, nodes, pods, extra)) if wants_nodes else {}
        room.update(headroom or {})
        queued = None
        if (_get(shape, "metadata", "labels") or {}).get(QUEUE_LABEL):  # any of the three kinds
            queued = reader.kueue(namespace)
        if kind == "RayJob":
            if room or cluster is not None:  # nothing else of a RayJob is live; no entry without it
                out[key] = diffing.LiveCluster(headroom=room or None, cluster=cluster, kueue=queued)
        elif obj is None:
            out[key] = diffing.LiveCluster(headroom=room or None, cluster=cluster, kueue=queued)
        elif kind == "RayService":
            basis = _rayservice_basis(reader, obj, namespace, name, room, kuberay_version, cluster)
            out[key] = replace(basis, kueue=queued)
        else:
            out[key] = replace(_raycluster_basis(reader, obj, namespace, name, room, cluster), kueue=queued)
    return out


def live_basis_for(keys: Iterable[str], *, targets: Mapping[str, Obj] | None = None,
                   kuberay_version: str = DEFAULT, accelerators: Iterable[str] = (),
                   headroom: Mapping[str, Any] | None = None,
                   timeout: float = 10.0) -> dict[str, diffing.LiveCluster] | None:
    """The live basis for ``keys`` (live keys, :func:`parse_key`), or ``None`` without Kubernetes config.

    Raises :class:`KubernetesError` when a configuration exists but the API cannot be used.
    """
    conn = connect(timeout=timeout)
    if conn is None:
        return None
    try:
        return read_live_basis(KubeReader(conn, timeout=timeout), keys, targets=targets,
                               kuberay_version=kuberay_version, accelerators=accelerators,
                               headroom=headroom)
    finally:
        conn.api.close()


def kubernetes_configured() -> bool:
    """Whether a Kubernetes configuration is present (in-cluster or kubeconfig), without calling it."""
    if os.environ.get("KUBERNETES_SERVICE_HOST"):
        return True
    return any(p.is_file() for p in kubeconfig_paths())


async def live_basis_for_texts(after: Any, *, enabled: bool, kuberay_version: str,
                               headroom: Mapping[str, Any] | None, timeout: float,
                               accelerators: Iterable[str] = (),
                               budget: float | None = None) -> dict[str, diffing.LiveCluster] | None:
    """The live basis for the RayServices and standalone RayClusters of an after text, for the
    HTTP and GitHub flows.

    ``None`` (manifest basis) when disabled, when the text cannot be read (the analysis will
    report that), when it holds neither, or when Kubernetes cannot be used or does not
    answer within ``budget`` seconds in all (logged). ``timeout`` bounds each call. The
    Kubernetes client is synchronous, so it runs in a thread.
    """
    if not enabled:
        return None
    try:
        targets = await asyncio.to_thread(live_targets, after)
    except diffing.DiffingError:
        return None
    if not targets:
        return None
    read = asyncio.to_thread(live_basis_for, list(targets), targets=targets,
                             kuberay_version=kuberay_version, accelerators=accelerators,
                             headroom=headroom, timeout=timeout)
    try:
        return await asyncio.wait_for(read, budget)
    except KubernetesError as exc:
        log.warning("live basis unavailable, using the manifests: %s", exc)
    except TimeoutError:
        log.warning("live basis unavailable, using the manifests: the Kubernetes API did not answer "
                    "within %.3g s", budget)
    return None


# -- the cluster's objects, for an operator upgrade (docs/operator-upgrade.md) -------------------

MAX_FLEET = 5000  # ray.io objects read for one operator upgrade; more is refused, not truncated
_FLEET_KINDS = ("rayservices", "rayclusters", "rayjobs")


def read_cluster_fleet(reader: KubeReader, max_objects: int = MAX_FLEET) -> list[dict[str, Any]]:
    """Every RayService, RayCluster and RayJob in the cluster: one paged list per kind. Raises
    :class:`KubernetesError` past ``max_objects`` (a partial fleet would judge too little)."""
    out: list[dict[str, Any]] = []
    for plural in _FLEET_KINDS:
        out.extend(reader.list_custom_all(plural))
        if len(out) > max_objects:
            raise KubernetesError(f"the cluster holds more than {max_objects} ray.io objects, over the "
                                  "limit one operator-upgrade analysis reads")
    return out


def cluster_fleet(timeout: float, max_objects: int = MAX_FLEET) -> tuple[list[dict[str, Any]] | None, str]:
    """``(objects, "")`` read from the cluster; ``(None, "")`` when no Kubernetes configuration
    exists (the manifest basis: the report says only the change's objects were judged);
    ``(None, why)`` when the API was there but could not be read (the upgrade then holds)."""
    try:
        conn = connect(timeout=timeout)
    except KubernetesError as exc:
        return None, str(exc)
    if conn is None:
        return None, ""
    try:
        return read_cluster_fleet(KubeReader(conn, timeout=timeout), max_objects), ""
    except KubernetesError as exc:
        return None, str(exc)
    finally:
        conn.api.close()


async def cluster_fleet_for_texts(before: Any, after: Any, *, enabled: bool, timeout: float,
                                  files: Any = None,
                                  budget: float | None = None) -> tuple[list[dict[str, Any]] | None, str]:
    """:func:`cluster_fleet` when the live basis is on and the change moves the operator; else
    ``(None, "")``. Bounded by ``budget`` seconds in all."""
    from diffing.operator.judge import moves_operator

    if not enabled or not await asyncio.to_thread(moves_operator, before, after, files):
        return None, ""
    try:
        return await asyncio.wait_for(asyncio.to_thread(cluster_fleet, timeout), budget)
    except TimeoutError:
        return None, f"the Kubernetes API did not answer within {budget:.3g} s"


__all__ = ["cluster_fleet", "cluster_fleet_for_texts", "read_cluster_fleet",
           "KubernetesError", "accelerator_headroom", "cluster_pod_facts", "free_accelerators",
           "live_basis_for", "kubernetes_configured", "live_basis_for_texts", "live_targets",
           "node_accepts", "parse_key", "pod_requests", "read_live_basis", "tolerates", "worker_replicas"]
