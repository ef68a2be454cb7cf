"""The report as markdown a reviewer reads at a glance (PR comment, CLI, hook log).

The verdict is said once, in the heading; the line under it says why (the summary without its
verdict word). Then a table of resources, holds first, each row's icon its decision (named in
words only where it differs from the verdict); then, per resource in the same order, the
reasons, "Ways out" of a hold, capacity, changes by category (paths relative to the resource:
``workerGroupSpecs[gpu-group].…containers[ray-worker].image``; the JSON report keeps full
paths), findings, the Argo CD snippet and, when accelerators change, a capacity chart. Long
parts sit inside ``<details>``. With ``max_chars`` the details shrink first, then whole
resource sections are cut, never the verdict or the resource table.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable
from typing import Any

from diffing.kube.paths import format_path
from diffing.kube.quantity import Quantity, QuantityError
from diffing.kube.resources import human
from diffing.report import HOLD, IGNORE, Finding, Report, ResourceReport

ICON = {"approve": "🟢", "hold": "🔴", "ignore-differences": "🟡"}
SEVERITY_ICON = {"error": "❌", "warning": "⚠️", "info": "ℹ️"}
CATEGORY_ORDER = ("cluster-recreate", "recreate", "worker-group-appended", "scale", "latent", "next-run",
                  "applies-now", "suspend", "serve-in-place", "autoscaler-owned", "operator-ignored",
                  "side-object", "service-level", "no-op")
# What Ray Serve does with a serveConfigV2 change (diffing.serve): said in the note column, and
# counted in the changes line so it shows even when the table is folded or cut.
SERVE_EFFECT = {"lightweight": "applied to the running replicas",
                "replica-restart": "Serve starts new replicas"}
# The chart's colours, in plot order: the bars (in use) blue, the line (what the cluster can
# reach) red, in GitHub's light and dark themes alike.
PALETTE = '%%{init: {"themeVariables": {"xyChart": {"plotColorPalette": "#54aeff, #cf222e"}}}}%%'
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


_KEYED = re.compile(r"\[[A-Za-z_][A-Za-z0-9_]*=")
_GROUP = re.compile(r"^spec\.rayClusterConfig\.(?=(headGroupSpec|workerGroupSpecs)\b)")
_POD_SPEC = re.compile(r"^(headGroupSpec|workerGroupSpecs\[[^\]]*\])\.template\.spec\.(?=.)")


def short_path(path: str) -> str:
    """A RayService field path relative to the resource, as the comment shows it.

    ``spec.`` goes (everything is under it but ``metadata``), and so does ``rayClusterConfig.``
    before the head and worker groups; a keyed item shows its key's value (``[gpu-group]`` for
    ``[groupName=gpu-group]``); a group's pod template spec becomes ``…`` when a field follows.
    ``spec.rayClusterConfig.workerGroupSpecs[groupName=gpu].template.spec.containers[name=ray-worker].image``
    reads ``workerGroupSpecs[gpu].…containers[ray-worker].image``; the container stays named,
    a pod may have several.
    """
    text = _GROUP.sub("", path)
    if text.startswith("spec."):
        text = text[len("spec."):]
    text = _POD_SPEC.sub(r"\1.…", text)
    return _KEYED.sub("[", text)


def _ordered(resources: tuple[ResourceReport, ...]) -> list[ResourceReport]:
    """Holds first, then ignore-differences, then approvals; each group in the report's order."""
    return sorted(resources, key=lambda r: (r.decision != HOLD, r.decision != IGNORE))


def _decision(r: ResourceReport, report: Report) -> str:
    """The resource's decision in words, only where it differs from the verdict."""
    return "" if r.decision == report.decision else r.decision


