"""Green means safe: a hold turns green only for exactly the result a maintainer accepted, and
only when nothing else with the same head SHA holds it. End to end through the webhook against
the GitHub stand-in (a real HTTP server with GitHub's payload shapes):

(a) a second pull request with the same head SHA, against a branch where it changes nothing,
    never turns the first one's hold green (statuses are per commit, not per pull request);
(b) an approval does not survive retargeting the pull request to another base;
(c) an approve written while a newer head was being analysed does not land on that head;
(d) a comment carrying the sticky marker is ours only when the service's own identity wrote it;
(e) a command is answered once, after GitHub's 5xx-after-commit and after a redelivery alike.
"""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from github_helpers import (
    APP_ID,
    OWNER,
    REPO,
    SERVICE_LOGIN,
    TAG,
    TOKEN,
    app_standin,
    comment_event,
    github_service,
    gitops_module,
    manifest,
    post_event,
    pull_event,
    settle,
    statuses_for,
    wait_for,
    writes,
)
from github_standin import GitHubStandIn

import diffing
from app.github.change import PullRequest
from app.github.commands import Command, _refusal
from app.github.comment import (
    MARKER,
    REPLY_MARKER,
    Approval,
    Binding,
    Shown,
    approval_of,
    bound_of,
    state_of,
    verdict_for_report,
)
from app.github.gate import status_url, subject_of

needs_kubectl = pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")

g = gitops_module()
N, M = 7, 8
REASON = "the GPU pool has 8 free A100s until Friday (ticket OPS-1234)"
PULL_URL = f"https://github.com/{OWNER}/{REPO}/pull/{{}}"


# -- a GitOps repository whose pull request holds ------------------------------------------------

def held_pull(tmp_path: Path) -> tuple[Path, str, str]:
    """(repository, main's tip, the PR's head: an LLM image bump that holds for 4 GPUs)."""
    repo = g.make_repo(tmp_path)
    start = g.git(repo, "rev-parse", "HEAD")
    g.git(repo, "checkout", "-q", "-b", "bump")
    bump_image(repo)
    head = g.commit(repo, "bump the LLM image")
    g.git(repo, "checkout", "-q", "main")
    return repo, start, head


def bump_image(repo: Path) -> None:
    g.edit_yaml(repo, "overlays/prod/kustomization.yaml", lambda d: d["images"][0].update(newTag=TAG))


def branch(repo: Path, name: str, start: str, change: Any, message: str) -> str:
    """A branch ``name`` off ``start`` with one commit made by ``change(repo)``; its tip."""
    g.git(repo, "checkout", "-q", "-b", name, start)
    change(repo)
    tip = g.commit(repo, message)
    g.git(repo, "checkout", "-q", "main")
    return str(tip)


def more_gpu_workers(repo: Path) -> None:
    """Two GPU workers instead of one: a new cluster then needs 8 extra GPUs, not 4."""
    path = repo / "base" / "rayservice.yaml"
    one, two = (f"    - replicas: {n}\n      minReplicas: {n}\n      maxReplicas: {n}\n" for n in (1, 2))
    assert path.read_text().count(one) == 1  # the GPU group of KubeRay's LLM sample
    path.write_text(path.read_text().replace(one, two))


# -- talking to the service ------------------------------------------------------------------------

def open_pull(url: str, gh: GitHubStandIn, number: int, repo: Path, base_sha: str, head: str, *,
              base_ref: str = "main", head_repo: str | None = None, statuses: int = 1) -> None:
    """GitHub holds the pull request; its ``opened`` event; wait for ``statuses`` on its head."""
    gh.add_git_merge_pull(OWNER, REPO, number, repo, base_ref=base_ref, head_sha=head, head_repo=head_repo)
    event = pull_event(number, base_sha, head, base_ref=base_ref, head_repo=head_repo)
    assert post_event(url, "pull_request", event).json()["status"] == "queued"
    wait_for(lambda: len(statuses_for(gh, head)) >= statuses, timeout=60, what=f"#{number}'s status")
    settle(gh, 0.2)


