"""KubeRay's validation of a RayJob (v1.7.0), as a table of rules, plus the RayJob CRD's CEL rules.

The RayJob controller validates on every pass, before anything else (rayjob_controller.go:
144-162): ``ValidateRayJobMetadata``, then ``ValidateRayJobSpec`` (which also runs
``ValidateRayClusterSpec`` on ``rayClusterSpec``), then ``ValidateRayJobStatus`` (status only:
not checked here). A failure sets ``JobDeploymentStatus=ValidationFailed``, and no reconcile
branch leaves that status again (the switch has no case for it; the default branch only
requeues, rayjob_controller.go:448-450), even once the spec is fixed.

Upstream stops at the first failure; every failing rule is reported here, because each one
alone makes the operator reject the RayJob. Rules read the object as the API server stores it
(pruned and defaulted). ``source`` cites ``ray-operator/controllers/ray/utils/validation.go``
(VAL) at v1.7.0 unless it says otherwise.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, TypeGuard

from diffing.errors import ManifestError
from diffing.kube import names
from diffing.kube.loading import load_value
from diffing.kube.paths import Path
from diffing.kube.values import mapping, seq
from diffing.managed import external_manager
from diffing.raycluster.validation import check_raycluster
from diffing.raycluster.validation_subject import Failure, Violation
from diffing.versions import DEFAULT, VersionRules, rules_for

MAX_JOB_NAME = 47  # constant.go:379-381 MaxRayJobNameLength = MaxRayClusterNameLength (53) - 6
CLUSTER_SELECTOR_KEY = "ray.io/cluster"  # constant.go:85 RayJobClusterSelectorKey
RCS: Path = ("spec", "rayClusterSpec")
_DS: Path = ("spec", "deletionStrategy")
_ORDER = ("DeleteWorkers", "DeleteCluster", "DeleteSelf")  # VAL:894-898, TTLs non-decreasing along it

Problem = tuple[str, Path, str]  # (code, path, message)


class JobSubject:
    """A (pruned, defaulted) RayJob with the lookups the rules share, read the Go way."""

    def __init__(self, obj: Mapping[str, Any], gates: Mapping[str, bool]) -> None:
        self.obj = obj
        self.gates = gates
        meta = mapping(obj.get("metadata"))
        self.name = str(meta.get("name") or "")
        self.spec = mapping(obj.get("spec"))
        spec = self.spec
        self.suspend = spec.get("suspend") is True  # Suspend bool
        self.shutdown = spec.get("shutdownAfterJobFinishes") is True  # ShutdownAfterJobFinishes bool
        ttl = spec.get("ttlSecondsAfterFinished", 0)
        self.ttl = ttl if _is_int(ttl) else 0
        self.selector = mapping(spec.get("clusterSelector"))
        self.selector_mode = len(self.selector) != 0  # VAL:560
        self.mode = spec.get("submissionMode") or "K8sJobMode"
        backoff = spec.get("backoffLimit")
        self.backoff: int | None = backoff if _is_int(backoff) else None
        self.rcs = spec.get("rayClusterSpec") if isinstance(spec.get("rayClusterSpec"), Mapping) else None
        self.strategy = spec.get("deletionStrategy") if isinstance(spec.get("deletionStrategy"), Mapping) \
            else None
        # IsAutoscalingEnabled (util.go:751-754): the pointer is set and true (a nil spec: false).
        self.autoscaling = mapping(self.rcs).get("enableInTreeAutoscaling") is True


def _is_int(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


Check = Callable[[JobSubject], Iterator[Failure]]


@dataclass(frozen=True, slots=True)
class JobRule:
    """One failure case of KubeRay's RayJob validation: ``id`` is ``<upstream function>/<case>``."""

    id: str
    source: str
    check: Check
    code: str = "validation-failed"


# -- ValidateRayJobMetadata (VAL:533-541) -----------------------------------------------------


def _name_length(s: JobSubject) -> Iterator[Failure]:
    if not s.name.endswith("*") and len(s.name) > MAX_JOB_NAME:
        yield ("metadata", "name"), (f"the name has {len(s.name)} characters; KubeRay accepts at most "
                                     f"{MAX_JOB_NAME} (the RayCluster it builds appends a suffix)")


def _name_dns(s: JobSubject) -> Iterator[Failure]:
    if s.name.endswith("*"):
        return  # generateName: the API server picks the name
    bad = names.dns1035_label(s.name)
    if bad:
        yield ("metadata", "name"), f"{s.name!r} {bad}"


# -- ValidateRayJobSpec (VAL:543-630) ---------------------------------------------------------