def _header(report: Report) -> list[str]:
    icon = ICON.get(report.decision, "")
    summary = report.summary
    for word in (report.decision, *ICON):  # the verdict is in the heading: say it once
        if summary.startswith(f"{word}: "):
            summary = summary[len(word) + 2:]
            break
    lines = [f"## {icon} rayservice-impact: **{report.decision}**", "", f"> {summary}", ""]
    if report.findings:
        lines += ["**Not compared** (what the change touched but could not be read as deployed)", ""]
        lines += [_finding_line(f) for f in report.findings] + [""]
    if report.not_analysed:
        kinds = ", ".join(f"{n} {k}" for k, n in report.not_analysed.items())
        lines += [f"<sub>Changed but not analysed (rayservice-impact judges RayServices, RayClusters and "
                  f"RayJobs): {kinds}</sub>", ""]
    if not report.resources:
        lines.append("No RayService, RayCluster or RayJob changes." if not report.findings else
                     "No RayService, RayCluster or RayJob could be compared.")
        return lines
    kinds_seen = {r.kind for r in report.resources}
    column = "RayService" if kinds_seen == {"RayService"} else "resource"
    lines += [f"| {column} | action | rollout | extra accelerators | extra CPU / memory |",
              "|---|---|---|---|---|"]
    for r in _ordered(report.resources):
        differs = _decision(r, report)
        lines.append(f"| {ICON.get(r.decision, '')} {_label(r)}"
                     f"{f' ({differs})' if differs else ''} | {r.action} | **{r.rollout}** | "
                     f"{_accelerators(r.capacity.extra)} | {_cpu_mem(r.capacity.extra)} |")
    lines += ["", f"<sub>KubeRay {report.kuberay_version} rules · capacity basis: "
              f"{', '.join(sorted({r.capacity.basis for r in report.resources}))}</sub>", ""]
    return lines


def _change_summary(r: ResourceReport) -> str:
    counts = Counter(c.category for c in r.changes)
    effects = Counter(c.detail for c in r.changes
                      if c.category == "serve-in-place" and c.detail in SERVE_EFFECT)
    parts = []
    for cat in (*CATEGORY_ORDER, *sorted(set(counts) - set(CATEGORY_ORDER))):
        if not counts[cat]:
            continue
        part = f"{cat} {counts[cat]}"
        if cat == "serve-in-place" and effects:
            part += " (" + ", ".join(f"{e} {effects[e]}" for e in SERVE_EFFECT if effects[e]) + ")"
        parts.append(part)
    return " · ".join(parts)


def _note(detail: str) -> str:
    if detail in SERVE_EFFECT:
        return f"**{detail}**: {SERVE_EFFECT[detail]}"
    return detail.replace("|", "\\|")


def _changes(r: ResourceReport, compact: bool) -> list[str]:
    if not r.changes:
        return []
    lines = [f"**Changes:** {_change_summary(r)}", ""]
    if compact:
        return lines
    rows = sorted(r.changes, key=lambda c: CATEGORY_ORDER.index(c.category)
                  if c.category in CATEGORY_ORDER else 99)
    notes = any(c.detail for c in rows)  # no empty note column
    table = ["| category | path | before | after |" + (" note |" if notes else ""),
             "|---|---|---|---|" + ("---|" if notes else "")]
    for c in rows:
        d = c.to_dict()
        path = short_path(format_path(c.path)).replace("|", "\\|").replace("`", "'")
        table.append(f"| {c.category} | `{path}` | {_cell(d['before'])} | {_cell(d['after'])} |"
                     + (f" {_note(c.detail)} |" if notes else ""))
    if len(rows) <= OPEN_ROWS:
        return lines + table + [""]
    return lines + [f"<details><summary>{len(rows)} changes</summary>", "", *table, "", "</details>", ""]


def _findings(r: ResourceReport) -> list[str]:
    if not r.findings:
        return []
    return ["**Findings**", "", *(_finding_line(f, short_path) for f in r.findings), ""]


def _finding_line(f: Finding, where_of: Callable[[str], str] = str) -> str:
    where = f" (line {f.line})" if f.line else ""
    message = f.message if "\n" not in f.message else f.message.replace("\n", " ⏎ ")
    path = where_of(f.path)
    if path != f.path and f.path:
        message = message.replace(f.path, path)  # a message that names its own path names it alike
    return (f"- {SEVERITY_ICON.get(f.severity, '')} **{f.severity}** `{f.code}` at "
            f"`{path}`{where}: {message}")


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
    if any(entry["kind"] == "RayCluster" for entry in r.ignore_differences):
        lines += ["  # The ignore rule only hides the drift: a sync that does apply the RayCluster still",
                  "  # sends Git's replicas. Keep them equal to minReplicas in Git (or leave them out)."]
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


