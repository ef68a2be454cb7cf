"""KubeRay v1.7.0's own validation (utils/validation.go), case by case.

Every row is a case of the upstream unit tests (``validation_test.go``, named
``<upstream test function>: <upstream case name>``) or, where upstream has no test, of the
upstream function itself (``<function>: <case>``). Like the upstream tests, the rules see the
object as written (no CRD defaulting) with the feature gates the case sets, and each case
compares the failures of the functions under test: the exact set of rule ids that fail.
"""

from __future__ import annotations

import copy
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from diffing.engine import tables
from diffing.kube.paths import format_path
from diffing.rayservice.validation import (
    NOT_APPLICABLE,
    RULES,
    check_rayservice,
    rules_for_minor,
    validate_rayservice,
)
from diffing.versions import GATE_DEFAULTS

GATES_17 = GATE_DEFAULTS[(1, 7)]
CLUSTER_FUNCS = ("ValidateRayClusterSpec", "validateRayGroupResources", "validateRayGroupLabels",
                 "validateWorkerGroupIdleTimeout", "validateWorkerGroupPriority",
                 "validateGcsFaultToleranceBackend", "validateCollectorOptions", "validateNetworkPolicy",
                 "validateTLSOptions")
SERVICE_FUNCS = CLUSTER_FUNCS + ("ValidateRayServiceSpec", "ValidateClusterUpgradeOptions")
META_FUNCS = ("ValidateRayServiceMetadata", "validateInitializingTimeout")


def container(name: str | None = None, env: dict[str, Any] | None = None, mounts: list[Any] | None = None
              ) -> dict[str, Any]:
    c: dict[str, Any] = {} if name is None else {"name": name}
    if env:
        c["env"] = [{"name": k, **({"valueFrom": v} if isinstance(v, dict) else {"value": v})}
                    for k, v in env.items()]
    if mounts:
        c["volumeMounts"] = mounts
    return c


def template(*containers: dict[str, Any], restart: str | None = None, volumes: list[Any] | None = None
             ) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": list(containers)}
    if restart:
        spec["restartPolicy"] = restart
    if volumes:
        spec["volumes"] = volumes
    return {"spec": spec}


def wg(name: str = "worker-group", lo: int | None = 0, hi: int | None = 5, tpl: dict[str, Any] | None = None,
       **extra: Any) -> dict[str, Any]:
    g: dict[str, Any] = {"groupName": name, "template": tpl or template(container())}
    if lo is not None:
        g["minReplicas"] = lo
    if hi is not None:
        g["maxReplicas"] = hi
    g.update(extra)
    return g


def rs(rcc: dict[str, Any] | None = None, annotations: dict[str, str] | None = None, name: str = "rs",
       head: dict[str, Any] | None = None, **spec: Any) -> dict[str, Any]:
    """A RayService around ``rcc``; the head defaults to one unnamed container (podTemplateSpec)."""
    cluster = {"headGroupSpec": head if head is not None else {"template": template(container())}}
    cluster.update(rcc or {})
    meta: dict[str, Any] = {"name": name}
    if annotations is not None:
        meta["annotations"] = annotations
    return {"metadata": meta, "spec": {"rayClusterConfig": cluster, **spec}}


def head(env: dict[str, Any] | None = None, params: dict[str, str] | None = None, restart: str | None = None,
         **extra: Any) -> dict[str, Any]:
    h: dict[str, Any] = {"template": template(container(env=env), restart=restart)}
    if params is not None:
        h["rayStartParams"] = params
    h.update(extra)
    return h


@dataclass
class Case:
    id: str
    obj: dict[str, Any]
    fails: set[str]
    gates: dict[str, bool] = field(default_factory=dict)
    funcs: tuple[str, ...] = CLUSTER_FUNCS
    minor: tuple[int, int] = (1, 7)
    scope: str = "rayservice"


P = "validateGcsFaultToleranceBackend/"
C = "ValidateRayClusterSpec/"
ROCKS = {"GCSFaultToleranceEmbeddedStorage": True}
REDIS = "RAY_REDIS_ADDRESS"
V2 = "RAY_enable_autoscaler_v2"
GEN = "KUBERAY_GEN_AUTOSCALER_START_CMD"


def gcs(**opts: Any) -> dict[str, Any]:
    return {"gcsFaultToleranceOptions": opts}


def v2(version: str | None = "v2", **opts: Any) -> dict[str, Any]:
    return {"autoscalerOptions": ({"version": version} if version else {}) | opts}


AUTO = {"enableInTreeAutoscaling": True}
AS = "TestValidateRayClusterSpecAutoscaler: "
RES = "TestValidateRayClusterSpec_Resources: "
T = "TestValidateRayClusterSpecGcsFaultToleranceOptions: "