def _suspend_without_shutdown(s: JobSubject) -> Iterator[Failure]:
    if s.suspend and not s.shutdown:
        yield ("spec", "suspend"), "suspend: true needs shutdownAfterJobFinishes: true"


def _ttl_negative(s: JobSubject) -> Iterator[Failure]:
    if s.ttl < 0:
        yield ("spec", "ttlSecondsAfterFinished"), f"ttlSecondsAfterFinished must not be negative: {s.ttl}"


def _suspend_selector(s: JobSubject) -> Iterator[Failure]:
    if s.suspend and s.selector_mode:
        yield ("spec", "suspend"), "suspend is not supported with clusterSelector (an existing RayCluster)"


def _no_cluster(s: JobSubject) -> Iterator[Failure]:
    if s.rcs is None and not s.selector_mode:
        yield ("spec", "rayClusterSpec"), "one of rayClusterSpec or clusterSelector must be set"


def _selector_name(s: JobSubject) -> Iterator[Failure]:
    if s.selector_mode and not s.selector.get(CLUSTER_SELECTOR_KEY):
        yield ("spec", "clusterSelector"), f"clusterSelector must name a cluster under {CLUSTER_SELECTOR_KEY}"


def _selector_sidecar(s: JobSubject) -> Iterator[Failure]:
    if s.selector_mode and s.mode == "SidecarMode":
        yield ("spec", "submissionMode"), "clusterSelector is not supported in SidecarMode"


def _positive_backoff(s: JobSubject) -> bool:
    return s.backoff is not None and s.backoff > 0


def _selector_backoff(s: JobSubject) -> Iterator[Failure]:
    if s.selector_mode and _positive_backoff(s):
        yield ("spec", "backoffLimit"), "backoffLimit > 0 is not supported with clusterSelector"


def _interactive_backoff(s: JobSubject) -> Iterator[Failure]:
    if s.mode == "InteractiveMode" and _positive_backoff(s):
        yield ("spec", "backoffLimit"), "backoffLimit > 0 is not supported in InteractiveMode"


def _sidecar_template(s: JobSubject) -> Iterator[Failure]:
    if s.mode == "SidecarMode" and s.spec.get("submitterPodTemplate") is not None:
        yield ("spec", "submitterPodTemplate"), "SidecarMode does not support submitterPodTemplate"


def _sidecar_config(s: JobSubject) -> Iterator[Failure]:
    if s.mode == "SidecarMode" and s.spec.get("submitterConfig") is not None:
        yield ("spec", "submitterConfig"), "SidecarMode does not support submitterConfig"


def _sidecar_restart(s: JobSubject) -> Iterator[Failure]:
    if s.mode != "SidecarMode" or s.rcs is None:
        return
    policy = mapping(mapping(mapping(s.rcs.get("headGroupSpec")).get("template")).get("spec")).get(
        "restartPolicy")
    if policy not in (None, "", "Never"):
        yield RCS + ("headGroupSpec", "template", "spec", "restartPolicy"), \
            f"SidecarMode needs the head pod's restartPolicy Never or unset, found {policy!r}"


def _k8s_auth(s: JobSubject) -> Iterator[Failure]:
    # IsK8sAuthEnabled (util.go:800-802)
    if s.rcs is not None and mapping(s.rcs.get("authOptions")).get("enableK8sTokenAuth") is True:
        yield RCS + ("authOptions", "enableK8sTokenAuth"), \
            "Kubernetes token auth (enableK8sTokenAuth) is not supported for a RayJob"


def _runtime_env(s: JobSubject) -> Iterator[Failure]:
    text = s.spec.get("runtimeEnvYAML")
    if not isinstance(text, str) or not text.strip():
        return
    try:
        value = load_value(text, source="runtimeEnvYAML")
    except ManifestError as exc:
        yield ("spec", "runtimeEnvYAML"), f"runtimeEnvYAML is not valid YAML: {exc}"
        return
    # UnmarshalRuntimeEnvYAML (dashboard_httpclient.go:382-388) decodes into a map
    # (utils/types/dashboard_httpclient.go:7): anything but a mapping or null fails.
    if value is not None and not isinstance(value, Mapping):
        yield ("spec", "runtimeEnvYAML"), "runtimeEnvYAML must be a YAML mapping (a runtime_env dict)"


def _positive(field: str) -> Check:
    def check(s: JobSubject) -> Iterator[Failure]:
        value = s.spec.get(field)
        if isinstance(value, int) and not isinstance(value, bool) and value <= 0:
            yield ("spec", field), f"{field} must be a positive integer, got {value}"
    return check


