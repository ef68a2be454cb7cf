"""What the pull request shows: the sticky comment's body and the gate's state (pure)."""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
from dataclasses import dataclass, replace
from typing import Any

import diffing

MARKER = "<!-- rayservice-impact -->"
MAX_BODY_CHARS = 60_000
MAX_BODY_BYTES = 64_000       # GitHub's limit is 65 536; budget for bytes as well as characters
MAX_DESCRIPTION = 140
_STAMP = re.compile(r"<!-- rayservice-impact:head=(?P<head>\w*) at=(?P<at>\S*) -->")
STATE_FOR_DECISION = {"approve": "success", "ignore-differences": "success", "hold": "failure"}
CONCLUSION_FOR_STATE = {"success": "success", "failure": "failure", "error": "failure"}
NO_CHANGE_SHORT = "No RayService, RayCluster or RayJob changes"  # the status description
NO_CHANGE = f"{NO_CHANGE_SHORT} in this pull request."
REPLY_MARKER = "<!-- rayservice-impact:reply -->"   # our answers to commands: never commands themselves
_STATE = re.compile(r"<!-- rayservice-impact:state=(?P<state>\w+) -->")
_APPROVAL = re.compile(r"<!-- rayservice-impact:approved head=(?P<head>[0-9a-fA-F]+) by=(?P<by>[\w.\[\]-]+) "
                       r"at=(?P<at>\S+) reason=(?P<reason>[\w=-]*) sig=(?P<sig>[0-9a-f]+) -->")
_APPROVAL_BLOCK = re.compile(r"<!-- rayservice-impact:approved .*?<!-- /rayservice-impact:approved -->\n*",
                             re.DOTALL)
MAX_REASON = 300


@dataclass(frozen=True, slots=True)
class Verdict:
    """The gate (``state``: success | failure | error, ``description`` ≤ 140 chars) and the
    comment's markdown (None: nothing to say, so no new comment is created)."""

    state: str
    description: str
    markdown: str | None
    title: str
    annotations: tuple[dict[str, Any], ...] = ()  # check-run annotations (GitHub App only)

    @property
    def conclusion(self) -> str:
        return CONCLUSION_FOR_STATE[self.state]


def shorten(text: str, limit: int = MAX_DESCRIPTION) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def verdict_for_report(report: diffing.Report, *, note: str = "") -> Verdict:
    """The gate for a report. One whose only content is ``render-failed`` errors is not "no
    change": what those roots deploy is unknown, so it holds (``renderFailure: warn`` turns
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
    return Verdict("success", NO_CHANGE_SHORT, None, NO_CHANGE_SHORT)


def verdict_for_error(message: str, *, comment: bool = True) -> Verdict:
    text = f"could not analyse: {message}"
    markdown = (f"### :warning: rayservice-impact could not analyse this change\n\n```text\n"
                f"{message[:4_000]}\n```\n") if comment else None
    return Verdict("error", shorten(text), markdown, shorten(text, 255))


def render_body(markdown: str, *, head_sha: str = "", at: str = "", footer: str = "", state: str = "",
                approval: str = "") -> str:
    """The sticky comment: marker, hidden stamp, markdown (cut to fit, verdict kept), footer.

    ``state``: the analysis' own gate (success | failure | error), stamped so that an approval
    can tell whether there is a hold to accept; ``approval``: :meth:`Approval.block`, kept near
    the top."""
    head = f"{MARKER}\n<!-- rayservice-impact:head={head_sha} at={at} -->\n"
    if state:
        head += f"<!-- rayservice-impact:state={state} -->\n"
    head += approval
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
    return body is not None and body.lstrip().startswith(MARKER)


def state_of(body: str) -> str:
    """The analysis' own gate stamped into one of our comments ("" when not stamped)."""
    m = _STATE.search(body or "")
    return m["state"] if m else ""


# -- the audited override: ``/rayservice-impact approve <reason>`` ---------------------------------

@dataclass(frozen=True, slots=True)
class Approval:
    """A maintainer accepted the hold of one head SHA. Kept in the sticky comment as a visible
    line and a hidden stamp signed with the service's key (the webhook secret): a stamp pasted
    by anyone else does not verify, so it approves nothing."""

    head: str
    by: str
    at: str      # ISO 8601, UTC
    reason: str

    def _payload(self) -> bytes:
        return f"rayservice-impact approval v1\n{self.head}\n{self.by}\n{self.at}\n{self.reason}".encode()

    def signature(self, key: bytes) -> str:
        return hmac.new(key, self._payload(), hashlib.sha256).hexdigest()

    def stamp(self, key: bytes) -> str:
        reason = base64.urlsafe_b64encode(self.reason.encode()).decode()
        return (f"<!-- rayservice-impact:approved head={self.head} by={self.by} at={self.at} "
                f"reason={reason} sig={self.signature(key)} -->")

    def block(self, key: bytes) -> str:
        """The stamp, the line people read, and an end mark (so a later run can replace it)."""
        shown = " ".join(self.reason.split()).replace("<", "&lt;").replace(">", "&gt;")
        when = self.at.replace("T", " ").replace("Z", " UTC")
        return (f"{self.stamp(key)}\n> [!NOTE]\n> ✅ **Hold accepted** by @{self.by} on {when} for head "
                f"`{self.head[:7]}`: {shown}\n<!-- /rayservice-impact:approved -->\n\n")

    @property
    def description(self) -> str:
        return shorten(f"hold accepted by @{self.by}: {' '.join(self.reason.split())}")


def approval_of(body: str, key: bytes) -> Approval | None:
    """The approval stamped into ``body`` whose signature verifies under ``key``, if any."""
    if not key:
        return None
    for m in _APPROVAL.finditer(body or ""):
        try:
            reason = base64.urlsafe_b64decode(m["reason"].encode()).decode()
        except (ValueError, UnicodeDecodeError):
            continue
        approval = Approval(m["head"], m["by"], m["at"], reason)
        if hmac.compare_digest(approval.signature(key), m["sig"]):
            return approval
    return None


def without_approval(body: str) -> str:
    return _APPROVAL_BLOCK.sub("", body)


def with_approval(body: str, approval: Approval, key: bytes) -> str:
    """``body`` (one of our comments) with ``approval`` in place of any earlier one, right after
    the hidden stamps."""
    lines = without_approval(body).split("\n")
    at = 0
    while at < len(lines) and lines[at].startswith("<!-- rayservice-impact"):
        at += 1
    head, rest = "\n".join(lines[:at]), "\n".join(lines[at:])
    return f"{head}\n{approval.block(key)}{rest}"


def approved(verdict: Verdict, approval: Approval) -> Verdict:
    """The gate of a head whose hold a maintainer accepted: success, saying who and why."""
    return replace(verdict, state="success", description=approval.description,
                   title=shorten(approval.description, 255))


def clean_reason(text: str) -> str:
    return " ".join(text.split())[:MAX_REASON]