CASES = [
    # -- TestValidateRayClusterSpecGcsFaultToleranceOptions (gate GCSFaultToleranceEmbeddedStorage on) --
    Case(T + "ray.io/ft-enabled is set to false and GcsFaultToleranceOptions is set",
         rs(gcs(), {"ray.io/ft-enabled": "false"}), {C + "ft-annotation-and-options"}, ROCKS),
    Case(T + "ray.io/ft-enabled is set to true and GcsFaultToleranceOptions is set",
         rs(gcs(), {"ray.io/ft-enabled": "true"}), {C + "ft-annotation-and-options"}, ROCKS),
    Case(T + "ray.io/ft-enabled is not set and GcsFaultToleranceOptions is set",
         rs(gcs(redisAddress="redis:6379")), set(), ROCKS),
    Case(T + "ray.io/ft-enabled is not set and GcsFaultToleranceOptions is not set", rs(), set(), ROCKS),
    Case(T + "ray.io/ft-enabled is set to false and RAY_REDIS_ADDRESS is set",
         rs(annotations={"ray.io/ft-enabled": "false"}, head=head({REDIS: "redis:6379"})),
         {C + "redis-address-without-ft"}, ROCKS),
    Case(T + "gcsFaultToleranceOptions is set and RAY_REDIS_ADDRESS is set",
         rs(gcs(), head=head({REDIS: "redis:6379"})), {C + "redis-address-env"}, ROCKS),
    Case(T + "FT is disabled and RAY_REDIS_ADDRESS is set", rs(head=head({REDIS: "redis:6379"})),
         {C + "redis-address-without-ft"}, ROCKS),
    Case(T + "ray.io/ft-enabled is set to true and RAY_REDIS_ADDRESS is set",
         rs(annotations={"ray.io/ft-enabled": "true"}, head=head({REDIS: "redis:6379"})), set(), ROCKS),
    Case(T + "gcsFaultToleranceOptions is set and ray.io/external-storage-namespace is set",
         rs(gcs(redisAddress="redis:6379"), {"ray.io/external-storage-namespace": "myns"}),
         {C + "external-storage-namespace"}, ROCKS),
    Case(T + "redis backend without RedisAddress is accepted", rs(gcs(backend="redis")), set(), ROCKS),
    Case(T + "redis backend rejects rocksdb-only storage field",
         rs(gcs(backend="redis", storage={"size": "1Gi"})), {P + "redis-storage"}, ROCKS),
    Case(T + "rocksdb backend is valid with no redis fields", rs(gcs(backend="rocksdb")), set(), ROCKS),
    Case(T + "rocksdb backend with operator-managed storage is valid",
         rs(gcs(backend="rocksdb", storage={"size": "2Gi"})), set(), ROCKS),
    Case(T + "rocksdb backend rejects RedisAddress", rs(gcs(backend="rocksdb", redisAddress="redis:6379")),
         {P + "rocksdb-redis-address"}, ROCKS),
    Case(T + "rocksdb backend rejects ExternalStorageNamespace",
         rs(gcs(backend="rocksdb", externalStorageNamespace="ns")),
         {P + "rocksdb-external-storage-namespace"},
         ROCKS),
    Case(T + "rocksdb backend rejects claimName combined with size",
         rs(gcs(backend="rocksdb", storage={"claimName": "my-pvc", "size": "1Gi"})),
         {P + "rocksdb-claim-name"},
         ROCKS),
    Case(T + "rocksdb backend rejects user-set RAY_gcs_storage env",
         rs(gcs(backend="rocksdb"), head=head({"RAY_gcs_storage": "rocksdb"})), {P + "rocksdb-storage-env"},
         ROCKS),
    Case("validateGcsFaultToleranceBackend: rocksdb backend rejects RedisUsername",
         rs(gcs(backend="rocksdb", redisUsername={"value": "u"})), {P + "rocksdb-redis-username"}, ROCKS),
    Case("validateGcsFaultToleranceBackend: rocksdb backend rejects RedisPassword",
         rs(gcs(backend="rocksdb", redisPassword={"value": "p"})), {P + "rocksdb-redis-password"}, ROCKS),
    # -- TestValidateRayClusterSpecEmbeddedGCSFeatureGate --
    Case("TestValidateRayClusterSpecEmbeddedGCSFeatureGate: gate off", rs(gcs(backend="rocksdb")),
         {P + "rocksdb-gate"}),
    Case("TestValidateRayClusterSpecEmbeddedGCSFeatureGate: gate on", rs(gcs(backend="rocksdb")), set(),
         ROCKS),
    # -- TestValidateGcsFaultToleranceEmbeddedReservedVolume (gate on) --
    Case("TestValidateGcsFaultToleranceEmbeddedReservedVolume: no reserved volume is valid",
         rs(gcs(backend="rocksdb")), set(), ROCKS),
    Case("TestValidateGcsFaultToleranceEmbeddedReservedVolume: reserved mount path is rejected",
         rs(gcs(backend="rocksdb"), head={"template": template(container(
             mounts=[{"name": "user-vol", "mountPath": "/data/gcs"}]))}), {P + "rocksdb-reserved-mount"},
             ROCKS),
    Case("TestValidateGcsFaultToleranceEmbeddedReservedVolume: reserved volume mount name is rejected",
         rs(gcs(backend="rocksdb"), head={"template": template(container(
             mounts=[{"name": "gcs-storage", "mountPath": "/somewhere/else"}]))}),
             {P + "rocksdb-reserved-mount"},
         ROCKS),
    Case("TestValidateGcsFaultToleranceEmbeddedReservedVolume: reserved volume name is rejected",
         rs(gcs(backend="rocksdb"), head={"template": template(container(),
         volumes=[{"name": "gcs-storage"}])}),
         {P + "rocksdb-reserved-volume"}, ROCKS),
    # -- TestValidateRayClusterSpecRedisPassword / RedisUsername --
    Case("TestValidateRayClusterSpecRedisPassword: GcsFaultToleranceOptions is set and `redis-password` is "
         "also set in rayStartParams", rs(gcs(), head=head(params={"redis-password": "password"})),
         {C + "redis-password-param"}),
    Case("TestValidateRayClusterSpecRedisPassword: GcsFaultToleranceOptions is set and `REDIS_PASSWORD` env "
         "var is also set in the head Pod", rs(gcs(), head=head({"REDIS_PASSWORD": "password"})),
         {C + "redis-password-env"}),
    Case("TestValidateRayClusterSpecRedisPassword: GcsFaultToleranceOptions.RedisPassword is set",
         rs(gcs(redisAddress="redis:6379", redisPassword={"value": "password"})), set()),
    Case("TestValidateRayClusterSpecRedisUsername: `redis-username` is set in rayStartParams of the Head Pod",
         rs(head=head(params={"redis-username": "username"})), {C + "redis-username"}),
    Case("TestValidateRayClusterSpecRedisUsername: `REDIS_USERNAME` env var is set in the Head Pod",
         rs(head=head({"REDIS_USERNAME": "username"})), {C + "redis-username"}),
    Case("TestValidateRayClusterSpecRedisUsername: GcsFaultToleranceOptions.RedisUsername is set",
         rs(gcs(redisAddress="redis:6379", redisUsername={"value": "username"})), set()),
    # -- TestValidateRayClusterSpecEmptyContainers --
    Case("TestValidateRayClusterSpecEmptyContainers: headGroupSpec has no containers",
         rs(head={"template": template()}), {C + "head-containers"}),
    Case("TestValidateRayClusterSpecEmptyContainers: workerGroupSpec has no containers",
         rs({"workerGroupSpecs": [wg(tpl=template())]}), {C + "worker-containers"}),
    Case("TestValidateRayClusterSpecEmptyContainers: valid cluster with containers in both head and worker "
         "groups", rs({"workerGroupSpecs": [wg()]}), set()),
    # -- TestValidateRayClusterSpecSuspendingWorkerGroup --
    Case("TestValidateRayClusterSpecSuspendingWorkerGroup: suspend without autoscaler and the feature gate",
         rs({"workerGroupSpecs": [wg("worker-group-1", suspend=True)]}), {C + "suspend-needs-gate"},
         {"RayJobDeletionPolicy": False}),
    Case("TestValidateRayClusterSpecSuspendingWorkerGroup: suspend without autoscaler",
         rs({"workerGroupSpecs": [wg("worker-group-1", suspend=True)]}), set(),
         {"RayJobDeletionPolicy": True}),
    Case("TestValidateRayClusterSpecSuspendingWorkerGroup: suspend with autoscaler",
         rs({**AUTO, "workerGroupSpecs": [wg("worker-group-1", suspend=True)]}),
         {C + "suspend-with-autoscaling"},
         {"RayJobDeletionPolicy": True}),
    # -- TestValidateRayClusterSpecAutoscaler (RayJobDeletionPolicy on) --
    Case(AS + "should return error if autoscaler is enabled and any worker "
         "group is suspended", rs({**AUTO, "workerGroupSpecs": [wg("worker-group-1", None, None,
         suspend=True)]}),
         {C + "suspend-with-autoscaling"}, GATES_17),
    Case(AS + "should return error if RAY_enable_autoscaler_v2 env var is set "
         "to '1' when autoscaler is disabled", rs({"enableInTreeAutoscaling": False}, head=head({V2: "1"})),
         {C + "v2-env-without-autoscaling"}, GATES_17),
    Case(AS + "should return error if RAY_enable_autoscaler_v2 env var is set "
         "to 'true' when autoscaler is disabled", rs({"enableInTreeAutoscaling": False},
         head=head({V2: "true"})),
         {C + "v2-env-without-autoscaling"}, GATES_17),
    Case(AS + "should return error if autoscaler v2 is enabled and head Pod "
         "has env var RAY_enable_autoscaler_v2", rs({**AUTO, **v2()}, head=head({V2: "true"})),
         {C + "version-and-v2-env"}, GATES_17),
    Case(AS + "should return error if autoscaler v2 is enabled and head Pod "
         "has a restartPolicy other than Never or unset", rs({**AUTO, **v2()}, head=head(restart="Always")),
         {C + "v2-head-restart-policy"}, GATES_17),
    Case(AS + "should not return error if autoscaler v1 is enabled and a worker "
         "group has a restartPolicy other than Never or unset (warning only)",
         rs({**AUTO, **v2("v1"), "workerGroupSpecs": [
             wg("worker-group-1", None, None, template(container(), restart="Never")),
             wg("worker-group-2", None, None, template(container(), restart="Always"))]}), set(), GATES_17),
    Case(AS + "should not return error if autoscaler v1 is enabled and all "
         "worker groups have restartPolicy Never or unset",
         rs({**AUTO, **v2("v1"), "workerGroupSpecs": [
             wg("worker-group-1", None, None),
             wg("worker-group-2", None, None, template(container(), restart="Never"))]}), set(), GATES_17),
    Case(AS + "should return error if autoscaler v2 is enabled and a worker "
         "group has a restartPolicy other than Never or unset",
         rs({**AUTO, **v2(), "workerGroupSpecs": [
             wg("worker-group-1", None, None, template(container(), restart="Never")),
             wg("worker-group-2", None, None, template(container(), restart="Always"))]},
            head=head(restart="Never")), {C + "v2-worker-restart-policy"}, GATES_17),
    Case(AS + "should not return error if autoscaler configs are valid",
         rs({**AUTO, **v2(), "workerGroupSpecs": [
             wg("worker-group-1", None, None),
             wg("worker-group-2", None, None, template(container(), restart="Never"))]}), set(), GATES_17),
    Case(AS + "should return error if KUBERAY_GEN_AUTOSCALER_START_CMD is set "
         "in autoscalerOptions.env (args also set)",
         rs({**AUTO, "autoscalerOptions": {"args": ["my-custom-autoscaler-cmd"], "env": [
             {"name": GEN, "value": "ray kuberay-autoscaler"}]}}), {C + "autoscaler-start-cmd-env"},
             GATES_17),
    Case(AS + "should return error if KUBERAY_GEN_AUTOSCALER_START_CMD is set "
         "in autoscalerOptions.env even when autoscalerOptions.args is absent",
         rs({**AUTO, "autoscalerOptions": {"env": [{"name": GEN, "value": "x"}]}}),
         {C + "autoscaler-start-cmd-env"}, GATES_17),
    # -- TestValidateRayClusterSpec_Resources / _Labels --
    Case(RES + "Invalid: Head group has resources in both rayStartParams and "
         "top-level Resources", rs({"workerGroupSpecs": [wg()]}, head=head(params={"num-cpus": "1"},
                                                                           resources={"CPU": "1"})),
         {"validateRayGroupResources/both-set"}),
    Case(RES + "Invalid: Worker group has resources in both rayStartParams and "
         ".Resources", rs({"workerGroupSpecs": [wg(rayStartParams={"num-gpus": "1"},
         resources={"GPU": "1"})]}),
         {"validateRayGroupResources/both-set"}),
    Case(RES + "Valid: Only rayStartParams resources are set for head",
         rs({"workerGroupSpecs": [wg()]}, head=head(params={"num-cpus": "2", "memory": "4G",
                                                            "resources": '{"TPU": "8"}'})), set()),
    Case(RES + "Valid: Only .Resources field is set for worker",
         rs({"workerGroupSpecs": [wg(resources={"CPU": "2", "memory": "4G", "TPU": "8"})]}), set()),
    Case("TestValidateRayClusterSpec_Labels: Invalid: Head group has 'labels' in rayStartParams",
         rs({"workerGroupSpecs": [wg()]}, head=head(params={"labels": "ray.io/node-group=worker-group-1"})),
         {"validateRayGroupLabels/ray-start-params-labels"}),
    Case("TestValidateRayClusterSpec_Labels: Invalid: Worker group has 'labels' in rayStartParams",
         rs({"workerGroupSpecs": [wg(rayStartParams={"labels": "ray.io/node-group=worker-group-1"})]}),
         {"validateRayGroupLabels/ray-start-params-labels"}),
    Case("TestValidateRayClusterSpec_Labels: Valid: Only .Labels field is set",
         rs({"workerGroupSpecs": [wg(labels={"ray.io/accelerator-type": "TPU-V6E"})]},
            head=head(labels={"ray.io/market-type": "on-demand"})), set()),
    Case("TestValidateRayClusterSpec_Labels: Invalid: Label key does not follow Kubernetes syntax",
         rs({"workerGroupSpecs": [wg(labels={"invalid_key!": "value"})]}),
         {"validateRayGroupLabels/label-key"}),
    Case("TestValidateRayClusterSpec_Labels: Invalid: Label value does not follow Kubernetes syntax",
         rs({"workerGroupSpecs": [wg()]}, head=head(labels={"valid-key": "invalid/value"})),
         {"validateRayGroupLabels/label-value"}),
    Case("validateRayGroupLabels: label value longer than 63 characters",
         rs({"workerGroupSpecs": [wg(labels={"team": "x" * 64})]}), {"validateRayGroupLabels/label-value"}),
    Case("validateRayGroupLabels: prefixed key with an invalid DNS prefix",
         rs({"workerGroupSpecs": [wg(labels={"Bad_Prefix/name": "v"})]}),
         {"validateRayGroupLabels/label-key"}),
    Case("validateRayGroupLabels: empty label value is valid",
         rs({"workerGroupSpecs": [wg(labels={"example.com/flag": ""})]}), set()),
]