def say(url: str, gh: GitHubStandIn, number: int, body: str, user: str, **kwargs: Any) -> dict[str, Any]:
    """One comment event; wait until the service has answered it on GitHub."""
    seen = len(gh.calls)
    resp = post_event(url, "issue_comment", comment_event(number, body, user=user, **kwargs))
    assert resp.status_code == 202, resp.text
    if resp.json()["status"] == "queued":
        wait_for(lambda: [c for c in gh.calls[seen:] if c.method != "GET"], timeout=30,
                 what=f"an answer to {body!r}")
        settle(gh, 0.3)
    return dict(resp.json())


def comments(gh: GitHubStandIn, number: int) -> list[dict[str, Any]]:
    return gh.comments.get((OWNER, REPO, number), [])


def sticky(gh: GitHubStandIn, number: int, login: str = SERVICE_LOGIN) -> str:
    """The body of the sticky comment ``login`` wrote ("" when there is none)."""
    bodies = [c["body"] for c in comments(gh, number)
              if c["body"].startswith(MARKER) and c["user"]["login"] == login]
    assert len(bodies) <= 1, bodies
    return str(bodies[0]) if bodies else ""


def replies(gh: GitHubStandIn, number: int) -> list[str]:
    return [c["body"] for c in comments(gh, number) if c["body"].startswith(REPLY_MARKER)]


def states(gh: GitHubStandIn, sha: str) -> list[tuple[str, str]]:
    """(state, the pull request it names) of each status on ``sha``, oldest first."""
    return [(s["state"], str(s["target_url"]).rsplit("/", 1)[-1]) for s in statuses_for(gh, sha)]


# -- (a) one head SHA, two pull requests -----------------------------------------------------------

@needs_kubectl
def test_a_second_pull_request_with_the_same_head_never_turns_a_hold_green(tmp_path: Path) -> None:
    """A fork author opens the held head again against ``other``, a branch that already has the
    same bump: there it changes nothing, so its own result is a success. GitHub keeps one status
    per commit, so that success would be the held pull request's status too. It is not: it names
    #7, which holds the commit; #8 gets a comment saying so. Once a maintainer accepts #7's hold,
    the commit is green, and a re-run of #8 keeps it green."""
    repo, start, head = held_pull(tmp_path)
    other = branch(repo, "other", start, bump_image, "the same bump, already there")
    standin = GitHubStandIn(token=TOKEN)
    standin.permissions["octo-maintainer"] = "maintain"
    with github_service(standin) as (url, gh):
        open_pull(url, gh, N, repo, start, head)
        open_pull(url, gh, M, repo, other, head, base_ref="other", head_repo="mallory/Hello-World",
                  statuses=2)
        shared = list(statuses_for(gh, head))
        second_comment = sticky(gh, M)
        say(url, gh, N, f"/rayservice-impact approve {REASON}", "octo-maintainer")
        approved = list(statuses_for(gh, head))
        say(url, gh, M, "/rayservice-impact rerun", "octo-maintainer")
        wait_for(lambda: len(statuses_for(gh, head)) == 4, timeout=60, what="#8's re-run")
        settle(gh, 0.2)

    first, second = shared
    # the fault: #8's own result (no change there) went up as "success" and turned #7 green
    assert [first["state"], second["state"]] == ["failure", "failure"]
    assert (first["target_url"], second["target_url"]) == (PULL_URL.format(N), PULL_URL.format(M))
    assert first["description"].startswith("hold: ray-prod/ray-serve-llm")
    assert second["description"] == f"held: this commit is also the head of #{N} (held)"
    assert "No RayService, RayCluster, RayJob or RayCronJob changes" in second_comment
    assert f"also the head of #{N} (held)" in second_comment
    # accepted on #7: #8's own result is a success (its comment says so), so the commit is green
    assert (approved[-1]["state"], approved[-1]["target_url"]) == ("success", PULL_URL.format(N))
    assert approved[-1]["description"] == f"hold accepted by @octo-maintainer: {REASON}"
    assert states(gh, head)[-1] == ("success", str(M))
    assert replies(gh, N) == [] and replies(gh, M) == []


