"""What a KubeRay operator of one version does, on its first reconcile, with objects an operator of
another version left behind: the rules as data, each bounded by the versions that have it.

:func:`first_reconcile_rules` filters :data:`FIRST_RECONCILE` to the new operator's minor (as
:func:`diffing.versions.rules_for` filters the kinds' tables); :data:`BEHAVIOUR` lists the field
behaviours that differ between minors, each with the minor that brought it. The citations are
to KubeRay at the tag named (docs/operator-upgrade.md has the longer story;
docs/semantics/rayservice.md §6 row 43 and docs/semantics/raycluster.md §8).
"""

from __future__ import annotations

from diffing.hints import Any
from diffing.record import Record, set_field

# Keys of FIRST_RECONCILE.
SERVICE_ACTIVE_IN_PLACE = "service-active-in-place"
SERVICE_PENDING_BY_HASH = "service-pending-by-hash"
CLUSTER_RECREATE_GUARD = "cluster-recreate-version-guard"
SERVE_RESUBMITTED = "serve-resubmitted"
JOB_CLUSTER_UNCOMPARED = "job-cluster-not-compared"


class UpgradeRule(Record):
    """One thing the new operator does on its first reconcile, in the minors that do it."""

    __slots__ = ("key", "text", "source", "since", "until")

    key: str
    text: str
    source: str
    since: tuple[int, int]
    until: tuple[int, int] | None  # exclusive

    def __init__(self, key: str, text: str, source: str, since: tuple[int, int] = (1, 0),
                 until: tuple[int, int] | None = None) -> None:
        set_field(self, "key", key)
        set_field(self, "text", text)
        set_field(self, "source", source)
        set_field(self, "since", since)
        set_field(self, "until", until)

    def applies_to(self, minor: tuple[int, int]) -> bool:
        return self.since <= minor and (self.until is None or minor < self.until)


FIRST_RECONCILE: tuple[UpgradeRule, ...] = (
    UpgradeRule(SERVICE_ACTIVE_IN_PLACE,
                "the active RayCluster carries another ray.io/kuberay-version, so the operator rewrites "
                "it in place from the RayService's spec (new version and hash annotations) before "
                "comparing any hash: no new cluster, running pods stay",
                "rayservice_controller.go:1363-1367, 1221-1233 (v1.7.0); :1132-1136 (v1.6.2); "
                "kuberay PR #2320, first released in v1.2.0", since=(1, 2)),
    UpgradeRule(SERVICE_PENDING_BY_HASH,
                "a pending RayCluster (a zero-downtime upgrade in progress) is not version-checked: it "
                "is compared by hash alone, so a hash that differs under the new operator prepares "
                "another pending cluster",
                "rayservice_controller.go:1356-1361, 1420-1433 (v1.7.0)"),
    UpgradeRule(CLUSTER_RECREATE_GUARD,
                "upgradeStrategy Recreate: the head pod carries another ray.io/kuberay-version, so the "
                "operator rewrites its hash and version annotations and recreates no pod",
                "raycluster_controller.go:1481-1494 (v1.7.0); :1168-1178 (v1.6.2)", since=(1, 6)),
    UpgradeRule(SERVE_RESUBMITTED,
                "every Serve config is submitted again, unchanged: the cache of submitted configs lives "
                "in the operator's memory (a plain restart does the same)",
                "rayservice_controller.go:61, 1551-1555, 1896-1925 (v1.7.0)"),
    UpgradeRule(JOB_CLUSTER_UNCOMPARED,
                "a RayJob's RayCluster is not compared with the RayJob's spec after it was created: "
                "nothing is rebuilt",
                "docs/semantics/rayjob.md §7.1"),
)


def first_reconcile_rules(minor: tuple[int, int]) -> dict[str, UpgradeRule]:
    """The rules the operator of ``minor`` follows, by key."""
    return {r.key: r for r in FIRST_RECONCILE if r.applies_to(minor)}


class Behaviour(Record):
    """A behaviour a minor brought (``since``), for objects where ``path`` holds ``equals``
    (``None``: any value; ``()``: every object of ``kind``). ``gate``: it needs that feature
    gate, which the judge checks under both versions."""

    __slots__ = ("kind", "since", "path", "equals", "gate", "text", "source")

    kind: str
    since: tuple[int, int]
    path: tuple[str, ...]
    equals: Any
    gate: str | None
    text: str
    source: str

    def __init__(self, kind: str, since: tuple[int, int], path: tuple[str, ...], equals: Any,
                 text: str, source: str, gate: str | None = None) -> None:
        set_field(self, "kind", kind)
        set_field(self, "since", since)
        set_field(self, "path", path)
        set_field(self, "equals", equals)
        set_field(self, "gate", gate)
        set_field(self, "text", text)
        set_field(self, "source", source)


INCREMENTAL = "NewClusterWithIncrementalUpgrade"

BEHAVIOUR: tuple[Behaviour, ...] = (
    Behaviour("RayService", (1, 7), ("spec", "upgradeStrategy", "type"), INCREMENTAL,
              "the incremental upgrade runs: KubeRay builds a Gateway, an HTTPRoute and a Serve "
              "Service per cluster, and its in-place rewrite of the active cluster clears every worker "
              "group's replicas, which the API server sets back to the CRD default 0: each group drops "
              "to its minReplicas until the autoscaler scales it again",
              "pkg/features/features.go (RayServiceIncrementalUpgrade Beta in v1.7.0, Alpha/off in "
              "v1.6.2); rayservice_controller.go:1523-1531; utils/util.go:389-406 (v1.7.0)",
              gate="RayServiceIncrementalUpgrade"),
    Behaviour("RayCluster", (1, 7), ("spec", "headGroupSpec", "enableIngress"), True,
              "the head Ingress is kept up to date in place (v1.6 created it once and never updated it)",
              "raycluster_controller.go:540-606 (v1.7.0); :491-520 (v1.6.2)"),
    Behaviour("RayJob", (1, 7), (), None,
              "a job whose status the dashboard cannot report for RAYJOB_STATUS_CHECK_TIMEOUT_SECONDS "
              "(default 300) becomes Failed and is not retried",
              "rayjob_controller.go:262-264, 542-551, 1336-1355 (v1.7.0)"),
)

# About the operator as a whole, not one object.
GENERAL: tuple[Behaviour, ...] = (
    Behaviour("*", (1, 7), (), None,
              "events move from core/v1 to events.k8s.io/v1 (same reasons): anything that watches "
              "KubeRay's events must read the new API",
              "raycluster_controller.go:60, 70, 94 (v1.7.0); docs/semantics/raycluster.md §8"),
)
