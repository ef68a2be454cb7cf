"""Checks of the optional cluster features in ``ValidateRayClusterSpec`` (v1.7.0).

History server collector (``validation.go:260-282``, ``validateCollectorOptions``
1029-1110), token authentication (284-313), network policy (316-319,
``validateNetworkPolicy`` 380-444), mTLS (323-326, ``validateTLSOptions`` 448-524), and the
RayCluster-level upgrade strategy the RayCluster controller rejects
(``ValidateRayClusterUpgradeOptions`` 42-57). Most of these features sit behind alpha feature
gates that are off by default.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from diffing.hints import Any
from diffing.kube import names
from diffing.kube.paths import Key, Path
from diffing.kube.values import mapping, seq
from diffing.raycluster.validate_spec import ray_version_problem
from diffing.raycluster.validation_subject import (
    RCC,
    Failure,
    Subject,
    first_container,
    has_env,
    is_set,
    pod_spec,
)

_HISTORY: Path = RCC + ("historyServerOptions",)
_COLLECTOR: Path = _HISTORY + ("collectorOptions",)
_COLLECTOR_NAME = "ray-history-collector"  # constant.go:359
_COLLECTOR_ENV = ("POD_IP", "FQ_RAY_IP", "RAY_CLUSTER_NAME", "RAY_CLUSTER_NAMESPACE", "RAY_ROLE",
                  "OWNER_KIND", "OWNER_NAME", "EVENTS_PORT")
# constant.go:162-165
_TLS_ENV = ("RAY_USE_TLS", "RAY_TLS_SERVER_CERT", "RAY_TLS_SERVER_KEY", "RAY_TLS_CA_CERT")
_TLS_VOLUME, _TLS_PATH = "ray-tls", "/etc/ray/tls"  # constant.go:168-169
_NETWORK: Path = RCC + ("networkPolicy",)


# -- history server ------------------------------------------------------------------------------


def history_gate(s: Subject) -> Iterator[Failure]:
    if s.rcc.get("historyServerOptions") is not None and not s.gate("RayClusterHistoryServer"):
        yield _HISTORY, "historyServerOptions needs the RayClusterHistoryServer feature gate (alpha, off)"


def _collector(s: Subject) -> Mapping[str, Any] | None:
    if s.rcc.get("historyServerOptions") is None:
        return None
    return mapping(s.rcc["historyServerOptions"]).get("collectorOptions")


def collector_required(s: Subject) -> Iterator[Failure]:
    if s.rcc.get("historyServerOptions") is not None and _collector(s) is None:
        yield _COLLECTOR, "historyServerOptions.collectorOptions must be set"


def collector_image(s: Subject) -> Iterator[Failure]:
    c = _collector(s)
    if c is not None and not is_set(mapping(c).get("image")):
        yield _COLLECTOR + ("image",), "historyServerOptions.collectorOptions.image must be set"


def _collector_env(s: Subject) -> dict[str, Mapping[str, Any]] | None:
    c = _collector(s)
    if c is None:
        return None
    return {str(mapping(e).get("name")): mapping(e) for e in seq(mapping(c).get("env"))}


def collector_forbidden_env(s: Subject) -> Iterator[Failure]:
    env = _collector_env(s) or {}
    for name in _COLLECTOR_ENV:
        if name in env:
            yield _COLLECTOR + ("env", Key("name", name)), \
                f"{name} is managed by KubeRay and must not be set in collectorOptions.env"


def _has_value(env: Mapping[str, Mapping[str, Any]], name: str) -> bool:
    e = env.get(name)
    return e is not None and (is_set(e.get("value")) or e.get("valueFrom") is not None)


def collector_backend(s: Subject) -> Iterator[Failure]:
    env = _collector_env(s)
    if env is None:
        return
    where = _COLLECTOR + ("env",)
    backend = str(env.get("STORAGE_BACKEND", {}).get("value") or "")
    if not backend:
        yield where, "STORAGE_BACKEND must be set with a literal value in collectorOptions.env"
        return
    kind = backend.upper()
    needs: tuple[str, ...] = ()
    if kind == "GCS":
        needs = ("GCS_BUCKET",)
    elif kind == "S3":
        needs = ("S3_REGION",)
    elif kind == "ALIYUNOSS":
        needs = ("OSS_BUCKET", "OSS_ENDPOINT", "OSS_REGION")  # constant.go:235-237
    elif kind == "AZUREBLOB":
        mode = str(env.get("AZURE_STORAGE_AUTH_MODE", {}).get("value") or "").strip().lower()
        if mode == "connection_string":
            needs = ("AZURE_STORAGE_CONNECTION_STRING",)
        elif mode in ("workload_identity", "default"):
            needs = ("AZURE_STORAGE_ACCOUNT_URL",)
        elif not (_has_value(env, "AZURE_STORAGE_CONNECTION_STRING")
                  or _has_value(env, "AZURE_STORAGE_ACCOUNT_URL")):
            yield where, ("AZUREBLOB needs AZURE_STORAGE_CONNECTION_STRING or AZURE_STORAGE_ACCOUNT_URL "
                          "in collectorOptions.env")
    for name in needs:
        if not _has_value(env, name):
            yield where, f"{name} must be set in collectorOptions.env when STORAGE_BACKEND is {kind}"


def collector_container_name(s: Subject) -> Iterator[Failure]:
    if _collector(s) is None:
        return
    for path, g, label in s.all_groups():
        for c in seq(pod_spec(g).get("containers")):
            if mapping(c).get("name") == _COLLECTOR_NAME:
                yield path + ("template", "spec", "containers", Key("name", _COLLECTOR_NAME)), \
                    (f"{label} must not define a container named {_COLLECTOR_NAME!r} with the "
                     "history server on")


# -- token authentication ------------------------------------------------------------------------


def _auth(s: Subject) -> Mapping[str, Any]:
    return mapping(s.rcc.get("authOptions"))


def k8s_auth(s: Subject) -> bool:
    """``IsK8sAuthEnabled`` (util.go:800-802)."""
    return _auth(s).get("enableK8sTokenAuth") is True


def token_version(s: Subject) -> Iterator[Failure]:
    if _auth(s).get("mode") == "token":
        bad = ray_version_problem(s, "authOptions.mode token", (2, 52, 0))
        if bad:
            yield RCC + ("rayVersion",), bad


def k8s_token_version(s: Subject) -> Iterator[Failure]:
    if _auth(s).get("mode") == "token" and k8s_auth(s) and \
            ray_version_problem(s, "", (2, 52, 0)) is None:
        bad = ray_version_problem(s, "authOptions.enableK8sTokenAuth", (2, 55, 0))
        if bad:
            yield RCC + ("rayVersion",), bad


def k8s_token_secret(s: Subject) -> Iterator[Failure]:
    if _auth(s).get("mode") == "token" and k8s_auth(s) and is_set(_auth(s).get("secretName")):
        yield RCC + ("authOptions", "secretName"), "enableK8sTokenAuth excludes authOptions.secretName"


def k8s_token_mode(s: Subject) -> Iterator[Failure]:
    if _auth(s).get("mode") != "token" and k8s_auth(s):
        yield RCC + ("authOptions", "mode"), "enableK8sTokenAuth needs authOptions.mode: token"


# -- network policy --------------------------------------------------------------------------------


def network_gate(s: Subject) -> Iterator[Failure]:
    if s.rcc.get("networkPolicy") is not None and not s.gate("RayClusterNetworkPolicy"):
        yield _NETWORK, "networkPolicy needs the RayClusterNetworkPolicy feature gate (alpha, off by default)"


def _network(s: Subject) -> tuple[Mapping[str, Any], str] | None:
    np = s.rcc.get("networkPolicy")
    if np is None:
        return None
    mode = mapping(np).get("mode")
    return mapping(np), "DenyAll" if mode is None else str(mode)


def _rule_conflicts(rules: Mapping[str, Any], mode: str) -> Iterator[tuple[str, str]]:
    if mode == "DenyAllEgress" and seq(rules.get("ingressRules")):
        yield "ingressRules", "ingress is not restricted"
    if mode == "DenyAllIngress" and seq(rules.get("egressRules")):
        yield "egressRules", "egress is not restricted"


def network_rules_mode(s: Subject) -> Iterator[Failure]:
    found = _network(s)
    if found is None:
        return
    np, mode = found
    for part in ("head", "worker"):
        if np.get(part) is not None:
            for field, why in _rule_conflicts(mapping(np[part]), mode):
                yield _NETWORK + (part, field), \
                    f"networkPolicy.{part}.{field} cannot be set in mode {mode} ({why})"
    for entry in seq(np.get("workerGroups")):
        entry = mapping(entry)
        for field, why in _rule_conflicts(entry, mode):
            yield _NETWORK + ("workerGroups", Key("groupName", str(entry.get("groupName"))), field), \
                f"{field} cannot be set in mode {mode} ({why})"


def network_group_names(s: Subject) -> Iterator[Failure]:
    if _network(s) is None:
        return
    for path, g in s.groups:
        name = str(g.get("groupName") or "")
        bad = names.dns1123_label(name)
        if bad:
            yield path + ("groupName",), f"with networkPolicy the group name {name!r} {bad}"


def network_unknown_groups(s: Subject) -> Iterator[Failure]:
    found = _network(s)
    if found is None:
        return
    known = {str(g.get("groupName") or "") for _, g in s.groups}
    for entry in seq(found[0].get("workerGroups")):
        name = str(mapping(entry).get("groupName") or "")
        if name not in known:
            yield _NETWORK + ("workerGroups", Key("groupName", name)), \
                f"networkPolicy.workerGroups[{name!r}] matches no worker group"


# -- mTLS ----------------------------------------------------------------------------------------


def tls_gate(s: Subject) -> Iterator[Failure]:
    if s.rcc.get("tlsOptions") is not None and not s.gate("RayClusterMTLS"):
        yield RCC + ("tlsOptions",), \
            "tlsOptions needs the RayClusterMTLS feature gate (alpha, off by default)"


def _tls_on(s: Subject) -> bool:
    """``IsTLSEnabled`` (util.go:807-812): the gate, and ``tlsOptions.enabled: true``."""
    return s.gate("RayClusterMTLS") and mapping(s.rcc.get("tlsOptions")).get("enabled") is True


def _mount_conflicts(mounts: Any) -> Iterator[str]:
    for m in seq(mounts):
        m = mapping(m)
        if m.get("name") == _TLS_VOLUME:
            yield f"the volume mount name {_TLS_VOLUME!r} is reserved when tlsOptions is on"
        elif m.get("mountPath") == _TLS_PATH:
            yield f"the mount path {_TLS_PATH} is reserved when tlsOptions is on"


def _containers(s: Subject) -> Iterator[tuple[Path, Mapping[str, Any], str]]:
    for path, g, label in s.all_groups():
        c = first_container(g)
        if c:
            yield path + ("template", "spec", "containers", 0), c, label


def tls_env(s: Subject) -> Iterator[Failure]:
    if not _tls_on(s):
        return
    for path, c, label in _containers(s):
        for name in _TLS_ENV:
            if has_env(c.get("env"), name):
                yield path + ("env", Key("name", name)), \
                    f"{name} in {label} is managed by KubeRay with tlsOptions"


def tls_mounts(s: Subject) -> Iterator[Failure]:
    if not _tls_on(s):
        return
    for path, c, _ in _containers(s):
        for why in _mount_conflicts(c.get("volumeMounts")):
            yield path + ("volumeMounts",), why


def tls_autoscaler(s: Subject) -> Iterator[Failure]:
    if not _tls_on(s) or s.rcc.get("autoscalerOptions") is None:
        return
    for name in _TLS_ENV:
        if has_env(s.autoscaler.get("env"), name):
            yield RCC + ("autoscalerOptions", "env", Key("name", name)), \
                f"{name} in autoscalerOptions.env is managed by KubeRay with tlsOptions"
    for why in _mount_conflicts(s.autoscaler.get("volumeMounts")):
        yield RCC + ("autoscalerOptions", "volumeMounts"), why


# -- the RayCluster built from the RayService ----------------------------------------------------


def cluster_upgrade_strategy(s: Subject) -> Iterator[Failure]:
    if mapping(s.rcc.get("upgradeStrategy")).get("type") is not None:
        yield RCC + ("upgradeStrategy",), (
            "rayClusterConfig.upgradeStrategy must not be set for a RayService: every RayCluster built "
            "from it fails validation and gets no pods")

