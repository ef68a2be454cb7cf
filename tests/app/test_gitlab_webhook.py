"""GitLab merge requests end to end: the real service on uvicorn, the GitLab stand-in on uvicorn
backed by real git repositories (merge refs made with ``git merge``), real ``kubectl kustomize``.

The GitHub flow's scenario set: an image bump through an overlay holds, a serve-only change
passes, a broken overlay fails naming the file, a fork's merge request is read from the target
project only, a merge train is judged on its train ref, redelivery runs once, a 5xx after GitLab
stored the note leaves one note, a bad token is 401 with no call, an oversized body is 413, and
the token never reaches the logs.
"""

from __future__ import annotations

import logging
import shutil
import time
from pathlib import Path

import pytest
from gitlab_helpers import (
    FORK_ID,
    KUSTOMIZATION,
    PATH,
    PROJECT_ID,
    TOKEN,
    branch,
    broken_overlay,
    bump,
    gitlab_service,
    gitops_repo,
    judged,
    mr_event,
    our_notes,
    post_hook,
    push_event,
    serve_only,
    settle,
    statuses,
    wait_for,
)
from gitlab_standin import GitLabStandIn, git

from app.github.comment import MARKER, state_of

pytestmark = pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")


def standin_for(repo: Path) -> GitLabStandIn:
    s = GitLabStandIn(token=TOKEN)
    s.add_project(PROJECT_ID, PATH, repo)
    return s


