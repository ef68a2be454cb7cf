"""Pod rules the API server enforces on the pods KubeRay builds from a RayService's templates.

The RayService and its RayCluster are accepted, but every pod the RayCluster controller
creates from a template that breaks one of these rules is rejected: the pods never exist and
a rollout that waits for them never finishes. The rules are those of Kubernetes'
``pkg/apis/core/validation/validation.go`` (function named in each rule's ``source``) that
RayService templates commonly trip, as data. Pod defaulting runs first: a resource with a
limit and no request gets the limit as its request (``SetDefaults_Pod``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from fractions import Fraction

from diffing.hints import Any
from diffing.kube import names
from diffing.kube.paths import Key, Path
from diffing.kube.quantity import Quantity, QuantityError, QuantityOutOfRange
from diffing.kube.values import mapping, seq
from diffing.record import Record, set_field

_STANDARD = ("cpu", "memory", "ephemeral-storage")


def is_native(name: str) -> bool:
    """``helper.IsNativeResource``: no domain, or a kubernetes.io one."""
    return "/" not in name or "kubernetes.io/" in name


def is_extended(name: str) -> bool:
    """``helper.IsExtendedResourceName`` (pkg/apis/core/v1/helper/helpers.go): a domain-qualified
    name outside ``kubernetes.io/``, without the quota prefix ``requests.``; what device plugins
    advertise (nvidia.com/gpu, habana.ai/gaudi, gpu.intel.com/i915...). cpu, memory,
    ephemeral-storage, storage and ``hugepages-*`` carry no domain: native."""
    return not is_native(name) and not name.startswith("requests.")


def overcommit_allowed(name: str) -> bool:
    """``helper.IsOvercommitAllowed``: native and not huge pages (extended resources are not)."""
    return is_native(name) and not name.startswith("hugepages-")


def _quantities(resources: Any, unreadable: dict[str, str] | None = None) -> dict[str, Fraction]:
    out: dict[str, Fraction] = {}
    for name, raw in mapping(resources).items():
        try:
            out[str(name)] = Quantity.parse(raw).value
        except QuantityOutOfRange:
            # Matches the CRD's pattern but is beyond int64 (1e200000): for the out_of_range rule.
            if unreadable is not None:
                unreadable[str(name)] = str(raw)[:24]
        except QuantityError:
            continue  # a malformed quantity is a schema violation, reported there
    return out


Failure = tuple[Path, str]  # (path below the container, why)


class Container(Record):
    """A container with its requests and limits parsed once for every rule."""

    __slots__ = ("spec", "requests", "limits", "out_of_range")

    spec: Mapping[str, Any]
    requests: dict[str, Fraction]
    limits: dict[str, Fraction]
    out_of_range: dict[tuple[str, str], str]  # (requests|limits, name) -> the raw amount

    def __init__(self, spec: Mapping[str, Any], requests: dict[str, Fraction], limits: dict[str, Fraction],
                 out_of_range: dict[tuple[str, str], str]) -> None:
        set_field(self, "spec", spec)
        set_field(self, "requests", requests)
        set_field(self, "limits", limits)
        set_field(self, "out_of_range", out_of_range)

    @classmethod
    def of(cls, spec: Mapping[str, Any]) -> Container:
        res = mapping(spec.get("resources"))
        bad_requests: dict[str, str] = {}
        bad_limits: dict[str, str] = {}
        requests = _quantities(res.get("requests"), bad_requests)
        limits = _quantities(res.get("limits"), bad_limits)
        out_of_range = {("requests", k): v for k, v in bad_requests.items()}
        out_of_range.update({("limits", k): v for k, v in bad_limits.items()})
        return cls(spec, requests, limits, out_of_range)


Check = Callable[[Container], Iterator[Failure]]


def negative(c: Container) -> Iterator[Failure]:
    for part, amounts in (("requests", c.requests), ("limits", c.limits)):
        for name, v in amounts.items():
            if v < 0:
                yield ("resources", part, name), f"{name} {part} must not be negative"


def not_integer(c: Container) -> Iterator[Failure]:
    for part, amounts in (("requests", c.requests), ("limits", c.limits)):
        for name, v in amounts.items():
            if is_extended(name) and v.denominator != 1:
                yield ("resources", part, name), f"{name} is counted in whole devices; {v} is not an integer"


def resource_name(c: Container) -> Iterator[Failure]:
    for part, amounts in (("requests", c.requests), ("limits", c.limits)):
        for name in amounts:
            if "/" not in name and name not in _STANDARD and not name.startswith("hugepages-"):
                yield ("resources", part, name), \
                    (f"{name!r} is not a standard container resource (write the device plugin's name, "
                     "e.g. nvidia.com/gpu)")


def out_of_range(c: Container) -> Iterator[Failure]:
    """Our bound, not an upstream rule: the API server stores such an amount, but the scheduler
    and the kubelet compute resources as int64 (Quantity.Value/MilliValue), so a pod asking for
    1e200000 CPUs can never be placed. diffing/quantity.py holds the bound."""
    for (part, name), raw in c.out_of_range.items():
        yield ("resources", part, name), (f"{name} {part} {raw} is beyond what Kubernetes computes "
                                          "with (int64): the pods can never be scheduled")


def request_without_limit(c: Container) -> Iterator[Failure]:
    requests, limits = c.requests, c.limits
    for name in requests:
        if not overcommit_allowed(name) and name not in limits:
            yield ("resources", "limits"), f"{name} is requested without a limit; it cannot be overcommitted"


def request_not_limit(c: Container) -> Iterator[Failure]:
    requests, limits = c.requests, c.limits
    for name, v in requests.items():
        if not overcommit_allowed(name) and name in limits and v != limits[name]:
            yield ("resources", "requests", name), \
                f"the {name} request ({_show(v)}) must equal its limit ({_show(limits[name])})"


def request_over_limit(c: Container) -> Iterator[Failure]:
    requests, limits = c.requests, c.limits
    for name, v in requests.items():
        if overcommit_allowed(name) and name in limits and v > limits[name]:
            yield ("resources", "requests", name), \
                f"the {name} request ({_show(v)}) is above its limit ({_show(limits[name])})"


def port_number(c: Container) -> Iterator[Failure]:
    for i, p in enumerate(seq(c.spec.get("ports"))):
        port = mapping(p).get("containerPort")
        if isinstance(port, int) and not 1 <= port <= 65535:
            yield ("ports", i, "containerPort"), f"containerPort {port} is not between 1 and 65535"


def port_name(c: Container) -> Iterator[Failure]:
    for i, p in enumerate(seq(c.spec.get("ports"))):
        name = mapping(p).get("name")
        if isinstance(name, str) and name:
            bad = names.port_name(name)
            if bad:
                yield ("ports", i, "name"), f"port name {name!r} {bad} (an IANA service name)"


def _show(v: Fraction) -> str:
    return str(int(v)) if v.denominator == 1 else f"{float(v):g}"


class PodRule(Record):
    __slots__ = ("id", "source", "check")

    id: str
    source: str
    check: Check

    def __init__(self, id: str, source: str, check: Check) -> None:
        set_field(self, "id", id)
        set_field(self, "source", source)
        set_field(self, "check", check)


_K = "kubernetes pkg/apis/core/validation/validation.go "
RULES: tuple[PodRule, ...] = (
    PodRule("ValidateResourceRequirements/resource-name", _K + "validateContainerResourceName",
            resource_name),
    PodRule("ValidateResourceRequirements/negative", _K + "ValidateNonnegativeQuantity", negative),
    PodRule("quantity-out-of-range", "rayservice-impact's int64 bound (diffing/quantity.py)", out_of_range),
    PodRule("ValidateResourceRequirements/extended-not-integer", _K + "ValidateResourceQuantityValue",
            not_integer),
    PodRule("ValidateResourceRequirements/request-not-limit", _K + "ValidateResourceRequirements",
            request_not_limit),
    PodRule("ValidateResourceRequirements/request-without-limit", _K + "ValidateResourceRequirements",
            request_without_limit),
    PodRule("ValidateResourceRequirements/request-over-limit", _K + "ValidateResourceRequirements",
            request_over_limit),
    PodRule("validateContainerPorts/port-number", _K + "validateContainerPorts", port_number),
    PodRule("validateContainerPorts/port-name", _K + "validateContainerPorts (IsValidPortName)", port_name),
)


class PodProblem(Record):
    __slots__ = ("rule", "path", "message")

    rule: str
    path: Path
    message: str

    def __init__(self, rule: str, path: Path, message: str) -> None:
        set_field(self, "rule", rule)
        set_field(self, "path", path)
        set_field(self, "message", message)


def _containers(group_path: Path, group: Mapping[str, Any]) -> Iterator[tuple[Path, Mapping[str, Any]]]:
    spec = mapping(mapping(group.get("template")).get("spec"))
    for field in ("initContainers", "containers"):
        for i, c in enumerate(seq(spec.get(field))):
            c = mapping(c)
            name = c.get("name")
            seg: Any = Key("name", name) if isinstance(name, str) and name else i
            yield group_path + ("template", "spec", field, seg), c


def pod_problems(rcc: Mapping[str, Any], base: Path) -> list[PodProblem]:
    """Every rule the pods of ``rcc``'s head and worker groups break, with the field's path."""
    rcc = mapping(rcc)
    targets: list[tuple[Path, Mapping[str, Any]]] = list(_containers(base + ("headGroupSpec",),
                                                                     mapping(rcc.get("headGroupSpec"))))
    autoscaler = mapping(rcc.get("autoscalerOptions"))
    if rcc.get("enableInTreeAutoscaling") is True and autoscaler.get("resources") is not None:
        # The autoscaler sidecar KubeRay adds to the head pod takes these resources.
        targets.append((base + ("autoscalerOptions",), {"resources": autoscaler["resources"]}))
    for i, g in enumerate(seq(rcc.get("workerGroupSpecs"))):
        g = mapping(g)
        name = g.get("groupName")
        seg: Any = Key("groupName", name) if isinstance(name, str) and name else i
        targets.extend(_containers(base + ("workerGroupSpecs", seg), g))
    out = []
    for path, spec in targets:
        if not spec.get("resources") and not spec.get("ports"):
            continue
        container = Container.of(spec)
        for rule in RULES:
            for sub, message in rule.check(container):
                out.append(PodProblem(rule.id, path + sub, message))
    return out
