"""Whether rollout reporting is on, and with which Store and Follower.

The Kubernetes side (``app/rollout/kube.py``: list and watch the ray.io kinds, keep watches in
an object the service owns) builds the pair from the settings, or answers None when the service
cannot reach a cluster. Without a pair, nothing is followed: the push and Argo CD webhooks say
that rollout reporting is not configured.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from .model import Follower, Store

log = logging.getLogger(__name__)

Parts = tuple[Store, Follower]
PartsFactory = Callable[[Any], Parts | None]


def rollout_parts(settings: Any, factory: PartsFactory | None = None) -> Parts | None:
    """``factory(settings)`` when given (tests), else ``app.rollout.kube.kube_parts(settings)``
    when the watch is switched on (``rollout_watch``) and a Kubernetes configuration exists, else
    None (rollout reporting off)."""
    if factory is not None:
        return factory(settings)
    if not getattr(settings, "rollout_watch", False):  # opt-in: RAYSERVICE_IMPACT_ROLLOUT_WATCH=true
        return None
    from app.live import kubernetes_configured

    if not kubernetes_configured():  # neither in-cluster nor a kubeconfig: nothing to watch with
        return None
    from .kube import kube_parts

    try:
        parts: Parts | None = kube_parts(settings)
    except Exception:  # noqa: BLE001 - the service still analyses; the rollout report is what is lost
        log.exception("rollout: the rollout watch cannot start; rollout reporting is off")
        return None
    if parts is None:
        log.info("rollout: Kubernetes is not reachable or rollout watching is off; rollout reporting is off")
    return parts