def test_image_bump_through_an_overlay_holds_with_one_note_and_a_failed_status(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    repo, start = gitops_repo(tmp_path)
    head = branch(repo, "bump", start, bump)
    s = standin_for(repo)
    mr = s.add_merge_request(PROJECT_ID, 1, source_branch="bump", head_sha=head)
    merge = git(repo, "rev-parse", "refs/merge-requests/1/merge")
    with gitlab_service(s) as url:
        t0 = time.monotonic()
        answer = post_hook(url, "Merge Request Hook", mr_event(1, head))
        latency = time.monotonic() - t0
        assert answer.status_code == 202 and answer.json()["status"] == "queued"
        wait_for(lambda: statuses(s, head), what="a status")
        elapsed = time.monotonic() - t0
        settle(s, 0.1)
    status = statuses(s, head)[-1]
    assert status["status"] == "failed" and status["name"] == "rayservice-impact"
    assert status["description"].startswith("hold: ray-prod/ray-serve-llm")
    assert status["ref"] == "bump" and status["target_url"] == mr["web_url"]
    notes = our_notes(s, 1)
    assert len(notes) == 1 and notes[0]["body"].startswith(MARKER)
    body = notes[0]["body"]
    assert state_of(body) == "failure" and "rayservice-impact: **hold**" in body
    assert f"base `{start[:7]}` (main) → merge `{merge[:7]}` of head `{head[:7]}`" in body
    assert "rendered from the repository archives" in body
    archives = sorted(dict(c.query)["sha"] for c in s.calls_to("GET", "archive.tar.gz"))
    assert archives == sorted([start, merge])            # the target tip and GitLab's merge ref
    assert all(c.headers.get("private-token") == TOKEN for c in s.calls)
    assert TOKEN not in caplog.text
    print(f"\nMEASURE calls={len(s.calls)} latency_202={latency * 1000:.1f}ms end_to_end={elapsed:.2f}s")
    assert latency < 1.0


def test_serve_only_change_passes_and_a_no_ray_change_is_quiet(tmp_path: Path) -> None:
    repo, start = gitops_repo(tmp_path)
    head = branch(repo, "serve", start, serve_only)
    readme = branch(repo, "docs", start, lambda r: (r / "README.md").write_text("# docs\n"))
    s = standin_for(repo)
    s.add_merge_request(PROJECT_ID, 2, source_branch="serve", head_sha=head)
    s.add_merge_request(PROJECT_ID, 3, source_branch="docs", head_sha=readme)
    with gitlab_service(s) as url:
        status = judged(url, s, mr_event(2, head), head)
        quiet = judged(url, s, mr_event(3, readme), readme)
    assert status["status"] == "success", status
    body = our_notes(s, 2)[0]["body"]
    assert "rayservice-impact: **approve**" in body and state_of(body) == "success"
    assert quiet["status"] == "success" and our_notes(s, 3) == []   # nothing to say: no note


def test_broken_overlay_fails_and_the_note_names_the_file(tmp_path: Path) -> None:
    repo, start = gitops_repo(tmp_path)
    head = branch(repo, "broken", start, broken_overlay)
    s = standin_for(repo)
    s.add_merge_request(PROJECT_ID, 4, source_branch="broken", head_sha=head)
    with gitlab_service(s) as url:
        status = judged(url, s, mr_event(4, head), head)
    assert status["status"] == "failed"
    body = our_notes(s, 4)[0]["body"]
    assert "overlays/prod" in body and "render" in body.lower()


def test_conflicting_merge_request_is_judged_on_its_merge_base_and_says_so(tmp_path: Path) -> None:
    repo, start = gitops_repo(tmp_path)
    head = branch(repo, "bump", start, bump)
    kustomization = repo / KUSTOMIZATION
    kustomization.write_text(kustomization.read_text().replace("2.52.0-py311-cu128", "2.52.1-py311-cu128"))
    git(repo, "commit", "-qam", "main moves the image too")
    s = standin_for(repo)
    s.add_merge_request(PROJECT_ID, 5, source_branch="bump", head_sha=head)
    assert s.mrs[(PROJECT_ID, 5)]["merge_status"] == "cannot_be_merged"
    with gitlab_service(s) as url:
        status = judged(url, s, mr_event(5, head), head)
    assert status["status"] == "failed"
    body = our_notes(s, 5)[0]["body"]
    assert "cannot_be_merged" in body and f"merge base `{start[:7]}` → head `{head[:7]}`" in body


def test_fork_merge_request_is_read_from_the_target_project_only(tmp_path: Path) -> None:
    repo, start = gitops_repo(tmp_path)
    fork = tmp_path / "fork"
    git(tmp_path, "clone", "-q", str(repo), str(fork))
    git(fork, "checkout", "-q", "-b", "mallory-bump")
    bump(fork)
    git(fork, "-c", "user.name=m", "-c", "user.email=m@example.com", "commit", "-qam", "bump from a fork")
    head = git(fork, "rev-parse", "HEAD")
    git(repo, "fetch", "-q", str(fork), f"{head}:refs/merge-requests/6/head")   # kept in the target
    s = standin_for(repo)
    s.add_project(FORK_ID, "mallory/ray-gitops", fork, forked_from=PROJECT_ID)
    s.add_merge_request(PROJECT_ID, 6, source_branch="mallory-bump", head_sha=head, source_project_id=FORK_ID)
    with gitlab_service(s) as url:
        status = judged(url, s, mr_event(6, head, source_project_id=FORK_ID), head)
    assert status["status"] == "failed" and status["ref"] == "refs/merge-requests/6/head"
    assert len(our_notes(s, 6)) == 1
    touched = {c.path.split("/")[2] for c in s.calls if c.path.startswith("/projects/")}
    assert touched == {str(PROJECT_ID)} or touched == {"platform%2Fray-gitops"}, touched


def test_merge_train_is_judged_on_the_train_ref(tmp_path: Path) -> None:
    repo, start = gitops_repo(tmp_path)
    ahead = branch(repo, "ahead", start, lambda r: (r / "README.md").write_text("# ahead\n"))
    head = branch(repo, "bump", start, bump)
    s = standin_for(repo)
    # the car ahead merged onto main, as the train builds it; this merge request's train ref on top
    s._merge(repo, start, ahead, "refs/train/car1")
    car1 = git(repo, "rev-parse", "refs/train/car1")
    s.add_merge_request(PROJECT_ID, 7, source_branch="bump", head_sha=head, train=True, train_base=car1)
    train = git(repo, "rev-parse", "refs/merge-requests/7/train")
    with gitlab_service(s) as url:
        status = judged(url, s, mr_event(7, head), head)
    assert status["status"] == "failed"
    body = our_notes(s, 7)[0]["body"]
    assert "merge train" in body and f"merge train commit `{train[:7]}`" in body
    archives = sorted(dict(c.query)["sha"] for c in s.calls_to("GET", "archive.tar.gz"))
    assert archives == sorted([car1, train])


def test_redelivery_runs_once_and_an_update_without_a_push_is_ignored(tmp_path: Path) -> None:
    repo, start = gitops_repo(tmp_path)
    head = branch(repo, "bump", start, bump)
    s = standin_for(repo)
    s.add_merge_request(PROJECT_ID, 8, source_branch="bump", head_sha=head)
    event = mr_event(8, head)
    with gitlab_service(s) as url:
        first = post_hook(url, "Merge Request Hook", event, uuid_="a1b2c3d4-uuid")
        again = post_hook(url, "Merge Request Hook", event, uuid_="a1b2c3d4-uuid")
        assert first.json()["status"] == "queued" and again.json()["status"] == "duplicate"
        wait_for(lambda: statuses(s, head), what="a status")
        settle(s, 0.2)
        new_uuid = post_hook(url, "Merge Request Hook", event)   # the same job under another delivery id
        assert new_uuid.json()["status"] == "duplicate"
        calls = len(s.calls)
        title = post_hook(url, "Merge Request Hook", mr_event(8, head, action="update"))
        assert title.json()["status"] == "ignored"
        other = post_hook(url, "Pipeline Hook", {"object_kind": "pipeline"})
        assert other.status_code == 202 and other.json()["status"] == "ignored"
        settle(s, 0.2)
        assert len(s.calls) == calls
    assert len(statuses(s, head)) == 1 and len(our_notes(s, 8)) == 1


def test_5xx_after_commit_on_note_creation_leaves_one_note(tmp_path: Path) -> None:
    repo, start = gitops_repo(tmp_path)
    head = branch(repo, "bump", start, bump)
    s = standin_for(repo)
    s.add_merge_request(PROJECT_ID, 9, source_branch="bump", head_sha=head)
    s.fail("POST", r"/merge_requests/9/notes$", 502, after_commit=True)
    with gitlab_service(s) as url:
        status = judged(url, s, mr_event(9, head), head)
    assert status["status"] == "failed"
    assert len(our_notes(s, 9)) == 1 and len(s.calls_to("POST", "/notes$")) == 1
    assert len(s.calls_to("PUT", r"/notes/\d+$")) == 1


def test_new_push_updates_the_same_note_and_an_old_event_never_overwrites(tmp_path: Path) -> None:
    repo, start = gitops_repo(tmp_path)
    head = branch(repo, "bump", start, bump)
    s = standin_for(repo)
    s.add_merge_request(PROJECT_ID, 10, source_branch="bump", head_sha=head)
    with gitlab_service(s) as url:
        judged(url, s, mr_event(10, head, updated_at="2026-12-01 10:00:00 UTC"), head)
        g_path = repo / "base" / "rayservice.yaml"
        git(repo, "checkout", "-q", "bump")
        g_path.write_text(g_path.read_text().replace("max_model_len: 1024", "max_model_len: 4096"))
        git(repo, "commit", "-qam", "second push")
        head2 = git(repo, "rev-parse", "HEAD")
        git(repo, "checkout", "-q", "main")
        s.add_merge_request(PROJECT_ID, 10, source_branch="bump", head_sha=head2,
                            updated_at="2026-12-01T11:00:00.000Z")
        status2 = judged(url, s, mr_event(10, head2, action="update", oldrev=head,
                                          updated_at="2026-12-01 11:00:00 UTC"), head2)
        notes = our_notes(s, 10)
        assert len(notes) == 1 and head2 in notes[0]["body"] and status2["status"] == "failed"
        # a push to main re-judges the open merge requests into it
        (repo / "README.md").write_text("# moved\n")
        git(repo, "commit", "-qam", "main moves")
        tip = git(repo, "rev-parse", "HEAD")
        s.add_merge_request(PROJECT_ID, 10, source_branch="bump", head_sha=head2,
                            updated_at="2026-12-01T11:00:00.000Z")
        before = len(statuses(s, head2))
        assert post_hook(url, "Push Hook", push_event(tip)).status_code == 202
        wait_for(lambda: len(statuses(s, head2)) > before, what="a re-judgement")
        settle(s, 0.1)
    assert f"base `{tip[:7]}`" in our_notes(s, 10)[0]["body"]


def test_bad_token_is_401_with_no_call_and_oversized_body_is_413(tmp_path: Path) -> None:
    repo, start = gitops_repo(tmp_path)
    head = branch(repo, "bump", start, bump)
    s = standin_for(repo)
    s.add_merge_request(PROJECT_ID, 11, source_branch="bump", head_sha=head)
    with gitlab_service(s, max_body_bytes=64 * 1024) as url:
        assert post_hook(url, "Merge Request Hook", mr_event(11, head), token="wrong").status_code == 401
        assert post_hook(url, "Merge Request Hook", mr_event(11, head), token=None).status_code == 401
        assert post_hook(url, "Merge Request Hook", b"x" * (128 * 1024)).status_code == 413
        bad = post_hook(url, "Merge Request Hook", b"{not json")
        assert bad.status_code == 400 and "JSON" in bad.text
        empty = {"object_attributes": {"action": "open"}}
        assert post_hook(url, "Merge Request Hook", empty).status_code == 400
        settle(s, 0.2)
    assert s.calls == []


def test_route_is_absent_without_a_secret(tmp_path: Path) -> None:
    import httpx
    from serverutil import running_server

    from app.server import create_app
    from app.settings import load_settings

    app = create_app(load_settings(analysis_executor="thread", live_basis="off"))
    with running_server(app) as url:
        assert httpx.post(url + "/webhooks/gitlab", content=b"{}").status_code == 404


def test_gitlab_unreadable_is_a_failed_status_saying_so_under_a_relative_path(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """A self-managed instance under /gitlab; the archive endpoint keeps failing: the status is
    ``failed`` and says the change could not be analysed (GitLab has no ``error`` state), and no
    note claims a result."""
    repo, start = gitops_repo(tmp_path)
    head = branch(repo, "bump", start, bump)
    s = GitLabStandIn("/gitlab", token=TOKEN)
    s.add_project(PROJECT_ID, PATH, repo)
    s.add_merge_request(PROJECT_ID, 12, source_branch="bump", head_sha=head)
    s.fail("GET", r"/repository/archive\.tar\.gz$", 503, times=50)
    caplog.set_level(logging.DEBUG)
    with gitlab_service(s, prefix="/gitlab", github_retry_budget_seconds=1.0) as url:
        status = judged(url, s, mr_event(12, head), head)
    assert status["status"] == "failed"
    assert status["description"].startswith("could not analyse: cannot read the change from GitLab")
    assert our_notes(s, 12) == []
    assert "archive.tar.gz: HTTP 503" in caplog.text and TOKEN not in caplog.text
    assert all(c.path.startswith("/projects/") or c.path == "/user" for c in s.calls)