def serve_only(repo: Path) -> None:
    path = repo / "base" / "rayservice.yaml"
    assert path.read_text().count("max_model_len: 1024") == 1
    path.write_text(path.read_text().replace("max_model_len: 1024", "max_model_len: 2048"))


@needs_kubectl
def test_a_a_quiet_pass_held_by_the_same_head_puts_its_report_on_record(tmp_path: Path) -> None:
    """#8's base has ``comment: on-hold`` and, there, the head only changes the Serve config: a
    pass, which that mode keeps to the status. Held by #7 on the shared commit, its own result must
    still be on record, else #7, once accepted, stays held by #8 ("no result yet")."""
    repo = g.make_repo(tmp_path)
    start = g.git(repo, "rev-parse", "HEAD")
    head = branch(repo, "bump", start, lambda r: (bump_image(r), serve_only(r)), "bump and serve")

    def quiet_and_bumped(r: Path) -> None:
        bump_image(r)
        g.write(r, ".github/rayservice-impact.yml", "comment: on-hold\n")

    other = branch(repo, "other", start, quiet_and_bumped, "the bump already there, comments on hold")
    standin = GitHubStandIn(token=TOKEN)
    standin.permissions["octo-maintainer"] = "maintain"
    with github_service(standin) as (url, gh):
        open_pull(url, gh, N, repo, start, head)
        open_pull(url, gh, M, repo, other, head, base_ref="other", statuses=2)
        second_comment = sticky(gh, M)
        say(url, gh, N, f"/rayservice-impact approve {REASON}", "octo-maintainer")
    assert states(gh, head) == [("failure", str(N)), ("failure", str(M)), ("success", str(N))]
    assert state_of(second_comment) == "success" and "serveConfigV2" in second_comment


@needs_kubectl
def test_a_a_closed_pull_request_no_longer_holds_its_head(tmp_path: Path) -> None:
    """The commit's statuses name the pull request each was posted for: the hold of one that has
    been closed since no longer counts (nor would one that moved on to another head)."""
    repo, start, head = held_pull(tmp_path)
    other = branch(repo, "other", start, bump_image, "the same bump, already there")
    with github_service(GitHubStandIn(token=TOKEN)) as (url, gh):
        open_pull(url, gh, N, repo, start, head)
        gh.pulls[(OWNER, REPO, N)]["state"] = "closed"             # #7 is closed: its hold is gone
        open_pull(url, gh, M, repo, other, head, base_ref="other", statuses=2)
    assert states(gh, head) == [("failure", str(N)), ("success", str(M))]
    assert gh.calls_to("GET", rf"/pulls/{N}$")                      # looked #7 up
    assert comments(gh, M) == []                                     # nothing held it: no comment


def test_when_the_commit_s_other_results_cannot_be_read_nothing_turns_green() -> None:
    """Fail closed: a success whose commit cannot be checked is an error, and may run again."""
    from github_helpers import add_sample_pull, payload_bytes

    with github_service(render="none") as (url, gh):
        add_sample_pull(gh)
        gh.fail("GET", r"/commits/[0-9a-f]+/statuses$", 403, body={"message": "Must have push access"})
        post_event(url, "pull_request", payload_bytes("pull_request.opened.repo-webhook.json"))
        [status] = wait_for(lambda: gh.statuses, what="a status")
    assert status["state"] == "error"
    assert status["description"].startswith("could not analyse: cannot check the other pull requests")


# -- (b) retargeting ------------------------------------------------------------------------------

