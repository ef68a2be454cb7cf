"""The operator's own validation of a RayService, as a table of rules.

When a rule fails, the operator sets ``Ready=False/ValidationFailed`` and does nothing else
(``rayservice_controller.go:156-171``): the old clusters keep serving and the change is
silently not applied. The analysis reports each failure as an ``error`` finding and predicts
``not-applied``.

:data:`RULES` holds every failure case of KubeRay v1.7.0's ``ValidateRayServiceMetadata``,
``ValidateRayServiceSpec`` and ``ValidateRayClusterSpec`` with the helpers they call, in
upstream order (``source``: lines of ``ray-operator/controllers/ray/utils/validation.go`` at
v1.7.0). ``since`` is the first KubeRay release whose ``validation.go`` carries the check,
so a version's rules are the table filtered by its minor version; ``gate`` names the feature
gate a rule reads (the version's default, overridden by the policy's
``operator.featureGates``).

Upstream stops at the first failure; every failing rule is reported here, because each one
alone makes the operator reject the object. Rules read the object as the API server stores it
(pruned and defaulted), as the operator does.

>>> [v.rule for v in check_rayservice({"metadata": {"name": "Bad_Name"}, "spec": {}})][:2]
['ValidateRayServiceMetadata/name-not-dns1035', 'ValidateRayClusterSpec/head-containers']
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from functools import lru_cache
from typing import Any

from . import clusterchecks as cc
from . import names
from . import optionchecks as oc
from .clusterspec import RCC, Failure, OperatorRule, Subject, Violation, is_set
from .kuberay import KUBERAY_CONTROLLER, VersionRules, rules_for
from .paths import Path
from .values import mapping

MAX_NAME = 47  # constant.go:375-378 MaxRayServiceNameLength = MaxRayClusterNameLength (53) - 6
STRATEGIES = ("NewCluster", "NewClusterWithIncrementalUpgrade", "None")
_TIMEOUT = "ray.io/initializing-timeout"  # constant.go:82
_UPGRADE: Path = ("spec", "upgradeStrategy", "clusterUpgradeOptions")

Problem = tuple[str, Path, str]  # (code, path, message): what the analysis turns into findings


# -- ValidateRayServiceMetadata (validation.go:632-678) ---------------------------------------


def _name_length(s: Subject) -> Iterator[Failure]:
    if len(s.name) > MAX_NAME:
        yield ("metadata", "name"), (
            f"the name has {len(s.name)} characters; KubeRay accepts at most {MAX_NAME} (it appends a "
            "6-character suffix to build RayCluster names)")


def _name_dns(s: Subject) -> Iterator[Failure]:
    bad = names.dns1035_label(s.name)
    if bad:
        yield ("metadata", "name"), f"{s.name!r} {bad}"


def _timeout(s: Subject) -> tuple[str, int | None, int | None]:
    text = s.annotations.get(_TIMEOUT, "")
    ns = names.go_duration_ns(text) if text else None
    return text, ns, names.go_atoi(text) if text and ns is None else None


def _timeout_duration(s: Subject) -> Iterator[Failure]:
    text, ns, _ = _timeout(s)
    if ns is not None and ns <= 0:
        yield ("metadata", "annotations", _TIMEOUT), f"{text!r} must be a positive duration"


def _timeout_seconds(s: Subject) -> Iterator[Failure]:
    text, _, seconds = _timeout(s)
    if seconds is not None and seconds <= 0:
        yield ("metadata", "annotations", _TIMEOUT), f"{text!r} must be a positive number of seconds"


def _timeout_format(s: Subject) -> Iterator[Failure]:
    text, ns, seconds = _timeout(s)
    if text and ns is None and seconds is None:
        yield ("metadata", "annotations", _TIMEOUT), \
            f"{text!r} is neither a Go duration (e.g. '5m') nor a whole number of seconds"


# -- ValidateRayServiceSpec (validation.go:680-749) ---------------------------------------------


def _rs_k8s_auth(s: Subject) -> Iterator[Failure]:
    if oc.k8s_auth(s):
        yield RCC + ("authOptions", "enableK8sTokenAuth"), \
            "Kubernetes token auth (enableK8sTokenAuth) is not supported for a RayService"


def _head_service_name(s: Subject) -> Iterator[Failure]:
    if is_set(mapping(mapping(s.head.get("headService")).get("metadata")).get("name")):
        yield RCC + ("headGroupSpec", "headService", "metadata", "name"), \
            "headService.metadata.name must not be set for a RayService"


def _strategy_type(s: Subject) -> Iterator[Failure]:
    kind = mapping(s.spec.get("upgradeStrategy")).get("type")
    if kind is not None and kind not in STRATEGIES:
        yield ("spec", "upgradeStrategy", "type"), \
            f"upgradeStrategy.type {kind!r} is not one of {', '.join(STRATEGIES)}"


def _deletion_delay(s: Subject) -> Iterator[Failure]:
    delay = s.spec.get("rayClusterDeletionDelaySeconds")
    if isinstance(delay, int) and delay < 0:
        yield ("spec", "rayClusterDeletionDelaySeconds"), f"must not be negative, got {delay}"


def _incremental(s: Subject) -> Mapping[str, Any] | None:
    """The upgrade options when ``IsIncrementalUpgradeEnabled`` (util.go:917-923), else ``None``."""
    strategy = mapping(s.spec.get("upgradeStrategy"))
    if not s.gate("RayServiceIncrementalUpgrade") or strategy.get("type") != STRATEGIES[1]:
        return None
    return mapping(strategy.get("clusterUpgradeOptions"))


def _upgrade_autoscaler(s: Subject) -> Iterator[Failure]:
    if _incremental(s) is not None and not s.autoscaling:
        yield RCC + ("enableInTreeAutoscaling",), \
            "NewClusterWithIncrementalUpgrade requires enableInTreeAutoscaling: true (the Ray autoscaler)"


def _upgrade_options(s: Subject) -> Iterator[Failure]:
    strategy = mapping(s.spec.get("upgradeStrategy"))
    if _incremental(s) is not None and strategy.get("clusterUpgradeOptions") is None:
        yield _UPGRADE, "NewClusterWithIncrementalUpgrade requires clusterUpgradeOptions"


def _options(s: Subject) -> Mapping[str, Any] | None:
    if _incremental(s) is None or mapping(s.spec.get("upgradeStrategy")).get("clusterUpgradeOptions") is None:
        return None
    return _incremental(s)


def _percent(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= 100


def _max_surge(s: Subject) -> Iterator[Failure]:
    opts = _options(s)
    surge = (opts or {}).get("maxSurgePercent", 100)  # the CRD defaults it to 100
    if opts is not None and surge is not None and not _percent(surge):
        yield _UPGRADE + ("maxSurgePercent",), f"maxSurgePercent must be between 0 and 100, got {surge}"


def _step_size(s: Subject) -> Iterator[Failure]:
    opts = _options(s)
    if opts is not None and not _percent(opts.get("stepSizePercent")):
        yield _UPGRADE + ("stepSizePercent",), "stepSizePercent must be set, between 0 and 100"


def _step_over_surge(s: Subject) -> Iterator[Failure]:
    opts = _options(s) or {}
    step, surge = opts.get("stepSizePercent"), opts.get("maxSurgePercent", 100)
    if isinstance(step, int) and isinstance(surge, int) and step > surge:
        yield _UPGRADE + ("stepSizePercent",), \
            f"stepSizePercent ({step}) must not exceed maxSurgePercent ({surge})"


def _interval(s: Subject) -> Iterator[Failure]:
    opts = _options(s)
    interval = (opts or {}).get("intervalSeconds")
    if opts is not None and not (isinstance(interval, int) and interval > 0):
        yield _UPGRADE + ("intervalSeconds",), "intervalSeconds must be set and greater than 0"


def _gateway_class(s: Subject) -> Iterator[Failure]:
    opts = _options(s)
    if opts is not None and not is_set(opts.get("gatewayClassName")):
        yield _UPGRADE + ("gatewayClassName",), "NewClusterWithIncrementalUpgrade requires gatewayClassName"


def _present(value: Any) -> bool:
    return value is not None


_R = OperatorRule
_V = "validation.go:"
_INC = "RayServiceIncrementalUpgrade"
_ROCKS = "GCSFaultToleranceEmbeddedStorage"

RULES: tuple[OperatorRule, ...] = (
    _R("ValidateRayServiceMetadata/name-too-long", _V + "633-635", (1, 4), _name_length,
       code="name-too-long"),
    _R("ValidateRayServiceMetadata/name-not-dns1035", _V + "636-638", (1, 4), _name_dns),
    _R("validateInitializingTimeout/non-positive-duration", _V + "662-667", (1, 5), _timeout_duration),
    _R("validateInitializingTimeout/non-positive-seconds", _V + "670-675", (1, 5), _timeout_seconds),
    _R("validateInitializingTimeout/invalid-format", _V + "677", (1, 5), _timeout_format),
    _R("ValidateRayServiceSpec/k8s-token-auth", _V + "681-683", (1, 6), _rs_k8s_auth),
    # ValidateRayClusterSpec, called from ValidateRayServiceSpec (685) with the RS annotations.
    _R("ValidateRayClusterSpec/head-containers", _V + "104-106", (1, 3), cc.head_containers),
    _R("validateRayGroupResources/both-set", _V + "60-69, 108, 139", (1, 5), cc.group_resources),
    _R("validateRayGroupLabels/ray-start-params-labels", _V + "73-75", (1, 5), cc.group_start_labels),
    _R("validateRayGroupLabels/label-key", _V + "80-85", (1, 5), cc.group_label_keys),
    _R("validateRayGroupLabels/label-value", _V + "87-92", (1, 5), cc.group_label_values),
    _R("ValidateRayClusterSpec/worker-containers", _V + "119-121", (1, 3), cc.worker_containers),
    _R("ValidateRayClusterSpec/min-max-unset", _V + "125-127", (1, 6), cc.replica_bounds_set),
    _R("ValidateRayClusterSpec/negative-min-replicas", _V + "128-130", (1, 6), cc.negative("minReplicas")),
    _R("ValidateRayClusterSpec/negative-max-replicas", _V + "131-133", (1, 6), cc.negative("maxReplicas")),
    _R("ValidateRayClusterSpec/min-over-max", _V + "134-138", (1, 0), cc.min_over_max),
    _R("validateWorkerGroupIdleTimeout/negative", _V + "1012-1014", (1, 6), cc.idle_negative),
    _R("validateWorkerGroupIdleTimeout/needs-v2", _V + "1016-1026", (1, 6), cc.idle_needs_v2),
    _R("validateWorkerGroupPriority/ray-version", _V + "1119-1130", (1, 7), cc.priority_version),
    _R("validateWorkerGroupPriority/needs-v2", _V + "1132-1141", (1, 7), cc.priority_needs_v2),
    _R("ValidateRayClusterSpec/ft-annotation-and-options", _V + "153-156", (1, 3), cc.ft_annotation),
    _R("ValidateRayClusterSpec/redis-address-without-ft", _V + "158-164", (1, 3),
       cc.redis_address_without_ft),
    _R("ValidateRayClusterSpec/redis-password-param", _V + "168-171", (1, 3),
       cc.with_ft_param("redis-password", "gcsFaultToleranceOptions.redisPassword")),
    _R("ValidateRayClusterSpec/redis-password-env", _V + "173-176", (1, 3),
       cc.with_ft_env("REDIS_PASSWORD", "gcsFaultToleranceOptions.redisPassword")),
    _R("ValidateRayClusterSpec/redis-address-env", _V + "178-181", (1, 3),
       cc.with_ft_env("RAY_REDIS_ADDRESS", "gcsFaultToleranceOptions.redisAddress")),
    _R("ValidateRayClusterSpec/external-storage-namespace", _V + "183-186", (1, 3), cc.ft_storage_namespace),
    _R("validateGcsFaultToleranceBackend/rocksdb-gate", _V + "336-338", (1, 7), cc.rocksdb_gate, gate=_ROCKS),
    _R("validateGcsFaultToleranceBackend/rocksdb-redis-address", _V + "339-341", (1, 7),
       cc.rocksdb_forbids("redisAddress", is_set)),
    _R("validateGcsFaultToleranceBackend/rocksdb-redis-username", _V + "342-344", (1, 7),
       cc.rocksdb_forbids("redisUsername", _present)),
    _R("validateGcsFaultToleranceBackend/rocksdb-redis-password", _V + "345-347", (1, 7),
       cc.rocksdb_forbids("redisPassword", _present)),
    _R("validateGcsFaultToleranceBackend/rocksdb-external-storage-namespace", _V + "348-350", (1, 7),
       cc.rocksdb_forbids("externalStorageNamespace", is_set)),
    _R("validateGcsFaultToleranceBackend/rocksdb-claim-name", _V + "351-355", (1, 7), cc.rocksdb_claim),
    _R("validateGcsFaultToleranceBackend/rocksdb-storage-env", _V + "356-358", (1, 7), cc.rocksdb_env),
    _R("validateGcsFaultToleranceBackend/rocksdb-reserved-mount", _V + "359-363", (1, 7), cc.rocksdb_mounts),
    _R("validateGcsFaultToleranceBackend/rocksdb-reserved-volume", _V + "364-368", (1, 7),
       cc.rocksdb_volumes),
    _R("validateGcsFaultToleranceBackend/redis-storage", _V + "369-372", (1, 7), cc.redis_storage),
    _R("ValidateRayClusterSpec/redis-username", _V + "192-195", (1, 3), cc.redis_username),
    _R("ValidateRayClusterSpec/suspend-needs-gate", _V + "197-203", (1, 4), cc.suspend_gate,
       gate="RayJobDeletionPolicy"),
    _R("ValidateRayClusterSpec/v2-env-without-autoscaling", _V + "206-212", (1, 5),
       cc.v2_env_without_autoscaling),
    _R("ValidateRayClusterSpec/suspend-with-autoscaling", _V + "215-220", (1, 4), cc.suspend_autoscaling),
    _R("ValidateRayClusterSpec/version-and-v2-env", _V + "222-224", (1, 4), cc.version_and_env),
    _R("ValidateRayClusterSpec/v2-head-restart-policy", _V + "226-229", (1, 4), cc.v2_head_restart),
    _R("ValidateRayClusterSpec/v2-worker-restart-policy", _V + "231-235", (1, 4), cc.v2_worker_restart),
    _R("ValidateRayClusterSpec/autoscaler-idle-timeout-negative", _V + "241-245", (1, 6), cc.autoscaler_idle),
    _R("ValidateRayClusterSpec/autoscaler-start-cmd-env", _V + "252-258", (1, 7), cc.autoscaler_start_cmd),
    _R("ValidateRayClusterSpec/history-server-gate", _V + "260-263", (1, 7), oc.history_gate,
       gate="RayClusterHistoryServer"),
    _R("ValidateRayClusterSpec/collector-options-required", _V + "264-266", (1, 7), oc.collector_required),
    _R("validateCollectorOptions/image", _V + "1033-1035", (1, 7), oc.collector_image),
    _R("validateCollectorOptions/managed-env", _V + "1058-1062", (1, 7), oc.collector_forbidden_env),
    _R("validateCollectorOptions/storage-backend", _V + "1064-1106", (1, 7), oc.collector_backend),
    _R("ValidateRayClusterSpec/collector-container-name", _V + "270-281", (1, 7),
       oc.collector_container_name),
    _R("ValidateRayClusterSpec/token-auth-ray-version", _V + "284-298", (1, 6), oc.token_version),
    _R("ValidateRayClusterSpec/k8s-token-auth-ray-version", _V + "300-304", (1, 6), oc.k8s_token_version),
    _R("ValidateRayClusterSpec/k8s-token-auth-secret-name", _V + "305-307", (1, 6), oc.k8s_token_secret),
    _R("ValidateRayClusterSpec/k8s-token-auth-without-token-mode", _V + "309-312", (1, 6), oc.k8s_token_mode),
    _R("ValidateRayClusterSpec/network-policy-gate", _V + "316-318", (1, 7), oc.network_gate,
       gate="RayClusterNetworkPolicy"),
    _R("validateNetworkPolicy/rules-for-mode", _V + "392-411, 430-437", (1, 7), oc.network_rules_mode),
    _R("validateNetworkPolicy/group-name-dns1123", _V + "422-429", (1, 7), oc.network_group_names),
    _R("validateNetworkPolicy/unknown-group", _V + "438-440", (1, 7), oc.network_unknown_groups),
    _R("ValidateRayClusterSpec/tls-gate", _V + "323-325", (1, 7), oc.tls_gate, gate="RayClusterMTLS"),
    _R("validateTLSOptions/managed-env", _V + "453-463, 469-478", (1, 7), oc.tls_env, gate="RayClusterMTLS"),
    _R("validateTLSOptions/reserved-mount", _V + "464-466, 479-481, 510-524", (1, 7), oc.tls_mounts,
       gate="RayClusterMTLS"),
    _R("validateTLSOptions/autoscaler", _V + "485-505", (1, 7), oc.tls_autoscaler, gate="RayClusterMTLS"),
    # Back in ValidateRayServiceSpec.
    _R("ValidateRayServiceSpec/head-service-name", _V + "689-691", (1, 3), _head_service_name),
    _R("ValidateRayServiceSpec/upgrade-type", _V + "694-700", (1, 5), _strategy_type),
    _R("ValidateRayServiceSpec/deletion-delay-negative", _V + "702-705", (1, 5), _deletion_delay),
    _R("ValidateClusterUpgradeOptions/autoscaler-required", _V + "718-720", (1, 5), _upgrade_autoscaler,
       gate=_INC),
    _R("ValidateClusterUpgradeOptions/options-required", _V + "722-725", (1, 5), _upgrade_options, gate=_INC),
    _R("ValidateClusterUpgradeOptions/max-surge-range", _V + "728-730", (1, 5), _max_surge, gate=_INC),
    _R("ValidateClusterUpgradeOptions/step-size-range", _V + "732-734", (1, 5), _step_size, gate=_INC),
    _R("ValidateClusterUpgradeOptions/step-over-surge", _V + "736-738", (1, 7), _step_over_surge, gate=_INC),
    _R("ValidateClusterUpgradeOptions/interval", _V + "740-742", (1, 5), _interval, gate=_INC),
    _R("ValidateClusterUpgradeOptions/gateway-class", _V + "744-746", (1, 5), _gateway_class, gate=_INC),
    # Enforced by the RayCluster controller on every RayCluster built from the RayService
    # (raycluster_controller.go:205-210): the RayService is accepted, the cluster never gets pods.
    _R("ValidateRayClusterUpgradeOptions/created-by-rayservice", _V + "42-56", (1, 6),
       oc.cluster_upgrade_strategy, code="cluster-upgrade-strategy-set", scope="raycluster"),
)

# Functions of validation.go that never see a RayService manifest, and why (for the docs/tests).
NOT_APPLICABLE = {
    "ValidateRayClusterStatus": "reads RayCluster status conditions, which a manifest does not carry",
    "ValidateRayClusterMetadata": "names the operator-built RayCluster (RayService name + 6 characters): "
                                  "covered by ValidateRayServiceMetadata/name-too-long",
    "ValidateRayJobStatus": "RayJob only", "ValidateRayJobMetadata": "RayJob only",
    "ValidateRayJobSpec": "RayJob only", "validateDeletionConfiguration": "RayJob only",
    "validateDeletionRules": "RayJob only", "validateDeletionCondition": "RayJob only",
    "validateTTLConsistency": "RayJob only", "validateLegacyDeletionPolicies": "RayJob only",
    "ValidateRayCronJobSpec": "RayCronJob only",
}


@lru_cache(maxsize=32)  # RULES is constant: the selection is the same on every analysis
def rules_for_minor(minor: tuple[int, int], scope: str = "rayservice") -> tuple[OperatorRule, ...]:
    return tuple(r for r in RULES if r.scope == scope and r.applies_to(minor))


def external_manager(obj: Mapping[str, Any] | None) -> str | None:
    """``spec.managedBy`` when it names another controller (util.go:744-749), else ``None``."""
    value = mapping(mapping(obj).get("spec")).get("managedBy")
    if value is None or value == KUBERAY_CONTROLLER:
        return None
    return str(value)


def check_rayservice(obj: Mapping[str, Any], minor: tuple[int, int] = (1, 7),
                     gates: Mapping[str, bool] | None = None, scope: str = "rayservice") -> list[Violation]:
    """Every rule of ``minor`` that ``obj`` (a pruned, defaulted RayService) fails."""
    if scope == "rayservice" and external_manager(obj) is not None:
        return []  # Reconcile returns before validating (rayservice_controller.go:121-124)
    subject = Subject(obj, gates or {})
    return [Violation(rule.id, rule.code, path, f"{message} (KubeRay {rule.id.split('/')[0]})")
            for rule in rules_for_minor(minor, scope) for path, message in rule.check(subject)]


def validate_rayservice(obj: Mapping[str, Any], rules: VersionRules | None = None, *,
                        feature_gates: Mapping[str, bool] | None = None,
                        incremental_gate: bool | None = None) -> list[Problem]:
    """Problems that make the operator reject ``obj`` (a defaulted RayService).

    ``rules`` chooses the KubeRay version (default: the newest); ``feature_gates`` override
    that version's gate defaults, ``incremental_gate`` the RayServiceIncrementalUpgrade one.
    """
    if rules is None:
        rules = rules_for("1.7")
    gates = rules.gates(feature_gates)
    if incremental_gate is not None:
        gates["RayServiceIncrementalUpgrade"] = incremental_gate
    return [(v.code, v.path, v.message) for v in check_rayservice(obj, rules.minor, gates)]


# -- a standalone RayCluster (raycluster_controller.go:165-210) ---------------------------------

MAX_CLUSTER_NAME = 53  # constant.go MaxRayClusterNameLength
ORIGINATED_FROM = "ray.io/originated-from-crd"  # constant.go RayOriginatedFromCRDLabelKey

# The ValidateRayClusterSpec rules (and the helpers it calls) of the table above: the same
# checks the RayCluster controller runs on a RayCluster written by hand (RCC:172-177).
_CLUSTER_SPEC_FUNCTIONS = ("ValidateRayClusterSpec/", "validateRayGroup", "validateWorkerGroup",
                           "validateGcsFaultToleranceBackend", "validateCollectorOptions",
                           "validateNetworkPolicy", "validateTLSOptions")


def _cluster_metadata(obj: Mapping[str, Any]) -> Iterator[tuple[str, str, Path, str]]:
    name = str(mapping(obj.get("metadata")).get("name") or "")
    if name.endswith("*"):
        return  # generateName: the server picks the name
    if len(name) > MAX_CLUSTER_NAME:
        yield ("ValidateRayClusterMetadata/name-too-long", "name-too-long", ("metadata", "name"),
               f"the name has {len(name)} characters; KubeRay accepts at most {MAX_CLUSTER_NAME} "
               "(KubeRay ValidateRayClusterMetadata, validation.go:32-35)")
    bad = names.dns1035_label(name)
    if bad:
        yield ("ValidateRayClusterMetadata/name-not-dns1035", "validation-failed", ("metadata", "name"),
               f"{name!r} {bad} (KubeRay ValidateRayClusterMetadata, validation.go:36-38)")


def _cluster_upgrade_options(obj: Mapping[str, Any]) -> Iterator[tuple[str, str, Path, str]]:
    strategy = mapping(mapping(obj.get("spec")).get("upgradeStrategy")).get("type")
    if strategy is None:
        return
    creator = mapping(mapping(obj.get("metadata")).get("labels")).get(ORIGINATED_FROM)
    if creator in ("RayJob", "RayService"):
        yield ("ValidateRayClusterUpgradeOptions/created-by-owner", "validation-failed",
               ("spec", "upgradeStrategy", "type"),
               f"upgradeStrategy is set on a RayCluster labelled {ORIGINATED_FROM}={creator}: the "
               "operator accepts it only on a RayCluster created directly "
               "(KubeRay ValidateRayClusterUpgradeOptions, validation.go:49-55)")


def check_raycluster(obj: Mapping[str, Any], minor: tuple[int, int] = (1, 7),
                     gates: Mapping[str, bool] | None = None) -> list[Violation]:
    """Every check the RayCluster controller runs before reconciling ``obj`` (a pruned,
    defaulted RayCluster) that it fails, with paths into the RayCluster.

    The ValidateRayClusterSpec rules are the RayService table's own, run on the RayCluster's
    spec as if it were a ``rayClusterConfig`` (the operator calls the same function for both).
    """
    if external_manager(obj) is not None:
        return []  # skipped before validation (RCC:158-161)
    out = [Violation(*v) for v in _cluster_metadata(obj)]
    wrapped = {"metadata": obj.get("metadata"), "spec": {"rayClusterConfig": mapping(obj.get("spec"))}}
    subject = Subject(wrapped, gates or {})
    for rule in RULES:
        if rule.scope != "rayservice" or not rule.applies_to(minor) \
                or not rule.id.startswith(_CLUSTER_SPEC_FUNCTIONS):
            continue
        for path, message in rule.check(subject):
            if path[: len(RCC)] == RCC:
                path = ("spec",) + tuple(path[len(RCC):])
            out.append(Violation(rule.id, rule.code, path,
                                 f"{message} (KubeRay {rule.id.split('/')[0]})"))
    if minor >= (1, 6):
        out.extend(Violation(*v) for v in _cluster_upgrade_options(obj))
    return out


def validate_raycluster(obj: Mapping[str, Any], rules: VersionRules | None = None, *,
                        feature_gates: Mapping[str, bool] | None = None) -> list[Problem]:
    """Problems that freeze a standalone RayCluster (``obj`` pruned and defaulted): the
    operator emits an ``InvalidRayClusterSpec`` event and reconciles nothing, not even failed
    pods (RCC:172-177; raycluster-semantics.md §1.2 "frozen")."""
    if rules is None:
        rules = rules_for("1.7")
    return [(v.code, v.path, v.message)
            for v in check_raycluster(obj, rules.minor, rules.gates(feature_gates))]
