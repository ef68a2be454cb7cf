"""The report as markdown a reviewer reads at a glance (PR comment, CLI, hook log).

The verdict is said once, in the heading; the line under it says why (the summary without its
verdict word). When the change reaches several objects, the extra capacity of the whole pull
request comes next, then per environment (production first, or the policy's ``environments``
order: :mod:`diffing.environments`). Then a table of resources, holds first and, within each
decision, by environment, each row's icon its decision (named in words only where it differs
from the verdict); then, per resource in the same order, the reasons, the "Ways out" of a hold
by who can take them (the reviewer, the author, with the file and line the hold comes from, the
platform), capacity, changes by category (paths relative to the resource:
``workerGroupSpecs[gpu-group].…containers[ray-worker].image``, shortened further when long, the
full path on hover; the JSON report keeps full paths), findings, the Argo CD snippet and, when
accelerators change, a capacity chart. Long parts sit inside ``<details>``. Citations of
KubeRay's code become links to the upstream lines (:mod:`.citations`).

It reads at GitHub's width of a comment (about 780 px): tables have three to five columns, and a
cell's text always has a place to wrap (values without one get ``<wbr>``). With ``max_chars`` the
details shrink first, then whole resource sections are cut, never the verdict or the resource
table.
"""

from __future__ import annotations

import html
import json
import re
from collections import Counter
from collections.abc import Callable
from typing import Any

from diffing.environments import label as environment_label
from diffing.environments import rank as environment_rank
from diffing.kube.paths import format_path
from diffing.kube.quantity import Quantity, QuantityError, format_amount
from diffing.kube.resources import human, is_bytes
from diffing.render.annotations import Locate, default_locate, holding
from diffing.render.citations import link_citations
from diffing.render.edits import LineEdit, edit_for
from diffing.report import HOLD, IGNORE, Change, Finding, Report, ResourceReport
from diffing.vocab import Actor, Severity

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
MAX_PATH = 60   # a change's path longer than this shows its last segments, the whole on hover
MAX_RUN = 32    # characters of a cell without a place to wrap, at most (else <wbr> is added)
OPEN_ROWS = 8  # change rows shown before the rest folds into <details>
# Who can take a way out of a hold, as the comment names them.
ACTORS = {Actor.REVIEWER: "Reviewer", Actor.AUTHOR: "Author",
          Actor.PLATFORM: "Platform (cluster and policy owners)"}
_RUN = re.compile(rf"[^\s-]{{{MAX_RUN + 1},}}")
_SOFT = re.compile(r"(?<=[/:.@=,])(?=.)")


def _cell(value: Any) -> str:
    if value is None:
        return "—"
    if isinstance(value, str):
        text = value if "\n" not in value else f"({value.count(chr(10)) + 1}-line text)"
    else:
        text = json.dumps(value, ensure_ascii=False, separators=(", ", ": "), default=str)
    if len(text) > MAX_CELL:
        text = text[: MAX_CELL - 1] + "…"
    return _code(text)


def _code(text: str, title: str = "") -> str:
    """``text`` as inline code in a table cell. Code wraps only at spaces and hyphens on GitHub,
    so a longer run without one (a digest, a long path) becomes HTML code with ``<wbr>`` after
    its separators; ``title`` (the whole of a shortened path) shows on hover."""
    if not title and not _RUN.search(text):
        return "`" + text.replace("|", "\\|").replace("`", "'") + "`"
    if title:  # a path: it may wrap after each of its own dots (not those of a key: nvidia.com/gpu)
        shown = "<wbr>".join(html.escape(part, quote=False).replace("|", "&#124;") for part in _dots(text))
    else:
        shown = html.escape(text, quote=False).replace("|", "&#124;")
        shown = _RUN.sub(lambda m: _soft(m.group(0)), shown)
    hover = f' title="{html.escape(title).replace("|", "&#124;")}"' if title else ""
    return f"<code{hover}>{shown}</code>"