@needs_kubectl
def test_b_an_approval_does_not_survive_retargeting_to_a_base_where_the_change_needs_more(
        tmp_path: Path) -> None:
    """Accepted against ``main`` (4 GPUs), the pull request is retargeted to ``release``, where the
    LLM runs two GPU workers: the same head now needs 8. The approval was for the result against
    ``main``: the hold stands again, and the comment says why the approval no longer applies."""
    repo, start, head = held_pull(tmp_path)
    release = branch(repo, "release", start, more_gpu_workers, "two GPU workers")
    standin = GitHubStandIn(token=TOKEN)
    standin.permissions["octo-maintainer"] = "maintain"
    with github_service(standin) as (url, gh):
        open_pull(url, gh, N, repo, start, head)
        say(url, gh, N, f"/rayservice-impact approve {REASON}", "octo-maintainer")
        accepted = sticky(gh, N)
        gh.add_git_merge_pull(OWNER, REPO, N, repo, base_ref="release", head_sha=head,
                              updated_at="2019-05-15T16:00:00Z")
        event = pull_event(N, release, head, base_ref="release", action="edited",
                           updated_at="2019-05-15T16:00:00Z")
        event["changes"] = {"base": {"ref": {"from": "main"}, "sha": {"from": start}}}
        assert post_event(url, "pull_request", event).json()["status"] == "queued"
        wait_for(lambda: len(statuses_for(gh, head)) == 3, timeout=60, what="the retargeted result")
        settle(gh, 0.2)
        retargeted = sticky(gh, N)

    assert [s["state"] for s in statuses_for(gh, head)] == ["failure", "success", "failure"]
    assert statuses_for(gh, head)[2]["description"].startswith("hold: ray-prod/ray-serve-llm")
    assert "nvidia.com/gpu: 4" in accepted and "nvidia.com/gpu: 8" in retargeted
    accepted_for, _ = bound_of(accepted) or (None, "")
    now_for, _ = bound_of(retargeted) or (None, "")
    assert accepted_for is not None and now_for is not None
    assert (accepted_for.base_ref, now_for.base_ref) == ("main", "release")
    assert accepted_for.digest != now_for.digest
    assert "Hold accepted" not in retargeted
    assert ("The hold accepted earlier by @octo-maintainer" in retargeted
            and "no longer applies: the pull request now targets `release`, not `main`" in retargeted)


# -- (c) an approve while a newer head is analysed -------------------------------------------------

@needs_kubectl
def test_c_an_approve_written_while_a_newer_head_is_analysed_does_not_land_on_it(tmp_path: Path) -> None:
    """The comment shows the hold of head A. A push makes B, whose analysis takes a while (GitHub
    is still computing mergeability); the maintainer approves meanwhile, having seen A. The command
    runs after B's analysis, when the comment shows B: it is refused, since B was shown only
    after the command was written. Approving again, now, accepts B."""
    repo, start, head_a = held_pull(tmp_path)
    g.git(repo, "checkout", "-q", "bump")
    g.write(repo, "README.md", "# ray gitops, with a bump\n")
    head_b = g.commit(repo, "docs")
    g.git(repo, "checkout", "-q", "main")
    standin = GitHubStandIn(token=TOKEN)
    standin.permissions["octo-maintainer"] = "maintain"
    with github_service(standin) as (url, gh):
        open_pull(url, gh, N, repo, start, head_a)
        gh.add_git_merge_pull(OWNER, REPO, N, repo, base_ref="main", head_sha=head_b, mergeable_after=3,
                              updated_at="2019-05-15T16:00:00Z")
        seen = len(gh.calls_to("GET", rf"/pulls/{N}$"))
        post_event(url, "pull_request", pull_event(N, start, head_b, action="synchronize",
                                                   updated_at="2019-05-15T16:00:00Z"))
        wait_for(lambda: len(gh.calls_to("GET", rf"/pulls/{N}$")) > seen, what="B's analysis")
        shown_then = sticky(gh, N)
        approve = comment_event(N, f"/rayservice-impact approve {REASON}", user="octo-maintainer")
        assert post_event(url, "issue_comment", approve).json()["status"] == "queued"
        wait_for(lambda: replies(gh, N) or len(statuses_for(gh, head_b)) > 1, timeout=60,
                 what="the answer to the approve")
        settle(gh, 0.3)
        landed = [s["state"] for s in statuses_for(gh, head_b)]
        after = sticky(gh, N)
        say(url, gh, N, f"/rayservice-impact approve {REASON}", "octo-maintainer")

    assert f"head `{head_a[:7]}`" in shown_then                      # what the maintainer saw: A
    assert landed == ["failure"]                  # the fault: B, never shown to them, turned green
    assert [s["state"] for s in statuses_for(gh, head_b)] == ["failure", "success"]
    [refusal] = replies(gh, N)
    assert refusal.startswith(f"{REPLY_MARKER}\n@octo-maintainer the result the comment shows (head "
                              f"`{head_b[:7]}`) was posted after you wrote the command")
    assert "Nothing was changed." in refusal
    assert "Hold accepted" not in after and f"head `{head_b[:7]}`" in after
    assert statuses_for(gh, head_b)[1]["description"] == f"hold accepted by @octo-maintainer: {REASON}"


