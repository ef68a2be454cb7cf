"""The report: plain frozen values, and their JSON form (``schemaVersion: 1``)."""

from __future__ import annotations

from diffing.hints import Any
from diffing.kube.gojson import ABSENT, OMIT
from diffing.kube.paths import Path, format_path
from diffing.record import Record, set_field
from diffing.vocab import ACTOR_ORDER, SEVERITY_ORDER, Decision, ExitCode

__all__ = ["APPROVE", "HOLD", "IGNORE", "SEVERITY_ORDER", "Capacity", "Change", "Finding", "Report",
           "ResourceReport", "WayOut"]

SCHEMA_VERSION = 1
APPROVE: str = Decision.APPROVE
HOLD: str = Decision.HOLD
IGNORE: str = Decision.IGNORE


class Change(Record):
    __slots__ = ("path", "category", "before", "after", "detail", "line")

    path: Path
    category: str
    before: Any
    after: Any
    detail: str
    line: int | None  # in the after (or before) file, where a file has lines

    def __init__(self, path: Path, category: str, before: Any, after: Any, detail: str = "",
                 line: int | None = None) -> None:
        set_field(self, "path", path)
        set_field(self, "category", category)
        set_field(self, "before", before)
        set_field(self, "after", after)
        set_field(self, "detail", detail)
        set_field(self, "line", line)

    def to_dict(self) -> dict[str, Any]:
        out = {"path": format_path(self.path), "category": str(self.category),
               "before": _plain(self.before), "after": _plain(self.after)}
        if self.detail:
            out["detail"] = self.detail
        if self.line is not None:
            out["line"] = self.line
        return out


class Finding(Record):
    __slots__ = ("severity", "code", "path", "message", "line")

    severity: str
    code: str
    path: str
    message: str
    line: int | None

    def __init__(self, severity: str, code: str, path: str, message: str, line: int | None = None) -> None:
        set_field(self, "severity", severity)
        set_field(self, "code", code)
        set_field(self, "path", path)
        set_field(self, "message", message)
        set_field(self, "line", line)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"severity": str(self.severity), "code": self.code, "path": self.path,
                               "message": self.message}
        if self.line is not None:
            out["line"] = self.line
        return out


class WayOut(Record):
    """One way out of a hold and who can take it (:class:`~diffing.vocab.Actor`). ``fix``: the
    field and the value that release the hold when the author writes them (one line of their
    manifest), for a comment to show the edit where it goes."""

    __slots__ = ("by", "text", "fix")

    by: str
    text: str
    fix: tuple[Path, Any] | None

    def __init__(self, by: str, text: str, fix: tuple[Path, Any] | None = None) -> None:
        set_field(self, "by", by)
        set_field(self, "text", text)
        set_field(self, "fix", fix)


def by_actor(ways: Any) -> tuple[WayOut, ...]:
    """``ways`` in the order a reader can act on them: the reviewer's first, then the author's
    edits, then what the platform can set; each actor's in the order given."""
    return tuple(sorted(ways, key=lambda w: ACTOR_ORDER.get(w.by, len(ACTOR_ORDER))))


class Capacity(Record):
    __slots__ = ("basis", "extra", "peak", "headroom", "phases", "serve", "placement", "kueue", "cost")

    basis: str
    extra: dict[str, Any]
    peak: dict[str, Any]
    headroom: dict[str, Any] | None
    phases: tuple[tuple[str, dict[str, Any]], ...]
    serve: dict[str, Any] | None
    placement: dict[str, Any] | None  # the placement plan on the live nodes (diffing.placement)
    kueue: dict[str, Any] | None  # Kueue's admission of the new cluster (diffing.placement.kueue)
    cost: dict[str, Any] | None  # with the policy's price table (diffing.placement.cost)

    def __init__(self, basis: str, extra: dict[str, Any], peak: dict[str, Any],
                 headroom: dict[str, Any] | None, phases: tuple[tuple[str, dict[str, Any]], ...] = (),
                 serve: dict[str, Any] | None = None, placement: dict[str, Any] | None = None,
                 kueue: dict[str, Any] | None = None, cost: dict[str, Any] | None = None) -> None:
        set_field(self, "basis", basis)
        set_field(self, "extra", extra)
        set_field(self, "peak", peak)
        set_field(self, "headroom", headroom)
        set_field(self, "phases", phases)
        set_field(self, "serve", serve)
        set_field(self, "placement", placement)
        set_field(self, "kueue", kueue)
        set_field(self, "cost", cost)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"basis": self.basis, "extra": self.extra, "peak": self.peak,
                               "headroom": self.headroom}
        if self.serve is not None:
            out["serveGpus"] = self.serve
        if self.placement is not None:
            out["placement"] = self.placement
        if self.kueue is not None:
            out["kueue"] = self.kueue
        if self.cost is not None:
            out["cost"] = self.cost
        return out


