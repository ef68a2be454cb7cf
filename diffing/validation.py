"""The operator's own validation of a RayService (``utils/validation.go``, v1.7.0).

When it fails, the operator sets ``Ready=False/ValidationFailed`` and does nothing else: the
old clusters keep serving and the change is silently not applied. Each check returns the
field path and a message; the analysis reports them as ``error`` findings and predicts
``not-applied``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from .paths import Key, Path
from .values import mapping, seq

MAX_NAME = 47  # constant.go MaxRayServiceNameLength = 53 - 6
STRATEGIES = ("NewCluster", "NewClusterWithIncrementalUpgrade", "None")
_DNS1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
_GO_DURATION = re.compile(r"^([0-9]*(\.[0-9]*)?(ns|us|µs|ms|s|m|h))+$")
_RESOURCE_PARAMS = ("num-cpus", "num-gpus", "memory", "resources")

Problem = tuple[str, Path, str]  # (code, path, message)


_m = mapping


def _autoscaler_v2(rcc: Mapping[str, Any]) -> bool:
    if _m(rcc.get("autoscalerOptions")).get("version") == "v2":
        return True
    head = _m(_m(_m(rcc.get("headGroupSpec")).get("template")).get("spec"))
    for c in seq(head.get("containers")):
        for e in seq(_m(c).get("env")):
            if _m(e).get("name") == "RAY_enable_autoscaler_v2" and str(_m(e).get("value")).lower() in (
                    "1", "true"):
                return True
    return False


def _version_at_least(version: Any, want: tuple[int, ...]) -> bool:
    m = re.match(r"^(\d+)\.(\d+)(?:\.(\d+))?", str(version or ""))
    if not m:
        return True  # unknown versions are not held against the user
    have = tuple(int(x or 0) for x in m.groups())
    return have >= want


def validate_rayservice(obj: Mapping[str, Any], *, incremental_gate: bool,
                        feature_gates: Mapping[str, bool]) -> list[Problem]:
    """Problems that make the operator reject ``obj`` (a defaulted RayService)."""
    out: list[Problem] = []
    meta = _m(obj.get("metadata"))
    name = str(meta.get("name", ""))
    if len(name) > MAX_NAME:
        out.append(("name-too-long", ("metadata", "name"),
                    f"the name has {len(name)} characters; KubeRay accepts at most {MAX_NAME} "
                    "(it appends a 6-character suffix to build RayCluster names)"))
    elif not _DNS1035.match(name):
        out.append(("validation-failed", ("metadata", "name"), f"{name!r} is not a DNS-1035 label"))
    annotations = _m(meta.get("annotations"))
    timeout = annotations.get("ray.io/initializing-timeout")
    if timeout is not None and not _positive_duration(str(timeout)):
        out.append(("validation-failed", ("metadata", "annotations", "ray.io/initializing-timeout"),
                    f"{timeout!r} is not a positive Go duration or a positive number of seconds"))
    spec = _m(obj.get("spec"))
    rcc = _m(spec.get("rayClusterConfig"))
    strategy = _m(spec.get("upgradeStrategy"))
    kind = strategy.get("type")
    if kind is not None and kind not in STRATEGIES:
        out.append(("validation-failed", ("spec", "upgradeStrategy", "type"),
                    f"upgradeStrategy.type {kind!r} is not one of {', '.join(STRATEGIES)}"))
    if kind == "NewClusterWithIncrementalUpgrade" and incremental_gate:
        out.extend(_incremental(spec, rcc))
    out.extend(_cluster(rcc, annotations, feature_gates))
    head_svc = _m(_m(_m(rcc.get("headGroupSpec")).get("headService")).get("metadata"))
    if head_svc.get("name"):
        out.append(("validation-failed", ("spec", "rayClusterConfig", "headGroupSpec", "headService",
                                          "metadata", "name"),
                    "headService.metadata.name must be empty for a RayService"))
    if _m(rcc.get("authOptions")).get("enableK8sTokenAuth") is True:
        out.append(("validation-failed", ("spec", "rayClusterConfig", "authOptions", "enableK8sTokenAuth"),
                    "Kubernetes token auth is not supported for RayService"))
    return out


def _positive_duration(text: str) -> bool:
    if re.fullmatch(r"[0-9]+", text):
        return int(text) > 0
    if not _GO_DURATION.match(text):
        return False
    return any(ch in "123456789" for ch in text)


def _incremental(spec: Mapping[str, Any], rcc: Mapping[str, Any]) -> list[Problem]:
    out: list[Problem] = []
    base: Path = ("spec", "upgradeStrategy", "clusterUpgradeOptions")
    if rcc.get("enableInTreeAutoscaling") is not True:
        out.append(("validation-failed", ("spec", "rayClusterConfig", "enableInTreeAutoscaling"),
                    "NewClusterWithIncrementalUpgrade requires enableInTreeAutoscaling: true "
                    "(the Ray autoscaler is required)"))
    opts = _m(spec.get("upgradeStrategy")).get("clusterUpgradeOptions")
    if not isinstance(opts, Mapping):
        out.append(("validation-failed", base,
                    "NewClusterWithIncrementalUpgrade needs clusterUpgradeOptions"))
        return out
    if not opts.get("gatewayClassName"):
        out.append(("validation-failed", base + ("gatewayClassName",), "gatewayClassName must be set"))
    interval = opts.get("intervalSeconds")
    if isinstance(interval, int) and interval <= 0:
        out.append(("validation-failed", base + ("intervalSeconds",), "intervalSeconds must be > 0"))
    step, surge = opts.get("stepSizePercent"), opts.get("maxSurgePercent", 100)
    for label, value in (("stepSizePercent", step), ("maxSurgePercent", surge)):
        if isinstance(value, int) and not 0 <= value <= 100:
            out.append(("validation-failed", base + (label,), f"{label} must be within 0..100"))
    if isinstance(step, int) and isinstance(surge, int) and step > surge:
        out.append(("validation-failed", base + ("stepSizePercent",),
                    f"stepSizePercent ({step}) must not exceed maxSurgePercent ({surge})"))
    return out


def _cluster(rcc: Mapping[str, Any], annotations: Mapping[str, Any],
             gates: Mapping[str, bool]) -> list[Problem]:
    out: list[Problem] = []
    base: Path = ("spec", "rayClusterConfig")
    autoscaling = rcc.get("enableInTreeAutoscaling") is True
    v2 = _autoscaler_v2(rcc)
    head = _m(rcc.get("headGroupSpec"))
    groups: list[tuple[Path, Mapping[str, Any]]] = [(base + ("headGroupSpec",), head)]
    for i, g in enumerate(seq(rcc.get("workerGroupSpecs"))):
        g = _m(g)
        seg: Any = Key("groupName", str(g["groupName"])) if g.get("groupName") else i
        groups.append((base + ("workerGroupSpecs", seg), g))
    for path, g in groups:
        pod = _m(_m(g.get("template")).get("spec"))
        if not pod.get("containers"):
            out.append(("validation-failed", path + ("template", "spec", "containers"),
                        "needs at least one container"))
        params = _m(g.get("rayStartParams"))
        if g.get("resources") and any(k in params for k in _RESOURCE_PARAMS):
            out.append(("validation-failed", path + ("resources",),
                        "the group resources map cannot be combined with num-cpus/num-gpus/memory/"
                        "resources in rayStartParams"))
        if "labels" in params:
            out.append(("validation-failed", path + ("rayStartParams", "labels"),
                        "rayStartParams.labels is not allowed; use the group's labels field"))
        for key in _m(g.get("labels")):
            if not re.fullmatch(r"([a-z0-9.\-]+/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?", str(key)):
                out.append(("validation-failed", path + ("labels", str(key)),
                            f"{key!r} is not a valid Kubernetes label key"))
        if path[-2:-1] == ("workerGroupSpecs",):
            lo, hi = g.get("minReplicas"), g.get("maxReplicas")
            if isinstance(lo, int) and lo < 0 or isinstance(hi, int) and hi < 0:
                out.append(("validation-failed", path, "minReplicas and maxReplicas must be >= 0"))
            elif isinstance(lo, int) and isinstance(hi, int) and lo > hi:
                out.append(("validation-failed", path + ("minReplicas",),
                            f"minReplicas ({lo}) is greater than maxReplicas ({hi})"))
            idle = g.get("idleTimeoutSeconds")
            if idle is not None and (not isinstance(idle, int) or idle < 0 or not v2):
                out.append(("validation-failed", path + ("idleTimeoutSeconds",),
                            "idleTimeoutSeconds must be >= 0 and needs autoscaler v2"))
            if g.get("suspend") is True and autoscaling:
                out.append(("validation-failed", path + ("suspend",),
                            "a worker group cannot be suspended while in-tree autoscaling is on"))
            priority = g.get("priority")
            if isinstance(priority, int) and priority != 0 and (
                    not v2 or not _version_at_least(rcc.get("rayVersion"), (2, 56))):
                out.append(("validation-failed", path + ("priority",),
                            "priority needs Ray >= 2.56 and autoscaler v2"))
    gcs = rcc.get("gcsFaultToleranceOptions")
    if gcs is not None:
        for ann in ("ray.io/ft-enabled", "ray.io/external-storage-namespace"):
            if ann in annotations:
                out.append(("validation-failed", ("metadata", "annotations", ann),
                            f"the {ann} annotation cannot be combined with gcsFaultToleranceOptions"))
        if _m(gcs).get("backend") == "rocksdb" and not gates.get("GCSFaultToleranceEmbeddedStorage", False):
            out.append(("validation-failed", base + ("gcsFaultToleranceOptions", "backend"),
                        "the rocksdb backend needs the GCSFaultToleranceEmbeddedStorage feature gate"))
    for field, gate in (("networkPolicy", "RayClusterNetworkPolicy"), ("tlsOptions", "RayClusterMTLS"),
                        ("historyServerOptions", "RayClusterHistoryServer")):
        if rcc.get(field) is not None and not gates.get(gate, False):
            out.append(("validation-failed", base + (field,),
                        f"{field} needs the {gate} feature gate, which is off by default"))
    auth = _m(rcc.get("authOptions"))
    if auth.get("mode") == "token" and not _version_at_least(rcc.get("rayVersion"), (2, 52)):
        out.append(("validation-failed", base + ("authOptions", "mode"),
                    "token authentication needs rayVersion >= 2.52"))
    if autoscaling is False and _autoscaler_v2(rcc) and not _m(rcc.get("autoscalerOptions")).get("version"):
        out.append(("validation-failed", base + ("enableInTreeAutoscaling",),
                    "RAY_enable_autoscaler_v2 is set but in-tree autoscaling is off"))
    return out
