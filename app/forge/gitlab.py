"""The GitLab side of the forge boundary: one merge request, read and written through
:class:`app.clients.gitlab.GitLabClient` in its TARGET project only.

* the sticky note is our identity's note (``GET /user``: the token's user, a project or group
  token's bot user) carrying the marker, found among the merge request's notes (paginated);
* the status is a commit status named ``rayservice-impact`` on the head: ``success``, else
  ``failed`` (GitLab has no ``error`` state: an analysis that could not run is ``failed`` and its
  description says so; api/commits.md "Set the pipeline status of a commit");
* where the project has an external status check named ``rayservice-impact`` (GitLab Ultimate,
  api/status_checks.md), its response for the head is ``passed`` or ``failed``; a 403/404 means
  the feature is not there: skipped, logged once per project;
* inline findings (``inline``: ``off`` by default, ``holds`` or ``all``; the webhook service's
  ``RAYSERVICE_IMPACT_GITLAB_INLINE``) are threads on lines of the merge request's diff, one per
  finding, kept in step run after run (:mod:`app.gitlab.inline`); the CI job's route is its Code
  Quality report (ci/testing/code_quality.md; docs/gitlab.md);
* a user may approve with at least ``approve_level`` (30 = Developer; api/members.md
  "Roles": 10 Guest, 15 Planner, 20 Reporter, 30 Developer, 40 Maintainer, 50 Owner);
* the gate over other merge requests with the same head (``gate=True``: the webhook service). GitLab
  keeps commit statuses per commit (and pipeline), not per merge request: one head opened as two
  merge requests would show one ``rayservice-impact`` status, the last one posted. Every status
  names its merge request in ``target_url`` (its ``web_url``), and a success goes on a head only
  when no other open merge request of the project at that head holds it:
  :meth:`GitLabForge.holders` reads the head's statuses (every one, newest first), and for each
  other merge request whose latest is not a success, reads it (closed, merged or moved on: it no
  longer counts) and its sticky note (passed, or accepted for exactly that result: it does not
  hold; held, failed or without a result for this head: it does). Statuses of every ``ref`` are
  counted: which pipeline GitLab attaches each to is not checked here, so the gate errs on the side
  of holding. The CI job does not gate: its statuses go on its own merge request pipeline.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Callable
from typing import Any

from app.clients.gitlab import ArchiveTooLarge as ClientTooLarge
from app.clients.gitlab import GitLabClient, GitLabError, GitLabNotFound
from app.github.comment import Verdict, is_ours
from app.github.gate import head_lock, why_held
from app.gitlab.inline import MODES, Inline, wanted
from app.gitlab.revisions import resolve

from . import ArchiveTooLarge, Revisions

log = logging.getLogger(__name__)

LEVELS = {0: "not a member", 5: "Minimal Access", 10: "Guest", 15: "Planner", 20: "Reporter",
          30: "Developer", 40: "Maintainer", 50: "Owner"}
GITLAB_STATE = {"success": "success", "failure": "failed", "error": "failed"}
CHECK_STATUS = {"success": "passed", "failure": "failed", "error": "failed"}
_SUBJECT = re.compile(r"^(?P<project>.+)/-/merge_requests/(?P<iid>\d+)/?$")


def subject_of(url: str, project_url: str = "") -> int | None:
    """The merge request a status names in its ``target_url`` (``…/group/project/-/merge_requests/7``),
    when it is one of the project at ``project_url`` (any project when that is unknown); else None."""
    m = _SUBJECT.match(url.split("#", 1)[0].split("?", 1)[0])
    if m is None or (project_url and m["project"].rstrip("/") != project_url):
        return None
    return int(m["iid"])


class GitLabForge:
    host = "GitLab"
    noun = "merge request"

    def __init__(self, gl: GitLabClient, project: str, iid: int, head_sha: str, *, web_url: str = "",
                 status_ref: str = "", approve_level: int = 30,
                 checks: dict[str, int | None] | None = None, mr: dict[str, Any] | None = None,
                 gate: bool = False, inline: str = "off") -> None:
        if inline not in MODES:
            raise ValueError(f"inline must be one of {', '.join(MODES)}, not {inline!r}")
        self.gl, self.project, self.iid, self.head_sha = gl, project, iid, head_sha
        self.inline = inline
        self._diff_refs = (mr or {}).get("diff_refs")  # the threads' position SHAs
        self.gate = gate
        self.web_url, self.status_ref, self.approve_level = web_url, status_ref, approve_level
        self._checks = checks if checks is not None else {}  # project -> check id (None: none/not available)
        self._mr = mr  # the merge request as just read, used once by revisions()

    async def revisions(self) -> Revisions:
        mr, self._mr = self._mr, None
        return await resolve(self.gl, self.project, self.iid, self.head_sha, mr=mr)

    async def archive(self, sha: str, max_bytes: int) -> bytes:
        try:
            return await self.gl.archive(self.project, sha, max_bytes)
        except ClientTooLarge as exc:
            raise ArchiveTooLarge(sha, exc.limit) from None

    async def find_sticky(self) -> dict[str, Any] | None:
        """Our note carrying the marker (never a system note)."""
        return await self._find_own(lambda note: not note.get("system") and
                                    is_ours(str(note.get("body") or "")))

    async def find_note(self, wanted: Any) -> dict[str, Any] | None:
        """Our first note whose body is ``wanted`` (replies to commands)."""
        return await self._find_own(lambda note: bool(wanted(str(note.get("body") or ""))))

    async def _find_own(self, match: Callable[[dict[str, Any]], bool]) -> dict[str, Any] | None:
        """Our first note that ``match``es. Who we are is asked only when such a note turns up."""
        me: int | None = None
        async for note in self.gl.notes(self.project, self.iid):
            if not match(note):
                continue
            if me is None:
                me = int((await self.gl.user())["id"])
            if int((note.get("author") or {}).get("id") or -1) == me:
                return dict(note)
        return None

    async def create_note(self, body: str) -> None:
        await self.gl.create_note(self.project, self.iid, body, find=self.find_sticky)

    async def update_note(self, note_id: int, body: str) -> None:
        await self.gl.update_note(self.project, self.iid, note_id, body)

    async def set_status(self, verdict: Verdict) -> None:
        description = verdict.description
        if verdict.state == "error" and not description.startswith("could not"):
            description = f"could not analyse: {description}"
        await self.gl.set_status(self.project, self.head_sha, GITLAB_STATE[verdict.state], description,
                                 target_url=self.web_url, ref=self.status_ref)
        await self._status_check(CHECK_STATUS[verdict.state])

    async def _status_check(self, status: str) -> None:
        if self.project not in self._checks:
            try:
                checks = await self.gl.external_status_checks(self.project)
            except GitLabError as exc:
                if exc.status not in (403, 404):
                    raise
                log.info("gitlab %s: external status checks are not available (%s); skipped", self.project,
                         exc.status)
                checks = []
            found = [c for c in checks if str(c.get("name") or "") == "rayservice-impact"]
            self._checks[self.project] = int(found[0]["id"]) if found else None
        check = self._checks[self.project]
        if check is not None:
            await self.gl.status_check_response(self.project, self.iid, self.head_sha, check, status)

    async def annotate(self, verdict: Verdict) -> bool:
        """The findings as diff threads when ``inline`` asks for them (:mod:`app.gitlab.inline`).
        An analysis that could not run leaves the threads as they are (its findings are unknown)."""
        if self.inline == "off" or verdict.state == "error":
            return False
        if not self._diff_refs:
            self._diff_refs = (await self.gl.merge_request(self.project, self.iid)).get("diff_refs")
        await Inline(self.gl, self.project, self.iid, self._diff_refs).sync(
            wanted(verdict.annotations, self.inline), f"{self.project}!{self.iid}")
        return True

    async def may_approve(self, user: str | int) -> tuple[bool, str]:
        level = await self.gl.access_level(self.project, int(user))
        name = LEVELS.get(level, f"access level {level}")
        return level >= self.approve_level, name

    def head_lock(self) -> asyncio.Lock:
        return head_lock("gitlab", self.gl.api, str(self.project), self.head_sha)

    async def holders(self, key: bytes) -> list[str]:
        """What else at this head holds it (see the module docstring): ``["!7 (held)"]``."""
        if not self.gate:
            return []
        mine = self.web_url.split("/-/merge_requests/", 1)[0] if "/-/merge_requests/" in self.web_url else ""
        latest: dict[str, str] = {}
        async for status in self.gl.commit_statuses(self.project, self.head_sha):  # newest first
            latest.setdefault(str(status.get("target_url") or ""), str(status.get("status") or ""))
        found = []
        for url, state in latest.items():
            iid = subject_of(url, mine)
            if state == "success" or iid is None or iid == self.iid:
                continue
            why = await self._holds(iid, key)
            if why:
                found.append(f"!{iid} ({why})")
        return found

    async def _holds(self, iid: int, key: bytes) -> str:
        try:
            mr = await self.gl.merge_request(self.project, iid)
        except GitLabNotFound:
            return ""
        if mr.get("state") != "opened" or str(mr.get("sha") or "") != self.head_sha:
            return ""
        other = GitLabForge(self.gl, self.project, iid, self.head_sha)
        return why_held(await other.find_sticky(), key, iid, self.head_sha)
