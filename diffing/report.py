"""The report: plain frozen values, and their JSON form (``schemaVersion: 1``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from diffing.kube.gojson import ABSENT, OMIT
from diffing.kube.paths import Path, format_path
from diffing.vocab import SEVERITY_ORDER, Decision, ExitCode

__all__ = ["APPROVE", "HOLD", "IGNORE", "SEVERITY_ORDER", "Capacity", "Change", "Finding", "Report",
           "ResourceReport"]

SCHEMA_VERSION = 1
APPROVE: str = Decision.APPROVE
HOLD: str = Decision.HOLD
IGNORE: str = Decision.IGNORE


@dataclass(frozen=True, slots=True)
class Change:
    path: Path
    category: str
    before: Any
    after: Any
    detail: str = ""
    line: int | None = None  # in the after (or before) file, where a file has lines

    def to_dict(self) -> dict[str, Any]:
        out = {"path": format_path(self.path), "category": str(self.category),
               "before": _plain(self.before), "after": _plain(self.after)}
        if self.detail:
            out["detail"] = self.detail
        if self.line is not None:
            out["line"] = self.line
        return out


@dataclass(frozen=True, slots=True)
class Finding:
    severity: str
    code: str
    path: str
    message: str
    line: int | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"severity": str(self.severity), "code": self.code, "path": self.path,
                               "message": self.message}
        if self.line is not None:
            out["line"] = self.line
        return out


@dataclass(frozen=True, slots=True)
class Capacity:
    basis: str
    extra: dict[str, Any]
    peak: dict[str, Any]
    headroom: dict[str, Any] | None
    phases: tuple[tuple[str, dict[str, Any]], ...] = ()
    serve: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"basis": self.basis, "extra": self.extra, "peak": self.peak,
                               "headroom": self.headroom}
        if self.serve is not None:
            out["serveGpus"] = self.serve
        return out


@dataclass(frozen=True, slots=True)
class ResourceReport:
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
    ignore_differences: tuple[dict[str, Any], ...] = ()
    source: str = ""  # "file:line" of the after (or before) manifest
    origin: str = ""  # the text it came from: a file, or a rendered root ("overlays/prod (kustomize)")
    strategy: str = ""
    headline: str = ""
    next_steps: tuple[str, ...] = ()  # the ways out of a hold, most specific first
    kind: str = "RayService"

    def to_dict(self) -> dict[str, Any]:
        return {
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


@dataclass(frozen=True, slots=True)
class Report:
    kuberay_version: str
    decision: str
    summary: str
    resources: tuple[ResourceReport, ...] = field(default_factory=tuple)
    findings: tuple[Finding, ...] = ()  # about the change as a whole, e.g. a root that failed to render
    not_analysed: dict[str, int] = field(default_factory=dict)  # other kinds that changed, by kind

    def to_dict(self) -> dict[str, Any]:
        return {
            "schemaVersion": SCHEMA_VERSION,
            "kuberayVersion": self.kuberay_version,
            "decision": str(self.decision),
            "summary": self.summary,
            "findings": [f.to_dict() for f in self.findings],
            "notAnalysed": dict(self.not_analysed),
            "resources": [r.to_dict() for r in self.resources],
        }

    @property
    def exit_code(self) -> int:
        """The CLI's exit code for this verdict (:class:`~diffing.vocab.ExitCode`)."""
        return int(ExitCode.of(self.decision))


def _plain(value: Any) -> Any:
    if value is ABSENT or value is OMIT:
        return None
    return value