def _capacity(r: ResourceReport) -> list[str]:
    c = r.capacity
    if not c.extra and c.peak and r.rollout == "recreate":  # no surge: the rebuilt cluster must fit
        return [f"**No extra capacity** (the old pods go first) · the rebuilt cluster: {_amounts(c.peak)} "
                f"(basis: {c.basis})", ""]
    if not c.extra:
        return []
    headroom = _amounts(c.headroom) if c.headroom is not None else "unknown"
    peak = f" · peak: {_amounts(c.peak)}" if c.peak else ""
    return [f"**Extra capacity needed:** {_amounts(c.extra)} (basis: {c.basis}){peak} · "
            f"headroom: {headroom}", ""]


def _chart(r: ResourceReport) -> list[str]:
    """Accelerators in use at each step of the rollout, and what the cluster can reach.

    Only an accelerator whose amount changes across the steps is charted; CPU and memory are
    in the capacity line (a chart of them says little a number does not). With a known
    headroom a second series draws the level the cluster can reach: a horizontal line at what
    is in use now plus the headroom. A flat line reads as the limit it is: a bar above it is a
    step that does not fit (its pods stay Pending). A line of "before + headroom" per step
    would move with the bars and hide that.
    """
    phases = r.capacity.phases
    if len(phases) < 2:
        return []
    resource = None
    for name in dict.fromkeys(k for _, a in phases for k, v in a.items() if isinstance(v, int)):
        if len({_number(a.get(name, 0)) for _, a in phases}) > 1:
            resource = name
            break
    if resource is None:
        return []
    values = [_number(a.get(resource, 0)) for _, a in phases]
    headroom = r.capacity.headroom
    free = None if headroom is None else _number(headroom.get(resource, 0))
    reach = None if free is None else values[0] + free
    top = max([*values, reach or 0]) or 1
    top = int(top) + 1 if top >= 1 else top * 1.2
    labels = ", ".join(json.dumps(label) for label, _ in phases)
    series = ", ".join(f"{v:g}" for v in values)
    chart = ["<details><summary>Capacity over the rollout</summary>", "", "```mermaid", PALETTE,
             "xychart-beta", f'  title "{resource} in use ({r.rollout})"', f"  x-axis [{labels}]",
             f'  y-axis "{resource}" 0 --> {top:g}', f"  bar [{series}]"]
    if reach is not None and free is not None:
        chart.append(f"  line [{', '.join(f'{reach:g}' for _ in values)}]")
        legend = (f"Blue bars: {resource} in use at each step. Red line: what the cluster can reach, "
                  f"{values[0]:g} in use now + {free:g} headroom "
                  f"= {reach:g}; a bar above it does not fit.")
    else:
        legend = f"Blue bars: {resource} in use at each step. No headroom is known, so no line for what fits."
    return chart + ["```", "", legend, "", "</details>", ""]


def _label(r: ResourceReport) -> str:
    """``ns/name`` in code, with its kind in front unless it is a RayService (the tool's first subject)."""
    name = f"`{r.namespace}/{r.name}`"
    return name if r.kind == "RayService" else f"{r.kind} {name}"


def _resource(r: ResourceReport, report: Report, compact: bool) -> list[str]:
    differs = _decision(r, report)
    lines = [f"### {ICON.get(r.decision, '')} {_label(r)}: {r.rollout}"
             f"{f' → {differs}' if differs else ''}", ""]
    if r.source:
        lines += [f"<sub>{r.source}</sub>", ""]
    lines += [f"- {reason}" for reason in r.reasons] + [""]
    if r.next_steps:
        lines += ["**Ways out**", "", *(f"{i}. {step}" for i, step in enumerate(r.next_steps, 1)), ""]
    lines += _capacity(r)
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
    order = _ordered(report.resources)
    full = "\n".join(head + [line for r in order for line in _resource(r, report, False)])
    if max_chars is None or len(full) <= max_chars:
        return full.rstrip() + "\n"
    compact = "\n".join(head + [line for r in order for line in _resource(r, report, True)])
    note = "\n\n_…truncated to fit; run `rayservice-impact` for the full report._\n"
    if len(compact) + len(note) <= max_chars:
        return compact.rstrip() + note
    text = "\n".join(head)
    for r in order:
        block = "\n".join(_resource(r, report, True))
        if len(text) + len(block) + len(note) + 1 > max_chars:
            break
        text += "\n" + block
    if len(text) + len(note) > max_chars:
        text = text[: max(0, max_chars - len(note))]
    return text.rstrip() + note