class ResourceReport(Record):
    __slots__ = ("api_version", "namespace", "name", "action", "rollout", "decision", "reasons", "changes",
                 "capacity", "findings", "ignore_differences", "source", "origin", "strategy", "headline",
                 "ways_out", "kind", "drift")

    api_version: str
    namespace: str
    name: str
    action: str
    rollout: str
    decision: str
    reasons: tuple[str, ...]
    changes: tuple[Change, ...]
    capacity: Capacity
    findings: tuple[Finding, ...]
    ignore_differences: tuple[dict[str, Any], ...]
    source: str  # "file:line" of the after (or before) manifest
    origin: str  # the text it came from: a file, or a rendered root ("overlays/prod (kustomize)")
    strategy: str
    headline: str
    ways_out: tuple[WayOut, ...]  # the ways out of a hold: the reviewer's, the author's, the platform's
    kind: str
    drift: dict[str, Any] | None  # Flux's advice in place of ignore_differences (diffing/flux.py)

    def __init__(self, api_version: str, namespace: str, name: str, action: str, rollout: str,
                 decision: str, reasons: tuple[str, ...], changes: tuple[Change, ...], capacity: Capacity,
                 findings: tuple[Finding, ...], ignore_differences: tuple[dict[str, Any], ...] = (),
                 source: str = "", origin: str = "", strategy: str = "", headline: str = "",
                 ways_out: tuple[WayOut, ...] = (), kind: str = "RayService",
                 drift: dict[str, Any] | None = None) -> None:
        set_field(self, "api_version", api_version)
        set_field(self, "namespace", namespace)
        set_field(self, "name", name)
        set_field(self, "action", action)
        set_field(self, "rollout", rollout)
        set_field(self, "decision", decision)
        set_field(self, "reasons", reasons)
        set_field(self, "changes", changes)
        set_field(self, "capacity", capacity)
        set_field(self, "findings", findings)
        set_field(self, "ignore_differences", ignore_differences)
        set_field(self, "source", source)
        set_field(self, "origin", origin)
        set_field(self, "strategy", strategy)
        set_field(self, "headline", headline)
        set_field(self, "ways_out", ways_out)
        set_field(self, "kind", kind)
        set_field(self, "drift", drift)

    @property
    def next_steps(self) -> tuple[str, ...]:
        """The ways out as the JSON report's ``nextSteps`` says them (same order)."""
        return tuple(w.text for w in self.ways_out)

    def to_dict(self) -> dict[str, Any]:
        out = {
            "apiVersion": self.api_version, "kind": self.kind, "namespace": self.namespace,
            "name": self.name, "source": self.origin, "action": str(self.action),
            "rollout": str(self.rollout),
            "decision": str(self.decision), "reasons": list(self.reasons),
            "changes": [c.to_dict() for c in self.changes],
            "capacity": self.capacity.to_dict(),
            "findings": [f.to_dict() for f in self.findings],
            "ignoreDifferences": [dict(x) for x in self.ignore_differences],
            "nextSteps": list(self.next_steps),
        }
        if self.drift is not None:  # only for an object Flux deploys: Argo CD reports stay as they were
            out["driftAdvice"] = self.drift
        return out


class Report(Record):
    __slots__ = ("kuberay_version", "decision", "summary", "resources", "findings", "not_analysed",
                 "environments", "operator_upgrade")

    kuberay_version: str
    decision: str
    summary: str
    resources: tuple[ResourceReport, ...]
    findings: tuple[Finding, ...]  # about the change as a whole, e.g. a root that failed to render
    not_analysed: dict[str, int]  # other kinds that changed, by kind
    environments: tuple[str, ...]  # the policy's order of environments, for readers (not in the JSON)
    operator_upgrade: Any  # diffing.operator.judge.OperatorUpgrade, when the change moves the operator

    def __init__(self, kuberay_version: str, decision: str, summary: str,
                 resources: tuple[ResourceReport, ...] = (), findings: tuple[Finding, ...] = (),
                 not_analysed: dict[str, int] | None = None, environments: tuple[str, ...] = (),
                 operator_upgrade: Any = None) -> None:
        set_field(self, "kuberay_version", kuberay_version)
        set_field(self, "decision", decision)
        set_field(self, "summary", summary)
        set_field(self, "resources", resources)
        set_field(self, "findings", findings)
        set_field(self, "not_analysed", {} if not_analysed is None else not_analysed)
        set_field(self, "environments", environments)
        set_field(self, "operator_upgrade", operator_upgrade)

    def to_dict(self) -> dict[str, Any]:
        out = {
            "schemaVersion": SCHEMA_VERSION,
            "kuberayVersion": self.kuberay_version,
            "decision": str(self.decision),
            "summary": self.summary,
            "findings": [f.to_dict() for f in self.findings],
            "notAnalysed": dict(self.not_analysed),
            "resources": [r.to_dict() for r in self.resources],
        }
        if self.operator_upgrade is not None:
            out["operatorUpgrade"] = self.operator_upgrade.to_dict()
        return out

    @property
    def exit_code(self) -> int:
        """The CLI's exit code for this verdict (:class:`~diffing.vocab.ExitCode`)."""
        return int(ExitCode.of(self.decision))


def _plain(value: Any) -> Any:
    if value is ABSENT or value is OMIT:
        return None
    return value