def _token(version: str, k8s: bool) -> dict[str, Any]:
    return rs({"rayVersion": version, "authOptions": {"mode": "token", "enableK8sTokenAuth": k8s}})


A = "TestValidateRayClusterSpecRayVersionForAuth: "
CASES += [
    Case(A + "Valid Ray version 2.52.0", _token("2.52.0", False), set()),
    Case(A + "Invalid Ray version 2.52.0 with k8s token auth", _token("2.52.0", True),
         {C + "k8s-token-auth-ray-version"}),
    Case(A + "Valid Ray version 2.55.0 with k8s token auth", _token("2.55.0", True), set()),
    Case(A + "Valid Ray version 3.0.0", _token("3.0.0", False), set()),
    Case(A + "Valid Ray version 3.0.0 with k8s token auth", _token("3.0.0", True), set()),
    Case(A + "Invalid Ray version 2.50.0", _token("2.50.0", False), {C + "token-auth-ray-version"}),
    Case(A + "Invalid Ray version format", _token("invalid-version", False), {C + "token-auth-ray-version"}),
    Case(A + "Empty Ray version", _token("", False), {C + "token-auth-ray-version"}),
    Case("ValidateRayClusterSpec: token auth with a two-part rayVersion parses (ParseGeneric)",
         _token("2.52", False), set()),
    Case("ValidateRayClusterSpec: token auth with a one-part rayVersion does not parse (ParseGeneric)",
         _token("3", False), {C + "token-auth-ray-version"}),
]


