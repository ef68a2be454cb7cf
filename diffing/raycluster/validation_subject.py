"""A RayService as KubeRay's validation reads it, and the shape of one validation rule.

:class:`Subject` precomputes the lookups many rules share (head container, worker groups
with their report paths, autoscaler settings, feature gates); :class:`OperatorRule` is one
row of the rule table in :mod:`diffing.validation`. Names of helpers follow the upstream
ones they mirror (``utils/util.go`` at v1.7.0).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping

from diffing.hints import Any
from diffing.kube.paths import Key, Path
from diffing.kube.values import mapping, seq
from diffing.record import Record, set_field

RCC: Path = ("spec", "rayClusterConfig")
HEAD: Path = RCC + ("headGroupSpec",)
AUTOSCALER_V2_ENV = "RAY_enable_autoscaler_v2"  # utils/constant.go:191

Failure = tuple[Path, str]  # (where, why)


class Violation(Record):
    """One failed rule: ``rule`` is the :class:`OperatorRule` id."""

    __slots__ = ("rule", "code", "path", "message")

    rule: str
    code: str
    path: Path
    message: str

    def __init__(self, rule: str, code: str, path: Path, message: str) -> None:
        set_field(self, "rule", rule)
        set_field(self, "code", code)
        set_field(self, "path", path)
        set_field(self, "message", message)


class Subject:
    """A (pruned, defaulted) RayService with the lookups many rules share."""

    def __init__(self, obj: Mapping[str, Any], gates: Mapping[str, bool]) -> None:
        self.gates = gates
        meta = mapping(obj.get("metadata"))
        self.name = str(meta.get("name") or "")
        self.annotations = {str(k): "" if v is None else str(v)
                            for k, v in mapping(meta.get("annotations")).items()}
        self.spec = mapping(obj.get("spec"))
        self.rcc = mapping(self.spec.get("rayClusterConfig"))
        self.head = mapping(self.rcc.get("headGroupSpec"))
        self.head_pod = pod_spec(self.head)
        self.head_container = first_container(self.head)
        self.groups: list[tuple[Path, Mapping[str, Any]]] = []
        for i, g in enumerate(seq(self.rcc.get("workerGroupSpecs"))):
            g = mapping(g)
            name = g.get("groupName")
            seg: Any = Key("groupName", str(name)) if isinstance(name, str) and name else i
            self.groups.append((RCC + ("workerGroupSpecs", seg), g))
        # IsAutoscalingEnabled (util.go:751-754): the pointer is set and true.
        self.autoscaling = self.rcc.get("enableInTreeAutoscaling") is True
        self.autoscaler = mapping(self.rcc.get("autoscalerOptions"))
        # IsAutoscalingV2Enabled (util.go:756-758): only autoscalerOptions.version counts.
        self.v2 = self.autoscaler.get("version") == "v2"
        self.gcs = self.rcc.get("gcsFaultToleranceOptions")

    def gate(self, name: str) -> bool:
        return self.gates.get(name, False)

    @staticmethod
    def group_label(group: Mapping[str, Any]) -> str:
        return f"worker group {group.get('groupName', '')!s}"

    def all_groups(self) -> Iterator[tuple[Path, Mapping[str, Any], str]]:
        """The head group, then every worker group, each with its path and a label."""
        yield HEAD, self.head, "the head group"
        for path, g in self.groups:
            yield path, g, self.group_label(g)

    def v2_env_on(self) -> bool:
        """The head container's RAY_enable_autoscaler_v2 is exactly "1" or "true"."""
        found, value = env_value(self.head_container, AUTOSCALER_V2_ENV)
        return found and value in ("1", "true")

    def head_env_path(self, name: str) -> Path:
        return env_path(HEAD, self.head_container, name)


def pod_spec(group: Mapping[str, Any]) -> Mapping[str, Any]:
    return mapping(mapping(group.get("template")).get("spec"))


def first_container(group: Mapping[str, Any]) -> Mapping[str, Any]:
    """``Containers[RayContainerIndex]``: the Ray container is the first one."""
    containers = seq(pod_spec(group).get("containers"))
    return mapping(containers[0]) if containers else {}


def env_value(container: Mapping[str, Any], name: str) -> tuple[bool, str]:
    """``EnvVarByName`` (util.go:730-737): the first entry with that name, and its literal value."""
    for e in seq(container.get("env")):
        e = mapping(e)
        if e.get("name") == name:
            value = e.get("value")
            return True, "" if value is None else str(value)
    return False, ""


def has_env(env: Any, name: str) -> bool:
    """``EnvVarExists`` (util.go:699-706)."""
    return any(mapping(e).get("name") == name for e in seq(env))


def is_set(value: Any) -> bool:
    """A Go string or map field that counts as set: present and not empty."""
    return value is not None and value != "" and value != {}


def env_path(base: Path, container: Mapping[str, Any], name: str) -> Path:
    cname = container.get("name")
    seg: Any = Key("name", str(cname)) if isinstance(cname, str) and cname else 0
    return base + ("template", "spec", "containers", seg, "env", Key("name", name))


Check = Callable[[Subject], Iterator[Failure]]


class OperatorRule(Record):
    """One failure case of KubeRay's validation.

    ``id`` is ``<upstream function>/<case>``; ``since`` the first KubeRay release whose
    ``validation.go`` has the check; ``gate`` the feature gate the rule reads, if any;
    ``scope`` ``raycluster`` for a rule the RayCluster controller enforces on the cluster
    built from the RayService (the RayService itself is accepted).
    """

    __slots__ = ("id", "source", "since", "check", "gate", "code", "scope")

    id: str
    source: str
    since: tuple[int, int]
    check: Check
    gate: str | None
    code: str
    scope: str

    def __init__(self, id: str, source: str, since: tuple[int, int], check: Check, gate: str | None = None,
                 code: str = "validation-failed", scope: str = "rayservice") -> None:
        set_field(self, "id", id)
        set_field(self, "source", source)
        set_field(self, "since", since)
        set_field(self, "check", check)
        set_field(self, "gate", gate)
        set_field(self, "code", code)
        set_field(self, "scope", scope)

    def applies_to(self, minor: tuple[int, int]) -> bool:
        return self.since <= minor
