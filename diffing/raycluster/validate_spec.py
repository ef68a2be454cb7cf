"""Checks of KubeRay's ``ValidateRayClusterSpec`` (``utils/validation.go:103-258``, v1.7.0).

Groups and containers, replica bounds, group resources and labels, worker idle timeouts and
priorities, GCS fault tolerance with Redis or the embedded RocksDB backend, worker-group
suspension and the autoscaler. Each function yields ``(path, reason)`` for every place that
fails; the rule table in :mod:`diffing.validation` says which upstream case it is.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping

from diffing.hints import Any
from diffing.kube import names
from diffing.kube.paths import Key, Path
from diffing.kube.values import mapping, seq
from diffing.raycluster.validation_subject import (
    AUTOSCALER_V2_ENV,
    HEAD,
    RCC,
    Check,
    Failure,
    Subject,
    has_env,
    is_set,
    pod_spec,
)

_RESOURCE_PARAMS = ("num-cpus", "num-gpus", "memory", "resources")  # validation.go:61-64
_GCS: Path = RCC + ("gcsFaultToleranceOptions",)
_GCS_VOLUME, _GCS_PATH = "gcs-storage", "/data/gcs"  # constant.go:207-209


def head_containers(s: Subject) -> Iterator[Failure]:
    if not seq(s.head_pod.get("containers")):
        yield HEAD + ("template", "spec", "containers"), "the head needs at least one container"


def worker_containers(s: Subject) -> Iterator[Failure]:
    for path, g in s.groups:
        if not seq(pod_spec(g).get("containers")):
            yield path + ("template", "spec", "containers"), \
                f"{s.group_label(g)} needs at least one container"


def group_resources(s: Subject) -> Iterator[Failure]:
    for path, g, label in s.all_groups():
        params = mapping(g.get("rayStartParams"))
        if mapping(g.get("resources")) and any(is_set(params.get(k)) for k in _RESOURCE_PARAMS):
            yield path + ("resources",), (f"{label} sets resources both in rayStartParams (num-cpus/"
                                          "num-gpus/memory/resources) and in its resources map")


def group_start_labels(s: Subject) -> Iterator[Failure]:
    for path, g, label in s.all_groups():
        if "labels" in mapping(g.get("rayStartParams")):
            yield path + ("rayStartParams", "labels"), \
                f"rayStartParams.labels is not supported for {label}; use the group's labels field"


def group_label_keys(s: Subject) -> Iterator[Failure]:
    for path, g, label in s.all_groups():
        for key in mapping(g.get("labels")):
            bad = names.label_key(str(key))
            if bad:
                yield path + ("labels", str(key)), f"label key {key!r} of {label}: {bad}"


def group_label_values(s: Subject) -> Iterator[Failure]:
    for path, g, label in s.all_groups():
        for key, value in mapping(g.get("labels")).items():
            bad = names.label_value("" if value is None else str(value))
            if bad:
                yield path + ("labels", str(key)), f"label value {value!r} of {label}: {bad}"


def replica_bounds_set(s: Subject) -> Iterator[Failure]:
    for path, g in s.groups:
        if not s.autoscaling and (g.get("minReplicas") is None or g.get("maxReplicas") is None):
            yield path, f"{s.group_label(g)} must set both minReplicas and maxReplicas without autoscaling"


def negative(field: str) -> Check:
    def check(s: Subject) -> Iterator[Failure]:
        for path, g in s.groups:
            value = g.get(field)
            if isinstance(value, int) and value < 0:
                yield path + (field,), f"{s.group_label(g)} has negative {field} {value}"
    return check


def min_over_max(s: Subject) -> Iterator[Failure]:
    for path, g in s.groups:
        lo, hi = g.get("minReplicas"), g.get("maxReplicas")
        if isinstance(lo, int) and isinstance(hi, int) and lo > hi:
            yield path + ("minReplicas",), \
                f"{s.group_label(g)} has minReplicas {lo} greater than maxReplicas {hi}"


def idle_negative(s: Subject) -> Iterator[Failure]:
    for path, g in s.groups:
        idle = g.get("idleTimeoutSeconds")
        if isinstance(idle, int) and idle < 0:
            yield path + ("idleTimeoutSeconds",), f"idleTimeoutSeconds must not be negative, got {idle}"


def idle_needs_v2(s: Subject) -> Iterator[Failure]:
    for path, g in s.groups:
        idle = g.get("idleTimeoutSeconds")
        if isinstance(idle, int) and idle >= 0 and not s.v2 and not s.v2_env_on():
            yield path + ("idleTimeoutSeconds",), \
                "idleTimeoutSeconds is set but autoscaler v2 is not enabled (autoscalerOptions.version: v2)"


def _priorities(s: Subject) -> Iterator[tuple[Path, int]]:
    for path, g in s.groups:
        priority = g.get("priority")
        if isinstance(priority, int) and priority != 0:
            yield path + ("priority",), priority


def ray_version_problem(s: Subject, what: str, minimum: tuple[int, ...]) -> str | None:
    """Why ``rayVersion`` does not satisfy ``minimum`` the way Go's ParseGeneric reads it."""
    raw = s.rcc.get("rayVersion")
    text = "" if raw is None else str(raw)
    want = ".".join(map(str, minimum))
    if not text:
        return f"{what} needs rayVersion to be set (Ray {want} or later)"
    parsed = names.parse_generic_version(text)
    if parsed is None:
        return f"{what} needs a parseable rayVersion; {text!r} is not a version"
    if names.version_less(parsed, minimum):
        return f"{what} needs Ray {want} or later; rayVersion is {text}"
    return None


