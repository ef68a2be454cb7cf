"""One head commit opened as two merge requests: GitLab keeps one ``rayservice-impact`` status per
commit, so a merge request that passes must not post a success over another one's hold.

The scenario GitHub's gate was built for, on GitLab: the author opens the hold-worthy head a second
time against a branch where it changes nothing (``release`` already has it). That merge request's
own result passes; its status says what holds the commit instead, and its note keeps its own result
on record so the first one can clear once a Developer accepts its hold. A closed merge request, a
status naming another project's merge request or none at all, does not count; others that cannot
be read make the status ``failed`` (could not analyse), never a success.

The real service on uvicorn, the GitLab stand-in backed by real git repositories (real merge refs),
real ``kubectl kustomize``.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from gitlab_helpers import (
    PATH,
    PROJECT_ID,
    TOKEN,
    branch,
    bump,
    gitlab_service,
    gitops_repo,
    judged,
    mr_event,
    note_event,
    our_notes,
    post_hook,
    serve_only,
    settle,
    statuses,
    wait_for,
)
from gitlab_standin import GitLabStandIn, git

from app.github.comment import is_ours, state_of

pytestmark = pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")

DEV = 2
WEB = f"https://gitlab.example.com/{PATH}/-/merge_requests"


def two_merge_requests(tmp_path: Path) -> tuple[str, GitLabStandIn]:
    """!1 brings the image bump (a new RayCluster: it holds) into ``main``; !2 is the same head
    into ``release``, which already has it (nothing changes: it passes on its own)."""
    repo, start = gitops_repo(tmp_path)
    head = branch(repo, "bump", start, bump)
    git(repo, "branch", "release", head)
    s = GitLabStandIn(token=TOKEN)
    s.add_project(PROJECT_ID, PATH, repo)
    s.add_merge_request(PROJECT_ID, 1, source_branch="bump", head_sha=head)
    s.add_merge_request(PROJECT_ID, 2, source_branch="bump", head_sha=head, target_branch="release")
    s.members[(PROJECT_ID, DEV)] = 30
    return head, s


def sticky(s: GitLabStandIn, iid: int) -> str:
    return next(n["body"] for n in our_notes(s, iid) if is_ours(n["body"]))


def command(url: str, s: GitLabStandIn, iid: int, text: str, head: str) -> dict[str, Any]:
    """A note with a command on merge request ``iid`` by a Developer; the status it leads to."""
    count = len(statuses(s, head))
    answer = post_hook(url, "Note Hook", note_event(iid, text, user_id=DEV, username="bob"))
    assert answer.status_code == 202, answer.text
    wait_for(lambda: len(statuses(s, head)) > count, timeout=60, what="the command's status")
    settle(s, 0.2)
    return statuses(s, head)[-1]


def test_a_pass_does_not_cover_another_merge_requests_hold_until_it_is_accepted(tmp_path: Path) -> None:
    head, s = two_merge_requests(tmp_path)
    with gitlab_service(s) as url:
        one = judged(url, s, mr_event(1, head), head)
        assert one["status"] == "failed" and one["target_url"] == f"{WEB}/1"

        two = judged(url, s, mr_event(2, head, target_branch="release"), head)
        assert two["status"] == "failed" and two["target_url"] == f"{WEB}/2"
        assert two["description"] == "held: this commit is also the head of !1 (held)"
        # its own result is on record (it passed), saying why the status holds
        note = sticky(s, 2)
        assert state_of(note) == "success" and "also the head of !1 (held)" in note
        assert "GitLab keeps one `rayservice-impact` status per commit" in note
        assert len([n for n in our_notes(s, 2) if is_ours(n["body"])]) == 1

        # a Developer accepts !1's hold: !2's own result passed, so nothing else holds the commit
        accepted = command(url, s, 1, "/rayservice-impact approve the pool has room", head)
        assert accepted["status"] == "success" and accepted["target_url"] == f"{WEB}/1"
        assert accepted["description"].startswith("hold accepted by @bob")

        # !2 run again: !1 is accepted now, so !2 passes too, and its note is not doubled
        again = command(url, s, 2, "/rayservice-impact rerun", head)
    assert again["status"] == "success" and again["target_url"] == f"{WEB}/2"
    assert len([n for n in our_notes(s, 2) if is_ours(n["body"])]) == 1


def test_a_quiet_pass_held_by_the_same_head_puts_its_report_on_record(tmp_path: Path) -> None:
    """!2's base (``release``: the bump already there) has ``comment: on-hold``, and there the head
    only changes the Serve config: a pass, which that mode keeps to the status. Held by !1 on the
    shared head, its report still goes on record, else !1, once accepted, stays held by !2."""
    repo, start = gitops_repo(tmp_path)

    def bump_and_serve(r: Path) -> None:
        bump(r)
        serve_only(r)

    def quiet_release(r: Path) -> None:
        bump(r)
        (r / ".gitlab").mkdir()
        (r / ".gitlab" / "rayservice-impact.yml").write_text("comment: on-hold\n")

    head = branch(repo, "bump", start, bump_and_serve)
    branch(repo, "release", start, quiet_release)
    s = GitLabStandIn(token=TOKEN)
    s.add_project(PROJECT_ID, PATH, repo)
    s.add_merge_request(PROJECT_ID, 1, source_branch="bump", head_sha=head)
    s.add_merge_request(PROJECT_ID, 2, source_branch="bump", head_sha=head, target_branch="release")
    s.members[(PROJECT_ID, DEV)] = 30
    with gitlab_service(s) as url:
        assert judged(url, s, mr_event(1, head), head)["status"] == "failed"
        two = judged(url, s, mr_event(2, head, target_branch="release"), head)
        assert two["status"] == "failed" and "also the head of !1 (held)" in two["description"]
        note = sticky(s, 2)
        accepted = command(url, s, 1, "/rayservice-impact approve the pool has room", head)
    assert state_of(note) == "success" and "serveConfigV2" in note
    assert (accepted["status"], accepted["target_url"]) == ("success", f"{WEB}/1")


def test_a_closed_merge_request_no_longer_holds_the_commit(tmp_path: Path) -> None:
    head, s = two_merge_requests(tmp_path)
    with gitlab_service(s) as url:
        assert judged(url, s, mr_event(1, head), head)["status"] == "failed"
        s.mrs[(PROJECT_ID, 1)]["state"] = "closed"
        two = judged(url, s, mr_event(2, head, target_branch="release"), head)
    assert two["status"] == "success", two["description"]
    assert our_notes(s, 2) == []  # nothing held it: a result with no change needs no note


def test_a_merge_request_that_moved_on_to_another_head_no_longer_holds_it(tmp_path: Path) -> None:
    head, s = two_merge_requests(tmp_path)
    with gitlab_service(s) as url:
        assert judged(url, s, mr_event(1, head), head)["status"] == "failed"
        s.mrs[(PROJECT_ID, 1)]["sha"] = "0" * 40
        two = judged(url, s, mr_event(2, head, target_branch="release"), head)
    assert two["status"] == "success", two["description"]


def test_statuses_that_name_no_merge_request_of_this_project_are_not_counted(tmp_path: Path) -> None:
    """A failed status of another project's merge request 1 (a fork's, an old URL) and one of a CI
    job: neither names a merge request of this project, so !2 passes and merge request 1 is not
    even read."""
    head, s = two_merge_requests(tmp_path)
    for i, url_ in enumerate(("https://gitlab.example.com/mallory/ray-gitops/-/merge_requests/1",
                              f"https://gitlab.example.com/{PATH}/-/jobs/981")):
        s.statuses.append({"id": 10 + i, "sha": head, "ref": "bump", "status": "failed",
                           "name": "rayservice-impact", "target_url": url_, "description": "held",
                           "project_id": PROJECT_ID})
    with gitlab_service(s) as url:
        two = judged(url, s, mr_event(2, head, target_branch="release"), head)
    assert two["status"] == "success", two["description"]
    assert s.calls_to("GET", r"/merge_requests/1$") == []


def test_when_the_other_results_cannot_be_read_the_status_is_failed_never_success(tmp_path: Path) -> None:
    head, s = two_merge_requests(tmp_path)
    s.fail("GET", r"/repository/commits/[0-9a-f]+/statuses$", 503, times=50)
    with gitlab_service(s, github_retry_budget_seconds=1.0) as url:
        two = judged(url, s, mr_event(2, head, target_branch="release"), head)
    assert two["status"] == "failed"
    assert two["description"].startswith(
        "could not analyse: cannot check the other merge requests with this head")
