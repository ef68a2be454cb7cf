"""The Kubernetes side of the rollout watch, built from settings: the store and the follower."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .kubeapi import KubeAPI
from .model import Follower, Store
from .store import KubeStore, default_namespace
from .tracker import KubeFollower
from .watch import WatchHub

if TYPE_CHECKING:
    from app.settings import Settings


def kube_parts(settings: Settings) -> tuple[Store, Follower] | None:
    """A :class:`KubeStore` and a :class:`KubeFollower` sharing one API client; ``None`` when there
    is no Kubernetes configuration (no service account, no kubeconfig)."""
    api = KubeAPI.from_environment(timeout=settings.kubernetes_timeout_seconds)
    if api is None:
        return None
    hub = WatchHub(
        api,
        cluster_wide=settings.rollout_cluster_wide,
        max_objects=settings.rollout_max_objects,
        max_watches=settings.rollout_max_watches,
    )
    store = KubeStore(api, default_namespace(settings.rollout_namespace),
                      retention_seconds=settings.rollout_retention_days * 86400.0)
    # The policy's extra accelerator resource names count as accelerators in what is observed, as
    # they do in the prediction (the policy's `accelerators`, docs/contract.md).
    accelerators = tuple(str(a) for a in ((settings.load_policy() or {}).get("accelerators") or ()))
    return store, KubeFollower(hub, accelerators=accelerators, memo=store)
