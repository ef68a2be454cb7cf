"""What the RayService controller does with a change, field family by field family, as data.

One table, first match wins, most specific first: each :class:`Rule` gives the category of a
change under its schema path, the reason shown to users, and the upstream code it was read
from (KubeRay v1.7.0 ``ray-operator/controllers/ray/`` unless noted; ``since``/``until`` bound
the minor versions it holds for). docs/semantics/rayservice.md explains each family.
"""

from __future__ import annotations

from enum import StrEnum

from diffing.record import Record, set_field


class Category(StrEnum):
    SERVE_IN_PLACE = "serve-in-place"
    AUTOSCALER_OWNED = "autoscaler-owned"
    OPERATOR_IGNORED = "operator-ignored"
    SERVICE_LEVEL = "service-level"
    WORKER_GROUP_APPENDED = "worker-group-appended"
    CLUSTER_RECREATE = "cluster-recreate"
    NO_OP = "no-op"


# Hash-muted categories: the operator clears these before hashing the cluster spec.
MUTED = frozenset({Category.AUTOSCALER_OWNED, Category.OPERATOR_IGNORED})

_GROUPS = ("spec", "rayClusterConfig", "workerGroupSpecs", "[]")
_HEAD = ("spec", "rayClusterConfig", "headGroupSpec")


class Rule(Record):
    """Changes under ``pattern`` (a schema path, ``[]`` = any list item) get ``category``."""

    __slots__ = ("pattern", "category", "reason", "source", "since", "until")

    pattern: tuple[str, ...]
    category: Category
    reason: str
    source: str
    since: tuple[int, int]
    until: tuple[int, int] | None  # exclusive

    def __init__(self, pattern: tuple[str, ...], category: Category, reason: str, source: str,
                 since: tuple[int, int] = (1, 0), until: tuple[int, int] | None = None) -> None:
        set_field(self, "pattern", pattern)
        set_field(self, "category", category)
        set_field(self, "reason", reason)
        set_field(self, "source", source)
        set_field(self, "since", since)
        set_field(self, "until", until)

    def applies_to(self, version: tuple[int, int]) -> bool:
        return self.since <= version and (self.until is None or version < self.until)


RULES: tuple[Rule, ...] = (
    Rule(("spec", "serveConfigV2"), Category.SERVE_IN_PLACE,
         "serveConfigV2 is re-submitted to the running cluster; it is not part of the cluster hash",
         "rayservice_controller.go checkIfNeedSubmitServeApplications"),
    Rule(_GROUPS + ("replicas",), Category.AUTOSCALER_OWNED,
         "worker replicas are muted in the cluster hash and owned by the autoscaler",
         "utils/util.go GenerateHashWithoutReplicasAndWorkersToDelete"),
    Rule(_GROUPS + ("minReplicas",), Category.AUTOSCALER_OWNED,
         "minReplicas is muted in the cluster hash", "utils/util.go:658"),
    Rule(_GROUPS + ("maxReplicas",), Category.AUTOSCALER_OWNED,
         "maxReplicas is muted in the cluster hash", "utils/util.go:659"),
    Rule(_GROUPS + ("scaleStrategy", "workersToDelete"), Category.AUTOSCALER_OWNED,
         "workersToDelete is muted in the cluster hash and written by the autoscaler",
         "utils/util.go:660"),
    Rule(_GROUPS + ("template", "spec", "tolerations"), Category.OPERATOR_IGNORED,
         "tolerations are muted in the cluster hash", "utils/util.go:653-662"),
    Rule(_GROUPS + ("template", "spec", "schedulingGates"), Category.OPERATOR_IGNORED,
         "schedulingGates are muted in the cluster hash", "utils/util.go:653-662"),
    Rule(_HEAD + ("template", "spec", "tolerations"), Category.OPERATOR_IGNORED,
         "tolerations are muted in the cluster hash", "utils/util.go:653-662"),
    Rule(_HEAD + ("template", "spec", "schedulingGates"), Category.OPERATOR_IGNORED,
         "schedulingGates are muted in the cluster hash", "utils/util.go:653-662"),
    Rule(("spec", "rayClusterConfig", "suspend"), Category.OPERATOR_IGNORED,
         "rayClusterConfig.suspend is cleared before hashing and kept on in-place updates",
         "rayservice_controller.go rayClusterSpecForHashing, modifyRayCluster", since=(1, 7)),
    Rule(("spec", "rayClusterConfig", "suspend"), Category.OPERATOR_IGNORED,
         "rayClusterConfig.suspend is left out of the hash; v1.6 applies a toggle in place",
         "v1.6.2 rayservice_controller.go shouldUpdateCluster", until=(1, 7)),
    Rule(("spec", "rayClusterConfig", "upgradeStrategy"), Category.OPERATOR_IGNORED,
         "the RayCluster-level upgradeStrategy is muted in the cluster hash", "utils/util.go:664"),
    Rule(("spec", "rayClusterConfig"), Category.CLUSTER_RECREATE,
         "every other rayClusterConfig field is part of the cluster hash",
         "rayservice_controller.go shouldPrepareNewCluster"),
    Rule(("apiVersion",), Category.NO_OP,
         "stored as v1 either way: what a v1alpha1 write drops or defaults shows in the spec",
         "ray.io CRD conversion: None (customresource_handler.go:1357-1384)"),
    Rule(("spec",), Category.SERVICE_LEVEL,
         "RayService fields outside rayClusterConfig are not hashed",
         "rayservice_controller.go rayClusterSpecForHashing"),
    Rule(("metadata",), Category.SERVICE_LEVEL,
         "RayService labels and annotations reach a RayCluster only when one is created or updated",
         "rayservice_controller.go constructRayClusterForRayService"),
    Rule((), Category.SERVICE_LEVEL, "not part of the cluster spec", "-"),
)