def _dots(path: str) -> list[str]:
    """``path`` cut after each dot outside ``[...]``."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(path):
        depth += (ch == "[") - (ch == "]")
        if ch == "." and depth == 0 and i + 1 < len(path):
            parts.append(path[start:i + 1])
            start = i + 1
    return [*parts, path[start:]]


def _soft(run: str) -> str:
    """``<wbr>`` after each separator of a long run (every :data:`MAX_RUN` characters where it
    has none)."""
    parts = _SOFT.sub("<wbr>", run).split("<wbr>")
    out = []
    for part in parts:
        while len(part) > MAX_RUN and "&" not in part[:MAX_RUN]:
            out.append(part[:MAX_RUN])
            part = part[MAX_RUN:]
        out.append(part)
    return "<wbr>".join(out)


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
_GROUP = re.compile(r"^spec\.(?:rayClusterConfig|rayClusterSpec|jobTemplate\.rayClusterSpec)\."
                    r"(?=(headGroupSpec|workerGroupSpecs)\b)")
_POD_SPEC = re.compile(r"^(headGroupSpec|workerGroupSpecs\[[^\]]*\])\.template\.spec\.(?=.)")


def short_path(path: str) -> str:
    """A RayService field path relative to the resource, as the comment shows it.

    ``spec.`` goes (everything is under it but ``metadata``), and so does the cluster spec's own
    name before the head and worker groups (a RayService's ``rayClusterConfig.``, a RayJob's
    ``rayClusterSpec.``, a RayCronJob's ``jobTemplate.rayClusterSpec.``); a keyed item shows its
    key's value (``[gpu-group]`` for ``[groupName=gpu-group]``); a group's pod template spec
    becomes ``…`` when a field follows.
    ``spec.rayClusterConfig.workerGroupSpecs[groupName=gpu].template.spec.containers[name=ray-worker].image``
    reads ``workerGroupSpecs[gpu].…containers[ray-worker].image``; the container stays named,
    a pod may have several.
    """
    text = _GROUP.sub("", path)
    if text.startswith("spec."):
        text = text[len("spec."):]
    text = _POD_SPEC.sub(r"\1.…", text)
    return _KEYED.sub("[", text)


_SEGMENT = re.compile(r"[^.\[]+(?:\[[^\]]*\])*|\[[^\]]*\]")


def shown_path(path: str) -> str:
    """:func:`short_path`, and for one longer than :data:`MAX_PATH` as many of its last segments
    as fit after "…", kept behind its first segment when that names a list item (the worker
    group): ``…deployments[MangoStand].user_config``, ``workerGroupSpecs[gpu-group].…image``."""
    text = short_path(path)
    if len(text) <= MAX_PATH:
        return text
    segments = _SEGMENT.findall(text)
    head = segments[0] + "." if "[" in segments[0] else ""
    rest = segments[1:] if head else segments
    tail: list[str] = []
    for seg in reversed(rest):
        if tail and len(head) + 1 + len(".".join([seg, *tail])) > MAX_PATH:
            break
        tail.insert(0, seg)
    if len(tail) == len(rest):
        return text
    return f"{head}…{'.'.join(tail)}".replace("……", "…")


def _ordered(report: Report) -> list[ResourceReport]:
    """Holds first, then ignore-differences, then approvals; within each, the most important
    environment first (:func:`diffing.environments.rank`); then in the report's order."""
    return sorted(report.resources, key=lambda r: (r.decision != HOLD, r.decision != IGNORE,
                                                   environment_rank(r, report.environments)))


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
    lines = [f"## {icon} rayservice-impact: **{report.decision}**", "", f"> {link_citations(summary)}", ""]
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
    lines += _totals(report)
    kinds_seen = {r.kind for r in report.resources}
    column = "RayService" if kinds_seen == {"RayService"} else "resource"
    lines += [f"| {column} | action | rollout | extra accelerators | extra CPU / memory |",
              "|---|---|---|---|---|"]
    for r in _ordered(report):
        differs = _decision(r, report)
        lines.append(f"| {ICON.get(r.decision, '')} {_label(r)}"
                     f"{f' ({differs})' if differs else ''} | {r.action} | **{r.rollout}** | "
                     f"{_accelerators(r.capacity.extra)} | {_cpu_mem(r.capacity.extra)} |")
    lines += ["", f"<sub>KubeRay {report.kuberay_version} rules · capacity basis: "
              f"{', '.join(sorted({r.capacity.basis for r in report.resources}))}</sub>", ""]
    return lines


def _sum(amounts: list[dict[str, Any]]) -> dict[str, Any]:
    """Capacity amounts added up: accelerators as integers, the rest as quantities."""
    exact: dict[str, Any] = {}
    for one in amounts:
        for name, value in one.items():
            exact[name] = exact.get(name, 0) + (value if isinstance(value, int) else _fraction(value))
    return {k: v if isinstance(v, int) else format_amount(v, binary=is_bytes(k)) for k, v in exact.items()}


def _fraction(value: Any) -> Any:
    try:
        return Quantity.parse(value).value
    except QuantityError:
        return 0


def _needs(amounts: dict[str, Any]) -> str:
    """``nvidia.com/gpu: 8 (CPU 68, memory 72Gi)``: accelerators first, then CPU and memory."""
    acc = {k: v for k, v in amounts.items() if isinstance(v, int)}
    rest = [f"{'CPU' if k == 'cpu' else k} {human(k, v)}" for k, v in amounts.items()
            if not isinstance(v, int)]
    if not acc:
        return ", ".join(rest)
    return _amounts(acc) + (f" ({', '.join(rest)})" if rest else "")


def _totals(report: Report) -> list[str]:
    """The extra capacity of the whole change, then per environment (the most important first),
    when it reaches more than one object."""
    resources = _ordered(report)
    if len(resources) < 2 or not any(r.capacity.extra for r in resources):
        return []
    whole = _needs(_sum([r.capacity.extra for r in resources]))
    lines = [f"**Extra while it rolls out, whole pull request:** {whole}"]
    by_place: dict[str, list[ResourceReport]] = {}
    for r in sorted(resources, key=lambda r: environment_rank(r, report.environments)):
        by_place.setdefault(environment_label(r.origin), []).append(r)
    if len(by_place) > 1:
        lines += ["", *(f"- {ICON.get(_worst(rs), '')} `{place}`: "
                        f"{_needs(_sum([r.capacity.extra for r in rs])) or 'none'}"
                        for place, rs in by_place.items())]
    return [*lines, ""]


def _worst(resources: list[ResourceReport]) -> str:
    decisions = {r.decision for r in resources}
    return HOLD if HOLD in decisions else IGNORE if IGNORE in decisions else "approve"


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
    return link_citations(detail).replace("|", "\\|")


def _change_cell(c: Change) -> str:
    """The first cell of a change's row: its path (shortened, the whole on hover), then its
    category and note in small print under it."""
    full = format_path(c.path)
    shown = shown_path(full).replace("`", "'")
    path = _code(shown, full.replace("`", "'") if "…" in shown else "")
    under = c.category + (f" · {_note(c.detail)}" if c.detail else "")
    return f"{path}<br><sub>{under}</sub>"


def _changes(r: ResourceReport, compact: bool) -> list[str]:
    if not r.changes:
        return []
    lines = [f"**Changes:** {_change_summary(r)}", ""]
    if compact:
        return lines
    rows = sorted(r.changes, key=lambda c: CATEGORY_ORDER.index(c.category)
                  if c.category in CATEGORY_ORDER else 99)
    table = ["| change | before | after |", "|---|---|---|"]
    for c in rows:
        d = c.to_dict()
        table.append(f"| {_change_cell(c)} | {_cell(d['before'])} | {_cell(d['after'])} |")
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
            f"`{path}`{where}: {link_citations(message)}")


