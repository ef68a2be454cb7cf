"""PR comment commands, through the webhook (``issue_comment`` events):

    /rayservice-impact approve <reason>   accept the hold of the current head SHA, on the record
    /rayservice-impact rerun              analyse the pull request again (headroom changed, main moved)

Only users whose repository permission is write or higher (admin, maintain, write) may use them;
everyone else gets a polite reply and nothing changes. An approval accepts exactly the result the
sticky comment showed when the command was written (:class:`.comment.Binding`: this pull request,
its head, the base branch and commit it was compared with, the report's digest): it is kept in the
sticky comment (a visible line and a signed hidden stamp) and the status turns success for that
head; a push, a new base or another report is analysed, and held, afresh. A command written
before the result it would accept was shown is refused. Each command is answered at most once.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from app.clients.github import GitHubClient, GitHubError
from app.forge.github import GitHubForge

from .change import PullRequest
from .comment import (
    Approval,
    Shown,
    Verdict,
    command_refusal,
    command_words,
    instant,
    pinned,
    reply_body,
    shown_of,
    with_approval,
    written_by_us,
)
from .flow import Outcome, gate_for_head, post_gate
from .gate import commit_lock
from .own import find_reply, find_sticky_comment

log = logging.getLogger(__name__)



@dataclass(frozen=True, slots=True)
class Command:
    verb: str           # approve | rerun | unknown
    reason: str
    user: str
    comment_id: int
    created_at: str     # when the command was written (GitHub's clock)
    pr: PullRequest     # owner, repo, number, installation (no SHAs: the pull request is read anew)
    repository: dict[str, Any]


def parse_command(payload: dict[str, Any]) -> tuple[Command | None, str]:
    """(the command of an ``issue_comment`` delivery, or None and why it is ignored)."""
    if payload.get("action") != "created":
        return None, f"issue_comment action {payload.get('action')!r} is not a command"
    issue, comment, repo = payload.get("issue"), payload.get("comment"), payload.get("repository")
    if not isinstance(issue, dict) or not issue.get("pull_request"):
        return None, "a comment on an issue, not on a pull request"
    if not isinstance(comment, dict) or not isinstance(repo, dict):
        return None, "issue_comment payload without comment or repository"
    user = comment.get("user") or {}
    login = str(user.get("login") or "")
    if user.get("type") == "Bot" or login.endswith("[bot]"):
        return None, "a comment by a bot"
    body = str(comment.get("body") or "")
    if written_by_us(body):
        return None, "one of our own comments"
    words = command_words(body)
    if words is None or not login:
        return None, "not a /rayservice-impact command"
    verb, reason = words
    try:
        installation = payload.get("installation") or {}
        pr = PullRequest(owner=str(repo["owner"]["login"]), repo=str(repo["name"]),
                         number=int(issue["number"]), base_sha="", head_sha="",
                         installation_id=int(installation["id"]) if "id" in installation else None,
                         repo_url=str(repo.get("clone_url") or repo.get("html_url") or ""))
        return Command(verb, reason, login, int(comment["id"]),
                       str(comment.get("created_at") or ""), pr, repo), ""
    except (KeyError, TypeError, ValueError) as exc:
        return None, f"issue_comment payload without {exc}"


async def reply(gh: GitHubClient, cmd: Command, text: str) -> None:
    """Answer ``cmd`` once. The reply carries the command comment's id, so a reply already there (a
    redelivery after a restart; GitHub storing the reply and still answering 5xx) is found, before
    posting and before retrying, and never posted twice."""
    pr, cid = cmd.pr, cmd.comment_id
    if await find_reply(gh, pr, cid) is not None:
        log.info("%s: comment %d is already answered", pr.full_name, cid)
        return
    await gh.create_comment(pr.owner, pr.repo, pr.number, reply_body(cmd.user, text, cid),
                            find=lambda: find_reply(gh, pr, cid))


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


async def run_command(gh: GitHubClient, cmd: Command, *, key: bytes, check_run: bool,
                      submit: Callable[[PullRequest], str]) -> Outcome:
    """Carry out one command (in the pull request's queue, after and before its analyses)."""
    try:
        return await _run(gh, cmd, key=key, check_run=check_run, submit=submit)
    except GitHubError as exc:
        log.error("%s: /rayservice-impact %s by @%s failed: %s", cmd.pr.full_name, cmd.verb, cmd.user, exc)
        return Outcome("failed", retryable=True)


async def _run(gh: GitHubClient, cmd: Command, *, key: bytes, check_run: bool,
               submit: Callable[[PullRequest], str]) -> Outcome:
    invalid = command_refusal(cmd.verb, cmd.reason)
    if invalid is not None:
        await reply(gh, cmd, invalid[1])
        return Outcome("refused", invalid[0], comment="replied")
    allowed, role = await GitHubForge(gh, cmd.pr).may_approve(cmd.user)  # the forge boundary
    if not allowed:
        what = "accepting a hold" if cmd.verb == "approve" else "re-running the analysis"
        await reply(gh, cmd, f"thank you, but {what} needs write access to this repository (yours is "
                             f"`{role}`). Please ask a maintainer. Nothing was changed.")
        log.info("%s: /rayservice-impact %s by @%s refused (%s)", cmd.pr.full_name, cmd.verb, cmd.user, role)
        return Outcome("refused", f"permission {role}", comment="replied")
    pull = await gh.get_pull(cmd.pr.owner, cmd.pr.repo, cmd.pr.number)
    if pull.get("state") != "open":
        await reply(gh, cmd, "this pull request is closed. Nothing was changed.")
        return Outcome("refused", "closed", comment="replied")
    pr = PullRequest.from_payload({"pull_request": pull, "repository": cmd.repository})
    pr = replace(pr, installation_id=cmd.pr.installation_id, repo_url=cmd.pr.repo_url or pr.repo_url)
    if cmd.verb == "rerun":
        at = max(pr.updated_at, cmd.created_at)
        result = submit(replace(pr, updated_at=at, requested_by=cmd.user))
        log.info("%s: /rayservice-impact rerun by @%s: %s", pr.full_name, cmd.user, result)
        return Outcome("queued", f"rerun by @{cmd.user}")
    return await _approve(gh, cmd, pr, key=key, check_run=check_run)


async def _approve(gh: GitHubClient, cmd: Command, pr: PullRequest, *, key: bytes,
                   check_run: bool) -> Outcome:
    existing = await find_sticky_comment(gh, pr)
    shown = shown_of(existing, key) if existing is not None else None
    refused = _refusal(cmd, pr, shown)
    if refused is not None:
        await reply(gh, cmd, f"{refused[1]} Nothing was changed.")
        return Outcome("refused", refused[0], comment="replied")
    assert existing is not None and shown is not None and shown.binding is not None
    approval = Approval.of(shown.binding, cmd.user, _now(), cmd.reason)
    body = with_approval(pinned(str(existing["body"]), shown.since), approval, key)
    verdict = Verdict("success", approval.description, f"✅ {approval.description}", approval.description)
    outcome = Outcome("success", approval.description, comment="updated")
    async with commit_lock(pr):
        await gh.update_comment(pr.owner, pr.repo, int(existing["id"]), body)
        verdict = await gate_for_head(gh, pr, verdict, outcome, key)
        await post_gate(gh, pr, verdict, outcome, check_run=check_run)
    log.info("%s: hold of %s accepted by @%s", pr.full_name, pr.head_sha[:7], cmd.user)
    if verdict.state != "success":
        await reply(gh, cmd, f"your approval of head `{pr.head_sha[:7]}` is recorded, but the commit stays "
                             f"red: {verdict.description}.")
    return outcome


def _refusal(cmd: Command, pr: PullRequest, shown: Shown | None) -> tuple[str, str] | None:
    """(why, the reply) when the command cannot accept the result the comment shows; None when it
    can: the result is for the pull request's current head and base, it holds, and the comment
    showed it when the command was written."""
    head = pr.head_sha[:7]
    if shown is None or shown.binding is None:
        return "no result", f"there is no rayservice-impact result for head `{head}` to accept yet."
    bound = shown.binding
    if bound.head != pr.head_sha:
        return "head moved", (f"the comment shows the result for `{bound.head[:7]}`, but a newer commit "
                              f"`{head}` is being analysed; approve again once the comment shows it.")
    if pr.base_ref and bound.base_ref != pr.base_ref:
        return "base moved", (f"the comment shows the result against `{bound.base_ref}`, but the pull "
                              f"request now targets `{pr.base_ref}` and is being analysed again; approve "
                              "again once the comment shows it.")
    written, since = instant(cmd.created_at), instant(shown.since)
    if written is None or since is None or since > written:
        return "result changed", (f"the result the comment shows (head `{bound.head[:7]}`) was posted after "
                                  "you wrote the command, so it is not the one you saw; read it, and approve "
                                  "again if you accept it.")
    if shown.state == "success":
        return "not held", f"head `{head}` is not held, so there is nothing to accept."
    return None
