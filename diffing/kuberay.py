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


class ClusterCategory(StrEnum):
    """What a standalone RayCluster change is (CONTRACT "Standalone RayCluster and RayJob")."""

    AUTOSCALER_OWNED = "autoscaler-owned"
    OPERATOR_IGNORED = "operator-ignored"
    SCALE = "scale"
    LATENT = "latent"
    RECREATE = "recreate"
    SIDE_OBJECT = "side-object"
    NO_OP = "no-op"


@dataclass(frozen=True, slots=True)
class ClusterRule:
    """A standalone RayCluster's change under ``pattern`` (a schema path from the object root).

    ``category`` is what it is under the default strategy; ``hashed`` says the Recreate hash
    covers it (raycluster-semantics.md §3.3), which makes it ``recreate`` under
    ``upgradeStrategy.type: Recreate``; ``autoscaled`` replaces the category when in-tree
    autoscaling is on; ``unapplied`` marks a change the operator never carries out.
    """

    pattern: tuple[str, ...]
    category: ClusterCategory
    reason: str
    source: str
    hashed: bool = True
    autoscaled: ClusterCategory | None = None
    unapplied: bool = False
    since: tuple[int, int] = (1, 0)
    until: tuple[int, int] | None = None

    def applies_to(self, version: tuple[int, int]) -> bool:
        return self.since <= version and (self.until is None or version < self.until)


_CG = ("spec", "workerGroupSpecs", "[]")
_CH = ("spec", "headGroupSpec")
_C = ClusterCategory
_RCC = "raycluster_controller.go:"

