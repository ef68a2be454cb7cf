"""What the pull request shows: the sticky comment's body and the gate's state (pure)."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import re
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any
from urllib.parse import quote, unquote

import diffing
from app.output import EXIT_HOLD, EXIT_OK
from diffing.kinds import NAMES_TEXT
from diffing.render.edits import LineEdit

MARKER = "<!-- rayservice-impact -->"
MAX_BODY_CHARS = 60_000
MAX_BODY_BYTES = 64_000       # GitHub's limit is 65 536; budget for bytes as well as characters
MAX_DESCRIPTION = 140
_STAMP = re.compile(r"<!-- rayservice-impact:head=(?P<head>\w*) at=(?P<at>\S*) -->")
STATE_FOR_DECISION = {"approve": "success", "ignore-differences": "success", "hold": "failure"}
CONCLUSION_FOR_STATE = {"success": "success", "failure": "failure", "error": "failure"}
NO_CHANGE_SHORT = f"No {NAMES_TEXT} changes"  # the status description
NO_CHANGE = f"{NO_CHANGE_SHORT} in this pull request."
REPLY_MARKER = "<!-- rayservice-impact:reply -->"   # our answers to commands: never commands themselves
_REPLY_TO = re.compile(r"<!-- rayservice-impact:reply-to=(?P<id>\d+) -->")
_STATE = re.compile(r"<!-- rayservice-impact:state=(?P<state>\w+) -->")
_NUMBERS = re.compile(r"<!-- rayservice-impact:numbers=(?P<numbers>\w+) -->")
_SAME_SINCE = re.compile(r" · the same for head `\w+`(?=</sub>\n?$)")
_BOUND = re.compile(r"<!-- rayservice-impact:bound pr=(?P<pr>\d+) head=(?P<head>\w*) base=(?P<base>\S*) "
                    r"base_sha=(?P<base_sha>\w*) digest=(?P<digest>\w*) since=(?P<since>\S*) -->")
_APPROVAL = re.compile(r"<!-- rayservice-impact:approved v2 pr=(?P<pr>\d+) head=(?P<head>[0-9a-fA-F]+) "
                       r"base=(?P<base>\S*) base_sha=(?P<base_sha>\w*) digest=(?P<digest>\w*) "
                       r"by=(?P<by>[\w.\[\]-]+) at=(?P<at>\S+) reason=(?P<reason>[\w=-]*) "
                       r"sig=(?P<sig>[0-9a-f]+) -->")
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
    digest: str = ""    # what the result rests on (:func:`report_digest`): an approval is bound to it
    numbers: str = ""   # what a reader acts on (:func:`numbers_digest`): a quiet comment changes with it
    touches: bool = False  # the change changes a RayService, RayCluster, RayJob or RayCronJob
    edits: tuple[LineEdit, ...] = ()  # the author's one-line edits (:mod:`.suggestions` posts the suggested)

    @property
    def conclusion(self) -> str:
        return CONCLUSION_FOR_STATE[self.state]


def shorten(text: str, limit: int = MAX_DESCRIPTION) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def verdict_for_report(report: diffing.Report, *, note: str = "", locate: Any = None,
                       edits: tuple[LineEdit, ...] = ()) -> Verdict:
    """The gate for a report. One whose only content is ``render-failed`` errors is not "no
    change": what those roots deploy is unknown, so it holds (``renderFailure: warn`` turns
    them into warnings first, and then it passes). ``locate``: the pull request's file and line
    of a rendered change (:func:`app.annotate.rendered_locator`), for the author's ways out;
    ``edits``: those ways out as lines of the author's files (:func:`.suggestions.edits_for`)."""
    state = STATE_FOR_DECISION.get(report.decision, "error")
    if not report.resources and any(f.severity == "error" and f.code == "render-failed"
                                    for f in report.findings):
        state = "failure"
    budget = MAX_BODY_CHARS - 2_000  # room for the marker, the note and the footer
    markdown = diffing.render_markdown(report, max_chars=budget, locate=locate, edits=edits)
    if note:
        markdown = f"> [!WARNING]\n> {note}\n\n{markdown}"
    return Verdict(state, shorten(report.summary), markdown, shorten(report.summary, 255),
                   digest=report_digest(report, note), numbers=numbers_digest(report.to_dict(), note),
                   touches=any(r.action != "unchanged" for r in report.resources), edits=edits)