def _auth(**opts: Any) -> dict[str, Any]:
    return rs({"rayVersion": "2.55.0", "authOptions": opts, "workerGroupSpecs": [wg(lo=1, hi=1)]})


CASES += [
    Case("TestValidateRayClusterSpec_Auth: enableK8sTokenAuth=true and secretName set",
         _auth(mode="token", enableK8sTokenAuth=True, secretName="my-secret"),
         {C + "k8s-token-auth-secret-name"}),
    Case("TestValidateRayClusterSpec_Auth: enableK8sTokenAuth=true and secretName unset",
         _auth(mode="token", enableK8sTokenAuth=True), set()),
    Case("TestValidateRayClusterSpec_Auth: enableK8sTokenAuth=false and secretName set",
         _auth(mode="token", secretName="my-secret"), set()),
    Case("ValidateRayClusterSpec: enableK8sTokenAuth without authOptions.mode token",
         _auth(enableK8sTokenAuth=True), {C + "k8s-token-auth-without-token-mode"}),
]

S = "TestValidateRayServiceSpec: "
CASES += [
    Case(S + "spec.rayClusterConfig.headGroupSpec.headService.metadata.name should not be set",
         rs(head={"headService": {"metadata": {"name": "my-head-service"}}}),
         {"ValidateRayServiceSpec/head-service-name", C + "head-containers"}, GATES_17, SERVICE_FUNCS),
    Case(S + "The RayService spec is valid.", rs(), set(), GATES_17, SERVICE_FUNCS),
    Case(S + "spec.UpgradeSpec.Type is invalid", rs(upgradeStrategy={"type": "invalidStrategy"}),
         {"ValidateRayServiceSpec/upgrade-type"}, GATES_17, SERVICE_FUNCS),
    Case(S + "headGroupSpec should have at least one container", {"metadata": {"name": "rs"}, "spec": {}},
         {C + "head-containers"}, GATES_17, SERVICE_FUNCS),
    Case(S + "Spec.RayClusterDeletionDelaySeconds is negative", rs(rayClusterDeletionDelaySeconds=-1),
         {"ValidateRayServiceSpec/deletion-delay-negative"}, GATES_17, SERVICE_FUNCS),
    Case(S + "RayService does not support K8s token auth mode",
         rs({"authOptions": {"mode": "token", "enableK8sTokenAuth": True}}, head={}),
         {"ValidateRayServiceSpec/k8s-token-auth", C + "head-containers", C + "token-auth-ray-version"},
         GATES_17, SERVICE_FUNCS),
]

M = "TestValidateRayServiceMetadata: "
TIMEOUT = "ray.io/initializing-timeout"
CASES += [
    Case(M + "name longer than MaxRayServiceNameLength", rs(name="j" * 48),
         {"ValidateRayServiceMetadata/name-too-long"}, funcs=META_FUNCS),
    Case(M + "name of digits is not a DNS1035 label", rs(name="1" * 47),
         {"ValidateRayServiceMetadata/name-not-dns1035"}, funcs=META_FUNCS),
    Case(M + "name of MaxRayServiceNameLength is valid", rs(name="j" * 47), set(), funcs=META_FUNCS),
    Case(M + "initializing timeout 5m is valid", rs(annotations={TIMEOUT: "5m"}), set(), funcs=META_FUNCS),
    Case(M + "initializing timeout 300 is valid", rs(annotations={TIMEOUT: "300"}), set(), funcs=META_FUNCS),
    Case(M + "initializing timeout 0 must be positive", rs(annotations={TIMEOUT: "0"}),
         {"validateInitializingTimeout/non-positive-duration"}, funcs=META_FUNCS),
    Case(M + "initializing timeout -100 must be positive", rs(annotations={TIMEOUT: "-100"}),
         {"validateInitializingTimeout/non-positive-seconds"}, funcs=META_FUNCS),
    Case(M + "initializing timeout -5m must be a positive duration", rs(annotations={TIMEOUT: "-5m"}),
         {"validateInitializingTimeout/non-positive-duration"}, funcs=META_FUNCS),
    Case(M + "initializing timeout invalid has an invalid format", rs(annotations={TIMEOUT: "invalid"}),
         {"validateInitializingTimeout/invalid-format"}, funcs=META_FUNCS),
    Case("validateInitializingTimeout: compound Go duration 1h30m is valid",
         rs(annotations={TIMEOUT: "1h30m"}),
         set(), funcs=META_FUNCS),
    Case("validateInitializingTimeout: an empty annotation is ignored", rs(annotations={TIMEOUT: ""}), set(),
         funcs=META_FUNCS),
]


def _incremental(autoscaling: bool = True, **opts: Any) -> dict[str, Any]:
    strategy: dict[str, Any] = {"type": "NewClusterWithIncrementalUpgrade"}
    if opts:
        strategy["clusterUpgradeOptions"] = opts
    return rs({"enableInTreeAutoscaling": autoscaling}, upgradeStrategy=strategy)