def _backoff_negative(s: JobSubject) -> Iterator[Failure]:
    if s.backoff is not None and s.backoff < 0:
        yield ("spec", "backoffLimit"), f"backoffLimit must not be negative, got {s.backoff}"


# -- validateDeletionConfiguration (VAL:752-792) and its helpers ------------------------------


def _ttl_without_shutdown(s: JobSubject) -> Iterator[Failure]:
    if not s.shutdown and s.ttl > 0:
        yield ("spec", "ttlSecondsAfterFinished"), \
            "ttlSecondsAfterFinished > 0 needs shutdownAfterJobFinishes: true"


def _legacy(s: JobSubject) -> bool:
    st = mapping(s.strategy)
    return st.get("onSuccess") is not None or st.get("onFailure") is not None


def _rules(s: JobSubject) -> list[Any]:
    return seq(mapping(s.strategy).get("deletionRules"))


def _strategy_gate(s: JobSubject) -> Iterator[Failure]:
    if s.strategy is not None and not s.gates.get("RayJobDeletionPolicy", False):
        yield _DS, "deletionStrategy needs the RayJobDeletionPolicy feature gate"


def _gated(s: JobSubject) -> bool:
    """validateDeletionConfiguration gets past its early returns (VAL:758-765)."""
    return s.strategy is not None and s.gates.get("RayJobDeletionPolicy", False)


def _rules_and_shutdown(s: JobSubject) -> Iterator[Failure]:
    if _gated(s) and _rules(s) and s.shutdown:
        yield _DS + ("deletionRules",), "deletionRules and shutdownAfterJobFinishes: true exclude each other"


def _rules_and_legacy(s: JobSubject) -> Iterator[Failure]:
    if _gated(s) and _rules(s) and _legacy(s):
        yield _DS, "deletionRules and the legacy onSuccess/onFailure cannot be used together"


def _strategy_empty(s: JobSubject) -> Iterator[Failure]:
    if _gated(s) and not _rules(s) and not _legacy(s):
        yield _DS, "deletionStrategy needs both onSuccess and onFailure, or deletionRules"


def _legacy_checked(s: JobSubject) -> bool:
    """The legacy policies are read when no deletionRules are set (VAL:771-782)."""
    return _gated(s) and _legacy(s) and not _rules(s)


def _legacy_policies(s: JobSubject) -> Iterator[Failure]:
    """validateLegacyDeletionPolicies (VAL:928-966), first failure only, as upstream."""
    if not _legacy_checked(s):
        return
    st = mapping(s.strategy)
    on_success, on_failure = st.get("onSuccess"), st.get("onFailure")
    if on_success is None or on_failure is None:
        yield _DS, "the legacy deletion policy needs both onSuccess and onFailure"
        return
    ok, fail = mapping(on_success).get("policy"), mapping(on_failure).get("policy")
    if ok is None:
        yield _DS + ("onSuccess", "policy"), "onSuccess.policy must be set"
        return
    if fail is None:
        yield _DS + ("onFailure", "policy"), "onFailure.policy must be set"
        return
    for which, policy in (("onSuccess", ok), ("onFailure", fail)):
        if s.selector_mode and policy in ("DeleteCluster", "DeleteWorkers"):
            yield _DS + (which, "policy"), f"{which}.policy {policy} is not supported with clusterSelector"
            return
    if "DeleteWorkers" in (ok, fail) and s.autoscaling:
        yield _DS, "DeleteWorkers is not supported with in-tree autoscaling"
        return
    if s.shutdown and "DeleteNone" in (ok, fail):
        yield _DS, "shutdownAfterJobFinishes: true contradicts a DeleteNone policy"


