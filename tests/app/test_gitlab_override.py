"""``/rayservice-impact approve <reason>`` and ``rerun`` in merge request notes, end to end: accepted
from a Developer (bound to the head, target branch and commit, report), refused for a Guest with a
reply and no change, void after a new push; the configured access level; the external status check
where the project has one (GitLab Ultimate) and its silent absence elsewhere."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

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
    settle,
    statuses,
    wait_for,
)
from gitlab_standin import GitLabStandIn, git

from app.github.comment import REPLY_MARKER, bound_of, is_ours

pytestmark = pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")

DEV, GUEST, REPORTER, MAINTAINER = 2, 3, 4, 5


def setup(tmp_path: Path) -> tuple[Path, str, str, GitLabStandIn]:
    repo, start = gitops_repo(tmp_path)
    head = branch(repo, "bump", start, bump)
    s = GitLabStandIn(token=TOKEN)
    s.add_project(PROJECT_ID, PATH, repo)
    s.add_merge_request(PROJECT_ID, 1, source_branch="bump", head_sha=head)
    s.members.update({(PROJECT_ID, DEV): 30, (PROJECT_ID, GUEST): 10, (PROJECT_ID, REPORTER): 20,
                      (PROJECT_ID, MAINTAINER): 40})
    return repo, start, head, s


def sticky(s: GitLabStandIn) -> str:
    return next(n["body"] for n in our_notes(s, 1) if is_ours(n["body"]))


def replies(s: GitLabStandIn) -> list[str]:
    return [n["body"] for n in our_notes(s, 1) if REPLY_MARKER in n["body"]]


def command(url: str, s: GitLabStandIn, text: str, user_id: int, username: str) -> None:
    calls = len(s.calls)
    answer = post_hook(url, "Note Hook", note_event(1, text, user_id=user_id, username=username))
    assert answer.status_code == 202 and answer.json()["status"] == "queued", answer.text
    wait_for(lambda: len(s.calls) > calls, what="the command's calls")
    settle(s, 0.2)


def test_approve_by_a_developer_refused_for_a_guest_void_after_a_push(tmp_path: Path) -> None:
    repo, start, head, s = setup(tmp_path)
    with gitlab_service(s) as url:
        held = judged(url, s, mr_event(1, head), head)
        assert held["status"] == "failed"
        before = sticky(s)

        # a Guest: a reply saying why, nothing else changes
        command(url, s, "/rayservice-impact approve ship it", GUEST, "gina")
        assert sticky(s) == before and len(statuses(s, head)) == 1
        assert len(replies(s)) == 1 and "Developer" in replies(s)[0] and "Guest" in replies(s)[0]
        # a Reporter neither
        command(url, s, "/rayservice-impact approve ship it", REPORTER, "rita")
        assert sticky(s) == before and len(statuses(s, head)) == 1 and "Reporter" in replies(s)[1]
        # no reason: refused even for a Developer
        command(url, s, "/rayservice-impact approve", DEV, "bob")
        assert len(statuses(s, head)) == 1 and "needs a reason" in replies(s)[2]

        # a Developer with a reason: accepted, bound to this head, base and report
        command(url, s, "/rayservice-impact approve the GPU pool has room until Friday", DEV, "bob")
        ok = statuses(s, head)[-1]
        assert ok["status"] == "success" and ok["description"].startswith("hold accepted by @bob")
        body = sticky(s)
        assert "Hold accepted** by @bob" in body and "the GPU pool has room until Friday" in body
        binding = bound_of(body)
        assert binding is not None and binding[0].head == head and binding[0].base_ref == "main"
        assert binding[0].base_sha == git(repo, "rev-parse", "refs/merge-requests/1/merge^1")
        # a re-run of the same result keeps the approval (and the success)
        command(url, s, "/rayservice-impact rerun", DEV, "bob")
        wait_for(lambda: len(statuses(s, head)) >= 3, what="the rerun's status")
        settle(s, 0.2)
        assert statuses(s, head)[-1]["status"] == "success" and "Hold accepted" in sticky(s)

        # a new push: the approval no longer applies, the hold is back
        git(repo, "checkout", "-q", "bump")
        (repo / "README.md").write_text("# second push\n")
        git(repo, "commit", "-qam", "second push")
        head2 = git(repo, "rev-parse", "HEAD")
        git(repo, "checkout", "-q", "main")
        time.sleep(1.0)  # GitLab's clock: the push is later than the re-run
        now = time.gmtime()
        s.add_merge_request(PROJECT_ID, 1, source_branch="bump", head_sha=head2,
                            updated_at=time.strftime("%Y-%m-%dT%H:%M:%S.000Z", now))
        again = judged(url, s, mr_event(1, head2, action="update", oldrev=head,
                                        updated_at=time.strftime("%Y-%m-%d %H:%M:%S UTC", now)), head2)
    assert again["status"] == "failed"
    body = sticky(s)
    assert "no longer applies" in body and f"`{head[:7]}` to `{head2[:7]}`" in body
    assert len([n for n in our_notes(s, 1) if is_ours(n["body"])]) == 1


def test_configured_level_refuses_a_developer_and_accepts_a_maintainer(tmp_path: Path) -> None:
    repo, start, head, s = setup(tmp_path)
    with gitlab_service(s, gitlab_approve_level=40) as url:
        judged(url, s, mr_event(1, head), head)
        command(url, s, "/rayservice-impact approve fine", DEV, "bob")
        assert statuses(s, head)[-1]["status"] == "failed" and "Developer" in replies(s)[0]
        command(url, s, "/rayservice-impact approve fine", MAINTAINER, "mia")
    assert statuses(s, head)[-1]["status"] == "success"


def test_external_status_check_gets_the_result_where_the_project_has_one(tmp_path: Path) -> None:
    repo, start, head, s = setup(tmp_path)
    s.status_checks[PROJECT_ID] = [{"id": 1, "name": "compliance", "external_url": "https://x.example"},
                                   {"id": 14, "name": "rayservice-impact", "external_url": "https://y.example"}]
    with gitlab_service(s) as url:
        judged(url, s, mr_event(1, head), head)
        command(url, s, "/rayservice-impact approve room in the pool", DEV, "bob")
    assert [(r["external_status_check"]["id"], r["status"], r["sha"]) for r in s.status_check_responses] == [
        (14, "failed", head), (14, "passed", head)]
    assert len(s.calls_to("GET", "/external_status_checks$")) == 1   # asked once per project


def test_without_status_checks_the_403_is_skipped_once(tmp_path: Path) -> None:
    repo, start, head, s = setup(tmp_path)
    with gitlab_service(s) as url:
        judged(url, s, mr_event(1, head), head)
        command(url, s, "/rayservice-impact approve room in the pool", DEV, "bob")
    assert s.status_check_responses == [] and statuses(s, head)[-1]["status"] == "success"
    assert len(s.calls_to("GET", "/external_status_checks$")) == 1


def test_other_notes_call_nothing(tmp_path: Path) -> None:
    repo, start, head, s = setup(tmp_path)
    with gitlab_service(s) as url:
        ours = "<!-- rayservice-impact -->\n/rayservice-impact"
        for text in ("LGTM", "/rayservice-impactish approve", ours):
            answer = post_hook(url, "Note Hook", note_event(1, text, user_id=DEV))
            assert answer.json()["status"] == "ignored"
        issue = note_event(1, "/rayservice-impact approve x", user_id=DEV)
        issue["object_attributes"]["noteable_type"] = "Issue"
        assert post_hook(url, "Note Hook", issue).json()["status"] == "ignored"
        settle(s, 0.2)
    assert s.calls == []
