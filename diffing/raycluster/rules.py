"""What the RayCluster controller does with a change to a standalone RayCluster, as data.

One table, first match wins, most specific first (docs/semantics/raycluster.md explains each
family; citations are KubeRay v1.7.0 ``ray-operator/controllers/ray/``).
"""

from __future__ import annotations

from enum import StrEnum

from diffing.record import Record, set_field


class ClusterCategory(StrEnum):
    """What a standalone RayCluster change is (docs/semantics/raycluster.md §3, §9)."""

    AUTOSCALER_OWNED = "autoscaler-owned"
    OPERATOR_IGNORED = "operator-ignored"
    SCALE = "scale"
    LATENT = "latent"
    RECREATE = "recreate"
    SIDE_OBJECT = "side-object"
    NO_OP = "no-op"


class ClusterRule(Record):
    """A standalone RayCluster's change under ``pattern`` (a schema path from the object root).

    ``category`` is what it is under the default strategy; ``hashed`` says the Recreate hash
    covers it (docs/semantics/raycluster.md §3.3), which makes it ``recreate`` under
    ``upgradeStrategy.type: Recreate``; ``autoscaled`` replaces the category when in-tree
    autoscaling is on; ``unapplied`` marks a change the operator never carries out.
    """

    __slots__ = ("pattern", "category", "reason", "source", "hashed", "autoscaled", "unapplied", "since",
                 "until")

    pattern: tuple[str, ...]
    category: ClusterCategory
    reason: str
    source: str
    hashed: bool
    autoscaled: ClusterCategory | None
    unapplied: bool
    since: tuple[int, int]
    until: tuple[int, int] | None

    def __init__(self, pattern: tuple[str, ...], category: ClusterCategory, reason: str, source: str,
                 hashed: bool = True, autoscaled: ClusterCategory | None = None, unapplied: bool = False,
                 since: tuple[int, int] = (1, 0), until: tuple[int, int] | None = None) -> None:
        set_field(self, "pattern", pattern)
        set_field(self, "category", category)
        set_field(self, "reason", reason)
        set_field(self, "source", source)
        set_field(self, "hashed", hashed)
        set_field(self, "autoscaled", autoscaled)
        set_field(self, "unapplied", unapplied)
        set_field(self, "since", since)
        set_field(self, "until", until)

    def applies_to(self, version: tuple[int, int]) -> bool:
        return self.since <= version and (self.until is None or version < self.until)


# rayVersion reaches a pod only through the choice of health check: from this Ray version on, the
# probes KubeRay injects (where the Ray container sets none) call one HTTP endpoint instead of a
# wget command (common/pod.go:721-730, 743, 928; the same in v1.6.2). docs/semantics/raycluster.md §3.2.
UNIFIED_HEALTH_CHECK_SINCE = (2, 53, 0)

# Fields whose unset value the operator reads as a default when it builds pods: writing that
# default where the field was unset (or removing it) changes no pod.
# gcsFaultToleranceOptions.backend: GetGcsFaultToleranceBackend, utils/util.go:771-777.
READ_AS_DEFAULT: dict[tuple[str, ...], str] = {
    ("spec", "gcsFaultToleranceOptions", "backend"): "redis",
}

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
    ClusterRule(("apiVersion",), _C.NO_OP,
                "stored as v1 either way: what a v1alpha1 write drops or defaults shows in the spec",
                "ray.io CRD conversion: None (customresource_handler.go:1357-1384)", hashed=False),
    ClusterRule((), _C.NO_OP, "RayCluster labels and annotations trigger a reconcile that changes nothing",
                _RCC + "1941-1951", hashed=False),
)
