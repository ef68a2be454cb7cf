"""Findings inline on a GitLab merge request: one diff thread per finding, from the webhook service.

GitLab has no check-run annotations; its server-side inline route is a thread on a line of the
merge request's diff (api/discussions.md, "Create a new thread in the merge request diff": a
``position`` of type ``text`` with the three SHAs of the merge request's ``diff_refs``,
``new_path``/``new_line``, and ``old_path``/``old_line`` for an unchanged line). Opt-in:
``RAYSERVICE_IMPACT_GITLAB_INLINE`` = ``off`` (default) | ``holds`` (findings of level failure:
what holds) | ``all``.

Each thread's first note carries a hidden marker with the finding's fingerprint (the Code Quality
one, :func:`diffing.render.codequality.fingerprint`: check, root, object, field; never the line;
findings on one line share a thread under the fingerprint of their fingerprints), so a run knows
which of our threads is which:

* a finding without a thread of ours gets one (at most :data:`CAP` per run; the log says how many
  were left out), never a second one on a re-run or a redelivery;
* a thread of ours whose finding is gone is resolved; a resolved one whose finding is back is
  reopened;
* "ours" is written by our identity (``GET /user``, as the sticky note): a thread someone else
  wrote, marker or not, is neither edited, resolved nor counted;
* a finding whose line is not a line of the diff (GitLab answers 400) stays in the sticky note
  only; the run goes on.

Lines: a finding's line is a line of the file at the revision judged (GitLab's merge commit when it
has one), placed on the merge request's diff (``diff_refs``: merge base → head). The two agree
unless the target branch changed the same file since the merge base; then GitLab may refuse or
place the thread a few lines off.
"""

from __future__ import annotations

import hashlib
import logging
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from app.clients.gitlab import GitLabClient, GitLabError

log = logging.getLogger(__name__)

MODES = ("off", "holds", "all")
CAP = 20                      # new threads per run
MARK = "<!-- rayservice-impact:finding "
_MARKED = re.compile(r"<!-- rayservice-impact:finding ([0-9a-f]{16,64}) -->")
_HUNK = re.compile(r"^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@")


@dataclass(frozen=True, slots=True)
class Finding:
    fingerprint: str
    path: str
    line: int
    title: str
    message: str


@dataclass
class Tally:
    """What one run did (logged; the tests read the calls)."""

    created: int = 0
    resolved: int = 0
    reopened: int = 0
    outside: int = 0          # GitLab refused the position: not a line of the diff
    left_out: int = 0         # over the cap


def wanted(annotations: Iterable[dict[str, Any]], mode: str) -> list[Finding]:
    """The findings to show inline in ``mode`` (``holds``: level failure only), only those with a
    line of their own, one thread per line: findings on the same line (the head's and a worker's
    image, both set by one ``newTag``) share it, under the fingerprint of their fingerprints."""
    lines: dict[tuple[str, int], dict[str, tuple[str, str]]] = {}
    for a in annotations:
        fp = str(a.get("fingerprint") or "")
        if not fp or not a.get("located", True):
            continue
        if mode == "holds" and a.get("annotation_level") != "failure":
            continue
        spot = (str(a["path"]), int(a.get("start_line") or 1))
        lines.setdefault(spot, {}).setdefault(fp, (str(a.get("title") or ""), str(a.get("message") or "")))
    return [_one(path, line, found) for (path, line), found in lines.items()]


def _one(path: str, line: int, found: dict[str, tuple[str, str]]) -> Finding:
    if len(found) == 1:
        [(fp, (title, message))] = found.items()
        return Finding(fp, path, line, title, message)
    fp = hashlib.sha256("\0".join(sorted(found)).encode()).hexdigest()[:32]
    titles = list(dict.fromkeys(title for title, _ in found.values()))
    if len(titles) == 1:
        return Finding(fp, path, line, titles[0], "\n".join(f"* {m}" for _, m in found.values()))
    return Finding(fp, path, line, f"{len(found)} findings",
                   "\n".join(f"* **{t}**: {m}" for t, m in found.values()))


def body_of(f: Finding) -> str:
    return f"{MARK}{f.fingerprint} -->\n**{f.title}**\n\n{f.message}"


def fingerprint_of(discussion: dict[str, Any], me: int) -> str | None:
    """The fingerprint a thread carries when WE opened it (its first note, by our identity)."""
    notes = discussion.get("notes") or []
    first = notes[0] if notes and isinstance(notes[0], dict) else {}
    if int((first.get("author") or {}).get("id") or -1) != me:
        return None
    m = _MARKED.search(str(first.get("body") or ""))
    return m[1] if m else None


