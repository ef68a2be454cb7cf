"""KubeRay's validation of a RayCluster spec, wherever one is written (utils/validation.go, v1.7.0).

:data:`SPEC_RULES` are the failure cases of ``ValidateRayClusterSpec`` and the helpers it
calls, in upstream order (functions in :mod:`.validate_spec` and :mod:`.validate_spec_options`;
``source``: lines of ``validation.go``). The operator runs the same function on a standalone
RayCluster, on a RayService's ``rayClusterConfig`` and on a RayJob's ``rayClusterSpec``, so the
RayService and RayJob tables include these rows. For a standalone RayCluster the controller
adds ``ValidateRayClusterMetadata`` and ``ValidateRayClusterUpgradeOptions``
(raycluster_controller.go:165-210); a failure freezes the cluster (docs/semantics/raycluster.md).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from diffing.hints import Any
from diffing.kube import names
from diffing.kube.paths import Path
from diffing.kube.values import mapping
from diffing.managed import external_manager
from diffing.raycluster import validate_spec as cc
from diffing.raycluster import validate_spec_options as oc
from diffing.raycluster.validation_subject import RCC, OperatorRule, Subject, Violation, is_set
from diffing.versions import DEFAULT, VersionRules, rules_for

Problem = tuple[str, Path, str]  # (code, path, message): what the analysis turns into findings


def _present(value: Any) -> bool:
    return value is not None


_R = OperatorRule
_V = "validation.go:"
_ROCKS = "GCSFaultToleranceEmbeddedStorage"

# ValidateRayClusterSpec (validation.go:103-326) with the helpers it calls, in upstream order.
SPEC_RULES: tuple[OperatorRule, ...] = (
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
)


MAX_CLUSTER_NAME = 53  # constant.go MaxRayClusterNameLength
ORIGINATED_FROM = "ray.io/originated-from-crd"  # constant.go RayOriginatedFromCRDLabelKey

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

    The ValidateRayClusterSpec rules are :data:`SPEC_RULES` (the RayService table's too), run on
    the RayCluster's spec as if it were a ``rayClusterConfig`` (the operator calls the same
    function for both).
    """
    if external_manager(obj) is not None:
        return []  # skipped before validation (RCC:158-161)
    out = [Violation(*v) for v in _cluster_metadata(obj)]
    wrapped = {"metadata": obj.get("metadata"), "spec": {"rayClusterConfig": mapping(obj.get("spec"))}}
    subject = Subject(wrapped, gates or {})
    for rule in SPEC_RULES:
        if not rule.applies_to(minor):
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
    pods (RCC:172-177; docs/semantics/raycluster.md §1.2 "frozen")."""
    if rules is None:
        rules = rules_for(DEFAULT)
    return [(v.code, v.path, v.message)
            for v in check_raycluster(obj, rules.minor, rules.gates(feature_gates))]