U = "TestValidateClusterUpgradeOptions: "
UF = ("ValidateClusterUpgradeOptions",)
OK_OPTS = {"maxSurgePercent": 50, "stepSizePercent": 50, "intervalSeconds": 10, "gatewayClassName": "istio"}
CASES += [
    Case(U + "valid config", _incremental(**OK_OPTS), set(), GATES_17, UF),
    Case(U + "missing autoscaler", _incremental(False, **OK_OPTS),
         {"ValidateClusterUpgradeOptions/autoscaler-required"}, GATES_17, UF),
    Case(U + "missing options", _incremental(), {"ValidateClusterUpgradeOptions/options-required"},
         GATES_17, UF),
    Case(U + "invalid MaxSurgePercent", _incremental(**(OK_OPTS | {"maxSurgePercent": 200})),
         {"ValidateClusterUpgradeOptions/max-surge-range"}, GATES_17, UF),
    Case(U + "missing StepSizePercent",
         _incremental(**{k: v for k, v in OK_OPTS.items() if k != "stepSizePercent"}),
         {"ValidateClusterUpgradeOptions/step-size-range"}, GATES_17, UF),
    Case(U + "invalid StepSizePercent (greater than MaxSurgePercent)",
         _incremental(**(OK_OPTS | {"stepSizePercent": 75})),
         {"ValidateClusterUpgradeOptions/step-over-surge"},
         GATES_17, UF),
    Case(U + "invalid IntervalSeconds", _incremental(**(OK_OPTS | {"intervalSeconds": 0})),
         {"ValidateClusterUpgradeOptions/interval"}, GATES_17, UF),
    Case(U + "missing GatewayClassName",
         _incremental(**{k: v for k, v in OK_OPTS.items() if k != "gatewayClassName"}),
         {"ValidateClusterUpgradeOptions/gateway-class"}, GATES_17, UF),
    Case("IsIncrementalUpgradeEnabled: options are not validated with the gate off",
         _incremental(False), set(), GATES_17 | {"RayServiceIncrementalUpgrade": False}, UF),
    Case("ValidateClusterUpgradeOptions: step over surge is a v1.7 rule (v1.6 accepts it)",
         _incremental(**(OK_OPTS | {"stepSizePercent": 75})), set(),
         GATES_17, UF, minor=(1, 6)),
]

IT = "TestValidateRayClusterSpec_IdleTimeoutSeconds: "
W = "validateWorkerGroupIdleTimeout/"


def _idle(idle: int | None = None, env: dict[str, Any] | None = None, version: str | None = None,
          **auto: Any) -> dict[str, Any]:
    rcc: dict[str, Any] = dict(AUTO)
    if version or auto:
        rcc["autoscalerOptions"] = ({"version": version} if version else {}) | auto
    if idle is not None:
        rcc["workerGroupSpecs"] = [wg("worker-group-1", 0, 10, idleTimeoutSeconds=idle)]
    return rs(rcc, head=head(env))


CASES += [
    Case(IT + "Valid: Worker group with valid idleTimeoutSeconds and v2 spec field", _idle(60, version="v2"),
         set()),
    Case(IT + "Valid: Worker group with idleTimeoutSeconds and v2 env var", _idle(60, {V2: "1"}), set()),
    Case(IT + "Valid: Worker group with zero idleTimeoutSeconds", _idle(0, version="v2"), set()),
    Case(IT + "Invalid: Worker group with negative idleTimeoutSeconds", _idle(-10, version="v2"),
         {W + "negative"}),
    Case(IT + "Invalid: Worker group idleTimeoutSeconds without v2", _idle(60), {W + "needs-v2"}),
    Case(IT + "Invalid: Worker group idleTimeoutSeconds with invalid env var", _idle(60, {V2: "false"}),
         {W + "needs-v2"}),
    Case(IT + "Valid: Worker group without idleTimeoutSeconds", rs({**AUTO, "workerGroupSpecs": [
        wg("worker-group-1", 0, 10)]}), set()),
    Case(IT + "Valid: AutoscalerOptions with idleTimeoutSeconds and v2", _idle(version="v2",
         idleTimeoutSeconds=120),
         set()),
    Case(IT + "Valid: AutoscalerOptions with idleTimeoutSeconds and v1", _idle(version="v1",
         idleTimeoutSeconds=120),
         set()),
    Case(IT + "Valid: AutoscalerOptions with idleTimeoutSeconds and no version",
         _idle(idleTimeoutSeconds=120),
         set()),
    Case(IT + "Valid: AutoscalerOptions with zero idleTimeoutSeconds", _idle(idleTimeoutSeconds=0), set()),
    Case(IT + "Invalid: AutoscalerOptions with negative idleTimeoutSeconds", _idle(idleTimeoutSeconds=-10),
         {C + "autoscaler-idle-timeout-negative"}),
    Case(IT + "Valid: AutoscalerOptions without idleTimeoutSeconds", _idle(version="v1"), set()),
    Case(IT + "Valid: AutoscalerOptions is nil", _idle(), set()),
]

PR = "TestValidateRayClusterSpec_Priority: "
PV = "validateWorkerGroupPriority/"


def _priority(priority: int | None, version: str = "2.56.0", env: dict[str, Any] | None = None,
              v2_field: bool = False) -> dict[str, Any]:
    rcc: dict[str, Any] = {**AUTO, "rayVersion": version}
    if v2_field:
        rcc["autoscalerOptions"] = {"version": "v2"}
    extra = {} if priority is None else {"priority": priority}
    rcc["workerGroupSpecs"] = [wg("worker-group-1", 0, 10, **extra)]
    return rs(rcc, head=head(env))


CASES += [
    Case(PR + "Valid: Worker group with priority and v2 spec field", _priority(1, v2_field=True), set()),
    Case(PR + "Valid: Worker group with priority and v2 env var", _priority(1, env={V2: "1"}), set()),
    Case(PR + "Valid: Worker group with zero priority and v2 disabled", _priority(0), set()),
    Case(PR + "Valid: Worker group without priority and v2 disabled", _priority(None), set()),
    Case(PR + "Invalid: Worker group priority without v2", _priority(1), {PV + "needs-v2"}),
    Case(PR + "Invalid: Worker group priority with invalid env var", _priority(2, env={V2: "false"}),
         {PV + "needs-v2"}),
    Case(PR + "Invalid: Worker group priority with empty Ray version", _priority(1, "", v2_field=True),
         {PV + "ray-version"}),
    Case(PR + "Invalid: Worker group priority with invalid Ray version", _priority(1, "invalid",
         v2_field=True),
         {PV + "ray-version"}),
    Case(PR + "Invalid: Worker group priority with Ray version below 2.56.0", _priority(1, "2.55.0",
         v2_field=True),
         {PV + "ray-version"}),
    Case("validateWorkerGroupPriority: a v1.7 rule (v1.6 has no priority check)", _priority(1), set(),
         minor=(1, 6)),
]

R = "TestValidateRayClusterSpec_WorkerGroupReplicaValidation: "


def _replicas(lo: int | None, hi: int | None, autoscaling: bool = False, **extra: Any) -> dict[str, Any]:
    return rs({"enableInTreeAutoscaling": autoscaling, "workerGroupSpecs": [wg("worker-group-3", lo, hi,
        **extra)]})


CASES += [
    Case(R + "minReplicas greater than maxReplicas", _replicas(5, 3), {C + "min-over-max"}),
    Case(R + "replicas smaller than minReplicas when autoscaling disabled", _replicas(2, 5, replicas=1),
         set()),
    Case(R + "minReplicas are nil when autoscaling disabled", _replicas(None, 5), {C + "min-max-unset"}),
    Case(R + "maxReplicas are nil when autoscaling disabled", _replicas(1, None), {C + "min-max-unset"}),
    Case(R + "minReplicas and maxReplicas both are nil when autoscaling disabled", _replicas(None, None),
         {C + "min-max-unset"}),
    Case(R + "minReplicas is negative", _replicas(-1, None, True), {C + "negative-min-replicas"}),
    Case(R + "maxReplicas is negative", _replicas(None, -1, True), {C + "negative-max-replicas"}),
    Case(R + "valid when autoscaling enabled", _replicas(None, None, True), set()),
]