# First match wins, most specific first. Citations: KubeRay v1.7.0 ray-operator/controllers/ray/.
CLUSTER_RULES: tuple[ClusterRule, ...] = (
    ClusterRule(_CG + ("replicas",), _C.SCALE,
                "the desired pod count follows replicas (clamped to [minReplicas, maxReplicas]) at once",
                _RCC + "1075, 1183-1256; utils/util.go:389-407", hashed=False,
                autoscaled=_C.AUTOSCALER_OWNED),
    ClusterRule(_CG + ("minReplicas",), _C.SCALE,
                "a higher minReplicas raises the desired pod count at once, autoscaling on or off",
                "utils/util.go:389-407; test/e2eautoscaler/raycluster_autoscaler_test.go:427-436",
                hashed=False),
    ClusterRule(_CG + ("maxReplicas",), _C.SCALE,
                "a lower maxReplicas caps the desired pod count (with autoscaling the autoscaler scales in)",
                "utils/util.go:389-407; raycluster_autoscaler_test.go:458-545", hashed=False),
    ClusterRule(_CG + ("scaleStrategy",), _C.SCALE,
                "pods named in workersToDelete are deleted on every pass", _RCC + "1132-1153",
                hashed=False, autoscaled=_C.AUTOSCALER_OWNED),
    ClusterRule(_CG + ("template", "spec", "tolerations"), _C.LATENT,
                "tolerations reach only pods created later and are muted in the Recreate hash",
                "utils/util.go:653-662", hashed=False),
    ClusterRule(_CG + ("template", "spec", "schedulingGates"), _C.LATENT,
                "schedulingGates reach only pods created later and are muted in the Recreate hash",
                "utils/util.go:653-662", hashed=False),
    ClusterRule(_CH + ("template", "spec", "tolerations"), _C.LATENT,
                "tolerations reach only a head pod created later and are muted in the Recreate hash",
                "utils/util.go:653-655", hashed=False),
    ClusterRule(_CH + ("template", "spec", "schedulingGates"), _C.LATENT,
                "schedulingGates reach only a head pod created later and are muted in the Recreate hash",
                "utils/util.go:653-655", hashed=False),
    ClusterRule(("spec", "upgradeStrategy"), _C.OPERATOR_IGNORED,
                "upgradeStrategy is muted in the Recreate hash: it changes only what the next spec "
                "change does",
                "utils/util.go:664; " + _RCC + "1463-1502", hashed=False, since=(1, 6)),
    ClusterRule(("spec", "suspend"), _C.SCALE, "spec.suspend deletes or recreates every pod",
                _RCC + "940-966, 2084-2091"),
    ClusterRule(_CG + ("suspend",), _C.SCALE, "a suspended worker group has its pods deleted",
                _RCC + "1083-1093"),
    ClusterRule(_CG + ("numOfHosts",), _C.SCALE,
                "numOfHosts multiplies the pod count; pods of the old layout are not reconciled",
                _RCC + "1095-1102, 1287-1456; common/pod.go:673-681"),
    ClusterRule(_CG + ("groupName",), _C.SCALE, "a renamed group is a new group; the old pods stay",
                _RCC + "1069-1079"),
    ClusterRule(_CG + ("idleTimeoutSeconds",), _C.NO_OP,
                "the Ray autoscaler reads the group idle timeout from the RayCluster on every iteration",
                "ray autoscaling_config.py (AutoscalingConfigProducer)"),
    ClusterRule(_CG + ("priority",), _C.NO_OP, "the Ray autoscaler reads group priority live",
                "ray autoscaler v2 config.py", since=(1, 7)),
    ClusterRule(("spec", "autoscalerOptions", "idleTimeoutSeconds"), _C.NO_OP,
                "the Ray autoscaler reads idleTimeoutSeconds from the RayCluster on every iteration",
                "ray autoscaling_config.py (AutoscalingConfigProducer)"),
    ClusterRule(("spec", "autoscalerOptions", "upscalingMode"), _C.NO_OP,
                "the Ray autoscaler reads upscalingMode from the RayCluster on every iteration",
                "ray autoscaling_config.py (AutoscalingConfigProducer)"),
    ClusterRule(("spec", "autoscalerOptions"), _C.LATENT,
                "the autoscaler sidecar is part of the head pod: it changes when the head is next built",
                "common/pod.go:242-283"),
    ClusterRule(("spec", "enableInTreeAutoscaling"), _C.LATENT,
                "the autoscaler sidecar is added only when the head pod is built; RBAC is created at once",
                "common/pod.go:242-283; " + _RCC + "1222-1236, 2226-2360"),
    ClusterRule(("spec", "headServiceAnnotations"), _C.OPERATOR_IGNORED,
                "the head Service is created once and never updated", _RCC + "609-655", unapplied=True),
    ClusterRule(_CH + ("headService",), _C.OPERATOR_IGNORED,
                "the head Service is created once and never updated", _RCC + "609-655", unapplied=True),
    ClusterRule(_CH + ("serviceType",), _C.OPERATOR_IGNORED,
                "the head Service is created once and never updated", _RCC + "609-655", unapplied=True),
    ClusterRule(_CH + ("enableIngress",), _C.SIDE_OBJECT,
                "the Ingress is created or updated in place (never deleted when turned off)",
                _RCC + "499-501, 540-606"),
    ClusterRule(_CH + ("ingressOptions",), _C.SIDE_OBJECT, "the Ingress is updated in place",
                _RCC + "540-606", since=(1, 7)),
    ClusterRule(("spec", "networkPolicy"), _C.SIDE_OBJECT,
                "NetworkPolicies are reconciled by their own (gated) controller",
                "networkpolicy_controller.go", since=(1, 7)),
    ClusterRule(("spec", "managedBy"), _C.OPERATOR_IGNORED,
                "another controller named in managedBy takes the RayCluster: KubeRay skips it",
                _RCC + "158-161; utils/util.go:744-749"),
    ClusterRule(("spec",), _C.LATENT,
                "pod-shaping fields are read only when a pod is built: running pods keep the old spec",
                _RCC + "1717-1757, 1765-; common/pod.go"),
    ClusterRule(("metadata", "annotations", "ray.io/ft-enabled"), _C.LATENT,
                "read by the pod builder: reaches only pods created later", "common/pod.go:60-126",
                hashed=False),
    ClusterRule(("metadata", "annotations", "ray.io/overwrite-container-cmd"), _C.LATENT,
                "read by the pod builder: reaches only pods created later", "common/pod.go:60-126",
                hashed=False),
    ClusterRule(("metadata", "annotations", "ray.io/external-storage-namespace"), _C.LATENT,
                "read by the pod builder: reaches only pods created later", "common/pod.go:60-126",
                hashed=False),
    ClusterRule(("apiVersion",), _C.NO_OP, "v1alpha1 and v1 store the same object",
                "ray.io CRD conversion: None", hashed=False),
    ClusterRule((), _C.NO_OP, "RayCluster labels and annotations trigger a reconcile that changes nothing",
                _RCC + "1941-1951", hashed=False),
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
    cluster_rules: tuple[ClusterRule, ...] = ()
    has_cluster_recreate: bool = True  # RayCluster upgradeStrategy.type Recreate (PR #4185, v1.6.0)

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

    def cluster_rule_of(self, schema_path: tuple[str, ...]) -> ClusterRule:
        for rule in self.cluster_rules:
            if schema_path[: len(rule.pattern)] == rule.pattern:
                return rule
        raise AssertionError("the catch-all rule matches every path")  # pragma: no cover

    @property
    def cluster_muted(self) -> tuple[tuple[str, ...], ...]:
        """The paths below a RayCluster's ``spec`` that its Recreate hash clears (the rules with
        ``hashed=False`` below ``spec``), list items as ``"[]"``: ``("workerGroupSpecs", "[]",
        "replicas")``. The hash reads nothing outside the spec."""
        return tuple(r.pattern[1:] for r in self.cluster_rules
                     if not r.hashed and r.pattern[:1] == ("spec",) and len(r.pattern) > 1)

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
        cluster_rules=tuple(r for r in CLUSTER_RULES if r.applies_to(minor)),
        has_cluster_recreate=minor >= (1, 6),
    )


def schema_data(minor: tuple[int, int]) -> tuple[str, str]:
    """The (schema JSON, Go field JSON) of a version; v1.6 reuses v1.7.0's tables."""
    from .data import kuberay_1_7_0 as data

    return data.SCHEMA_JSON, data.GO_TYPES_JSON
