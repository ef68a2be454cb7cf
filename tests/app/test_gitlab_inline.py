"""Findings inline on GitLab merge requests (``RAYSERVICE_IMPACT_GITLAB_INLINE``), end to end: the
real service on uvicorn, the GitLab stand-in (its threads checked against the real ``git diff`` of
each merge request), real git, real ``kubectl kustomize``.

A hold puts one thread on the overlay's ``newTag`` line; a 5xx after GitLab stored it, a re-run
and a redelivery add none; the fix resolves it and the bump back reopens it. ``off`` makes no
thread call; ``holds`` leaves a warning out (``all`` posts it); a finding whose line is not on the
diff stays in the note and the run goes on; threads someone else wrote, marker or not, are neither
touched nor counted.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from gitlab_helpers import (
    DATA,
    KUSTOMIZATION,
    PATH,
    PROJECT_ID,
    RAYSERVICE,
    TAG,
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

from app.github.comment import MARKER
from app.gitlab.inline import MARK, Inline, lines_of, wanted

pytestmark = pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")

DEV = 2
ALICE = {"id": 1, "username": "alice", "name": "Alice"}
THREAD_CALLS = r"/discussions|/diffs$"


def standin_for(repo: Path) -> GitLabStandIn:
    s = GitLabStandIn(token=TOKEN)
    s.add_project(PROJECT_ID, PATH, repo)
    s.members[(PROJECT_ID, DEV)] = 30
    return s


def ours(s: GitLabStandIn, iid: int) -> list[dict[str, Any]]:
    return [d for d in s.threads_of(PROJECT_ID, iid) if d["notes"][0]["author"]["id"] == s.bot["id"]]


def first(thread: dict[str, Any]) -> dict[str, Any]:
    return dict(thread["notes"][0])


def is_resolved(thread: dict[str, Any]) -> bool:
    return all(n["resolved"] for n in thread["notes"] if n["resolvable"])


def line_of(repo: Path, sha: str, path: str, text: str) -> int:
    lines = git(repo, "show", f"{sha}:{path}").splitlines()
    return next(i for i, line in enumerate(lines, 1) if text in line)


def thread_calls(s: GitLabStandIn, since: int = 0) -> list[str]:
    return [f"{c.method} {re.sub(r'^.*/merge_requests/[0-9]+/', '', c.path)}" for c in s.calls[since:]
            if c.path.endswith(("/discussions", "/diffs")) or "/discussions/" in c.path]


def push(s: GitLabStandIn, repo: Path, url: str, iid: int, old: str, change: Any, hour: int) -> str:
    """A new commit on the merge request's branch ``bump`` at ``hour`` o'clock, judged."""
    at = f"2027-01-01 {hour}:00:00 UTC"   # after the re-run (stamped now)
    git(repo, "checkout", "-q", "bump")
    change(repo)
    git(repo, "commit", "-qam", f"push at {at}")
    head = git(repo, "rev-parse", "HEAD")
    git(repo, "checkout", "-q", "main")
    s.add_merge_request(PROJECT_ID, iid, source_branch="bump", head_sha=head,
                        updated_at=f"2027-01-01T{hour}:00:00.000Z")
    judged(url, s, mr_event(iid, head, action="update", oldrev=old, updated_at=at), head)
    return head


def retag(tag: str) -> Any:
    def change(repo: Path) -> None:
        path = repo / KUSTOMIZATION
        text = path.read_text()
        current = next(line for line in text.splitlines() if "newTag:" in line)
        path.write_text(text.replace(current, f"  newTag: {tag}"))
    return change


def test_a_hold_gets_one_thread_on_the_overlay_line_kept_in_step_with_the_change(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture) -> None:
    repo, start = gitops_repo(tmp_path)
    head = branch(repo, "bump", start, bump)
    s = standin_for(repo)
    mr = s.add_merge_request(PROJECT_ID, 1, source_branch="bump", head_sha=head)
    s.fail("POST", r"/merge_requests/1/discussions$", 502, after_commit=True)  # stored, then 502
    with gitlab_service(s, gitlab_inline="holds") as url:
        status = judged(url, s, mr_event(1, head), head)
        run1 = thread_calls(s)
        [thread] = ours(s, 1)
        note = first(thread)
        assert status["status"] == "failed" and len(our_notes(s, 1)) == 1
        assert note["type"] == "DiffNote" and note["body"].startswith(MARK) and MARKER not in note["body"]
        assert "hold (new-cluster) ray-prod/ray-serve-llm" in note["body"]
        assert "ray-head].image" in note["body"] and "ray-worker].image" in note["body"]  # one line
        pos = note["position"]
        assert pos["new_path"] == pos["old_path"] == KUSTOMIZATION and pos["position_type"] == "text"
        assert pos["new_line"] == line_of(repo, head, KUSTOMIZATION, f"newTag: {TAG}")
        assert pos["old_line"] is None
        assert {k: pos[k] for k in ("base_sha", "start_sha", "head_sha")} == mr["diff_refs"]
        assert not is_resolved(thread)

        # a re-run (a Developer's command) and a redelivery under a new id: no second thread
        calls = len(s.calls)
        answer = post_hook(url, "Note Hook", note_event(1, "/rayservice-impact rerun", user_id=DEV))
        assert answer.status_code == 202, answer.text
        wait_for(lambda: len(statuses(s, head)) >= 2, what="the rerun's status")
        settle(s, 0.2)
        rerun = thread_calls(s, calls)
        assert post_hook(url, "Merge Request Hook", mr_event(1, head)).json()["status"] == "duplicate"
        settle(s, 0.2)
        assert len(ours(s, 1)) == 1 and len(s.calls_to("POST", r"/discussions$")) == 1

        # the fix: the thread is resolved; the bump back: the same thread reopened, none added
        calls = len(s.calls)
        fixed = push(s, repo, url, 1, head, retag("2.52.0-py311-cu128"), 11)
        fix_calls = thread_calls(s, calls)
        assert statuses(s, fixed)[-1]["status"] == "success"
        assert is_resolved(ours(s, 1)[0])
        again = push(s, repo, url, 1, fixed, retag(TAG), 12)
        assert statuses(s, again)[-1]["status"] == "failed"
        [thread] = ours(s, 1)
        assert not is_resolved(thread) and len(s.calls_to("POST", r"/discussions$")) == 1
        assert len(s.calls_to("PUT", r"/discussions/[0-9a-f]+$")) == 2
    # the first POST answered 502 after storing the thread: found by a read, not posted again
    assert run1 == ["GET discussions", "GET diffs", "POST discussions", "GET discussions"]
    assert "HTTP 502" in caplog.text and "the thread was stored, keeping it" in caplog.text
    assert rerun == ["GET discussions"]
    assert fix_calls == ["GET discussions", f"PUT discussions/{thread['id']}"]
    with capsys.disabled():
        print(f"\nMEASURE thread calls: first run {len(run1)} (a 502 after commit included), "
              f"re-run {len(rerun)}, fix {len(fix_calls)}")


def test_off_makes_no_thread_call(tmp_path: Path) -> None:
    repo, start = gitops_repo(tmp_path)
    head = branch(repo, "bump", start, bump)
    s = standin_for(repo)
    s.add_merge_request(PROJECT_ID, 2, source_branch="bump", head_sha=head)
    with gitlab_service(s) as url:   # the default: off
        status = judged(url, s, mr_event(2, head), head)
    assert status["status"] == "failed" and len(our_notes(s, 2)) == 1
    assert thread_calls(s) == [] and s.threads_of(PROJECT_ID, 2) == []


PLAIN = "plain/rayservice.yaml"   # a RayService in no kustomization: its own lines are the report's


def unknown_field(repo: Path) -> None:
    path = repo / PLAIN
    text = path.read_text()
    path.write_text(text.replace("spec:\n", "spec:\n  fooBarUnknown: enabled\n", 1))


def test_holds_leaves_a_warning_out_and_all_posts_it(tmp_path: Path) -> None:
    repo, _ = gitops_repo(tmp_path)
    (repo / "plain").mkdir()
    (repo / PLAIN).write_text((repo / RAYSERVICE).read_text())
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "a plain RayService")
    start = git(repo, "rev-parse", "HEAD")
    head = branch(repo, "extra", start, unknown_field)
    head4 = branch(repo, "extra4", start, unknown_field)
    s = standin_for(repo)
    s.add_merge_request(PROJECT_ID, 3, source_branch="extra", head_sha=head)
    s.add_merge_request(PROJECT_ID, 4, source_branch="extra4", head_sha=head4)
    with gitlab_service(s, gitlab_inline="holds") as url:
        held = judged(url, s, mr_event(3, head), head)
    assert held["status"] == "success", held
    assert "unknown-field" in our_notes(s, 3)[0]["body"]
    assert thread_calls(s) == ["GET discussions"] and s.threads_of(PROJECT_ID, 3) == []
    with gitlab_service(s, gitlab_inline="all") as url:
        judged(url, s, mr_event(4, head4), head4)
    [thread] = ours(s, 4)
    note = first(thread)
    assert "unknown-field" in note["body"] and note["position"]["new_path"] == PLAIN
    assert note["position"]["new_line"] == line_of(repo, head4, PLAIN, "fooBarUnknown:")


def test_a_finding_outside_the_diff_stays_in_the_note_and_the_run_succeeds(tmp_path: Path) -> None:
    """The locator puts the tag on the first line that names it: a comment at the top of the
    overlay, 9 lines above the change, outside every hunk. GitLab (the stand-in, from the real
    diff) answers 400; the note and the status are there."""
    repo, _ = gitops_repo(tmp_path)
    path = repo / KUSTOMIZATION
    path.write_text(f"# next tag: {TAG}\n#\n#\n#\n" + path.read_text())
    git(repo, "commit", "-qam", "a comment on main")
    start = git(repo, "rev-parse", "HEAD")
    head = branch(repo, "bump", start, retag(TAG))
    s = standin_for(repo)
    s.add_merge_request(PROJECT_ID, 5, source_branch="bump", head_sha=head)
    with gitlab_service(s, gitlab_inline="all") as url:
        status = judged(url, s, mr_event(5, head), head)
    assert status["status"] == "failed" and "rayservice-impact: **hold**" in our_notes(s, 5)[0]["body"]
    [refused] = s.calls_to("POST", r"/discussions$")
    assert refused.status == 400 and refused.body["position"]["new_line"] == 1
    assert s.threads_of(PROJECT_ID, 5) == []


def test_threads_someone_else_wrote_are_neither_touched_nor_counted(tmp_path: Path) -> None:
    repo, start = gitops_repo(tmp_path)
    head = branch(repo, "bump", start, bump)
    head2 = branch(repo, "bump2", start, bump)
    s = standin_for(repo)
    s.add_merge_request(PROJECT_ID, 6, source_branch="bump", head_sha=head)
    s.add_merge_request(PROJECT_ID, 7, source_branch="bump2", head_sha=head2)
    with gitlab_service(s, gitlab_inline="holds") as url:
        judged(url, s, mr_event(6, head), head)
        marker = first(ours(s, 6)[0])["body"].split("\n", 1)[0]
        copy = s.add_discussion(PROJECT_ID, 7, marker + "\n**quoted by Alice**", ALICE)
        gone = s.add_discussion(PROJECT_ID, 7, f"{MARK}{'0' * 32} -->\nan old finding", ALICE)
        judged(url, s, mr_event(7, head2), head2)
    threads = s.threads_of(PROJECT_ID, 7)
    assert len(threads) == 3 and len(ours(s, 7)) == 1        # ours made all the same
    assert first(copy)["body"] == marker + "\n**quoted by Alice**" and not is_resolved(copy)
    assert not is_resolved(gone)                               # not ours: never resolved
    assert not any(c.path.endswith(copy["id"]) or c.path.endswith(gone["id"]) for c in s.calls)


def test_the_stand_in_answers_in_the_documented_shape_and_refuses_what_gitlab_refuses(
        tmp_path: Path) -> None:
    """tests/data/gitlab/discussion.diff_note.json is a thread as api/discussions.md shows one:
    the stand-in's threads have its keys; a position on another head, or on an unchanged line
    named by its new number alone, is refused."""
    example = json.loads((DATA / "discussion.diff_note.json").read_text())
    repo, start = gitops_repo(tmp_path)
    head = branch(repo, "bump", start, bump)
    s = standin_for(repo)
    mr = s.add_merge_request(PROJECT_ID, 8, source_branch="bump", head_sha=head)
    refs = mr["diff_refs"]
    pos = {"position_type": "text", **refs, "old_path": KUSTOMIZATION, "new_path": KUSTOMIZATION}
    tag_line = line_of(repo, head, KUSTOMIZATION, "newTag:")
    made = s._bad_position(repo, mr, {**pos, "new_line": tag_line})
    assert made == ""
    assert s._bad_position(repo, mr, {**pos, "new_line": tag_line, "head_sha": start}) != ""
    assert "line_code" in s._bad_position(repo, mr, {**pos, "new_line": tag_line - 1})
    assert s._bad_position(repo, mr, {**pos, "new_line": tag_line - 1, "old_line": tag_line - 1}) == ""
    thread = s.add_discussion(PROJECT_ID, 8, "x", s.bot, {**pos, "new_line": tag_line})
    assert set(thread) == set(example)
    assert set(thread["notes"][0]) >= set(example["notes"][0])
    assert set(thread["notes"][0]["position"]) == set(example["notes"][0]["position"])
    # the client's reading of a diff agrees with the stand-in's
    diff = git(repo, "diff", refs["base_sha"], refs["head_sha"], "--", KUSTOMIZATION)
    assert lines_of(diff[diff.index("@@"):])[tag_line] is None


def test_wanted_shares_a_line_and_holds_keeps_what_holds() -> None:
    def a(fp: str, line: int, level: str = "failure", located: bool = True) -> dict[str, Any]:
        return {"path": "k.yaml", "start_line": line, "annotation_level": level, "title": "hold x",
                "message": f"m{fp}", "fingerprint": fp * 32, "located": located}

    found = wanted([a("a", 6), a("b", 6), a("c", 9, "warning"), a("d", 1, located=False)], "all")
    assert [(f.line, f.message) for f in found] == [(6, "* ma\n* mb"), (9, "mc")]
    assert found[0].fingerprint not in ("a" * 32, "b" * 32) and found[1].fingerprint == "c" * 32
    assert wanted([a("b", 6), a("a", 6)], "all")[0].fingerprint == found[0].fingerprint  # order-free
    assert [f.line for f in wanted([a("a", 6), a("c", 9, "warning")], "holds")] == [6]


def test_at_most_twenty_new_threads_a_run_and_the_rest_next_run(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    import asyncio
    import logging

    import httpx
    from serverutil import running_server

    from app.clients.gitlab import GitLabClient

    repo, start = gitops_repo(tmp_path)
    head = branch(repo, "many", start, lambda r: (r / "many.yaml").write_text(
        "".join(f"k{i}: {i}\n" for i in range(1, 31))))
    s = standin_for(repo)
    mr = s.add_merge_request(PROJECT_ID, 9, source_branch="many", head_sha=head)
    notes = [{"path": "many.yaml", "start_line": i, "annotation_level": "failure", "title": f"t{i}",
              "message": "m", "fingerprint": f"{i:032x}", "located": True} for i in range(1, 26)]
    caplog.set_level(logging.INFO)

    async def run(url: str) -> None:
        async with httpx.AsyncClient() as http:
            gl = GitLabClient(http, url, TOKEN)
            for _ in range(3):
                await Inline(gl, PATH, 9, mr["diff_refs"]).sync(wanted(notes, "all"), "!9")

    with running_server(s.app, ready_path=None) as url:
        asyncio.run(run(url))
    assert len(s.calls_to("POST", r"/discussions$")) == 25 and len(ours(s, 9)) == 25
    assert "20 created" in caplog.text and "5 left out (at most 20 new per run)" in caplog.text
    assert "5 created, 0 resolved, 0 reopened, 0 not on the diff, 0 left out" in caplog.text
    assert "0 created, 0 resolved, 0 reopened, 0 not on the diff, 0 left out" in caplog.text


def test_a_bad_setting_is_refused_naming_it() -> None:
    from app.settings import SettingsError, load_settings

    with pytest.raises(SettingsError, match="RAYSERVICE_IMPACT_GITLAB_INLINE: Input should be 'off'"):
        load_settings(gitlab_inline="sometimes")
    assert load_settings().gitlab_inline == "off"
