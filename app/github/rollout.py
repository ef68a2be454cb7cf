"""The rollout report on GitHub: the ``rayservice-impact/rollout`` check run on the deployed
commit, and a ``## Rollout`` section of the pull request's sticky comment.

A watch's sink (``Watch.sink["github"]``) names the repository, the commit (``sha``) and the pull
requests (``pr``: a number or a list; none for a commit no pull request merged). The check run is
created ``in_progress`` at the first write and updated in place afterwards (after a restart it is
found again by name on the commit: never a second run); it needs a GitHub App, as every check
run does. The comment section sits between two hidden markers (:mod:`app.rollout.present`): only
it is replaced, the rest of the comment stays byte for byte as the analysis wrote it; a sticky
comment without the section gets it appended, and a pull request without a sticky comment gets
one holding the section only (unless the repository's comment mode is a quiet one:
:mod:`.repo_config`).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from app.clients.github import GitHubClient, GitHubError
from app.rollout.model import Observation, Watch
from app.rollout.present import CHECK_NAME, check_output, replace_section, section

from .change import PullRequest
from .comment import MARKER
from .own import find_sticky_comment

log = logging.getLogger(__name__)

ClientFor = Callable[[str, str], Awaitable[GitHubClient]]


def pulls_of(target: Mapping[str, Any]) -> tuple[int, ...]:
    raw = target.get("pr")
    items = raw if isinstance(raw, list | tuple) else [raw] if raw is not None else []
    out = []
    for item in items:
        try:
            out.append(int(item))
        except (TypeError, ValueError):
            continue
    return tuple(n for n in out if n > 0)


class GitHubRolloutSink:
    """One watch's writer to GitHub. ``client_for(owner, repo)``: a client with the repository's
    credentials; ``check_run``: whether check runs can be written (a GitHub App)."""

    def __init__(self, watch: Watch, client_for: ClientFor, *, check_run: bool = True) -> None:
        target = watch.sink.get("github") or {}
        self.owner, self.repo = str(target.get("owner") or ""), str(target.get("repo") or "")
        self.sha = str(target.get("sha") or "")
        self.pulls = pulls_of(target)
        # The repository's comment mode: a quiet one (on-change, on-hold) gets no new comment for a
        # rollout; a sticky comment already there still gets the section.
        self.create_comment = bool(target.get("create_comment", True))
        self.client_for, self.check_run = client_for, check_run
        self.run_id: int | None = None
        self._shown: dict[int, str] = {}  # pr -> the section last written (unchanged: no write)

    @property
    def name(self) -> str:
        return f"{self.owner}/{self.repo}@{self.sha[:7]}"

    async def write(self, watch: Watch, observations: tuple[Observation, ...], now: float) -> None:
        gh = await self.client_for(self.owner, self.repo)
        if self.check_run and self.sha:
            try:
                await self._check_run(gh, watch, observations, now)
            except GitHubError as exc:
                log.error("rollout %s: check run not written: %s", self.name, exc)
        text = section(watch, observations, now)
        for number in self.pulls:
            try:
                await self._comment(gh, number, text)
            except GitHubError as exc:
                log.error("rollout %s#%d: comment section not written: %s", self.name, number, exc)

    async def _check_run(self, gh: GitHubClient, watch: Watch, observations: tuple[Observation, ...],
                         now: float) -> None:
        out = check_output(watch, observations, now)
        if self.run_id is None:
            found = await gh.find_check_run(self.owner, self.repo, self.sha, CHECK_NAME)
            self.run_id = int(found["id"]) if found is not None and "id" in found else None
        run = await gh.put_check_run(self.owner, self.repo, self.sha, CHECK_NAME, out.status, out.conclusion,
                                     out.title, out.summary, run_id=self.run_id)
        if self.run_id is None and "id" in run:
            self.run_id = int(run["id"])

    async def _comment(self, gh: GitHubClient, number: int, text: str) -> None:
        if self._shown.get(number) == text:
            return
        pr = PullRequest(self.owner, self.repo, number, "", self.sha)
        existing = await find_sticky_comment(gh, pr)
        if existing is None and not self.create_comment:
            return
        if existing is None:
            await gh.create_comment(self.owner, self.repo, number, f"{MARKER}\n{text}\n",
                                    find=lambda: find_sticky_comment(gh, pr))
        else:
            before = str(existing.get("body") or "")
            after = replace_section(before, text)
            if after != before:
                await gh.update_comment(self.owner, self.repo, int(existing["id"]), after)
        self._shown[number] = text