def _network(mode: str | None = "DenyAll", groups: tuple[str, ...] = (), **parts: Any) -> dict[str, Any]:
    np: dict[str, Any] = {} if mode is None else {"mode": mode}
    np.update(parts)
    return rs({"networkPolicy": np, "workerGroupSpecs": [{"groupName": g} for g in groups]})


N = "TestValidateNetworkPolicy: "
NF = ("validateNetworkPolicy",)
NV = "validateNetworkPolicy/"
RULE = [{}]
CASES += [
    Case(N + "DenyAllEgress with head IngressRules set returns error",
         _network("DenyAllEgress", head={"ingressRules": RULE}), {NV + "rules-for-mode"}, funcs=NF),
    Case(N + "DenyAllEgress with worker IngressRules set returns error",
         _network("DenyAllEgress", worker={"ingressRules": RULE}), {NV + "rules-for-mode"}, funcs=NF),
    Case(N + "DenyAllIngress with head EgressRules set returns error",
         _network("DenyAllIngress", head={"egressRules": RULE}), {NV + "rules-for-mode"}, funcs=NF),
    Case(N + "DenyAllIngress with worker EgressRules set returns error",
         _network("DenyAllIngress", worker={"egressRules": RULE}), {NV + "rules-for-mode"}, funcs=NF),
    Case(N + "DenyAll with both head and worker rules is valid",
         _network(head={"ingressRules": RULE, "egressRules": RULE}, worker={"ingressRules": RULE,
                                                                             "egressRules": RULE}), set(),
                                                                             funcs=NF),
    Case(N + "DenyAllEgress with worker group IngressRules set returns error",
         _network("DenyAllEgress", ("small-group",), workerGroups=[{"groupName": "small-group",
                                                                     "ingressRules": RULE}]),
         {NV + "rules-for-mode"}, funcs=NF),
    Case(N + "DenyAllIngress with worker group EgressRules set returns error",
         _network("DenyAllIngress", ("small-group",), workerGroups=[{"groupName": "small-group",
                                                                      "egressRules": RULE}]),
         {NV + "rules-for-mode"}, funcs=NF),
    Case(N + "worker group entry not matching any workerGroupSpecs returns error",
         _network("DenyAll", ("small-group",), workerGroups=[{"groupName": "samll-group",
         "ingressRules": RULE}]),
         {NV + "unknown-group"}, funcs=NF),
    Case(N + "worker group entry matching workerGroupSpecs is valid",
         _network("DenyAll", ("small-group",), workerGroups=[{"groupName": "small-group",
         "ingressRules": RULE,
                                                              "egressRules": RULE}]), set(), funcs=NF),
    Case(N + "worker group name that is not a valid DNS1123 label returns error",
         _network("DenyAll", ("GPU-Group",)), {NV + "group-name-dns1123"}, funcs=NF),
    Case(N + "nil NetworkPolicy is valid", rs(), set(), funcs=NF),
    Case(N + "mode only with no head or worker rules is valid", _network(), set(), funcs=NF),
    Case("validateNetworkPolicy: an unset mode is DenyAll (head ingress allowed)",
         _network(None, head={"ingressRules": RULE}), set(), funcs=NF),
    Case("TestValidateRayClusterSpec_NetworkPolicyRequiresFeatureGate",
         rs({"networkPolicy": {"mode": "DenyAll"}, "workerGroupSpecs": [wg(lo=1, hi=1)]}),
         {C + "network-policy-gate"}),
    Case("ValidateRayClusterSpec: networkPolicy with the RayClusterNetworkPolicy gate on",
         rs({"networkPolicy": {"mode": "DenyAll"}, "workerGroupSpecs": [wg(lo=1, hi=1)]}), set(),
         {"RayClusterNetworkPolicy": True}),
]

TLS = {"RayClusterMTLS": True}
TV = "validateTLSOptions/"
TF = ("validateTLSOptions",)


def _tls(enabled: bool | None = True, head_c: dict[str, Any] | None = None,
         worker_c: dict[str, Any] | None = None, **rcc: Any) -> dict[str, Any]:
    cluster: dict[str, Any] = dict(rcc)
    if enabled is not None:
        cluster["tlsOptions"] = {"enabled": enabled}
    if worker_c is not None:
        cluster["workerGroupSpecs"] = [{"groupName": "wg", "template": template(worker_c)}]
    return rs(cluster, head={"template": template(head_c or container("ray-head"))})


X = "TestValidateTLSOptions: "
TLS_MOUNT = {"name": "ray-tls", "mountPath": "/some/path"}
PATH_MOUNT = {"name": "custom-tls", "mountPath": "/etc/ray/tls"}
CASES += [
    Case(X + "TLS disabled, no options - valid", _tls(None), set(), TLS, TF),
    Case(X + "TLS enabled, no options (auto-generate) - valid", _tls(), set(), TLS, TF),
    Case(X + "tlsOptions set but enabled is false - valid (disables TLS)",
         _tls(False, container("ray-head", {"RAY_USE_TLS": "1"})), set(), TLS, TF),
    Case(X + "RAY_USE_TLS in head container - error", _tls(head_c=container("ray-head",
         {"RAY_USE_TLS": "1"})),
         {TV + "managed-env"}, TLS, TF),
    Case(X + "RAY_TLS_SERVER_CERT in head container - error",
         _tls(head_c=container("ray-head", {"RAY_TLS_SERVER_CERT": "/x"})), {TV + "managed-env"}, TLS, TF),
    Case(X + "RAY_TLS_SERVER_KEY in worker container - error",
         _tls(worker_c=container("ray-worker", {"RAY_TLS_SERVER_KEY": "/x"})), {TV + "managed-env"}, TLS, TF),
    Case(X + "RAY_TLS_CA_CERT in worker container - error",
         _tls(worker_c=container("ray-worker", {"RAY_TLS_CA_CERT": "/x"})), {TV + "managed-env"}, TLS, TF),
    Case(X + "conflicting TLS volume name in head container - error",
         _tls(head_c=container("ray-head", mounts=[TLS_MOUNT])), {TV + "reserved-mount"}, TLS, TF),
    Case(X + "conflicting TLS mount path in head container - error",
         _tls(head_c=container("ray-head", mounts=[PATH_MOUNT])), {TV + "reserved-mount"}, TLS, TF),
    Case(X + "conflicting TLS volume name in worker container - error",
         _tls(worker_c=container("ray-worker", mounts=[TLS_MOUNT])), {TV + "reserved-mount"}, TLS, TF),
    Case(X + "non-conflicting volume mount in head container - valid",
         _tls(head_c=container("ray-head", mounts=[{"name": "user-volume", "mountPath": "/user/path"}])),
         set(),
         TLS, TF),
    Case(X + "conflicting TLS volume name in autoscalerOptions - error",
         _tls(autoscalerOptions={"volumeMounts": [TLS_MOUNT]}), {TV + "autoscaler"}, TLS, TF),
    Case(X + "conflicting TLS mount path in autoscalerOptions - error",
         _tls(autoscalerOptions={"volumeMounts": [PATH_MOUNT]}), {TV + "autoscaler"}, TLS, TF),
    Case("TestValidateRayClusterSpec_TLSOptionsRequiresFeatureGate", _tls(), {C + "tls-gate"}),
    Case("IsTLSEnabled: managed env vars are not checked with the RayClusterMTLS gate off",
         _tls(head_c=container("ray-head", {"RAY_USE_TLS": "1"})), set(), {}, TF),
]