def _deletion_rules(s: JobSubject) -> Iterator[Failure]:
    """validateDeletionRules (VAL:797-868) with validateDeletionCondition (VAL:871-888) and
    validateTTLConsistency (VAL:892-925); upstream joins all of these errors."""
    if not _gated(s) or not _rules(s) or s.shutdown or _legacy(s):
        return
    by_status: dict[tuple[str, str], dict[str, tuple[int, int]]] = {}
    for i, rule in enumerate(_rules(s)):
        rule = mapping(rule)
        cond = mapping(rule.get("condition"))
        path = _DS + ("deletionRules", i)
        has_job, has_dep = cond.get("jobStatus") is not None, cond.get("jobDeploymentStatus") is not None
        ttl = cond.get("ttlSeconds", 0)
        ttl = ttl if _is_int(ttl) else 0
        if has_job == has_dep:
            yield path + ("condition",), "a condition needs exactly one of jobStatus and jobDeploymentStatus"
            continue
        if ttl < 0:
            yield path + ("condition", "ttlSeconds"), "ttlSeconds must not be negative"
            continue
        policy = str(rule.get("policy"))
        if s.selector_mode and policy in ("DeleteCluster", "DeleteWorkers"):
            yield path + ("policy",), f"{policy} is not supported with clusterSelector"
            continue
        if s.autoscaling and policy == "DeleteWorkers":
            yield path + ("policy",), "DeleteWorkers is not supported with in-tree autoscaling"
            continue
        key = ("jobStatus", str(cond["jobStatus"])) if has_job else (
            "jobDeploymentStatus", str(cond["jobDeploymentStatus"]))
        group = by_status.setdefault(key, {})
        if policy in group:
            yield path, f"a second rule for {policy} on {key[0]} {key[1]}"
            continue
        group[policy] = (ttl, i)
    for (kind, value), policies in by_status.items():
        prev: tuple[str, int] | None = None
        for policy in _ORDER:
            if policy not in policies:
                continue
            ttl, i = policies[policy]
            if prev is not None and ttl < prev[1]:
                yield _DS + ("deletionRules", i, "condition", "ttlSeconds"), (
                    f"on {kind} {value}, the {policy} TTL ({ttl}) must be >= the {prev[0]} TTL ({prev[1]}): "
                    "workers, then the cluster, then the RayJob")
            prev = (policy, ttl)


_V = "validation.go:"
JOB_RULES: tuple[JobRule, ...] = (
    JobRule("ValidateRayJobMetadata/name-too-long", _V + "534-536", _name_length, "name-too-long"),
    JobRule("ValidateRayJobMetadata/name-not-dns1035", _V + "537-539", _name_dns),
    JobRule("ValidateRayJobSpec/suspend-without-shutdown", _V + "547-549", _suspend_without_shutdown,
            "rayjob-suspend-without-shutdown"),
    JobRule("ValidateRayJobSpec/ttl-negative", _V + "551-553", _ttl_negative),
    JobRule("validateDeletionConfiguration/ttl-without-shutdown", _V + "753-755", _ttl_without_shutdown),
    JobRule("validateDeletionConfiguration/feature-gate", _V + "762-765", _strategy_gate),
    JobRule("validateDeletionConfiguration/rules-and-shutdown", _V + "771-773", _rules_and_shutdown),
    JobRule("validateDeletionConfiguration/rules-and-legacy", _V + "774-776", _rules_and_legacy),
    JobRule("validateLegacyDeletionPolicies", _V + "928-966", _legacy_policies),
    JobRule("validateDeletionRules", _V + "797-925", _deletion_rules),
    JobRule("validateDeletionConfiguration/empty", _V + "787-789", _strategy_empty),
    JobRule("ValidateRayJobSpec/suspend-cluster-selector", _V + "560-563", _suspend_selector,
            "rayjob-suspend-without-shutdown"),
    JobRule("ValidateRayJobSpec/no-cluster", _V + "564-566", _no_cluster),
    JobRule("ValidateRayJobSpec/cluster-selector-name", _V + "568-571", _selector_name),
    JobRule("ValidateRayJobSpec/cluster-selector-sidecar", _V + "572-574", _selector_sidecar),
    JobRule("ValidateRayJobSpec/cluster-selector-backoff", _V + "575-577", _selector_backoff),
    JobRule("ValidateRayJobSpec/interactive-backoff", _V + "587-589", _interactive_backoff),
    JobRule("ValidateRayJobSpec/sidecar-submitter-template", _V + "592-594", _sidecar_template),
    JobRule("ValidateRayJobSpec/sidecar-submitter-config", _V + "596-598", _sidecar_config),
    JobRule("ValidateRayJobSpec/sidecar-head-restart", _V + "600-602", _sidecar_restart),
    JobRule("ValidateRayJobSpec/k8s-token-auth", _V + "606-608", _k8s_auth),
    # VAL:609-611 (ValidateRayClusterSpec on rayClusterSpec) runs here: see check_rayjob.
    JobRule("ValidateRayJobSpec/runtime-env-yaml", _V + "614-618", _runtime_env),
    JobRule("ValidateRayJobSpec/active-deadline", _V + "619-621", _positive("activeDeadlineSeconds")),
    JobRule("ValidateRayJobSpec/pre-running-deadline", _V + "622-624",
            _positive("preRunningDeadlineSeconds")),
    JobRule("ValidateRayJobSpec/backoff-negative", _V + "625-627", _backoff_negative),
)

