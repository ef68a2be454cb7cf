"""The report as a GitLab Code Quality report: findings inline in the merge request's diff.

GitLab reads a JSON array of issues from a job's ``artifacts: reports: codequality`` file; each
issue has ``description``, ``check_name``, ``fingerprint``, ``severity`` (``info``, ``minor``,
``major``, ``critical``, ``blocker``) and ``location.path`` + ``location.lines.begin``
(GitLab's docs, "Code Quality report format":
https://docs.gitlab.com/ci/testing/code_quality/#code-quality-report-format). The merge request
widget compares the issues of the head pipeline with the target branch's by ``fingerprint``, so a
fingerprint names what an issue is about (the check, the root, the object, the field) and never
its line or value: the same finding on the same object keeps its fingerprint when lines move.

Severities (docs/gitlab-ci.md "Severities"): a change that makes a hold ``critical``; a finding
``error`` ``major``, ``warning`` ``minor``, ``info`` ``info``. ``blocker`` is not used.

A hold always yields at least one issue: a held object whose changes point at no line gets one
on its root's changed file, and a hold with nothing locatable at all one on the first changed file,
so the widget never looks clean while the job holds. An approve with no findings is ``[]``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence

from diffing.hints import Any
from diffing.report import HOLD, Report, ResourceReport

from .annotations import (
    FAILURE,
    NOTICE,
    WARNING,
    Annotation,
    Locate,
    annotate,
    default_locate,
    resource_annotations,
)

CRITICAL, MAJOR, MINOR, INFO = "critical", "major", "minor", "info"
SEVERITY_OF_LEVEL = {FAILURE: MAJOR, WARNING: MINOR, NOTICE: INFO}
TOOL = "rayservice-impact"
DESCRIPTION_MAX = 2000


class _Whole:
    """A held object as a whole (no field, no value): where its root's first changed file is."""


def fingerprint(check: str, subject: str) -> str:
    """32 hex digits of SHA-256 over the tool, the check and the subject (no line, no value)."""
    return hashlib.sha256(f"{TOOL}\0{check}\0{subject}".encode()).hexdigest()[:32]


def _label_path(label: str) -> str:
    """A root's label as a repository path: ``overlays/prod (kustomize)`` → ``overlays/prod``;
    ``REV:path`` → ``path``."""
    if label.endswith(")") and " (" in label:
        label = label.rsplit(" (", 1)[0]
    return label.split(":", 1)[1] if ":" in label and not label.startswith("Application ") else label


def render_codequality(report: Report, locate: Locate | None = None,
                       root_files: Mapping[str, Sequence[str]] | None = None) -> list[dict[str, Any]]:
    """GitLab Code Quality issues for ``report``. ``locate`` as for
    :func:`~diffing.render.annotations.annotate`; ``root_files``: a rendered root's label → the
    changed files it reads (the first one carries what has no line of its own)."""
    roots = dict(root_files or {})
    first_changed = next((files[0] for files in roots.values() if files), "")

    def path_of(file: str) -> str:
        files = roots.get(file)
        if files:
            return files[0]
        if file.startswith("Application ") and first_changed:
            return first_changed
        return _label_path(file)

    issues: list[dict[str, Any]] = []

    def add(a: Annotation, severity: str) -> None:
        text = a.title.removeprefix(f"{TOOL}: ") + ": " + a.message
        if len(text) > DESCRIPTION_MAX:
            text = text[:DESCRIPTION_MAX - 1] + "…"
        issues.append({"description": text, "check_name": f"{TOOL}/{a.rule}",
                       "fingerprint": fingerprint(a.rule, a.subject or f"{a.file}\0{a.title}"),
                       "severity": severity,
                       "location": {"path": path_of(a.file), "lines": {"begin": a.line or 1}}})

    def where(r: ResourceReport, item: Any) -> tuple[str, int | None]:
        """Where ``locate`` says, else the root's first changed file: the widget lists every finding."""
        spot = (locate or default_locate)(r, item)
        if spot is None:
            files = roots.get(r.origin)
            spot = (files[0], None) if files else (_label_path(r.origin), None)
        return spot

    for r in report.resources:
        items = list(resource_annotations(r, where))
        for a in items:
            add(a, CRITICAL if a.level == FAILURE and a.rule == r.rollout else SEVERITY_OF_LEVEL[a.level])
        if r.decision == HOLD and not any(a.level == FAILURE for a in items):
            add(_whole(r, where), CRITICAL)
    for a in annotate(Report(report.kuberay_version, report.decision, report.summary,
                             findings=report.findings)):
        add(a, SEVERITY_OF_LEVEL[a.level])
    if report.decision == HOLD and not any(i["severity"] in (CRITICAL, MAJOR) for i in issues):
        place = first_changed or (_label_path(report.resources[0].origin) if report.resources else "")
        add(Annotation(FAILURE, place or ".", None, f"{TOOL}: hold", report.summary, "hold", "hold"),
            CRITICAL)
    order = {CRITICAL: 0, MAJOR: 1, MINOR: 2, INFO: 3}
    return sorted(issues, key=lambda i: order[i["severity"]])


def _whole(r: ResourceReport, where: Locate) -> Annotation:
    """One issue for a held object none of whose changes makes the hold (a capacity hold): where
    its manifest starts (a plain file), else its root's first changed file."""
    spot = where(r, _Whole()) or (r.origin, None)
    file, _, line = r.source.rpartition(":") if r.source else ("", "", "")
    if spot[1] is None and line.isdigit() and _label_path(file) == _label_path(spot[0]):
        spot = (spot[0], int(line))
    why = r.headline or next((x for x in r.reasons if not x.startswith("strategy:")), r.rollout)
    name = f"{r.namespace}/{r.name}"
    return Annotation(FAILURE, spot[0], spot[1], f"{TOOL}: hold ({r.rollout}) {name}", why, r.rollout,
                      f"{r.origin}\0{r.kind}\0{name}")
