"""The author's edits as suggestions on the pull request's diff, one review per run.

A held change whose way out is one line of a file the pull request changes
(:func:`diffing.render.edits.line_edits`) is offered where GitHub can apply it: a review comment
with a ``suggestion`` block on that line. GitHub anchors a review comment only on a line its
diff of the pull request shows (the head side: an added line or a context line of a hunk), so
an edit is suggested only when the file's ``patch`` in the files list shows that line with the
text the edit replaces (:func:`mark_suggested`); the sticky comment shows the others as a diff
of the author's file (docs/github.md, "Suggested edits").

All of a run's new suggestions go in one ``COMMENT`` review on the head commit
(``POST pulls/{n}/reviews``). Each comment carries a hidden key (file, line, new text): a
suggestion already standing on the diff (ours, with the same key, its line still shown) is not
posted again, so a redelivered event or a re-run for the same head adds nothing.
"""

from __future__ import annotations

import hashlib
import logging
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from app.clients.github import GitHubClient, GitHubError, GitHubUncertain
from diffing import Report
from diffing.render.annotations import Locate
from diffing.render.edits import LineEdit, line_edits

from .change import PullRequest

log = logging.getLogger(__name__)

KEY = "<!-- rayservice-impact:suggestion {key} -->"
_KEY = re.compile(r"<!-- rayservice-impact:suggestion ([0-9a-f]{16}) -->")
_HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+(\d+)(?:,\d+)? @@")


def head_lines(patch: str) -> dict[int, str]:
    """{line number: text} of the head side of a file's ``patch`` (a diff-entry's unified diff
    without file headers): the lines a review comment can be anchored on with ``side: RIGHT``."""
    out: dict[int, str] = {}
    line = 0
    for raw in patch.split("\n"):
        m = _HUNK.match(raw)
        if m:
            line = int(m.group(1))
            continue
        if not line or raw.startswith(("-", "\\")):
            continue  # before the first hunk, a removed line, "\ No newline at end of file"
        if raw.startswith(("+", " ")):
            out[line] = raw[1:]
            line += 1
    return out


def mark_suggested(edits: Sequence[LineEdit], patches: Mapping[str, str]) -> tuple[LineEdit, ...]:
    """``edits`` with those the diff shows (their line, with the text they replace) marked
    ``suggested``; ``patches``: {file: patch} of the pull request's files list."""
    shown = {path: head_lines(patch) for path, patch in patches.items()}
    return tuple(e.with_suggested(shown.get(e.file, {}).get(e.line) == e.old) for e in edits)


def edits_for(report: Report, read: Callable[[str], str | None], patches: Mapping[str, str],
              locate: Locate | None = None) -> tuple[LineEdit, ...]:
    """The report's one-line edits in the author's files (``read``: a file at the head), those
    the diff shows marked suggested."""
    return mark_suggested(line_edits(report, read, locate), patches)


def key_of(edit: LineEdit) -> str:
    return hashlib.sha256(f"{edit.file}\0{edit.line}\0{edit.new}".encode()).hexdigest()[:16]


def suggestion_body(edit: LineEdit) -> str:
    """The review comment: what the edit does, then the line as GitHub's suggestion block."""
    fence = "```"
    while fence in edit.new:
        fence += "`"
    return (f"{KEY.format(key=key_of(edit))}\n**rayservice-impact**: this edit releases the hold "
            f"(`{'.'.join(map(str, edit.field))}`); the pull request comment says why.\n\n"
            f"{fence}suggestion\n{edit.new}\n{fence}\n")


def standing_keys(comments: Sequence[dict[str, Any]], login: str) -> set[str]:
    """The keys of our suggestions still shown on the diff (GitHub sets ``line`` to null on a
    comment whose line a later push changed: that one no longer stands)."""
    out = set()
    for c in comments:
        if (c.get("user") or {}).get("login") != login or c.get("line") is None:
            continue
        m = _KEY.match(str(c.get("body") or ""))
        if m:
            out.add(m.group(1))
    return out


async def post_suggestions(gh: GitHubClient, pr: PullRequest, edits: Sequence[LineEdit]) -> str:
    """Post the suggested ``edits`` not yet standing, as one review on the head commit; what
    happened: none | unchanged | posted N | failed (logged; the comment and status stand)."""
    wanted = [e for e in edits if e.suggested]
    if not wanted or pr.is_merge_group:
        return "none"
    try:
        login = await gh.own_login()
        standing = standing_keys([c async for c in gh.review_comments(pr.owner, pr.repo, pr.number)], login)
        new = [e for e in wanted if key_of(e) not in standing]
        if not new:
            return "unchanged"
        comments = [{"path": e.file, "line": e.line, "side": "RIGHT", "body": suggestion_body(e)}
                    for e in new]
        noun = "edit" if len(new) == 1 else "edits"
        body = (f"rayservice-impact: {len(new)} suggested {noun} that release the hold "
                "(the pull request comment says why).")
        try:
            await gh.create_review(pr.owner, pr.repo, pr.number, pr.head_sha, body, comments)
        except GitHubUncertain:  # it may be stored: look before calling it failed
            after = standing_keys([c async for c in gh.review_comments(pr.owner, pr.repo, pr.number)], login)
            if not all(key_of(e) in after for e in new):
                raise
    except GitHubError as exc:
        log.error("%s: suggestions not posted: %s", pr.full_name, exc)
        return "failed"
    return f"posted {len(new)}"