def test_c_refusals_name_what_moved() -> None:
    """Which result a command may accept: the one shown, for the current head and base, shown
    before the command was written, and held."""
    binding = Binding(N, "b" * 40, "main", "c" * 40, "d" * 32)
    pr = PullRequest(OWNER, REPO, N, "c" * 40, "b" * 40, base_ref="main")
    cmd = Command("approve", "ok", "octo-maintainer", 1, "2026-05-04T09:12:03Z", pr, {})
    shown = Shown("b" * 40, binding, "failure", "2026-05-04T09:10:00Z", None)
    assert _refusal(cmd, pr, shown) is None
    newer = replace(pr, head_sha="e" * 40)
    assert _refusal(cmd, newer, shown) == ("head moved", (
        "the comment shows the result for `bbbbbbb`, but a newer commit `eeeeeee` is being analysed; "
        "approve again once the comment shows it."))
    assert _refusal(cmd, replace(pr, base_ref="release"), shown)[0] == "base moved"  # type: ignore[index]
    later = replace(shown, since="2026-05-04T09:12:04Z")
    assert _refusal(cmd, pr, later)[0] == "result changed"  # type: ignore[index]
    assert _refusal(replace(cmd, created_at=""), pr, shown)[0] == "result changed"  # type: ignore[index]
    assert _refusal(cmd, pr, replace(shown, binding=None))[0] == "no result"  # type: ignore[index]
    assert _refusal(cmd, pr, replace(shown, state="success"))[0] == "not held"  # type: ignore[index]


def test_b_an_approval_is_signed_over_everything_it_is_bound_to() -> None:
    binding = Binding(N, "b" * 40, "release/2.x", "c" * 40, "d" * 32)
    approval = Approval.of(binding, "octo-maintainer", "2026-05-04T09:12:03Z", REASON)
    body = f"{MARKER}\n{approval.block(b'key')}"
    assert approval_of(body, b"key") == approval and approval.binding == binding
    tampered = (("pr=7", "pr=8"), ("base=release/2.x", "base=main"), ("base_sha=ccc", "base_sha=eee"),
                ("digest=ddd", "digest=fff"), (f"head={'b' * 40}", f"head={'e' * 40}"))
    for field, value in tampered:
        assert approval_of(body.replace(field, value, 1), b"key") is None, field
    reasons = {Binding(N, "b", "main", "c", "d").change_from(other)
               for other in (Binding(M, "b", "main", "c", "d"), Binding(N, "a", "main", "c", "d"),
                             Binding(N, "b", "dev", "c", "d"), Binding(N, "b", "main", "a", "d"),
                             Binding(N, "b", "main", "c", "a"))}
    assert len(reasons) == 5 and "" not in reasons