def numbers_digest(report: dict[str, Any], note: str = "") -> str:
    """A hash of what a reader of the comment acts on: the verdict and the numbers (per object its
    rollout, decision, extra and peak capacity and the headroom seen; the findings by code and
    place; the objects not analysed) and the comment's warning, from the JSON report. A comment in
    a quiet mode (``on-change``, ``on-hold``) is rewritten only when this changes."""
    def finding(f: dict[str, Any]) -> str:
        return _canonical([f.get("severity"), f.get("code"), f.get("path")])

    def resource(r: dict[str, Any]) -> str:
        capacity = r.get("capacity") or {}
        return _canonical([r.get("kind"), r.get("namespace"), r.get("name"), r.get("action"),
                           r.get("rollout"), r.get("decision"), capacity.get("extra"), capacity.get("peak"),
                           capacity.get("headroom"), sorted(map(finding, r.get("findings") or []))])

    content = [report.get("kuberayVersion"), report.get("decision"),
               sorted(map(resource, report.get("resources") or [])),
               sorted(map(finding, report.get("findings") or [])),
               sorted((report.get("notAnalysed") or {}).items()), note]
    return _digest(_canonical(content))


def report_digest(report: diffing.Report, note: str = "") -> str:
    """A hash of what a verdict rests on: the decision, and for each object what changes, how it
    rolls out, what it needs and what was found (codes and places, not their wording, line
    numbers or the headroom seen), the objects not analysed and the comment's warning. Two runs
    that tell a maintainer the same thing have the same digest."""
    def finding(f: diffing.Finding) -> list[str]:
        return [f.severity, f.code, f.path]

    def resource(r: Any) -> str:
        changes = [[c.to_dict()[k] for k in ("path", "category", "before", "after")] for c in r.changes]
        return _canonical([r.kind, r.api_version, r.namespace, r.name, r.action, r.rollout, r.decision,
                           sorted(map(_canonical, changes)), r.capacity.extra, r.capacity.peak,
                           sorted(map(_canonical, map(finding, r.findings)))])

    content = [report.kuberay_version, report.decision, sorted(map(resource, report.resources)),
               sorted(map(_canonical, map(finding, report.findings))), sorted(report.not_analysed.items()),
               note]
    return _digest(_canonical(content))


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str, ensure_ascii=False)


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def verdict_for_markdown(markdown: str, exit_code: int, summary: str = "") -> Verdict:
    """The CI form: the CLI's markdown and exit code (0 approve/ignore, 3 hold, else error)."""
    state = {EXIT_OK: "success", EXIT_HOLD: "failure"}.get(exit_code, "error")
    if not summary:
        summary = {"success": "rayservice-impact: no hold", "failure": "rayservice-impact: hold"}.get(
            state, f"rayservice-impact could not analyse the change (exit {exit_code})")
    return Verdict(state, shorten(summary), markdown, shorten(summary, 255), digest=_digest(markdown))


def verdict_for_no_change() -> Verdict:
    return Verdict("success", NO_CHANGE_SHORT, None, NO_CHANGE_SHORT)


def verdict_for_error(message: str, *, comment: bool = True) -> Verdict:
    text = f"could not analyse: {message}"
    markdown = (f"### :warning: rayservice-impact could not analyse this change\n\n```text\n"
                f"{message[:4_000]}\n```\n") if comment else None
    return Verdict("error", shorten(text), markdown, shorten(text, 255), digest=_digest(message))