def _flux_snippet(drift: dict[str, Any]) -> list[str]:
    """Flux's advice (diffing/flux.py): the ignore rule for the deployer, and why."""
    by = drift["deployer"]
    who = f"{by['kind']} {by['namespace']}/{by['name']}"
    lines = [f"**Flux: leave what the autoscaler owns to it** ({who})", ""]
    if drift.get("ignore"):
        lines += [f"Add to the {by['kind']} (`{drift['field']}`, {drift['since']} or later):", "", "```yaml",
                  "spec:"]
        indent = "  "
        if drift["fix"] == "drift-detection-ignore":
            lines += ["  driftDetection:", "    mode: enabled"]
            indent = "    "
        lines.append(f"{indent}ignore:")
        for rule in drift["ignore"]:
            lines.append(f"{indent}  - paths:")
            lines += [f"{indent}      - {p}" for p in rule["paths"]]
            lines.append(f"{indent}    target:")
            lines += [f"{indent}      {k}: {rule['target'][k]}"
                      for k in ("group", "kind", "name", "namespace")]
        lines += ["```", ""]
    lines += [f"- {n}" for n in drift.get("notes", ())]
    return [*lines, ""]


def _snippet(r: ResourceReport) -> list[str]:
    if r.drift is not None:
        return _flux_snippet(r.drift)
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