def test_b_the_report_digest_follows_what_the_verdict_rests_on() -> None:
    base, head, head2 = (manifest(n) for n in ("sample.base.yaml", "sample.head.yaml", "sample.head2.yaml"))

    def digest(after: str, note: str = "") -> str:
        report = diffing.analyze([("base", base)], [("head", after)], kuberay_version="1.7.0")
        return verdict_for_report(report, note=note).digest

    assert digest(head) == digest(head) and len(digest(head)) == 32
    assert digest(head) != digest(head2)
    assert digest(head) != digest(head, note="GitHub reports that this pull request cannot be merged")


# -- (d) whose comment is ours ----------------------------------------------------------------------

def drive_by(number: int, head: str, user: dict[str, Any]) -> dict[str, Any]:
    """Someone pastes the marker, a stamp from the far future and a passing result."""
    bound = Binding(number, head, "main", "0" * 40, "").line()
    body = (f"{MARKER}\n<!-- rayservice-impact:head={head} at=2099-01-01T00:00:00Z -->\n"
            f"<!-- rayservice-impact:state=success -->\n{bound}\n## 🟢 rayservice-impact: **approve**\n")
    return {"id": 5, "body": body, "user": user, "created_at": "2019-05-15T15:21:00Z",
            "updated_at": "2099-01-01T00:00:00Z"}


@needs_kubectl
def test_d_a_drive_by_comment_with_the_marker_is_not_the_sticky_comment(tmp_path: Path) -> None:
    """Before, the service took it for its own comment, found a newer stamp and never wrote its
    result; and a peer's check would have believed its "success". Now only comments by the
    token's user (``GET /user``) are ours: the drive-by stays as it is, the result gets its own
    comment, the maintainer's approval goes there."""
    repo, start, head = held_pull(tmp_path)
    standin = GitHubStandIn(token=TOKEN)
    standin.permissions["octo-maintainer"] = "maintain"
    pasted = drive_by(N, head, {"login": "mallory", "id": 9, "type": "User"})
    standin.comments[(OWNER, REPO, N)] = [dict(pasted)]
    with github_service(standin) as (url, gh):
        open_pull(url, gh, N, repo, start, head)
        held = sticky(gh, N)
        say(url, gh, N, f"/rayservice-impact approve {REASON}", "octo-maintainer")
    # the fault: the drive-by was taken for the service's comment, so the result was never written
    assert "rayservice-impact: **hold**" in held
    assert [c["user"]["login"] for c in comments(gh, N)] == ["mallory", SERVICE_LOGIN]
    first, ours = comments(gh, N)
    assert first == pasted                                            # untouched
    assert "Hold accepted** by @octo-maintainer" in ours["body"]
    assert [s["state"] for s in statuses_for(gh, head)] == ["failure", "success"]
    assert [c.path for c in gh.calls_to("GET", "^/user$")] == ["/user"]   # asked once


