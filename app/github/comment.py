"""What the pull request shows: the sticky comment's body and the gate's state (pure)."""

from __future__ import annotations

import re
from dataclasses import dataclass

import diffing

MARKER = "<!-- rayservice-impact -->"
MAX_BODY_CHARS = 60_000
MAX_BODY_BYTES = 64_000       # GitHub's limit is 65 536; budget for bytes as well as characters
MAX_DESCRIPTION = 140
_STAMP = re.compile(r"<!-- rayservice-impact:head=(?P<head>\w*) at=(?P<at>\S*) -->")
STATE_FOR_DECISION = {"approve": "success", "ignore-differences": "success", "hold": "failure"}
CONCLUSION_FOR_STATE = {"success": "success", "failure": "failure", "error": "failure"}
NO_CHANGE = "No RayService changes in this pull request."


@dataclass(frozen=True, slots=True)
class Verdict:
    """The gate (``state``: success | failure | error, ``description`` ≤ 140 chars) and the
    comment's markdown (None: nothing to say, so no new comment is created)."""

    state: str
    description: str
    markdown: str | None
    title: str

    @property
    def conclusion(self) -> str:
        return CONCLUSION_FOR_STATE[self.state]


def shorten(text: str, limit: int = MAX_DESCRIPTION) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def verdict_for_report(report: diffing.Report, *, note: str = "") -> Verdict:
    """The gate for a report. One whose only content is ``render-failed`` errors is not "no
    RayService": what those roots deploy is unknown, so it holds (``renderFailure: warn`` turns
    them into warnings first, and then it passes)."""
    state = STATE_FOR_DECISION.get(report.decision, "error")
    if not report.resources and any(f.severity == "error" and f.code == "render-failed"
                                    for f in report.findings):
        state = "failure"
    budget = MAX_BODY_CHARS - 2_000  # room for the marker, the note and the footer
    markdown = diffing.render_markdown(report, max_chars=budget)
    if note:
        markdown = f"> [!WARNING]\n> {note}\n\n{markdown}"
    return Verdict(state, shorten(report.summary), markdown, shorten(report.summary, 255))


def verdict_for_markdown(markdown: str, exit_code: int, summary: str = "") -> Verdict:
    """The CI form: the CLI's markdown and exit code (0 approve/ignore, 3 hold, else error)."""
    state = {0: "success", 3: "failure"}.get(exit_code, "error")
    if not summary:
        summary = {"success": "rayservice-impact: no hold", "failure": "rayservice-impact: hold"}.get(
            state, f"rayservice-impact could not analyse the change (exit {exit_code})")
    return Verdict(state, shorten(summary), markdown, shorten(summary, 255))


def verdict_for_no_change() -> Verdict:
    return Verdict("success", "No RayService changes", None, "No RayService changes")


def verdict_for_error(message: str, *, comment: bool = True) -> Verdict:
    text = f"could not analyse: {message}"
    markdown = (f"### :warning: rayservice-impact could not analyse this change\n\n```text\n"
                f"{message[:4_000]}\n```\n") if comment else None
    return Verdict("error", shorten(text), markdown, shorten(text, 255))


def render_body(markdown: str, *, head_sha: str = "", at: str = "", footer: str = "") -> str:
    """The sticky comment: marker, hidden stamp, markdown (cut to fit, verdict kept), footer."""
    head = f"{MARKER}\n<!-- rayservice-impact:head={head_sha} at={at} -->\n"
    tail = f"\n\n<sub>{footer}</sub>\n" if footer else "\n"
    room = MAX_BODY_CHARS - len(head) - len(tail)
    body = fit(markdown.rstrip("\n"), room)
    while len((head + body + tail).encode("utf-8")) > MAX_BODY_BYTES:
        room = int(room * 0.9)
        body = fit(markdown.rstrip("\n"), room)
    return head + body + tail


def fit(markdown: str, limit: int) -> str:
    """``markdown`` cut to ``limit`` characters at a line end, closing an open code fence."""
    if len(markdown) <= limit:
        return markdown
    notice = "\n\n… _truncated: the full report is in the check run or `--format json`._"
    cut = markdown[: max(0, limit - len(notice) - 8)]
    if "\n" in cut:
        cut = cut[: cut.rindex("\n")]
    if cut.count("```") % 2:
        cut += "\n```"
    if cut.count("<details>") > cut.count("</details>"):
        cut += "\n</details>" * (cut.count("<details>") - cut.count("</details>"))
    return cut + notice


def no_change_body(head_sha: str, at: str = "") -> str:
    return render_body(f"{NO_CHANGE} (head `{head_sha[:7]}`)", head_sha=head_sha, at=at)


def stamp_of(body: str) -> tuple[str, str] | None:
    """(head SHA, valid-at) stamped into one of our comments, if any."""
    m = _STAMP.search(body or "")
    return (m["head"], m["at"]) if m else None


def is_ours(body: str | None) -> bool:
    return bool(body) and body.lstrip().startswith(MARKER)
