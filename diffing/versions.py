"""The KubeRay versions the analysis knows, the default one, and what differs between them.

The only place that names versions: :data:`SUPPORTED` minors, :data:`DEFAULT` (what every
entry point uses when none is given), each minor's feature-gate defaults, and
:func:`rules_for`, which filters every kind's rule table to one version. docs/extending.md
says how to add a version.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import lru_cache

from diffing.errors import UnsupportedVersionError
from diffing.raycluster.rules import CLUSTER_RULES, ClusterRule
from diffing.rayservice.rules import MUTED, RULES, Rule
from diffing.record import Record, set_field

DEFAULT = "1.7.0"


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


class VersionRules(Record):
    """The rules and operator defaults of one KubeRay minor version."""

    __slots__ = ("version", "minor", "rules", "incremental_gate_default", "has_rayservice_suspend",
                 "cluster_suspend_in_place", "cluster_rules", "has_cluster_recreate")

    version: str
    minor: tuple[int, int]
    rules: tuple[Rule, ...]
    incremental_gate_default: bool
    has_rayservice_suspend: bool
    cluster_suspend_in_place: bool
    cluster_rules: tuple[ClusterRule, ...]
    has_cluster_recreate: bool  # RayCluster upgradeStrategy.type Recreate (PR #4185, v1.6.0)

    def __init__(self, version: str, minor: tuple[int, int], rules: tuple[Rule, ...],
                 incremental_gate_default: bool, has_rayservice_suspend: bool,
                 cluster_suspend_in_place: bool, cluster_rules: tuple[ClusterRule, ...] = (),
                 has_cluster_recreate: bool = True) -> None:
        set_field(self, "version", version)
        set_field(self, "minor", minor)
        set_field(self, "rules", rules)
        set_field(self, "incremental_gate_default", incremental_gate_default)
        set_field(self, "has_rayservice_suspend", has_rayservice_suspend)
        set_field(self, "cluster_suspend_in_place", cluster_suspend_in_place)
        set_field(self, "cluster_rules", cluster_rules)
        set_field(self, "has_cluster_recreate", has_cluster_recreate)

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
    """The (schema JSON, Go field JSON) of a version: its own CRD's schema, so the fields an
    older CRD does not have are pruned and its defaults applied (v1.6.2's has no GCS FT
    ``backend``, no ``networkPolicy``, no RayService ``suspend``, and no default for a worker
    group's ``priority``). v1.6 encodes with v1.7.0's Go field table: the fields only v1.7.0's
    structs have are exactly the ones v1.6's CRD prunes."""
    if minor == (1, 6):
        from diffing.data import kuberay_1_6_2 as data
    else:
        from diffing.data import kuberay_1_7_0 as data  # type: ignore[no-redef]
    return data.SCHEMA_JSON, data.GO_TYPES_JSON
