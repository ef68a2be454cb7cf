"""The report as annotations where the change is: GitHub workflow commands and SARIF 2.1.0.

An annotation points at ``file:line`` of what a reviewer should look at: the change that makes
a hold (the image line that recreates the cluster, the ``maxReplicas`` line that will not
apply), every finding. ``failure`` for what holds, ``warning`` / ``notice`` for the rest.

Files and lines come from the report (plain files keep their lines). Citations of KubeRay's
code name their file (``rayjob_controller.go:988-992``, not the modules' ``RJC:988-992``): an
annotation is plain text, no link. For a rendered root the
caller passes ``locate``, which maps a resource's source and a change to the file of the pull
request that made it (e.g. the overlay's ``kustomization.yaml``) and its line.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from diffing.kinds import BY_NAME
from diffing.render.citations import expand_citations
from diffing.report import HOLD, Change, Report, ResourceReport

FAILURE, WARNING, NOTICE = "failure", "warning", "notice"
LEVEL_OF_SEVERITY = {"error": FAILURE, "warning": WARNING, "info": NOTICE}


def holding(kind: str, rollout: str) -> tuple[str, ...]:
    """The change categories a hold of ``rollout`` is about, as the kind declares them
    (``Analysis.holding``); none for a kind the registry does not know."""
    known = BY_NAME.get(kind)
    return tuple(known.analysis.holding.get(rollout, ())) if known else ()

Locate = Callable[[ResourceReport, Any], "tuple[str, int | None] | None"]


@dataclass(frozen=True, slots=True)
class Annotation:
    level: str        # failure | warning | notice (GitHub's check-run annotation levels)
    file: str
    line: int | None
    title: str
    message: str
    rule: str         # a finding code, or the rollout for a change that holds
    subject: str = ""  # what it is about, without lines or values: the object and field (fingerprints)


def _file_of(source: str) -> str:
    """A source named ``REV:path`` (the git flows) → ``path``; a plain path stays."""
    return source.split(":", 1)[1] if ":" in source else source


def default_locate(r: ResourceReport, item: Any) -> tuple[str, int | None] | None:
    """A plain file's change or finding at its own line; None for a rendered root."""
    if " (" in r.origin or r.origin.startswith("Application "):
        return None  # a rendered root: only the caller knows which file of the PR it came from
    line = getattr(item, "line", None)
    return _file_of(r.origin), line


def annotate(report: Report, locate: Locate | None = None) -> list[Annotation]:
    """Every annotation of ``report``, holds first."""
    out: list[Annotation] = []
    for r in report.resources:
        out.extend(resource_annotations(r, locate))
    for f in report.findings:  # render-failed and friends: the root's label is all there is
        out.append(Annotation(LEVEL_OF_SEVERITY.get(f.severity, NOTICE), f.path, None,
                              f"rayservice-impact: {f.code}", f.message, f.code, f.path))
    order = {FAILURE: 0, WARNING: 1, NOTICE: 2}
    return sorted(out, key=lambda a: order[a.level])


def resource_annotations(r: ResourceReport, locate: Locate | None) -> Iterator[Annotation]:
    """The annotations of one resource: its changes that make a hold, then its findings."""
    where = locate or default_locate
    name = f"{r.namespace}/{r.name}"
    subject = f"{r.origin}\0{r.kind}\0{name}"
    if r.decision == HOLD:
        about = holding(r.kind, r.rollout)
        why = r.headline or next((x for x in r.reasons if not x.startswith("strategy:")), r.rollout)
        for c in r.changes:
            if c.category not in about:
                continue
            spot = where(r, c)
            if spot is None:
                continue
            yield Annotation(FAILURE, spot[0], spot[1], f"rayservice-impact: hold ({r.rollout}) {name}",
                             f"{_path(c)}: {_value(c.before)} → {_value(c.after)}. {expand_citations(why)}",
                             r.rollout, f"{subject}\0{_path(c)}")
    for f in r.findings:
        spot = where(r, f)
        if spot is None:
            continue
        yield Annotation(LEVEL_OF_SEVERITY.get(f.severity, NOTICE), spot[0], spot[1],
                         f"rayservice-impact: {f.code} {name}", f"{f.path}: {expand_citations(f.message)}",
                         f.code, f"{subject}\0{f.path}")


def _path(c: Change) -> str:
    return c.to_dict()["path"]


def _value(v: Any) -> str:
    d = Change((), "", v, None).to_dict()["before"]
    text = d if isinstance(d, str) else json.dumps(d, default=str)
    return text if len(text) <= 80 else text[:79] + "…"


# -- GitHub workflow commands (any CI that prints to a GitHub Actions log) ----------------------

def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def render_github(items: Sequence[Annotation]) -> str:
    """``::error file=…,line=…,title=…::message`` lines (GitHub's workflow command syntax)."""
    command = {FAILURE: "error", WARNING: "warning", NOTICE: "notice"}
    lines = []
    for a in items:
        props = [f"file={_escape_property(a.file)}"]
        if a.line:
            props.append(f"line={a.line}")
        props.append(f"title={_escape_property(a.title)}")
        lines.append(f"::{command[a.level]} {','.join(props)}::{_escape_data(a.message)}")
    return "\n".join(lines) + ("\n" if lines else "")


# -- SARIF 2.1.0 (code scanning and any SARIF viewer) ---------------------------------------------

SARIF_SCHEMA = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"


def render_sarif(report: Report, items: Sequence[Annotation], *, version: str = "0") -> dict[str, Any]:
    """One SARIF 2.1.0 log with one run; a rule per finding code or held rollout."""
    level = {FAILURE: "error", WARNING: "warning", NOTICE: "note"}
    rules = sorted({a.rule for a in items})
    results = []
    for a in items:
        location: dict[str, Any] = {"artifactLocation": {"uri": a.file}}
        if a.line:
            location["region"] = {"startLine": a.line}
        results.append({"ruleId": a.rule, "ruleIndex": rules.index(a.rule), "level": level[a.level],
                        "message": {"text": f"{a.title}: {a.message}"},
                        "locations": [{"physicalLocation": location}]})
    driver = {"name": "rayservice-impact", "version": version,
              "informationUri": "https://github.com/example/rayservice-impact",
              "rules": [{"id": rule, "shortDescription": {"text": rule}} for rule in rules]}
    return {
        "$schema": SARIF_SCHEMA, "version": "2.1.0",
        "runs": [{
            "tool": {"driver": driver},
            "results": results,
            "properties": {"decision": report.decision, "summary": report.summary},
        }],
    }