def resolved(discussion: dict[str, Any]) -> bool:
    """GitLab: a thread is resolved when every resolvable note of it is (api/discussions.md)."""
    notes = [n for n in discussion.get("notes") or [] if isinstance(n, dict) and n.get("resolvable")]
    return bool(notes) and all(n.get("resolved") for n in notes)


def lines_of(patch: str) -> dict[int, int | None]:
    """A unified diff's head lines: new line -> old line (None for an added line)."""
    out: dict[int, int | None] = {}
    old = new = 0
    for text in patch.splitlines():
        m = _HUNK.match(text)
        if m:
            old, new = int(m[1]), int(m[2])
        elif text.startswith("+"):
            out[new] = None
            new += 1
        elif text.startswith("-"):
            old += 1
        elif text.startswith(" "):
            out[new] = old
            old, new = old + 1, new + 1
    return out


class Inline:
    """One merge request's findings as threads (see the module docstring)."""

    def __init__(self, gl: GitLabClient, project: str, iid: int, diff_refs: dict[str, Any] | None) -> None:
        self.gl, self.project, self.iid = gl, project, iid
        self.diff_refs = diff_refs
        self._diffs: dict[str, dict[str, Any]] | None = None

    async def ours(self, me: int) -> dict[str, dict[str, Any]]:
        """Our threads by fingerprint (the first, when a fingerprint is there twice)."""
        found: dict[str, dict[str, Any]] = {}
        async for d in self.gl.discussions(self.project, self.iid):
            fp = fingerprint_of(d, me)
            if fp is not None and fp not in found:
                found[fp] = d
        return found

    async def sync(self, findings: list[Finding], name: str) -> Tally:
        tally = Tally()
        me = int((await self.gl.user())["id"])
        ours = await self.ours(me)
        now = {f.fingerprint for f in findings}
        for fp, d in ours.items():
            if fp not in now and not resolved(d):
                await self.gl.resolve_discussion(self.project, self.iid, str(d["id"]), True)
                tally.resolved += 1
            elif fp in now and resolved(d):
                await self.gl.resolve_discussion(self.project, self.iid, str(d["id"]), False)
                tally.reopened += 1
        new = [f for f in findings if f.fingerprint not in ours]
        tally.left_out = max(0, len(new) - CAP)
        for f in new[:CAP]:
            position = await self.position(f)
            if position is None:
                tally.outside += 1
                continue
            try:
                await self.gl.create_discussion(self.project, self.iid, body_of(f), position,
                                                find=lambda fp=f.fingerprint: self._find(me, fp))
            except GitLabError as exc:
                if exc.status != 400:
                    raise
                log.info("%s: %s:%d is not a line of the diff (%s); in the note only", name, f.path,
                         f.line, exc.detail or "400")
                tally.outside += 1
                continue
            tally.created += 1
        log.info("%s: inline threads: %d created, %d resolved, %d reopened, %d not on the diff, "
                 "%d left out (at most %d new per run)", name, tally.created, tally.resolved,
                 tally.reopened, tally.outside, tally.left_out, CAP)
        return tally

    async def _find(self, me: int, fp: str) -> dict[str, Any] | None:
        return (await self.ours(me)).get(fp)

    async def position(self, f: Finding) -> dict[str, Any] | None:
        """GitLab's ``position`` for ``f``'s line: an added line by its new line, an unchanged
        line of a hunk by both; a line outside every hunk by its new line (GitLab decides).
        None when the merge request has no ``diff_refs`` or does not change the file."""
        refs = self.diff_refs or {}
        if not all(refs.get(k) for k in ("base_sha", "start_sha", "head_sha")):
            return None
        if self._diffs is None:
            self._diffs = {str(d.get("new_path")): d
                           async for d in self.gl.merge_request_diffs(self.project, self.iid)}
        diff = self._diffs.get(f.path)
        if diff is None or diff.get("deleted_file"):
            return None
        position: dict[str, Any] = {"position_type": "text", "base_sha": refs["base_sha"],
                                    "start_sha": refs["start_sha"], "head_sha": refs["head_sha"],
                                    "old_path": str(diff.get("old_path") or f.path), "new_path": f.path,
                                    "new_line": f.line}
        old = lines_of(str(diff.get("diff") or "")).get(f.line)
        if old is not None:
            position["old_line"] = old
        return position