def test_d_with_an_app_the_app_s_bot_is_ours_and_nobody_else(tmp_path: Path) -> None:
    """With App credentials the service writes as ``<app-slug>[bot]`` (the slug from
    ``GET /app/installations/{id}``): a bot of that name is ours, another bot (or a user named
    like it) is not. The second run edits the App's comment; the others stay as they are."""
    from github_helpers import HEAD2_SHA, HEAD_SHA, NUMBER, add_sample_pull, payload, payload_bytes

    standin, key_file = app_standin(tmp_path, OWNER, REPO)
    lookalike = {"login": "rayservice-impact", "id": 4, "type": "User"}   # a user, not the App's bot
    pasted = [drive_by(NUMBER, HEAD_SHA, {"login": "other-app[bot]", "id": 3, "type": "Bot"}),
              {**drive_by(NUMBER, HEAD_SHA, lookalike), "id": 6}]
    standin.comments[(OWNER, REPO, NUMBER)] = [dict(c) for c in pasted]
    with github_service(standin, github_app_id=APP_ID, github_app_private_key_file=str(key_file),
                        github_token=None, render="none") as (url, gh):
        add_sample_pull(gh)
        post_event(url, "pull_request", payload_bytes("pull_request.opened.repo-webhook.json"))
        wait_for(lambda: gh.check_runs, what="the first check run")
        add_sample_pull(gh, HEAD2_SHA, "sample.head2.yaml")
        post_event(url, "pull_request", payload("pull_request.synchronize.json", head=HEAD2_SHA,
                                                updated_at="2019-05-15T15:21:00Z"))
        wait_for(lambda: len(gh.check_runs) == 2, what="the second check run")
        settle(gh)
    assert [c["user"]["login"] for c in comments(gh, NUMBER)] == [
        "other-app[bot]", "rayservice-impact", "rayservice-impact[bot]"]
    *others, ours = comments(gh, NUMBER)
    assert others == pasted
    assert ours["user"]["login"] == "rayservice-impact[bot]" and f"head `{HEAD2_SHA[:7]}`" in ours["body"]
    assert len(gh.calls_to("POST", r"/issues/\d+/comments$")) == 1 and gh.calls_to("PATCH", "/comments/")
    assert [c.path for c in gh.calls_to("GET", "^/app/installations/")] == ["/app/installations/77"]


# -- (e) one answer per command ---------------------------------------------------------------------

def test_e_a_reply_is_not_posted_twice_after_githubs_5xx_after_commit() -> None:
    """GitHub stores the reply and still answers 502: the retry finds it (the hidden mark with the
    command comment's id) instead of posting a second one."""
    with github_service(GitHubStandIn(token=TOKEN)) as (url, gh):
        gh.fail("POST", r"/issues/\d+/comments$", 502, after_commit=True)
        say(url, gh, N, f"/rayservice-impact approve {REASON}", "octo-reader", comment_id=492799001)
    assert len(replies(gh, N)) == 1                       # the fault: the blind retry posted a second
    [answer] = replies(gh, N)
    assert answer.startswith(f"{REPLY_MARKER}\n@octo-reader thank you, but accepting a hold needs write")
    assert answer.endswith("<!-- rayservice-impact:reply-to=492799001 -->")
    assert [c.status for c in gh.calls_to("POST", r"/issues/\d+/comments$")] == [502]


def test_e_a_command_redelivered_to_a_restarted_service_is_not_answered_again() -> None:
    standin = GitHubStandIn(token=TOKEN)
    event = comment_event(N, "/rayservice-impact frobnicate", user="octo-reader", comment_id=492799002)
    for _ in range(2):                          # the second service has forgotten the first's deliveries
        with github_service(standin) as (url, gh):
            seen = len(gh.calls)
            assert post_event(url, "issue_comment", event).json()["status"] == "queued"
            wait_for(lambda seen=seen: len(gh.calls) > seen, what="the command")
            settle(gh, 0.3)
    assert len(replies(gh, N)) == 1 and "I only know" in replies(gh, N)[0]
    assert writes(gh) == [("POST", f"/repos/{OWNER}/{REPO}/issues/{N}/comments")]


def test_status_urls_name_their_subject() -> None:
    pr = PullRequest(OWNER, REPO, N, "a" * 40, "b" * 40, repo_url=f"https://github.com/{OWNER}/{REPO}.git")
    group = replace(pr, number=0, base_ref="main", merge_group_ref="refs/heads/gh-readonly-queue/main/pr-7-a")
    assert status_url(pr) == PULL_URL.format(N) and subject_of(status_url(pr)) == N
    assert status_url(group) == f"https://github.com/{OWNER}/{REPO}/queue/main"
    assert subject_of(status_url(group)) == "queue"
    assert status_url(replace(pr, repo_url="")) == PULL_URL.format(N)
    assert subject_of("https://ci.example.com/job/1") is None and subject_of("") is None
