"""``/rayservice-impact approve <reason>`` and ``/rayservice-impact rerun`` in merge request notes.

A Note Hook (``object_attributes.noteable_type: MergeRequest``; webhook_events.md "Comment
events") whose note starts with the command. Accepted only from a member with at least the
configured access level (``RAYSERVICE_IMPACT_GITLAB_APPROVE_LEVEL``, 30 = Developer;
``GET projects/:id/members/all/:user_id``, inherited memberships included); anyone else gets a
reply note saying why, and nothing changes. An approval is bound exactly as on GitHub
(:class:`app.github.comment.Binding`: merge request, head, target branch and commit, report digest),
signed with the service's key, and kept in the sticky note; the status turns ``success``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from app.clients.gitlab import GitLabClient, GitLabError
from app.forge.gitlab import GitLabForge
from app.forge.options import Outcome
from app.github.change import PayloadError, PullRequest
from app.github.comment import (
    Approval,
    Shown,
    Verdict,
    command_refusal,
    command_words,
    instant,
    pinned,
    reply_body,
    reply_to,
    shown_of,
    with_approval,
    written_by_us,
)

from .mr import iso, job_from_api, project_path, split_path

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Command:
    verb: str           # approve | rerun | unknown
    reason: str
    user: str           # username
    user_id: int
    note_id: int
    created_at: str     # ISO 8601 UTC (GitLab's clock)
    job: PullRequest    # project and iid (no SHAs: the merge request is read anew)


def parse_command(payload: dict[str, Any]) -> tuple[Command | None, str]:
    """(the command of a Note Hook, or None and why it is ignored)."""
    attrs, user, mr = payload.get("object_attributes"), payload.get("user"), payload.get("merge_request")
    if not isinstance(attrs, dict) or attrs.get("noteable_type") != "MergeRequest" or \
            not isinstance(mr, dict):
        return None, "a note on something other than a merge request"
    if attrs.get("action") not in (None, "create"):
        return None, f"note action {attrs.get('action')!r} is not a command"
    if attrs.get("system"):
        return None, "a system note"
    body = str(attrs.get("note") or "")
    if written_by_us(body):
        return None, "one of our own notes"
    words = command_words(body)
    if words is None:
        return None, "not a /rayservice-impact command"
    verb, reason = words
    try:
        project: dict[str, Any] = mr["target"] if isinstance(mr.get("target"), dict) else payload["project"]
        owner, name = split_path(str(project["path_with_namespace"]))
        user = user if isinstance(user, dict) else {}
        job = PullRequest(owner=owner, repo=name, number=int(mr["iid"]), base_sha="", head_sha="",
                          repo_url=str(project.get("git_http_url") or project.get("web_url") or ""))
        return Command(verb, reason, str(user.get("username") or ""),
                       int(user.get("id") or attrs["author_id"]), int(attrs["id"]),
                       iso(attrs.get("created_at")), job), ""
    except (KeyError, TypeError, ValueError, PayloadError) as exc:
        return None, f"note payload without {exc}"


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


async def reply(forge: GitLabForge, cmd: Command, text: str) -> None:
    """Answer ``cmd`` once (a reply already there, from a redelivery, is found and not repeated)."""
    def mine(body: str) -> bool:
        return reply_to(body) == cmd.note_id

    if await forge.find_note(mine) is not None:
        return
    body = reply_body(cmd.user, text, cmd.note_id)
    await forge.gl.create_note(forge.project, forge.iid, body, find=lambda: forge.find_note(mine))


async def run_command(gl: GitLabClient, cmd: Command, *, key: bytes, approve_level: int,
                      checks: dict[str, int | None], submit: Callable[[PullRequest], str]) -> Outcome:
    project = project_path(cmd.job)
    forge = GitLabForge(gl, project, cmd.job.number, "", approve_level=approve_level, checks=checks)
    try:
        return await _run(gl, forge, cmd, key=key, submit=submit)
    except GitLabError as exc:
        log.error("%s!%d: /rayservice-impact %s by @%s failed: %s", project, cmd.job.number, cmd.verb,
                  cmd.user, exc)
        return Outcome("failed", retryable=True)


async def _run(gl: GitLabClient, forge: GitLabForge, cmd: Command, *, key: bytes,
               submit: Callable[[PullRequest], str]) -> Outcome:
    invalid = command_refusal(cmd.verb, cmd.reason)
    if invalid is not None:
        await reply(forge, cmd, invalid[1])
        return Outcome("refused", invalid[0], comment="replied")
    allowed, role = await forge.may_approve(cmd.user_id)
    if not allowed:
        what = "accepting a hold" if cmd.verb == "approve" else "re-running the analysis"
        await reply(forge, cmd, f"thank you, but {what} needs at least the Developer role in this project "
                                f"(access level {forge.approve_level}; yours: {role}). Please ask a "
                                "maintainer. Nothing was changed.")
        log.info("%s: /rayservice-impact %s by @%s refused (%s)", forge.project, cmd.verb, cmd.user, role)
        return Outcome("refused", f"role {role}", comment="replied")
    mr = await gl.merge_request(forge.project, forge.iid)
    if mr.get("state") != "opened":
        await reply(forge, cmd, "this merge request is not open. Nothing was changed.")
        return Outcome("refused", "closed", comment="replied")
    job = job_from_api(forge.project, mr, repo_url=cmd.job.repo_url)
    forge.head_sha = job.head_sha
    forge.web_url = str(mr.get("web_url") or "")
    forge.status_ref = status_ref(mr)
    if cmd.verb == "rerun":
        from dataclasses import replace

        result = submit(replace(job, updated_at=max(job.updated_at, cmd.created_at), requested_by=cmd.user))
        log.info("%s: /rayservice-impact rerun by @%s: %s", forge.project, cmd.user, result)
        return Outcome("queued", f"rerun by @{cmd.user}")
    existing = await forge.find_sticky()
    shown = shown_of(existing, key) if existing is not None else None
    refused = refusal(cmd, job, shown)
    if refused is not None:
        await reply(forge, cmd, f"{refused[1]} Nothing was changed.")
        return Outcome("refused", refused[0], comment="replied")
    assert existing is not None and shown is not None and shown.binding is not None
    approval = Approval.of(shown.binding, cmd.user, _now(), cmd.reason)
    body = with_approval(pinned(str(existing["body"]), shown.since), approval, key)
    await forge.update_note(int(existing["id"]), body)
    verdict = Verdict("success", approval.description, None, approval.description)
    await forge.set_status(verdict)
    log.info("%s!%d: hold of %s accepted by @%s", forge.project, forge.iid, job.head_sha[:7], cmd.user)
    return Outcome("success", approval.description, comment="updated")


def status_ref(mr: dict[str, Any]) -> str:
    """The ``ref`` of the commit status: the source branch for a merge request of the project itself;
    for a fork's (whose branch is not in the target project) ``refs/merge-requests/:iid/head``, the
    ref GitLab keeps for it there (a GUESS that the statuses API takes it: api/commits.md says only
    "the ref (branch or tag) to which the status refers")."""
    if mr.get("source_project_id") not in (None, mr.get("target_project_id")):
        return f"refs/merge-requests/{int(mr['iid'])}/head"
    return str(mr.get("source_branch") or "")


def refusal(cmd: Command, job: PullRequest, shown: Shown | None) -> tuple[str, str] | None:
    """(why, the reply) when the command cannot accept the result the note shows; None when it can:
    the result is for the current head and target branch, it holds, and the note showed it when the
    command was written."""
    head = job.head_sha[:7]
    if shown is None or shown.binding is None:
        return "no result", f"there is no rayservice-impact result for head `{head}` to accept yet."
    bound = shown.binding
    if bound.head != job.head_sha:
        return "head moved", (f"the note shows the result for `{bound.head[:7]}`, but a newer commit "
                              f"`{head}` is being analysed; approve again once the note shows it.")
    if job.base_ref and bound.base_ref != job.base_ref:
        return "base moved", (f"the note shows the result against `{bound.base_ref}`, but the merge request "
                              f"now targets `{job.base_ref}`; approve again once the note shows it.")
    written, since = instant(cmd.created_at), instant(shown.since)
    if written is None or since is None or since > written:
        return "result changed", (f"the result the note shows (head `{bound.head[:7]}`) was posted after "
                                  "you wrote the command, so it is not the one you saw; read it, and approve "
                                  "again if you accept it.")
    if shown.state == "success":
        return "not held", f"head `{head}` is not held, so there is nothing to accept."
    return None
