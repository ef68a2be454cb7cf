"""What may go on a head SHA that more than one pull request has.

GitHub keeps commit statuses per commit, not per pull request: one head SHA opened as two pull
requests (a fork author can open the second against a branch where it changes nothing) has one
``rayservice-impact`` status, the last one posted. So a success never overrides a hold of anything
else that has the commit:

* every status posted names what it is for in its ``target_url``: the pull request
  (``…/pull/{n}``) or, for a merge group, the merge queue (``…/queue/{branch}``);
* before a success goes on a SHA, its statuses are read (``GET commits/{sha}/statuses``). Each
  other pull request named by one whose latest state is not success is looked up
  (``GET pulls/{n}``): closed, or moved on to another head, it no longer counts; else its own
  result for this head is read from its sticky comment (ours, :mod:`.own`): passed, or accepted
  by a maintainer for exactly that result, it does not hold; held, failed or without a result
  for this head, it does. A merge group's latest non-success holds too;
* what holds turns the success into a failure naming it (``GitHubError`` when it cannot be read:
  the caller posts an error, never a success).

A pull request's own runs post its own verdict, so the latest status naming it is a success only
while its own result is one. Statuses that name nothing (another tool's, or posted before
statuses named their subject) are not counted.
"""

from __future__ import annotations

import asyncio
import re
import weakref
from dataclasses import replace
from typing import Any

from app.clients.github import STATUS_CONTEXT, GitHubClient, GitHubNotFound

from .change import PullRequest
from .comment import Verdict, shorten, shown_of
from .own import find_sticky_comment

_SUBJECT = re.compile(r"/(?:pull/(?P<number>\d+)|queue/(?P<queue>[^?#]+))/?$")
_WHY_HELD = {"success": "", "failure": "held", "error": "could not be analysed"}
_LOCKS: weakref.WeakValueDictionary[tuple[str, ...], asyncio.Lock] = weakref.WeakValueDictionary()


def status_url(pr: PullRequest) -> str:
    """The ``target_url`` of a status for ``pr``: its pull request, or its merge queue."""
    web = pr.repo_url.removesuffix(".git") if pr.repo_url.startswith(("https://", "http://")) else ""
    web = web or f"https://github.com/{pr.owner}/{pr.repo}"
    return f"{web}/queue/{pr.base_ref}" if pr.is_merge_group else f"{web}/pull/{pr.number}"


def subject_of(url: str) -> int | str | None:
    """What a status was posted for: a pull request's number, "queue", or None (it names neither)."""
    m = _SUBJECT.search(url.split("#", 1)[0].split("?", 1)[0])
    if not m:
        return None
    return int(m["number"]) if m["number"] else "queue"


def commit_lock(pr: PullRequest) -> asyncio.Lock:
    """One publisher at a time per head SHA in this process, so what a run reads about the other
    pull requests with that head is still true when its status goes up."""
    return head_lock("github", pr.owner.lower(), pr.repo.lower(), pr.head_sha)


def head_lock(*key: str) -> asyncio.Lock:
    """The one lock of ``key`` (forge, repository, head) in this process, while anyone holds it."""
    lock = _LOCKS.get(key)
    if lock is None:
        lock = _LOCKS[key] = asyncio.Lock()
    return lock


async def holders_of(gh: GitHubClient, pr: PullRequest, key: bytes) -> list[str]:
    """What else that has ``pr``'s head SHA holds it: "#7 (held)", "#8 (no result yet)", …"""
    latest: dict[str, str] = {}
    async for status in gh.commit_statuses(pr.owner, pr.repo, pr.head_sha):  # newest first
        if status.get("context") == STATUS_CONTEXT:
            latest.setdefault(str(status.get("target_url") or ""), str(status.get("state") or ""))
    found = []
    for url, state in latest.items():
        subject = subject_of(url)
        if state == "success" or subject is None or subject == pr.number:
            continue
        if subject == "queue":
            found.append("a merge queue group (held)")
            continue
        why = await _holds(gh, pr, int(subject), key)
        if why:
            found.append(f"#{subject} ({why})")
    return found


async def _holds(gh: GitHubClient, pr: PullRequest, number: int, key: bytes) -> str:
    """Why pull request ``number`` holds ``pr``'s head SHA; "" when it does not (closed, moved on to
    another head, passed, or accepted for exactly its result)."""
    try:
        pull = await gh.get_pull(pr.owner, pr.repo, number)
    except GitHubNotFound:
        return ""
    if pull.get("state") != "open" or str((pull.get("head") or {}).get("sha") or "") != pr.head_sha:
        return ""
    comment = await find_sticky_comment(gh, replace(pr, number=number))
    return why_held(comment, key, number, pr.head_sha)


def why_held(comment: dict[str, Any] | None, key: bytes, number: int, head: str) -> str:
    """Why change ``number``, whose sticky note or comment is ``comment`` (ours, or None), holds
    ``head``: "held", "could not be analysed", "no result yet"; "" when its own result for ``head``
    passed or a maintainer accepted exactly it (used by both forges)."""
    shown = shown_of(comment, key) if comment is not None else None
    if shown is None or shown.binding is None or shown.binding.number != number or shown.head != head:
        return "no result yet"
    return _WHY_HELD.get(shown.gate, "no result yet")


def held_by(verdict: Verdict, found: list[str]) -> Verdict:
    """``verdict`` as it may go on a head that ``found`` (other changes with that head) hold."""
    if not found:
        return verdict
    text = f"held: this commit is also the head of {', '.join(found)}"
    return replace(verdict, state="failure", description=shorten(text), title=shorten(text, 255))