H = "TestValidateCollectorOptions: "
HF = CLUSTER_FUNCS
HIST = {"RayClusterHistoryServer": True}
IMAGE = "quay.io/kuberay/collector:latest"


def _history(collector: dict[str, Any] | None, head_spec: dict[str, Any] | None = None,
             workers: list[Any] | None = None) -> dict[str, Any]:
    return rs({"historyServerOptions": {} if collector is None else {"collectorOptions": collector},
               "workerGroupSpecs": workers or []}, head=head_spec)


def _collector(env: dict[str, Any] | None = None, image: str | None = IMAGE) -> dict[str, Any]:
    out: dict[str, Any] = {} if image is None else {"image": image}
    if env:
        out["env"] = container(env=env)["env"]
    return out


GCS_ENV = {"STORAGE_BACKEND": "GCS", "GCS_BUCKET": "my-bucket"}
SECRET = {"secretKeyRef": {"name": "my-gcs-secret", "key": "bucket"}}
CV = "validateCollectorOptions/"
CASES += [
    Case(H + "nil collector options", _history(None), {C + "collector-options-required"}, HIST),
    Case(H + "missing image", _history(_collector(GCS_ENV, None)), {CV + "image"}, HIST),
    Case(H + "missing STORAGE_BACKEND", _history(_collector()), {CV + "storage-backend"}, HIST),
    Case(H + "valid GCS", _history(_collector(GCS_ENV)), set(), HIST),
    Case(H + "valid GCS with ValueFrom secret",
         _history(_collector({"STORAGE_BACKEND": "GCS", "GCS_BUCKET": SECRET})), set(), HIST),
    Case(H + "missing GCS_BUCKET", _history(_collector({"STORAGE_BACKEND": "GCS"})),
         {CV + "storage-backend"}, HIST),
    Case(H + "valid S3 with all fields", _history(_collector({"STORAGE_BACKEND": "S3", "S3_BUCKET": "b",
                                                               "S3_ENDPOINT": "e",
                                                               "S3_REGION": "us-west-2"})),
         set(), HIST),
    Case(H + "missing S3_REGION", _history(_collector({"STORAGE_BACKEND": "S3", "S3_BUCKET": "b",
                                                       "S3_ENDPOINT": "e"})), {CV + "storage-backend"}, HIST),
    Case(H + "valid AZUREBLOB with connection string mode", _history(_collector({
        "STORAGE_BACKEND": "AZUREBLOB", "AZURE_STORAGE_AUTH_MODE": "connection_string",
        "AZURE_STORAGE_CONNECTION_STRING": "connection-string"})), set(), HIST),
    Case(H + "valid AZUREBLOB with workload identity mode", _history(_collector({
        "STORAGE_BACKEND": "AZUREBLOB", "AZURE_STORAGE_AUTH_MODE": "workload_identity",
        "AZURE_STORAGE_ACCOUNT_URL": "https://myaccount.blob.core.windows.net"})), set(), HIST),
    Case(H + "missing connection string in connection_string auth mode", _history(_collector({
        "STORAGE_BACKEND": "AZUREBLOB", "AZURE_STORAGE_AUTH_MODE": "connection_string"})),
         {CV + "storage-backend"}, HIST),
    Case(H + "missing credentials in auto-detect auth mode",
         _history(_collector({"STORAGE_BACKEND": "AZUREBLOB"})), {CV + "storage-backend"}, HIST),
    Case(H + "valid ALIYUNOSS", _history(_collector({"STORAGE_BACKEND": "ALIYUNOSS", "OSS_BUCKET": "b",
                                                     "OSS_ENDPOINT": "e", "OSS_REGION": "cn-hangzhou"})),
         set(), HIST),
    Case(H + "missing OSS_REGION", _history(_collector({"STORAGE_BACKEND": "ALIYUNOSS", "OSS_BUCKET": "b",
                                                        "OSS_ENDPOINT": "e"})), {CV + "storage-backend"},
                                                        HIST),
    Case(H + "unknown storage backend (skips validation)",
         _history(_collector({"STORAGE_BACKEND": "CUSTOM_BACKEND"})), set(), HIST),
    Case(H + "manually defined ray-history-collector container in head template",
         _history(_collector(GCS_ENV), {"template": template(container("ray-history-collector"))}),
         {C + "collector-container-name"}, HIST),
    Case(H + "manually defined ray-history-collector container in worker template",
         _history(_collector(GCS_ENV), workers=[wg("group-1", 1, 1,
         template(container("ray-history-collector")))]),
         {C + "collector-container-name"}, HIST),
    Case(H + "manually defined POD_IP in collector env",
         _history(_collector(GCS_ENV | {"POD_IP": "10.244.0.5"})),
         {CV + "managed-env"}, HIST),
    Case(H + "manually defined EVENTS_PORT in collector env",
         _history(_collector(GCS_ENV | {"EVENTS_PORT": "9000"})),
         {CV + "managed-env"}, HIST),
    Case("TestValidateRayClusterSpec_HistoryServerRequiresFeatureGate",
         _history(_collector(GCS_ENV), workers=[wg(lo=1, hi=1)]), {C + "history-server-gate"}),
]

RC = "TestValidateRayClusterUpgradeOptions: "
RCF = ("ValidateRayClusterUpgradeOptions",)
CASES += [
    Case(RC + "No upgrade strategy", rs(), set(), funcs=RCF, scope="raycluster"),
    Case(RC + "Upgrade strategy set Recreate for RayCluster created by RayService",
         rs({"upgradeStrategy": {"type": "Recreate"}}),
         {"ValidateRayClusterUpgradeOptions/created-by-rayservice"},
         funcs=RCF, scope="raycluster"),
    Case(RC + "Invalid upgrade strategy value", rs({"upgradeStrategy": {"type": "InvalidStrategy"}}),
         {"ValidateRayClusterUpgradeOptions/created-by-rayservice"}, funcs=RCF, scope="raycluster"),
    Case("ValidateRayClusterUpgradeOptions: an upgradeStrategy without a type is accepted",
         rs({"upgradeStrategy": {}}), set(), funcs=RCF, scope="raycluster"),
]