def _author_place(r: ResourceReport, locate: Locate | None) -> str:
    """Where the author's edit goes: the file and line of the pull request the hold comes from
    (the first change the hold is about, else the first located error finding): the overlay's
    ``newTag:`` line of a rendered root, the manifest's own line of a plain file; "" when it
    cannot be told (a rendered root without the pull request's files)."""
    where = locate or default_locate
    about = holding(r.kind, r.rollout)
    items: list[Any] = [c for c in r.changes if c.category in about]
    items += [f for f in r.findings if f.severity == Severity.ERROR]
    for item in items:
        spot = where(r, item)
        if spot is None or not spot[0] or " (" in spot[0] or spot[0].startswith("Application "):
            continue  # a root's label is no file of the pull request
        if locate is None and not spot[1]:
            continue  # an object read without lines (Argo CD's target): no file to point at
        return f"`{spot[0]}`" + (f" line {spot[1]}" if spot[1] else "")
    return ""


def _fix_block(fix: tuple[Any, Any], indent: str) -> list[str]:
    """The edit that releases a hold, as the YAML to write (``spec:`` / ``  suspend: false``)."""
    path, value = fix
    keys = [k for k in path if isinstance(k, str)]
    if len(keys) != len(path) or not keys:
        return []
    shown = json.dumps(value) if isinstance(value, bool) else str(value)
    body = [f"{'  ' * i}{key}:" for i, key in enumerate(keys[:-1])]
    body.append(f"{'  ' * (len(keys) - 1)}{keys[-1]}: {shown}")
    return ["", *(indent + line for line in ["```yaml", *body, "```"])]


def _edit_block(edit: LineEdit | None, fix: Any, indent: str) -> list[str]:
    """The edit of one way out: where it is suggested on the pull request's diff, else the line
    of the author's file as a diff, else (no line known) the YAML to write."""
    if edit is None:
        return _fix_block(fix, indent) if fix else []
    where = f"`{edit.file}` line {edit.line}"
    if edit.suggested:
        return ["", f"{indent}Suggested on {where} in this pull request's diff: apply it from the "
                    "review comment there."]
    return ["", f"{indent}In {where}:", "", *(indent + line for line in
                                                ["```diff", f"-{edit.old}", f"+{edit.new}", "```"])]


def _ways_out(r: ResourceReport, locate: Locate | None, edits: tuple[LineEdit, ...] = ()) -> list[str]:
    """The ways out of a hold, by who can take them: the reviewer's, the author's (with the
    file and line the hold comes from, and the edit that releases it: a suggestion on the
    diff, a diff of the line, or the YAML to write), the platform's."""
    if not r.ways_out:
        return []
    lines = ["**Ways out**", ""]
    for actor, name in ACTORS.items():
        ways = [w for w in r.ways_out if w.by == actor]
        if not ways:
            continue
        place = _author_place(r, locate) if actor == Actor.AUTHOR else ""
        head = f"**{name}**" + (f" (the hold comes from {place})" if place else "")
        if len(ways) == 1:
            lines.append(f"- {head}: {link_citations(ways[0].text)}")
            lines += _edit_block(edit_for(edits, r, ways[0]), ways[0].fix, "  ")
            continue
        lines.append(f"- {head}:")
        for way in ways:
            lines.append(f"  - {link_citations(way.text)}")
            lines += _edit_block(edit_for(edits, r, way), way.fix, "    ")
    return [*lines, ""]


