"""Our own comments on a pull request: the sticky result and the replies to commands.

A comment is ours only when the service's own identity wrote it (the GitHub App's bot,
``<app-slug>[bot]``, or the token's user, :meth:`GitHubClient.own_login`): anyone can paste the
hidden marker and stamps into a comment of theirs, and such a comment is neither edited nor
believed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from app.clients.github import GitHubClient

from .change import PullRequest
from .comment import is_ours, reply_to


def author_of(comment: dict[str, Any]) -> str:
    return str((comment.get("user") or {}).get("login") or "").lower()


async def find_own_comment(gh: GitHubClient, pr: PullRequest,
                           wanted: Callable[[str], bool]) -> dict[str, Any] | None:
    """The first comment on ``pr`` whose body is ``wanted`` and that we wrote. Who we are is asked
    only when a wanted body turns up (a pull request without one costs no call)."""
    login = ""
    async for comment in gh.issue_comments(pr.owner, pr.repo, pr.number):
        if not wanted(str(comment.get("body") or "")):
            continue
        login = login or (await gh.own_login()).lower()
        if author_of(comment) == login:
            return comment
    return None


async def find_sticky_comment(gh: GitHubClient, pr: PullRequest) -> dict[str, Any] | None:
    """Our comment carrying the hidden marker, if any."""
    return await find_own_comment(gh, pr, is_ours)


async def find_reply(gh: GitHubClient, pr: PullRequest, comment_id: int) -> dict[str, Any] | None:
    """Our reply to the command in comment ``comment_id``, if any."""
    return await find_own_comment(gh, pr, lambda body: reply_to(body) == comment_id)
