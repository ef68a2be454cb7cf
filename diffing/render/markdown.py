"""The report as markdown a reviewer reads at a glance (PR comment, CLI, hook log).

Verdict and one-line summary first; then a table of resources; then, per resource, the
reasons, changes by category, findings, the Argo CD snippet and a capacity chart. Long parts
sit inside ``<details>``. With ``max_chars`` the details shrink first, then whole resource
sections are cut, never the verdict or the resource table.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

from ..capacity import human
from ..quantity import Quantity, QuantityError
from ..report import HOLD, IGNORE, Finding, Report, ResourceReport

ICON = {"approve": "🟢", "hold": "🔴", "ignore-differences": "🟡"}
SEVERITY_ICON = {"error": "❌", "warning": "⚠️", "info": "ℹ️"}
CATEGORY_ORDER = ("cluster-recreate", "worker-group-appended", "serve-in-place", "autoscaler-owned",
                  "operator-ignored", "service-level", "no-op")
MAX_CELL = 70
OPEN_ROWS = 8  # change rows shown before the rest folds into <details>


def _cell(value: Any) -> str:
    if value is None:
        return "—"
    if isinstance(value, str):
        text = value if "\n" not in value else f"({value.count(chr(10)) + 1}-line text)"
    else:
        text = json.dumps(value, ensure_ascii=False, separators=(", ", ": "), default=str)
    if len(text) > MAX_CELL:
        text = text[: MAX_CELL - 1] + "…"
    return "`" + text.replace("|", "\\|").replace("`", "'") + "`"


def _amounts(amounts: dict[str, Any] | None) -> str:
    if not amounts:
        return "—"
    return ", ".join(f"{k}: {human(k, v)}" for k, v in amounts.items())


def _accelerators(amounts: dict[str, Any]) -> str:
    acc = {k: v for k, v in amounts.items() if isinstance(v, int)}
    return _amounts(acc) if acc else "0"


def _cpu_mem(amounts: dict[str, Any]) -> str:
    if "cpu" not in amounts and "memory" not in amounts:
        return "—"
    return f"{human('cpu', amounts.get('cpu', '0'))} / {human('memory', amounts.get('memory', '0'))}"


def _header(report: Report) -> list[str]:
    icon = ICON.get(report.decision, "")
    lines = [f"## {icon} rayservice-impact: **{report.decision}**", "", f"> {report.summary}", ""]
    if report.findings:
        lines += ["**Not compared** (what the change touched but could not be read as deployed)", ""]
        lines += [_finding_line(f) for f in report.findings] + [""]
    if report.not_analysed:
        kinds = ", ".join(f"{n} {k}" for k, n in report.not_analysed.items())
        lines += [f"<sub>Changed but not analysed (rayservice-impact judges RayServices): {kinds}</sub>", ""]
    if not report.resources:
        lines.append("No RayService changes." if not report.findings else
                     "No RayService could be compared.")
        return lines
    lines += ["| RayService | action | rollout | decision | extra accelerators | extra CPU / memory |",
              "|---|---|---|---|---|---|"]
    for r in report.resources:
        lines.append(f"| `{r.namespace}/{r.name}` | {r.action} | **{r.rollout}** | "
                     f"{ICON.get(r.decision, '')} {r.decision} | {_accelerators(r.capacity.extra)} | "
                     f"{_cpu_mem(r.capacity.extra)} |")
    lines += ["", f"<sub>KubeRay {report.kuberay_version} rules · capacity basis: "
              f"{', '.join(sorted({r.capacity.basis for r in report.resources}))}</sub>", ""]
    return lines


def _changes(r: ResourceReport, compact: bool) -> list[str]:
    if not r.changes:
        return []
    counts = Counter(c.category for c in r.changes)
    summary = " · ".join(f"{cat} {counts[cat]}" for cat in CATEGORY_ORDER if counts[cat])
    if compact:
        return [f"**Changes:** {summary}", ""]
    rows = sorted(r.changes, key=lambda c: CATEGORY_ORDER.index(c.category)
                  if c.category in CATEGORY_ORDER else 99)
    table = ["| category | path | before | after | note |", "|---|---|---|---|---|"]
    for c in rows:
        d = c.to_dict()
        table.append(f"| {c.category} | `{d['path']}` | {_cell(d['before'])} | {_cell(d['after'])} | "
                     f"{c.detail or ''} |")
    lines = [f"**Changes** ({summary})", ""]
    if len(rows) <= OPEN_ROWS:
        return lines + table + [""]
    return lines + [f"<details><summary>{len(rows)} changes</summary>", "", *table, "", "</details>", ""]


def _findings(r: ResourceReport) -> list[str]:
    if not r.findings:
        return []
    return ["**Findings**", "", *(_finding_line(f) for f in r.findings), ""]


def _finding_line(f: Finding) -> str:
    where = f" (line {f.line})" if f.line else ""
    message = f.message if "\n" not in f.message else f.message.replace("\n", " ⏎ ")
    return (f"- {SEVERITY_ICON.get(f.severity, '')} **{f.severity}** `{f.code}` at "
            f"`{f.path}`{where}: {message}")


def _snippet(r: ResourceReport) -> list[str]:
    if not r.ignore_differences:
        return []
    lines = ["**Argo CD: ignore what the autoscaler owns** (Application spec)", "", "```yaml",
             "spec:", "  ignoreDifferences:"]
    for entry in r.ignore_differences:
        lines += [f"    - group: {entry['group']}", f"      kind: {entry['kind']}",
                  f"      name: {entry['name']}", f"      namespace: {entry['namespace']}",
                  "      jqPathExpressions:"]
        lines += [f"        - {expr}" for expr in entry["jqPathExpressions"]]
    lines += ["  syncPolicy:", "    syncOptions:",
              "      - ApplyOutOfSyncOnly=true   # do not re-apply (and reset) Ray CRs on unrelated syncs",
              "      # Do NOT add RespectIgnoreDifferences=true here: workerGroupSpecs is an atomic list,",
              "      # so Argo CD would copy the whole live list into every apply and silently drop",
              "      # your Git edits to worker groups (argo-cd#27480).",
              "```", ""]
    return lines


def _number(value: Any) -> float:
    if isinstance(value, (int, float)):
        return float(value)
    try:
        return float(Quantity.parse(value).value)
    except QuantityError:
        return 0.0


def _chart(r: ResourceReport) -> list[str]:
    phases = r.capacity.phases
    if len(phases) < 2:
        return []
    names = {k for _, amounts in phases for k in amounts}
    resource = next((k for _, a in phases for k, v in a.items() if isinstance(v, int)), None)
    if resource is None:
        resource = "cpu" if "cpu" in names else None
    if resource is None:
        return []
    values = [_number(a.get(resource, 0)) for _, a in phases]
    top = max(values) or 1
    top = int(top) + 1 if top >= 1 else top * 1.2
    labels = ", ".join(json.dumps(label) for label, _ in phases)
    series = ", ".join(f"{v:g}" for v in values)
    return ["<details><summary>Capacity over the rollout</summary>", "", "```mermaid", "xychart-beta",
            f'  title "{resource} in use ({r.rollout})"', f"  x-axis [{labels}]",
            f'  y-axis "{resource}" 0 --> {top:g}', f"  bar [{series}]", "```", "",
            f"Peak: {_amounts(r.capacity.peak)} · headroom: "
            f"{_amounts(r.capacity.headroom) if r.capacity.headroom is not None else 'unknown'}",
            "", "</details>", ""]


def _resource(r: ResourceReport, compact: bool) -> list[str]:
    lines = [f"### {ICON.get(r.decision, '')} `{r.namespace}/{r.name}`: {r.rollout} → {r.decision}", ""]
    if r.source:
        lines += [f"<sub>{r.source}</sub>", ""]
    lines += [f"- {reason}" for reason in r.reasons] + [""]
    if r.next_steps:
        lines += ["**Ways out**", "", *(f"{i}. {step}" for i, step in enumerate(r.next_steps, 1)), ""]
    if r.capacity.extra:
        lines += [f"**Extra capacity needed:** {_amounts(r.capacity.extra)}"
                  f" (basis: {r.capacity.basis})", ""]
    if r.capacity.serve:
        s = r.capacity.serve
        ceiling = "unbounded" if s.get("ceiling", 0) == -1 else s.get("ceiling", "?")
        lines += [f"**Serve GPU demand at max replicas:** {s['before']} → {s['after']} "
                  f"(cluster ceiling {ceiling})", ""]
    lines += _changes(r, compact)
    lines += _findings(r) if not compact else [
        f"**Findings:** {', '.join(f'`{f.code}`' for f in r.findings) or 'none'}", ""]
    lines += _snippet(r)
    if not compact:
        lines += _chart(r)
    return lines


def render_markdown(report: Report, *, max_chars: int | None = None) -> str:
    """The markdown report; with ``max_chars`` it is shortened to fit, verdict kept."""
    head = _header(report)
    full = "\n".join(head + [line for r in report.resources for line in _resource(r, False)])
    if max_chars is None or len(full) <= max_chars:
        return full.rstrip() + "\n"
    compact = "\n".join(head + [line for r in report.resources for line in _resource(r, True)])
    note = "\n\n_…truncated to fit; run `rayservice-impact` for the full report._\n"
    if len(compact) + len(note) <= max_chars:
        return compact.rstrip() + note
    text = "\n".join(head)
    order = sorted(report.resources, key=lambda r: (r.decision != HOLD, r.decision != IGNORE))
    for r in order:
        block = "\n".join(_resource(r, True))
        if len(text) + len(block) + len(note) + 1 > max_chars:
            break
        text += "\n" + block
    if len(text) + len(note) > max_chars:
        text = text[: max(0, max_chars - len(note))]
    return text.rstrip() + note
