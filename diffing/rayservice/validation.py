"""The operator's own validation of a RayService, as a table of rules.

When a rule fails, the operator sets ``Ready=False/ValidationFailed`` and does nothing else
(``rayservice_controller.go:156-171``): the old clusters keep serving and the change is
silently not applied. The analysis reports each failure as an ``error`` finding and predicts
``not-applied``.

:data:`RULES` holds every failure case of KubeRay v1.7.0's ``ValidateRayServiceMetadata``,
``ValidateRayServiceSpec`` and ``ValidateRayClusterSpec``
(:data:`diffing.raycluster.validation.SPEC_RULES`) with the helpers they call, in upstream
order (``source``: lines of ``ray-operator/controllers/ray/utils/validation.go`` at v1.7.0).
``since`` is the first KubeRay release whose ``validation.go`` carries the check, so a
version's rules are the table filtered by its minor version; ``gate`` names the feature
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

from diffing.hints import Any
from diffing.kube import names
from diffing.kube.paths import Path
from diffing.kube.values import mapping
from diffing.managed import external_manager
from diffing.raycluster import validate_spec_options as oc
from diffing.raycluster.validation import SPEC_RULES, Problem
from diffing.raycluster.validation_subject import RCC, Failure, OperatorRule, Subject, Violation, is_set
from diffing.versions import DEFAULT, VersionRules, rules_for

MAX_NAME = 47  # constant.go:375-378 MaxRayServiceNameLength = MaxRayClusterNameLength (53) - 6
STRATEGIES = ("NewCluster", "NewClusterWithIncrementalUpgrade", "None")
_TIMEOUT = "ray.io/initializing-timeout"  # constant.go:82
_UPGRADE: Path = ("spec", "upgradeStrategy", "clusterUpgradeOptions")

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


_R = OperatorRule
_V = "validation.go:"
_INC = "RayServiceIncrementalUpgrade"

RULES: tuple[OperatorRule, ...] = (
    _R("ValidateRayServiceMetadata/name-too-long", _V + "633-635", (1, 4), _name_length,
       code="name-too-long"),
    _R("ValidateRayServiceMetadata/name-not-dns1035", _V + "636-638", (1, 4), _name_dns),
    _R("validateInitializingTimeout/non-positive-duration", _V + "662-667", (1, 5), _timeout_duration),
    _R("validateInitializingTimeout/non-positive-seconds", _V + "670-675", (1, 5), _timeout_seconds),
    _R("validateInitializingTimeout/invalid-format", _V + "677", (1, 5), _timeout_format),
    _R("ValidateRayServiceSpec/k8s-token-auth", _V + "681-683", (1, 6), _rs_k8s_auth),
    # ValidateRayClusterSpec, called from ValidateRayServiceSpec (685) with the RS annotations.
    *SPEC_RULES,
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
        rules = rules_for(DEFAULT)
    gates = rules.gates(feature_gates)
    if incremental_gate is not None:
        gates["RayServiceIncrementalUpgrade"] = incremental_gate
    return [(v.code, v.path, v.message) for v in check_rayservice(obj, rules.minor, gates)]