def _failing(case: Case) -> set[str]:
    found = check_rayservice(case.obj, case.minor, case.gates, scope=case.scope)
    return {v.rule for v in found if v.rule.split("/")[0] in case.funcs}


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_operator_rule(case: Case) -> None:
    assert _failing(case) == case.fails


def test_every_rule_has_a_failing_case() -> None:
    covered = set().union(*(c.fails for c in CASES))
    assert {r.id for r in RULES} - covered == set()


# Every function of v1.7.0's utils/validation.go (grep '^func' there), and where it went.
UPSTREAM_FUNCTIONS = {
    "ValidateRayClusterStatus", "ValidateRayClusterMetadata", "ValidateRayClusterUpgradeOptions",
    "validateRayGroupResources", "validateRayGroupLabels", "ValidateRayClusterSpec",
    "validateGcsFaultToleranceBackend", "validateNetworkPolicy", "validateTLSOptions",
    "validateNoConflictingTLSVolumeMount", "ValidateRayJobStatus", "ValidateRayJobMetadata",
    "ValidateRayJobSpec",
    "ValidateRayServiceMetadata", "validateInitializingTimeout", "ValidateRayServiceSpec",
    "ValidateClusterUpgradeOptions", "validateDeletionConfiguration", "validateDeletionRules",
    "validateDeletionCondition", "validateTTLConsistency", "validateLegacyDeletionPolicies",
    "ValidateRayCronJobSpec", "validateWorkerGroupIdleTimeout", "validateCollectorOptions",
    "validateWorkerGroupPriority",
}
HELPERS = {"validateNoConflictingTLSVolumeMount": "validateTLSOptions/reserved-mount"}


def test_every_upstream_function_is_transcribed_or_excluded_with_a_reason() -> None:
    transcribed = {r.id.split("/")[0] for r in RULES}
    assert UPSTREAM_FUNCTIONS - transcribed - set(NOT_APPLICABLE) - set(HELPERS) == set()
    assert set(NOT_APPLICABLE) <= UPSTREAM_FUNCTIONS
    assert all(reason for reason in NOT_APPLICABLE.values())


def test_rule_table_names_source_lines_and_versions() -> None:
    for rule in RULES:
        assert rule.source.startswith("validation.go:") and rule.since <= (1, 7)
    new_in_17 = {r.id for r in RULES if r.since == (1, 7)}
    assert {"validateWorkerGroupPriority/ray-version", "ValidateClusterUpgradeOptions/step-over-surge",
            "validateGcsFaultToleranceBackend/rocksdb-gate",
            "ValidateRayClusterSpec/autoscaler-start-cmd-env",
            "ValidateRayClusterSpec/network-policy-gate"} <= new_in_17
    assert not {r.id for r in rules_for_minor((1, 6))} & new_in_17
    assert len(rules_for_minor((1, 7))) == len([r for r in RULES if r.scope == "rayservice"])


def test_validation_codes_and_paths() -> None:
    obj = {"metadata": {"name": "x" * 48, "annotations": {"ray.io/initializing-timeout": "0s"}},
           "spec": {"upgradeStrategy": {"type": "Blue"}, "rayClusterConfig": {
               "headGroupSpec": {"template": {"spec": {"containers": []}}},
               "workerGroupSpecs": [{"groupName": "g", "minReplicas": 3, "maxReplicas": 2,
                                     "rayStartParams": {"labels": "a=b"},
                                     "template": {"spec": {"containers": [{"name": "w"}]}}}]}}}
    got = {(code, format_path(path)) for code, path, _ in validate_rayservice(
        obj, incremental_gate=True, feature_gates={})}
    assert got == {
        ("name-too-long", "metadata.name"),
        ("validation-failed", 'metadata.annotations["ray.io/initializing-timeout"]'),
        ("validation-failed", "spec.upgradeStrategy.type"),
        ("validation-failed", "spec.rayClusterConfig.headGroupSpec.template.spec.containers"),
        ("validation-failed", "spec.rayClusterConfig.workerGroupSpecs[groupName=g].rayStartParams.labels"),
        ("validation-failed", "spec.rayClusterConfig.workerGroupSpecs[groupName=g].minReplicas"),
    }


# -- KubeRay's own cluster specs -------------------------------------------------------------

MIRROR = Path("/work/.mirror/ray-project+kuberay/repo")


def _upstream_cluster_specs() -> list[tuple[str, dict[str, Any], dict[str, Any]]]:
    if not MIRROR.exists():
        return []
    git = ["git", "-C", str(MIRROR)]
    paths = subprocess.run(git + ["ls-tree", "-r", "--name-only", "v1.7.0", "ray-operator/config/samples/"],
                           capture_output=True, text=True, check=True).stdout.split()
    out = []
    for p in paths:
        if not p.endswith(".yaml"):
            continue
        text = subprocess.run(git + ["show", f"v1.7.0:{p}"], capture_output=True, text=True,
        check=True).stdout
        for i, doc in enumerate(yaml.safe_load_all(text)):
            if not isinstance(doc, dict):
                continue
            spec = doc.get("spec") if doc.get("kind") == "RayCluster" else (
                (doc.get("spec") or {}).get("rayClusterSpec") if doc.get("kind") == "RayJob" else None)
            if spec:
                out.append((f"{p.rsplit('/', 1)[-1]}#{i}", doc, spec))
    return out


UPSTREAM = _upstream_cluster_specs()


@pytest.mark.skipif(not UPSTREAM, reason="KubeRay's source mirror is not on this machine")
@pytest.mark.parametrize(("name", "doc", "spec"), UPSTREAM, ids=[u[0] for u in UPSTREAM])
def test_kuberay_sample_cluster_specs_pass_validate_raycluster_spec(name: str, doc: dict[str, Any],
                                                                     spec: dict[str, Any]) -> None:
    """Every RayCluster/RayJob cluster spec KubeRay v1.7.0 ships passes ValidateRayClusterSpec's rules,
    with the alpha gates its features need turned on (upstream runs these samples in its e2e tests)."""
    schemas, _ = tables((1, 7))
    rcc = schemas.default_fill(copy.deepcopy(spec), schemas.at(schemas.root("v1"), ("spec",
    "rayClusterConfig")))
    obj = {"metadata": {"name": "x", "annotations": (doc.get("metadata") or {}).get("annotations") or {}},
           "spec": {"rayClusterConfig": rcc}}
    all_on = {gate: True for gate in GATE_DEFAULTS[(1, 7)]}
    found = check_rayservice(obj, (1, 7), all_on)
    assert [v.rule for v in found if v.rule.split("/")[0] in CLUSTER_FUNCS] == []