def priority_version(s: Subject) -> Iterator[Failure]:
    for path, _ in _priorities(s):
        bad = ray_version_problem(s, "a worker group priority", (2, 56, 0))
        if bad:
            yield path, bad


def priority_needs_v2(s: Subject) -> Iterator[Failure]:
    for path, priority in _priorities(s):
        if ray_version_problem(s, "", (2, 56, 0)) is None and not s.v2 and not s.v2_env_on():
            yield path, f"priority {priority} needs autoscaler v2 (autoscalerOptions.version: v2)"


# -- GCS fault tolerance (validation.go:153-195, 333-375) ---------------------------------------


def ft_annotation(s: Subject) -> Iterator[Failure]:
    if s.annotations.get("ray.io/ft-enabled") and s.gcs is not None:
        yield ("metadata", "annotations", "ray.io/ft-enabled"), \
            "the ray.io/ft-enabled annotation cannot be combined with gcsFaultToleranceOptions"


def _ft_enabled(s: Subject) -> bool:
    """``IsGCSFaultToleranceEnabled`` (util.go:765-768)."""
    return s.annotations.get("ray.io/ft-enabled", "").lower() == "true" or s.gcs is not None


def redis_address_without_ft(s: Subject) -> Iterator[Failure]:
    if not _ft_enabled(s) and has_env(s.head_container.get("env"), "RAY_REDIS_ADDRESS"):
        yield s.head_env_path("RAY_REDIS_ADDRESS"), \
            "RAY_REDIS_ADDRESS turns GCS fault tolerance on implicitly; set gcsFaultToleranceOptions instead"


def with_ft_param(param: str, instead: str) -> Check:
    def check(s: Subject) -> Iterator[Failure]:
        if s.gcs is not None and is_set(mapping(s.head.get("rayStartParams")).get(param)):
            yield HEAD + ("rayStartParams", param), \
                f"{param} in rayStartParams conflicts with gcsFaultToleranceOptions; use {instead}"
    return check


def with_ft_env(env: str, instead: str) -> Check:
    def check(s: Subject) -> Iterator[Failure]:
        if s.gcs is not None and has_env(s.head_container.get("env"), env):
            yield s.head_env_path(env), \
                f"the head's {env} env var conflicts with gcsFaultToleranceOptions; use {instead}"
    return check


def ft_storage_namespace(s: Subject) -> Iterator[Failure]:
    if s.gcs is not None and s.annotations.get("ray.io/external-storage-namespace"):
        yield ("metadata", "annotations", "ray.io/external-storage-namespace"), \
            ("the ray.io/external-storage-namespace annotation conflicts with gcsFaultToleranceOptions; "
             "use gcsFaultToleranceOptions.externalStorageNamespace")


def _rocksdb(s: Subject) -> Mapping[str, Any] | None:
    """The options when they select the rocksdb backend (``GetGcsFaultToleranceBackend``)."""
    if s.gcs is not None and mapping(s.gcs).get("backend") == "rocksdb":
        return mapping(s.gcs)
    return None


def rocksdb_gate(s: Subject) -> Iterator[Failure]:
    if _rocksdb(s) is not None and not s.gate("GCSFaultToleranceEmbeddedStorage"):
        yield _GCS + ("backend",), ("the rocksdb backend needs the GCSFaultToleranceEmbeddedStorage "
                                    "feature gate (alpha, off by default)")


def rocksdb_forbids(field: str, present: Callable[[Any], bool]) -> Check:
    def check(s: Subject) -> Iterator[Failure]:
        opts = _rocksdb(s)
        if opts is not None and present(opts.get(field)):
            yield _GCS + (field,), f"gcsFaultToleranceOptions.{field} cannot be set with the rocksdb backend"
    return check


def rocksdb_claim(s: Subject) -> Iterator[Failure]:
    storage = mapping((_rocksdb(s) or {}).get("storage"))
    if is_set(storage.get("claimName")) and (storage.get("size") is not None or storage.get(
            "storageClassName") is not None or seq(storage.get("accessModes"))):
        yield _GCS + ("storage", "claimName"), \
            "storage.claimName excludes size, storageClassName and accessModes"