def render_body(markdown: str, *, head_sha: str = "", at: str = "", footer: str = "", state: str = "",
                approval: str = "", bound: str = "", numbers: str = "", keep: str = "") -> str:
    """The sticky comment: marker, hidden stamp, markdown (cut to fit, verdict kept), footer.

    ``state``: the analysis' own gate (success | failure | error), stamped so that an approval
    can tell whether there is a hold to accept; ``bound``: :meth:`Binding.line`, what the result
    is about; ``approval``: :meth:`Approval.block` (or a note that an earlier one no longer
    applies), kept near the top; ``numbers``: :func:`numbers_digest`; ``keep``: the shown part of
    the comment as it is (:func:`shown_part`), instead of ``markdown`` and ``footer``, for a quiet
    comment whose verdict and numbers did not change (its footer then says for which head)."""
    head = f"{MARKER}\n<!-- rayservice-impact:head={head_sha} at={at} -->\n"
    if state:
        head += f"<!-- rayservice-impact:state={state} -->\n"
    if numbers:
        head += f"<!-- rayservice-impact:numbers={numbers} -->\n"
    if bound:
        head += f"{bound}\n"
    head += approval
    if keep:
        same = f" · the same for head `{head_sha[:7]}`" if head_sha else ""
        kept = _SAME_SINCE.sub("", keep)
        kept = re.sub(r"</sub>(\n?)$", lambda m: f"{same}</sub>{m.group(1)}", kept, count=1)
        return head + kept
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


def no_change_body(head_sha: str, at: str = "", *, bound: str = "", note: str = "") -> str:
    text = f"{NO_CHANGE} (head `{head_sha[:7]}`)" + (f"\n\n{note}" if note else "")
    return render_body(text, head_sha=head_sha, at=at, state="success" if bound else "", bound=bound)


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


def numbers_of(body: str) -> str:
    """The :func:`numbers_digest` stamped into one of our comments ("" when not stamped)."""
    m = _NUMBERS.search(body or "")
    return m["numbers"] if m else ""


def shown_part(body: str) -> str:
    """What a reader sees of one of our comments: the report and its footer, without the hidden
    stamps and the approval block (or the note that one no longer applies)."""
    lines = without_approval(body or "").split("\n")
    at = 0
    while at < len(lines) and lines[at].startswith("<!-- rayservice-impact"):
        at += 1
    return "\n".join(lines[at:])


# -- what a result is about, and the audited override: ``/rayservice-impact approve <reason>`` -----

@dataclass(frozen=True, slots=True)
class Binding:
    """What one result is about: the pull request, its head, the base it was compared with (the
    branch and the commit) and the report's digest. An approval holds for exactly this."""

    number: int
    head: str
    base_ref: str
    base_sha: str
    digest: str

    def line(self, since: str = "") -> str:
        """The hidden stamp. ``since``: when the comment first showed this result (GitHub's
        ``updated_at`` of that edit); empty while that edit is the comment's latest."""
        return (f"<!-- rayservice-impact:bound pr={self.number} head={self.head} base={_ref(self.base_ref)} "
                f"base_sha={self.base_sha} digest={self.digest} since={since} -->")

    def change_from(self, other: Binding) -> str:
        """Why a result bound to ``other`` is not about this one ("" when it is)."""
        if other.number != self.number:
            return f"it was for pull request #{other.number}"
        if other.head != self.head:
            return f"the head moved from `{other.head[:7]}` to `{self.head[:7]}`"
        if other.base_ref != self.base_ref:
            return f"the pull request now targets `{self.base_ref}`, not `{other.base_ref}`"
        if other.base_sha != self.base_sha:
            branch = self.base_ref or "the base"
            return f"`{branch}` moved from `{other.base_sha[:7]}` to `{self.base_sha[:7]}`"
        if other.digest != self.digest:
            return "the report changed"
        return ""


def _ref(ref: str) -> str:
    return quote(ref, safe="/")


