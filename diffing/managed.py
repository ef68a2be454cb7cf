"""``spec.managedBy``: whether this KubeRay operator reconciles an object at all.

Any value other than the operator's own controller name hands the object to another
controller, and KubeRay returns before validating or reconciling it (utils/util.go:744-749
ManagedByExternalController; RayService since v1.6.0, RayCluster and RayJob earlier).
"""

from __future__ import annotations

from collections.abc import Mapping

from diffing.hints import Any
from diffing.kube.values import mapping

# utils/constant.go:368 KubeRayController.
KUBERAY_CONTROLLER = "ray.io/kuberay-operator"


def external_manager(obj: Mapping[str, Any] | None) -> str | None:
    """``spec.managedBy`` when it names another controller (util.go:744-749), else ``None``."""
    value = mapping(mapping(obj).get("spec")).get("managedBy")
    if value is None or value == KUBERAY_CONTROLLER:
        return None
    return str(value)
