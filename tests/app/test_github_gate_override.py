"""The audited override and the re-run, through the webhook's ``issue_comment`` events:
``/rayservice-impact approve <reason>`` from a user with write access (or more) turns the status
success for that head SHA only and records who, when and why in the sticky comment; others are
refused with a reply; a push holds again; ``/rayservice-impact rerun`` analyses afresh.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from github_helpers import (
    OWNER,
    REPO,
    SERVICE_LOGIN,
    TAG,
    TOKEN,
    comment_event,
    github_service,
    gitops_module,
    post_event,
    pull_event,
    settle,
    statuses_for,
    wait_for,
)
from github_standin import GitHubStandIn

from app.github.commands import parse_command
from app.github.comment import MARKER, REPLY_MARKER, Approval, approval_of, state_of

pytestmark = pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")

g = gitops_module()
N = 7
REASON = "the GPU pool has 8 free A100s until Friday (ticket OPS-1234)"


def held_pull(tmp_path: Path) -> tuple[Path, str, str]:
    """(repository, main's tip, the PR's head: an LLM image bump that holds for 4 GPUs)."""
    repo = g.make_repo(tmp_path)
    start = g.git(repo, "rev-parse", "HEAD")
    g.git(repo, "checkout", "-q", "-b", "bump")
    g.edit_yaml(repo, "overlays/prod/kustomization.yaml", lambda d: d["images"][0].update(newTag=TAG))
    head = g.commit(repo, "bump the LLM image")
    g.git(repo, "checkout", "-q", "main")
    return repo, start, head


def say(url: str, gh: GitHubStandIn, body: str, user: str, **kwargs: Any) -> dict[str, Any]:
    """Post one comment event; wait until the service has answered it on GitHub (a reply, a new
    status or an edited comment)."""
    seen = len(gh.calls)
    resp = post_event(url, "issue_comment", comment_event(N, body, user=user, **kwargs))
    assert resp.status_code == 202, resp.text
    if resp.json()["status"] == "queued":
        wait_for(lambda: writes_since(gh, seen), timeout=30, what=f"an answer to {body!r}")
        settle(gh, 0.2)
    return resp.json()


def writes_since(gh: GitHubStandIn, seen: int) -> list[Any]:
    return [c for c in gh.calls[seen:] if c.method != "GET"]


def sticky(gh: GitHubStandIn) -> str:
    [body] = [c["body"] for c in gh.comments[(OWNER, REPO, N)] if c["body"].startswith(MARKER)]
    return body


def replies(gh: GitHubStandIn) -> list[str]:
    return [c["body"] for c in gh.comments[(OWNER, REPO, N)] if c["body"].startswith(REPLY_MARKER)]


def test_approve_by_a_writer_refusals_rerun_and_a_push(tmp_path: Path) -> None:
    repo, start, head = held_pull(tmp_path)
    standin = GitHubStandIn(token=TOKEN)
    standin.permissions.update({"octo-maintainer": "maintain", "octo-admin": "admin", "octo-reader": "read",
                                "octo-triager": "triage"})
    with github_service(standin) as (url, gh):
        gh.add_git_merge_pull(OWNER, REPO, N, repo, base_ref="main", head_sha=head)
        post_event(url, "pull_request", pull_event(N, start, head))
        wait_for(lambda: statuses_for(gh, head), timeout=30, what="the hold")
        settle(gh, 0.2)
        held = sticky(gh)

        # a reader, and a triager (GitHub's legacy permission says "read" for both), are refused
        say(url, gh, f"/rayservice-impact approve {REASON}", "octo-reader")
        say(url, gh, "/rayservice-impact approve looks fine to me", "octo-triager")
        refused = list(gh.statuses)
        # a writer without a reason is refused too
        say(url, gh, "/rayservice-impact approve", "octo-maintainer")
        # the maintainer, with a reason
        approve = comment_event(N, f"/rayservice-impact approve {REASON}", user="octo-maintainer")
        seen = len(gh.calls)
        assert post_event(url, "issue_comment", approve).json()["status"] == "queued"
        wait_for(lambda: len(statuses_for(gh, head)) == 2, timeout=30, what="the approval")
        settle(gh, 0.2)
        approved_writes = writes_since(gh, seen)
        approved_body = sticky(gh)
        again = post_event(url, "issue_comment", approve)       # GitHub redelivers it

        # a re-run keeps the approval of this head
        tarballs = len(gh.calls_to("GET", "/tarball/"))
        say(url, gh, "/rayservice-impact rerun", "octo-admin", created_at="2019-05-15T15:50:00Z")
        wait_for(lambda: len(statuses_for(gh, head)) == 3, timeout=30, what="the re-run's status")
        settle(gh, 0.2)
        rerun_tarballs = len(gh.calls_to("GET", "/tarball/")) - tarballs
        rerun_body = sticky(gh)

        # a push: a new head SHA is held again
        g.git(repo, "checkout", "-q", "bump")
        g.write(repo, "README.md", "# ray gitops, with a bump\n")
        head2 = g.commit(repo, "docs")
        g.git(repo, "checkout", "-q", "main")
        gh.add_git_merge_pull(OWNER, REPO, N, repo, base_ref="main", head_sha=head2,
                              updated_at="2019-05-15T16:00:00Z")
        post_event(url, "pull_request", pull_event(N, start, head2, action="synchronize",
                                                   updated_at="2019-05-15T16:00:00Z"))
        wait_for(lambda: statuses_for(gh, head2), timeout=30, what="the new head's status")
        settle(gh, 0.2)
        pushed_body = sticky(gh)

    # the hold, stamped with its own state
    assert state_of(held) == "failure" and "rayservice-impact: **hold**" in held
    # refusals: polite replies, nothing else written, the status unchanged
    reader, triager, no_reason = replies(gh)[:3]
    assert reader.startswith(f"{REPLY_MARKER}\n@octo-reader thank you, but accepting a hold needs write "
                             "access")
    assert "(yours is `read`)" in reader and "Nothing was changed." in reader
    assert "(yours is `read`)" in triager
    assert "an approval needs a reason" in no_reason
    assert [(s["sha"], s["state"]) for s in refused] == [(head, "failure")]
    assert [c.path for c in gh.calls_to("GET", "/permission$")][:2] == [
        f"/repos/{OWNER}/{REPO}/collaborators/octo-reader/permission",
        f"/repos/{OWNER}/{REPO}/collaborators/octo-triager/permission"]
    # the approval: the comment records who, when and why; the status turns success on that head
    approval_line = [line for line in approved_body.splitlines() if "Hold accepted" in line]
    assert len(approval_line) == 1
    assert "by @octo-maintainer on 2" in approval_line[0]
    assert f"for head `{head[:7]}`: {REASON}" in approval_line[0]
    assert approved_body.index("Hold accepted") < approved_body.index("rayservice-impact: **hold**")
    assert [s["state"] for s in statuses_for(gh, head)][:2] == ["failure", "success"]
    assert statuses_for(gh, head)[1]["description"] == f"hold accepted by @octo-maintainer: {REASON}"
    assert [(c.method, c.path.split("/")[-2]) for c in approved_writes] == [("PATCH", "comments"),
                                                                            ("POST", "statuses")]
    assert again.json()["status"] == "duplicate"
    # the re-run analysed the PR again (both revisions downloaded) and kept the approval of this head
    assert rerun_tarballs == 2
    assert statuses_for(gh, head)[2]["state"] == "success"
    assert "Hold accepted** by @octo-maintainer" in rerun_body and "re-run by @octo-admin" in rerun_body
    # the push: held again, the approval gone
    assert [s["state"] for s in statuses_for(gh, head2)] == ["failure"]
    assert "Hold accepted" not in pushed_body and state_of(pushed_body) == "failure"
    assert f"head `{head2[:7]}`" in pushed_body


def test_commands_ignored_without_a_call(tmp_path: Path) -> None:
    with github_service(GitHubStandIn(token=TOKEN)) as (url, gh):
        bot = post_event(url, "issue_comment", comment_event(N, "/rayservice-impact approve ok",
                                                             user="renovate[bot]", user_type="Bot"))
        ours = post_event(url, "issue_comment",
                          comment_event(N, f"{REPLY_MARKER}\n@x /rayservice-impact rerun"))
        chatter = post_event(url, "issue_comment",
                             comment_event(N, "LGTM, /rayservice-impact approve later?"))
        on_issue = comment_event(N, "/rayservice-impact rerun")
        del on_issue["issue"]["pull_request"]
        issue = post_event(url, "issue_comment", on_issue)
        edited = post_event(url, "issue_comment", {**comment_event(N, "/rayservice-impact rerun"),
                                                   "action": "edited"})
        settle(gh, 0.2)
    assert [r.json()["status"] for r in (bot, ours, chatter, issue, edited)] == ["ignored"] * 5
    assert bot.json()["reason"] == "a comment by a bot"
    assert gh.calls == []


def test_forged_approval_stamp_approves_nothing(tmp_path: Path) -> None:
    """Anyone can paste the marker and a stamp into a comment: it is not signed with the
    service's key, so the hold stands; and it is not the service's comment, so the service
    writes its own next to it."""
    repo, start, head = held_pull(tmp_path)
    forged = Approval(head, "octo-admin", "2019-05-15T15:30:00Z", "trust me")
    body = (f"{MARKER}\n<!-- rayservice-impact:head={head} at=2019-05-15T15:20:00Z -->\n"
            f"{forged.block(b'not the key')}looks approved\n")
    standin = GitHubStandIn(token=TOKEN)
    standin.comments[(OWNER, REPO, N)] = [{"id": 5, "body": body, "user": {"login": "octo-reader"}}]
    with github_service(standin) as (url, gh):
        gh.add_git_merge_pull(OWNER, REPO, N, repo, base_ref="main", head_sha=head)
        post_event(url, "pull_request", pull_event(N, start, head))
        wait_for(lambda: statuses_for(gh, head), timeout=30, what="the status")
        settle(gh, 0.2)
    assert [s["state"] for s in statuses_for(gh, head)] == ["failure"]
    pasted, ours = gh.comments[(OWNER, REPO, N)]
    assert pasted["body"] == body   # not ours (another author): neither believed nor edited
    assert ours["user"]["login"] == SERVICE_LOGIN and "Hold accepted" not in ours["body"]
    assert approval_of(body, b"not the key") == forged and approval_of(body, b"the key") is None


def test_parse_command_forms() -> None:
    cmd, _ = parse_command(comment_event(3, "  /rayservice-impact  approve   the pool\n has room  "))
    assert cmd is not None and (cmd.verb, cmd.reason, cmd.user, cmd.pr.number) == (
        "approve", "the pool has room", "Codertocat", 3)
    assert parse_command(comment_event(3, "/rayservice-impact RERUN"))[0].verb == "rerun"  # type: ignore[union-attr]
    assert parse_command(comment_event(3, "/rayservice-impact frobnicate"))[0].verb == "unknown"  # type: ignore[union-attr]
    assert parse_command(comment_event(3, "/rayservice-impactful"))[0] is None
