"""What the caller knows about the running cluster (the "live basis"), as plain values."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from diffing.hints import Any
from diffing.record import Record, set_field

NodesAndPods = tuple[Sequence[Mapping[str, Any]], Sequence[Mapping[str, Any]]]


class LiveCluster(Record):
    """The live state behind one RayService or standalone RayCluster.

    * ``active_cluster`` / ``pending_cluster``: RayCluster names from the RayService status;
      a pending cluster means an upgrade is already in flight.
    * ``worker_replicas``: the active cluster's current (autoscaled) replicas per group name.
    * ``headroom``: free capacity for this RayService's new pods, e.g. ``{"nvidia.com/gpu": 2}``
      (free allocatable on the nodes its pods can land on); overrides the caller's global one.
    * ``cluster``: the listed Node and Pod objects (one list each, shared by every key) when the
      caller read them: the capacity estimate then places the rollout's pods on them
      (:mod:`diffing.placement`); left out of ``==`` and ``repr``, as is
    * ``kueue``: the LocalQueues of its namespace and the ClusterQueues, when the object carries
      ``kueue.x-k8s.io/queue-name`` (:mod:`diffing.placement.kueue`).
    * ``divergence``: paths where the running RayCluster differs from the live RayService's
      ``rayClusterConfig`` beyond the muted fields (an earlier change never applied).
    """

    __slots__ = ("active_cluster", "pending_cluster", "worker_replicas", "headroom", "divergence",
                 "head_hash", "head_kuberay_version", "group_pods", "cluster_spec", "cluster", "kueue")
    _compared = ("active_cluster", "pending_cluster", "worker_replicas", "headroom", "divergence",
                 "head_hash", "head_kuberay_version", "group_pods", "cluster_spec")

    active_cluster: str | None
    pending_cluster: str | None
    worker_replicas: Mapping[str, int]
    headroom: Mapping[str, Any] | None
    divergence: tuple[str, ...]

    # A standalone RayCluster (docs/semantics/raycluster.md §10): what its pods say.
    head_hash: str | None  # the head pod's ray.io/upgrade-strategy-recreate-hash
    head_kuberay_version: str | None  # the head pod's ray.io/kuberay-version
    group_pods: Mapping[str, int]  # worker pods per ray.io/group label
    cluster_spec: Mapping[str, Any] | None  # the running RayCluster's spec, as the API serves it
    cluster: NodesAndPods | None
    kueue: NodesAndPods | None  # (LocalQueues of its namespace, ClusterQueues) when it names a queue

    def __init__(self, active_cluster: str | None = None, pending_cluster: str | None = None,
                 worker_replicas: Mapping[str, int] | None = None,
                 headroom: Mapping[str, Any] | None = None, divergence: tuple[str, ...] = (),
                 head_hash: str | None = None, head_kuberay_version: str | None = None,
                 group_pods: Mapping[str, int] | None = None,
                 cluster_spec: Mapping[str, Any] | None = None,
                 cluster: NodesAndPods | None = None, kueue: NodesAndPods | None = None) -> None:
        set_field(self, "active_cluster", active_cluster)
        set_field(self, "pending_cluster", pending_cluster)
        set_field(self, "worker_replicas", {} if worker_replicas is None else worker_replicas)
        set_field(self, "headroom", headroom)
        set_field(self, "divergence", divergence)
        set_field(self, "head_hash", head_hash)
        set_field(self, "head_kuberay_version", head_kuberay_version)
        set_field(self, "group_pods", {} if group_pods is None else group_pods)
        set_field(self, "cluster_spec", cluster_spec)
        set_field(self, "cluster", cluster)
        set_field(self, "kueue", kueue)

    @property
    def upgrade_in_progress(self) -> bool:
        return bool(self.pending_cluster)


def live_key(ident: tuple[str, str, str]) -> str:
    """The key of a live basis: ``"namespace/name"`` for a RayService (as ever),
    ``"RayCluster/namespace/name"`` for another kind."""
    kind, namespace, name = ident
    return f"{namespace}/{name}" if kind == "RayService" else f"{kind}/{namespace}/{name}"