def rocksdb_env(s: Subject) -> Iterator[Failure]:
    if _rocksdb(s) is None:
        return
    for name in ("RAY_gcs_storage", "RAY_gcs_storage_path"):  # constant.go:147-148
        if has_env(s.head_container.get("env"), name):
            yield s.head_env_path(name), f"{name} is managed by KubeRay with the embedded (rocksdb) backend"


def rocksdb_mounts(s: Subject) -> Iterator[Failure]:
    if _rocksdb(s) is None:
        return
    for m in seq(s.head_container.get("volumeMounts")):
        m = mapping(m)
        if m.get("mountPath") == _GCS_PATH or m.get("name") == _GCS_VOLUME:
            yield HEAD + ("template", "spec", "containers"), \
                f"a volume mount named {_GCS_VOLUME!r} or at {_GCS_PATH} is reserved for the rocksdb backend"


def rocksdb_volumes(s: Subject) -> Iterator[Failure]:
    if _rocksdb(s) is not None and any(mapping(v).get("name") == _GCS_VOLUME
                                       for v in seq(s.head_pod.get("volumes"))):
        yield HEAD + ("template", "spec", "volumes", Key("name", _GCS_VOLUME)), \
            f"the volume name {_GCS_VOLUME!r} is reserved for the rocksdb backend"


def redis_storage(s: Subject) -> Iterator[Failure]:
    if s.gcs is not None and _rocksdb(s) is None and mapping(s.gcs).get("storage") is not None:
        yield _GCS + ("storage",), "gcsFaultToleranceOptions.storage only applies to the rocksdb backend"


def redis_username(s: Subject) -> Iterator[Failure]:
    if is_set(mapping(s.head.get("rayStartParams")).get("redis-username")):
        yield HEAD + ("rayStartParams", "redis-username"), \
            "a redis username cannot be set in rayStartParams; use gcsFaultToleranceOptions.redisUsername"
    if has_env(s.head_container.get("env"), "REDIS_USERNAME"):
        yield s.head_env_path("REDIS_USERNAME"), \
            "a redis username cannot be set as an env var; use gcsFaultToleranceOptions.redisUsername"


# -- suspension and the autoscaler (validation.go:197-258) --------------------------------------


def suspend_gate(s: Subject) -> Iterator[Failure]:
    for path, g in s.groups:
        if g.get("suspend") is True and not s.gate("RayJobDeletionPolicy"):
            yield path + ("suspend",), "suspending a worker group needs the RayJobDeletionPolicy feature gate"


def v2_env_without_autoscaling(s: Subject) -> Iterator[Failure]:
    if not s.autoscaling and s.v2_env_on():
        yield s.head_env_path(AUTOSCALER_V2_ENV), \
            f"{AUTOSCALER_V2_ENV} is on but enableInTreeAutoscaling is not true"


def suspend_autoscaling(s: Subject) -> Iterator[Failure]:
    for path, g in s.groups:
        if s.autoscaling and g.get("suspend") is True:
            yield path + ("suspend",), "a worker group cannot be suspended while in-tree autoscaling is on"


def version_and_env(s: Subject) -> Iterator[Failure]:
    if s.autoscaling and s.autoscaler.get("version") is not None and has_env(
            s.head_container.get("env"), AUTOSCALER_V2_ENV):
        yield RCC + ("autoscalerOptions", "version"), \
            (f"autoscalerOptions.version and the head's {AUTOSCALER_V2_ENV} env var are both set; "
             "keep the former")


def _restart_ok(pod: Mapping[str, Any]) -> bool:
    return pod.get("restartPolicy") in (None, "", "Never")


def v2_head_restart(s: Subject) -> Iterator[Failure]:
    if s.autoscaling and s.v2 and not _restart_ok(s.head_pod):
        yield HEAD + ("template", "spec", "restartPolicy"), \
            "the head pod's restartPolicy must be Never or unset with autoscaler v2"


def v2_worker_restart(s: Subject) -> Iterator[Failure]:
    for path, g in s.groups:
        if s.autoscaling and s.v2 and not _restart_ok(pod_spec(g)):
            yield path + ("template", "spec", "restartPolicy"), \
                f"{s.group_label(g)}'s restartPolicy must be Never or unset with autoscaler v2"


def autoscaler_idle(s: Subject) -> Iterator[Failure]:
    idle = s.autoscaler.get("idleTimeoutSeconds")
    if isinstance(idle, int) and idle < 0:
        yield RCC + ("autoscalerOptions", "idleTimeoutSeconds"), f"must not be negative, got {idle}"


def autoscaler_start_cmd(s: Subject) -> Iterator[Failure]:
    if has_env(s.autoscaler.get("env"), "KUBERAY_GEN_AUTOSCALER_START_CMD"):
        yield RCC + ("autoscalerOptions", "env", Key("name", "KUBERAY_GEN_AUTOSCALER_START_CMD")), \
            ("KUBERAY_GEN_AUTOSCALER_START_CMD is managed by KubeRay and must not be set in "
             "autoscalerOptions.env")