# The plan's picture: red (what does not fit), grey (free after), green (the rollout's pods), blue
# (held now), in plot order; drawn over one another, the bars read as one stacked bar per pool.
# Red goes first: mermaid draws a 0 as a thin bar (its axis starts a few pixels in), which the
# pools' bars then cover.
POOL_PALETTE = ('%%{init: {"themeVariables": {"xyChart": '
                '{"plotColorPalette": "#cf222e, #8c959f, #2da44e, #54aeff"}}}}%%')
GIB = 1024 ** 3


def _pool_unit(resource: str) -> tuple[str, float]:
    """How the picture counts ``resource``: memory in GiB, the rest in its own unit."""
    return (f"{resource} (GiB)", GIB) if resource == "memory" else (resource, 1)


def _pool_table(by_pool: dict[str, Any]) -> list[str]:
    """Per node pool: held now, the rollout's pods, free after, the pool's total; then what does
    not fit. One resource (``byPool.resource``)."""
    name, scale = _pool_unit(by_pool["resource"])
    lines = [f"| node pool | {name} in use | the rollout's pods | free after | of |", "|---|---|---|---|---|"]
    for p in by_pool["pools"]:
        lines.append(f"| {_cell(p['pool'])} <sub>({p['nodes']} node(s))</sub> | {p['used'] / scale:g} "
                     f"| {p['placed'] / scale:g} | {p['free'] / scale:g} | {p['allocatable'] / scale:g} |")
    if by_pool.get("morePools"):
        lines.append(f"| {by_pool['morePools']} more pool(s) | | | | |")
    if by_pool["notPlaced"]:
        lines.append(f"| **does not fit** | | {by_pool['notPlaced'] / scale:g} | | |")
    return [*lines, ""]


def _pool_chart(plan: dict[str, Any] | None) -> list[str]:
    """The plan per node pool as one horizontal stacked bar each (mermaid's xychart draws a
    chart's bar series over one another, so the series go from the longest, the pool's total,
    to the shortest): held now, the rollout's pods, free after; a last category for what does
    not fit, its series drawn first."""
    by_pool = (plan or {}).get("byPool")
    if not by_pool or not by_pool["pools"]:
        return []
    name, scale = _pool_unit(by_pool["resource"])
    pools = by_pool["pools"]
    short = by_pool["notPlaced"] / scale
    labels = [p["pool"] for p in pools] + (["does not fit"] if short else [])
    total = [p["allocatable"] / scale for p in pools] + ([0] if short else [])
    taken = [(p["used"] + p["placed"]) / scale for p in pools] + ([0] if short else [])
    used = [p["used"] / scale for p in pools] + ([0] if short else [])
    missing = [0.0 for _ in pools] + ([short] if short else [])
    top = max([*total, *taken, short]) or 1
    top = int(top) + 1 if top >= 1 else top * 1.2

    def series(values: list[Any]) -> str:
        return ", ".join(f"{float(v):g}" for v in values)

    palette = POOL_PALETTE if short else POOL_PALETTE.replace("#cf222e, ", "")
    chart = ["<details><summary>Placement per node pool</summary>", "", "```mermaid", palette,
             "xychart-beta horizontal", f'  title "{name} per node pool, with the rollout placed"',
             f"  x-axis [{', '.join(json.dumps(label) for label in labels)}]",
             f'  y-axis "{name}" 0 --> {top:g}']
    if short:
        chart.append(f"  bar [{series(missing)}]")
    chart += [f"  bar [{series(total)}]", f"  bar [{series(taken)}]", f"  bar [{series(used)}]"]
    legend = ("Blue: held now by the running pods (and the pods already Pending that go first). "
              "Green: the rollout's pods placed. Grey: free after.")
    if short:
        legend += " Red: what the pods that fit nowhere ask."
    return chart + ["```", "", legend, "", "</details>", ""]