def bound_of(body: str) -> tuple[Binding, str] | None:
    """(the binding stamped into one of our comments, its ``since``), if any."""
    m = _BOUND.search(body or "")
    if not m:
        return None
    return Binding(int(m["pr"]), m["head"], unquote(m["base"]), m["base_sha"], m["digest"]), m["since"]


def pinned(body: str, since: str) -> str:
    """``body`` with its binding's ``since`` filled in: an edit that keeps the result (an approval,
    a re-run with the same outcome) must not make it look newer than it is."""
    def fill(m: re.Match[str]) -> str:
        return m[0] if m["since"] or not since else m[0].replace(" since= -->", f" since={since} -->")
    return _BOUND.sub(fill, body, count=1)


@dataclass(frozen=True, slots=True)
class Approval:
    """A maintainer accepted one result: the hold of one head of one pull request against one base
    (branch and commit), with one report (its digest). Kept in the sticky comment as a visible
    line and a hidden stamp signed with the service's key (the webhook secret): a stamp pasted
    by anyone else does not verify, so it approves nothing; a change of any bound part voids it."""

    head: str
    by: str
    at: str      # ISO 8601, UTC
    reason: str
    number: int = 0
    base_ref: str = ""
    base_sha: str = ""
    digest: str = ""

    @classmethod
    def of(cls, binding: Binding, by: str, at: str, reason: str) -> Approval:
        return cls(binding.head, by, at, reason, binding.number, binding.base_ref, binding.base_sha,
                   binding.digest)

    @property
    def binding(self) -> Binding:
        return Binding(self.number, self.head, self.base_ref, self.base_sha, self.digest)

    def _payload(self) -> bytes:
        return (f"rayservice-impact approval v2\n{self.number}\n{self.head}\n{self.base_ref}\n"
                f"{self.base_sha}\n{self.digest}\n{self.by}\n{self.at}\n{self.reason}").encode()

    def signature(self, key: bytes) -> str:
        return hmac.new(key, self._payload(), hashlib.sha256).hexdigest()

    def stamp(self, key: bytes) -> str:
        reason = base64.urlsafe_b64encode(self.reason.encode()).decode()
        return (f"<!-- rayservice-impact:approved v2 pr={self.number} head={self.head} "
                f"base={_ref(self.base_ref)} base_sha={self.base_sha} digest={self.digest} by={self.by} "
                f"at={self.at} reason={reason} sig={self.signature(key)} -->")

    @property
    def when(self) -> str:
        return self.at.replace("T", " ").replace("Z", " UTC")

    def block(self, key: bytes) -> str:
        """The stamp, the line people read, and an end mark (so a later run can replace it)."""
        shown = " ".join(self.reason.split()).replace("<", "&lt;").replace(">", "&gt;")
        against = f"`{self.base_ref}` at `{self.base_sha[:7]}`" if self.base_ref else f"`{self.base_sha[:7]}`"
        return (f"{self.stamp(key)}\n> [!NOTE]\n> ✅ **Hold accepted** by @{self.by} on {self.when} for head "
                f"`{self.head[:7]}`: {shown}\n>\n> <sub>for this result only: against {against}, report "
                f"`{self.digest[:8]}`; a push, a new base or another report holds again</sub>\n"
                f"<!-- /rayservice-impact:approved -->\n\n")

    def void_block(self, why: str) -> str:
        """The note a later result carries when this approval no longer applies to it."""
        return (f"<!-- rayservice-impact:approved void -->\n> [!CAUTION]\n> The hold accepted earlier by "
                f"@{self.by} ({self.when}, head `{self.head[:7]}`) no longer applies: {why}. This result "
                f"holds again; a maintainer can accept it with `/rayservice-impact approve <reason>`.\n"
                f"<!-- /rayservice-impact:approved -->\n\n")

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
        approval = Approval(m["head"], m["by"], m["at"], reason, int(m["pr"]), unquote(m["base"]),
                            m["base_sha"], m["digest"])
        if hmac.compare_digest(approval.signature(key), m["sig"]):
            return approval
    return None


