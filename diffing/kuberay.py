"""KubeRay operator rules, as data: one table, filtered by version.

Everything version-specific about how the operator treats a RayService change lives here:
which fields each category covers (first match wins, most specific first), which of them
the cluster hash mutes, the feature-gate defaults, and the schema/field tables a version
uses. ``source`` cites the operator code the rule was read from (KubeRay v1.7.0 unless
noted, ``ray-operator/controllers/ray/``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from functools import lru_cache

from .errors import UnsupportedVersionError


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


@dataclass(frozen=True, slots=True)
class Rule:
    """Changes under ``pattern`` (a schema path, ``[]`` = any list item) get ``category``."""

    pattern: tuple[str, ...]
    category: Category
    reason: str
    source: str
    since: tuple[int, int] = (1, 0)
    until: tuple[int, int] | None = None  # exclusive

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
         "v1alpha1 and v1 store the same object", "ray.io CRD conversion: None"),
    Rule(("spec",), Category.SERVICE_LEVEL,
         "RayService fields outside rayClusterConfig are not hashed",
         "rayservice_controller.go rayClusterSpecForHashing"),
    Rule(("metadata",), Category.SERVICE_LEVEL,
         "RayService labels and annotations reach a RayCluster only when one is created or updated",
         "rayservice_controller.go constructRayClusterForRayService"),
    Rule((), Category.SERVICE_LEVEL, "not part of the cluster spec", "-"),
)


# The operator's own controller name: any other spec.managedBy value hands the object to
# another controller (utils/constant.go:368 KubeRayController; utils/util.go:744
# ManagedByExternalController). RayService.spec.managedBy exists since v1.6.0.
KUBERAY_CONTROLLER = "ray.io/kuberay-operator"

# Feature-gate defaults per minor version (pkg/features/features.go:105-117 in v1.7.0;
# v1.6.2 features.go). A gate the version does not know is absent.
GATE_DEFAULTS: dict[tuple[int, int], dict[str, bool]] = {
    (1, 6): {"RayClusterStatusConditions": True, "RayJobDeletionPolicy": True,
             "RayMultiHostIndexing": True, "RayServiceIncrementalUpgrade": False,
             "RayCronJob": False, "AsyncJobInfoQuery": False},
    (1, 7): {"RayClusterStatusConditions": True, "RayJobDeletionPolicy": True,
             "RayMultiHostIndexing": True, "RayServiceIncrementalUpgrade": True,
             "RayCronJob": False, "SidecarSubmitterRestart": False, "RayClusterNetworkPolicy": False,
             "GCSFaultToleranceEmbeddedStorage": False, "RayClusterMTLS": False,
             "RayClusterHistoryServer": False, "KubernetesWAS": False},
}


@dataclass(frozen=True, slots=True)
class VersionRules:
    """The rules and operator defaults of one KubeRay minor version."""

    version: str
    minor: tuple[int, int]
    rules: tuple[Rule, ...]
    incremental_gate_default: bool
    has_rayservice_suspend: bool
    cluster_suspend_in_place: bool

    def gates(self, overrides: Mapping[str, bool] | None = None) -> dict[str, bool]:
        """The operator's feature gates: this version's defaults, then the policy's settings."""
        out = dict(GATE_DEFAULTS.get(self.minor, {}))
        out.update(overrides or {})
        return out

    def category_of(self, schema_path: tuple[str, ...]) -> Rule:
        for rule in self.rules:
            if schema_path[: len(rule.pattern)] == rule.pattern:
                return rule
        raise AssertionError("the catch-all rule matches every path")  # pragma: no cover

    @property
    def muted_patterns(self) -> tuple[tuple[str, ...], ...]:
        return tuple(r.pattern for r in self.rules
                     if r.category in MUTED and r.pattern[:2] == ("spec", "rayClusterConfig"))


SUPPORTED = ("1.6", "1.7")


@lru_cache(maxsize=8)
def rules_for(version: str) -> VersionRules:
    """The rule table for ``version`` ("1.7.0", "v1.7", "1.6.2" ...)."""
    m = re.fullmatch(r"v?(\d+)\.(\d+)(?:\.(\d+))?(?:[-+][0-9A-Za-z.\-]+)?", version.strip())
    if not m or f"{m.group(1)}.{m.group(2)}" not in SUPPORTED:
        raise UnsupportedVersionError(version, tuple(f"{v}.x" for v in SUPPORTED))
    minor = (int(m.group(1)), int(m.group(2)))
    return VersionRules(
        version=version.strip().lstrip("v"),
        minor=minor,
        rules=tuple(r for r in RULES if r.applies_to(minor)),
        # features.go: RayServiceIncrementalUpgrade is Beta/on in v1.7, Alpha/off in v1.5-1.6.
        incremental_gate_default=minor >= (1, 7),
        # spec.suspend on the RayService arrived in v1.7 (handleSuspend).
        has_rayservice_suspend=minor >= (1, 7),
        cluster_suspend_in_place=minor < (1, 7),
    )


def schema_data(minor: tuple[int, int]) -> tuple[str, str]:
    """The (schema JSON, Go field JSON) of a version; v1.6 reuses v1.7.0's tables."""
    from .data import kuberay_1_7_0 as data

    return data.SCHEMA_JSON, data.GO_TYPES_JSON