# check_raycluster also runs what only the RayCluster controller checks on a RayCluster object;
# ValidateRayJobSpec calls ValidateRayClusterSpec alone (VAL:609).
_NOT_CLUSTER_SPEC = ("ValidateRayClusterMetadata/", "ValidateRayClusterUpgradeOptions/")


def check_rayjob(obj: Mapping[str, Any], minor: tuple[int, int] = (1, 7),
                 gates: Mapping[str, bool] | None = None) -> list[Violation]:
    """Every check of ``validateRayJob`` (rayjob_controller.go:464-482) that ``obj`` (a pruned,
    defaulted RayJob) fails; ``[]`` for a RayJob another controller manages (skipped before
    validation, rayjob_controller.go:107-110)."""
    if external_manager(obj) is not None:
        return []
    subject = JobSubject(obj, gates or {})
    out: list[Violation] = []
    for rule in JOB_RULES:
        fn = rule.id.split("/")[0]
        for path, message in rule.check(subject):
            out.append(Violation(rule.id, rule.code, path, f"{message} (KubeRay {fn}, {rule.source})"))
    if subject.rcs is not None:
        out.extend(_cluster_spec(obj, subject.rcs, minor, gates or {}))
    return out


def _cluster_spec(obj: Mapping[str, Any], rcs: Mapping[str, Any], minor: tuple[int, int],
                  gates: Mapping[str, bool]) -> Iterator[Violation]:
    """ValidateRayClusterSpec(rayClusterSpec, the RayJob's annotations) (VAL:609-611), with paths
    into the RayJob."""
    meta = mapping(obj.get("metadata"))
    spec = {k: v for k, v in rcs.items() if k != "managedBy"}  # the RayJob's own check ignores it
    wrapped = {"metadata": {"name": meta.get("name"), "annotations": meta.get("annotations")}, "spec": spec}
    for v in check_raycluster(wrapped, minor, gates):
        if v.rule.startswith(_NOT_CLUSTER_SPEC):
            continue
        path = RCS + tuple(v.path[1:]) if v.path[:1] == ("spec",) else v.path
        out_message = f"rayClusterSpec: {v.message} (called from ValidateRayJobSpec, {_V}609-611)"
        yield Violation(v.rule, v.code, path, out_message)


def validate_rayjob(obj: Mapping[str, Any], rules: VersionRules | None = None, *,
                    feature_gates: Mapping[str, bool] | None = None) -> list[Problem]:
    """Problems that make KubeRay mark ``obj`` (a pruned, defaulted RayJob) ValidationFailed."""
    if rules is None:
        rules = rules_for(DEFAULT)
    return [(v.code, v.path, v.message) for v in check_rayjob(obj, rules.minor, rules.gates(feature_gates))]


# -- the RayJob CRD's CEL rules the generic schema check does not evaluate ----------------------


def cel_errors(spec: Any) -> list[tuple[Path, str]]:
    """Violations of the RayJob CRD's ``deletionStrategy`` rules (ray.io_rayjobs.yaml:83-89,
    125-131) and the ``minItems: 1`` of ``deletionRules`` (ray.io_rayjobs.yaml:101): the API
    server rejects the manifest. ``spec`` is the manifest's spec as written."""
    out: list[tuple[Path, str]] = []
    st = mapping(spec).get("deletionStrategy")
    if not isinstance(st, Mapping):
        return out

    def has(m: Mapping[str, Any], key: str) -> bool:
        return m.get(key) is not None  # CEL has(): a null is pruned first

    legacy = has(st, "onSuccess") or has(st, "onFailure")
    if legacy and has(st, "deletionRules"):
        out.append((_DS, "legacy onSuccess/onFailure and deletionRules cannot be used together"))
    if not ((has(st, "onSuccess") and has(st, "onFailure")) or has(st, "deletionRules")):
        out.append((_DS, "deletionStrategy needs both onSuccess and onFailure, or deletionRules"))
    rules = st.get("deletionRules")
    if isinstance(rules, list):
        if not rules:
            out.append((_DS + ("deletionRules",), "deletionRules needs at least one rule (minItems 1)"))
        for i, rule in enumerate(rules):
            cond = mapping(mapping(rule).get("condition"))
            if has(cond, "jobStatus") and has(cond, "jobDeploymentStatus"):
                out.append((_DS + ("deletionRules", i, "condition"),
                             "jobStatus and jobDeploymentStatus cannot be used together in one condition"))
            elif isinstance(mapping(rule).get("condition"), Mapping) and not (
                    has(cond, "jobStatus") or has(cond, "jobDeploymentStatus")):
                out.append((_DS + ("deletionRules", i, "condition"),
                             "a deletion condition needs jobStatus or jobDeploymentStatus"))
    return out