@dataclass(frozen=True, slots=True)
class Shown:
    """The result one of our comments shows."""

    head: str
    binding: Binding | None    # None: a comment stamped before results were bound
    state: str                 # the analysis' own gate ("" when not stamped)
    since: str                 # when the comment first showed it (GitHub's clock)
    approval: Approval | None  # a verified approval of exactly this result

    @property
    def gate(self) -> str:
        """What it means for its head: success when it passed or a maintainer accepted exactly it,
        else its own state ("": unknown)."""
        return "success" if self.state == "success" or self.approval is not None else self.state


def shown_of(comment: dict[str, Any], key: bytes) -> Shown | None:
    """What ``comment`` (one of ours, as GitHub lists it) shows, if it is a result at all."""
    body = str(comment.get("body") or "")
    stamp = stamp_of(body)
    if stamp is None:
        return None
    bound = bound_of(body)
    binding, since = bound if bound is not None and bound[0].head == stamp[0] else (None, "")
    approval = approval_of(body, key)
    if approval is not None and approval.binding != binding:
        approval = None
    return Shown(stamp[0], binding, state_of(body), since or str(comment.get("updated_at") or ""), approval)


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


_COMMAND = re.compile(r"^/rayservice-impact(?:\s+(?P<verb>\S+))?(?P<rest>.*)$", re.DOTALL | re.IGNORECASE)
COMMAND_USAGE = "`/rayservice-impact approve <reason>` or `/rayservice-impact rerun`"


def written_by_us(body: str) -> bool:
    """Our sticky comment/note or one of our replies: never a command, whatever it quotes."""
    return body.lstrip().startswith(MARKER) or REPLY_MARKER in body


def command_words(body: str) -> tuple[str, str] | None:
    """(verb, reason) of a ``/rayservice-impact <verb> <reason>`` comment or note, the same on every
    forge: verb ``approve``, ``rerun`` or ``unknown`` (any other word), the reason's whitespace
    collapsed and cut at :data:`MAX_REASON`; None when ``body`` is not a command (it must start
    with ``/rayservice-impact`` followed by whitespace or nothing)."""
    m = _COMMAND.match(body.strip())
    if not m or (m["rest"] and not m["verb"] and not m["rest"][:1].isspace()):
        return None
    verb = (m["verb"] or "").lower()
    return (verb if verb in ("approve", "rerun") else "unknown"), clean_reason(m["rest"] or "")


def command_refusal(verb: str, reason: str) -> tuple[str, str] | None:
    """(why, the reply) for a command no one may give, on any forge: an unknown verb, an approval
    without a reason; None otherwise (who wrote it is checked next)."""
    if verb == "unknown":
        return "unknown command", f"I only know {COMMAND_USAGE}. Nothing was changed."
    if verb == "approve" and not reason:
        return "no reason", ("an approval needs a reason, on the record: e.g. `/rayservice-impact approve "
                             "the GPU pool has room for the second cluster until Friday`. "
                             "Nothing was changed.")
    return None


def reply_body(user: str, text: str, comment_id: int) -> str:
    """An answer to the command in comment ``comment_id``; the hidden mark lets a retry find it."""
    return f"{REPLY_MARKER}\n@{user} {text}\n<!-- rayservice-impact:reply-to={comment_id} -->"


def reply_to(body: str | None) -> int | None:
    """The command comment one of our replies answers, if it is one."""
    if not body or REPLY_MARKER not in body:
        return None
    m = _REPLY_TO.search(body)
    return int(m["id"]) if m else None


def instant(value: str) -> datetime | None:
    """An ISO 8601 time as GitHub writes it (``2026-05-04T09:12:03Z``), or None."""
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")) if value else None
    except ValueError:
        return None
