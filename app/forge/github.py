"""The GitHub side of the forge boundary: one pull request through
:class:`app.clients.github.GitHubClient` and the GitHub flow's own pieces (:mod:`app.github.revisions`
for the test merge commit, :mod:`app.github.own` for our comment, :func:`app.github.gate.status_url`
for the status's subject, check-run annotations with an App, collaborator roles for approvals).

The GitHub webhook flow (:mod:`app.github.flow`) writes its sticky comment
(:func:`app.forge.publish.post_sticky`, the same function as GitLab's note), its status and its check
run through this class; around them it keeps what only GitHub has (comment modes from the
repository's config, suggestions, the gate over other pull requests with the same head, merge
groups, rendering by Argo CD).
"""

from __future__ import annotations

import asyncio
from typing import Any

from app.clients.github import GitHubClient, GitHubNotFound, TarballTooLarge
from app.github.change import PullRequest
from app.github.comment import Verdict
from app.github.gate import commit_lock, holders_of, status_url
from app.github.own import find_sticky_comment
from app.github.revisions import resolve

from . import ArchiveTooLarge, Revisions

# The repository roles that may accept a hold (``/rayservice-impact approve``).
WRITERS = frozenset({"admin", "maintain", "write"})


class GitHubForge:
    host = "GitHub"
    noun = "pull request"

    def __init__(self, gh: GitHubClient, pr: PullRequest, *, check_run: bool = False) -> None:
        self.gh, self.pr, self.check_run = gh, pr, check_run

    async def revisions(self) -> Revisions:
        r = await resolve(self.gh, self.pr)
        return Revisions(r.base, r.head, r.form, r.changed, r.all_notes, r.base_ref, r.status_sha, r.patches)

    async def archive(self, sha: str, max_bytes: int) -> bytes:
        try:
            return await self.gh.tarball(self.pr.owner, self.pr.repo, sha, max_bytes)
        except TarballTooLarge as exc:
            raise ArchiveTooLarge(sha, exc.limit) from None

    async def find_sticky(self) -> dict[str, Any] | None:
        return await find_sticky_comment(self.gh, self.pr)

    async def create_note(self, body: str) -> None:
        await self.gh.create_comment(self.pr.owner, self.pr.repo, self.pr.number, body, find=self.find_sticky)

    async def update_note(self, note_id: int, body: str) -> None:
        await self.gh.update_comment(self.pr.owner, self.pr.repo, note_id, body)

    async def set_status(self, verdict: Verdict) -> None:
        await self.gh.create_status(self.pr.owner, self.pr.repo, self.pr.head_sha, verdict.state,
                                    verdict.description, target_url=status_url(self.pr))

    async def annotate(self, verdict: Verdict) -> bool:
        if not self.check_run:
            return False
        await self.gh.create_check_run(self.pr.owner, self.pr.repo, self.pr.head_sha, verdict.conclusion,
                                       verdict.title, verdict.markdown or verdict.description,
                                       annotations=verdict.annotations)
        return True

    async def may_approve(self, user: str | int) -> tuple[bool, str]:
        role = await permission_of(self.gh, self.pr, str(user))
        return role in WRITERS, role

    def head_lock(self) -> asyncio.Lock:
        return commit_lock(self.pr)

    async def holders(self, key: bytes) -> list[str]:
        return [] if self.pr.is_merge_group else await holders_of(self.gh, self.pr, key)


async def permission_of(gh: GitHubClient, pr: PullRequest, user: str) -> str:
    """The user's role on the repository: ``role_name`` (admin, maintain, write, triage, read or
    a custom role), else the legacy ``permission`` (GitHub maps maintain to write and triage to
    read there); "none" for someone GitHub does not know as a collaborator."""
    try:
        data = await gh.collaborator_permission(pr.owner, pr.repo, user)
    except GitHubNotFound:
        return "none"
    role, legacy = str(data.get("role_name") or ""), str(data.get("permission") or "none")
    return role if role in WRITERS else legacy
