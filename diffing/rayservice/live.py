"""A running RayCluster against its RayService: what the operator has not applied."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from diffing.engine import RCC, Engine
from diffing.kube.manifests import strip_server_fields
from diffing.kube.paths import format_path, schema_path
from diffing.kube.values import dig
from diffing.policy import Policy
from diffing.rayservice.rules import Category
from diffing.versions import DEFAULT, rules_for


def cluster_divergence(rayservice: Mapping[str, Any], raycluster: Mapping[str, Any],
                       kuberay_version: str = DEFAULT) -> tuple[str, ...]:
    """Paths where a running RayCluster's spec differs from its RayService's rayClusterConfig.

    Muted fields (replicas, tolerations, ...) are ignored, as the operator ignores them; what
    is left is a change the operator has not applied (strategy None, a validation failure...).
    Both objects are plain dicts as read from the Kubernetes API.
    """
    engine = Engine(rules_for(kuberay_version), Policy())
    rs = strip_server_fields(dict(rayservice))
    rs_rcc = dig(rs, "spec", "rayClusterConfig")
    rc_spec = dig(raycluster, "spec")
    sch = engine.schemas.child(engine.schemas.child(engine.schemas.root("v1"), "spec"), "rayClusterConfig")
    out = []
    for d in engine.differ.diff(dict(rc_spec), dict(rs_rcc), RCC, sch, engine.gotypes.root):
        if not d.noop and engine.rules.category_of(schema_path(d.path)).category == Category.CLUSTER_RECREATE:
            out.append(format_path(d.path))
    return tuple(out)