def _placement(plan: dict[str, Any] | None, compact: bool = False) -> list[str]:
    """The placement plan's lines (docs/placement.md): fits, or per group the scheduler's message,
    and the nodes that would make it fit; then, unless compact, the plan per node pool."""
    if plan is None:
        return []
    table = [] if compact or not (plan.get("byPool") or {}).get("pools") else _pool_table(plan["byPool"])
    ahead = f", after {plan['queuedAhead']} pod(s) already Pending" if plan["queuedAhead"] else ""
    where = f"{plan['pods']} new pod(s) on the {plan['nodes']} live node(s){ahead}"
    if plan["fits"]:
        pools: dict[str, int] = {}
        for g in plan["groups"]:
            for pool, n in g["pools"].items():
                pools[pool] = pools.get(pool, 0) + n
        spread = ", ".join(f"{n} on {pool}" for pool, n in sorted(pools.items()))
        return [f"**Placement:** fits: {where} ({spread})", "", *table]
    lines = [f"**Placement:** does not fit: {where}", ""]
    for g in plan["groups"]:
        if g.get("unplaced"):
            lines.append(f"- {g['group']}: {g['unplaced']} of {g['pods']} pod(s) stay Pending: "
                         f"`{g['message']}`")
    for a in plan.get("addNodes") or []:
        what = "all of them" if a["placesAll"] else f"{a['pods']} of them"
        lines.append(f"- {a['nodes']} more node(s) like {a['shape']} would take {what}")
    return lines + ["", *table]


def _resource(r: ResourceReport, report: Report, compact: bool, locate: Locate | None = None,
              edits: tuple[LineEdit, ...] = ()) -> list[str]:
    differs = _decision(r, report)
    lines = [f"### {ICON.get(r.decision, '')} {_label(r)}: {r.rollout}"
             f"{f' → {differs}' if differs else ''}", ""]
    if r.source:
        lines += [f"<sub>{r.source}</sub>", ""]
    lines += [f"- {link_citations(reason)}" for reason in r.reasons] + [""]
    lines += _ways_out(r, locate, edits)
    lines += _capacity(r)
    lines += _placement(r.capacity.placement, compact)
    if r.capacity.cost is not None:
        priced, unit = r.capacity.cost, f" {r.capacity.cost['currency']}".rstrip()
        parts = [f"{priced['overlapPerHour']:g}{unit} per hour while both clusters run"] \
            if "overlapPerHour" in priced else []
        if "runPerHour" in priced:
            parts.append(f"{priced['runPerHour']:g}{unit} per hour while the run's cluster runs")
        if "monthlyChange" in priced:
            parts.append(f"{priced['monthlyChange']:+g}{unit} per month after")
        lines += [f"**Cost:** {' · '.join(parts)}", ""]
    if r.capacity.kueue is not None:
        q = r.capacity.kueue
        said = (f"admitted in ClusterQueue {q.get('clusterQueue')}" if q["admitted"]
                else str(q.get("message")))
        lines += [f"**Kueue** ({q['queue']}): {said}", ""]
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
        lines += _pool_chart(r.capacity.placement)
    return lines


def render_markdown(report: Report, *, max_chars: int | None = None, locate: Locate | None = None,
                    edits: tuple[LineEdit, ...] = ()) -> str:
    """The markdown report; with ``max_chars`` it is shortened to fit, verdict kept. ``locate``
    maps a resource's change to the pull request's file and line (a rendered root's overlay
    line, :func:`app.annotate.rendered_locator`), for the author's ways out; without it a
    plain file's own lines are used. ``edits``: the author's ways out as lines of their files
    (:func:`diffing.render.edits.line_edits`), shown as a diff, or as a pointer to the
    suggestion on the pull request's diff."""
    head = _header(report)
    order = _ordered(report)
    full = "\n".join(head + [line for r in order for line in _resource(r, report, False, locate, edits)])
    if max_chars is None or len(full) <= max_chars:
        return full.rstrip() + "\n"
    compact = "\n".join(head + [line for r in order for line in _resource(r, report, True, locate, edits)])
    note = "\n\n_…truncated to fit; run `rayservice-impact` for the full report._\n"
    if len(compact) + len(note) <= max_chars:
        return compact.rstrip() + note
    text = "\n".join(head)
    for r in order:
        block = "\n".join(_resource(r, report, True, locate, edits))
        if len(text) + len(block) + len(note) + 1 > max_chars:
            break
        text += "\n" + block
    if len(text) + len(note) > max_chars:
        text = text[: max(0, max_chars - len(note))]
    return text.rstrip() + note
