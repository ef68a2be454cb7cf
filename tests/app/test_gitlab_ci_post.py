"""The CI job's posting step (``python -m app.gitlab.post_note``) against the GitLab stand-in over
real HTTP: the template's job run end to end with a token, for each outcome."""

from __future__ import annotations

from pathlib import Path

import pytest
from github_helpers import manifest
from gitlab_ci_runner import run_job
from gitlab_standin import GitLabStandIn, git
from serverutil import running_server
from test_gitlab_ci import REF, Origin, make_origin, mr_variables

from app.github.comment import MARKER

TOKEN = "glpat-cistandin0123456789abcd"
PROJECT = 42


def with_mr(tmp_path: Path, before: str, after: str) -> tuple[Origin, GitLabStandIn]:
    """The origin as the stand-in's project 42, with merge request !1 of ``feature``: its merge ref
    is the stand-in's own merge (a real git merge of the head into main)."""
    o = make_origin(tmp_path, before, after)
    standin = GitLabStandIn(token=TOKEN)
    standin.add_project(PROJECT, "platform/ray-gitops", o.path)
    standin.add_merge_request(PROJECT, 1, source_branch="feature", head_sha=o.head)
    o.merge = git(o.path, "rev-parse", "refs/merge-requests/1/merge")
    return o, standin


def ci_env(o: Origin, url: str, event: str = "merged_result", *, token: str = TOKEN,
           created: str = "2026-12-06T05:00:00Z") -> dict[str, str]:
    return {**mr_variables(o, event), "RAYSERVICE_IMPACT_GITLAB_TOKEN": token,
            "CI_API_V4_URL": f"{url}/api/v4", "CI_PIPELINE_CREATED_AT": created,
            "CI_JOB_URL": "https://gitlab.example.com/platform/ray-gitops/-/jobs/7"}


def statuses(standin: GitLabStandIn) -> list[tuple[str, str, str]]:
    return [(s["sha"], s["status"], s["name"]) for s in standin.statuses]


def test_hold_posts_one_sticky_note_and_a_failed_status_on_the_pipelines_commit(tmp_path) -> None:
    o, standin = with_mr(tmp_path, manifest("llm.base.yaml"), manifest("llm.head.yaml"))
    with running_server(standin.app, ready_path=None) as url:
        first = run_job(o.path, tmp_path / "1", ci_env(o, url), ref=REF["merged_result"])
        second = run_job(o.path, tmp_path / "2", ci_env(o, url, created="2026-12-06T05:10:00Z"),
                         ref=REF["merged_result"])
    assert first.code == 3 and second.code == 3, first.log + second.log
    [note] = standin.notes_of(PROJECT, 1)  # the second run edited it in place
    assert note["body"].startswith(MARKER) and "ray-serve-llm" in note["body"]
    assert "hold" in note["body"]
    assert statuses(standin) == [(o.merge, "failed", "rayservice-impact")] * 2
    assert standin.statuses[0]["target_url"].endswith("/-/jobs/7")
    assert all(c.headers.get("private-token") == TOKEN for c in standin.calls)
    assert TOKEN not in first.log + second.log
    assert len(standin.calls_to("PUT", r"/notes/\d+$")) == 1


def test_approve_posts_a_success_status_and_the_note(tmp_path) -> None:
    o, standin = with_mr(tmp_path, manifest("sample.base.yaml"), manifest("sample.head.yaml"))
    with running_server(standin.app, ready_path=None) as url:
        run = run_job(o.path, tmp_path / "1", ci_env(o, url), ref=REF["merged_result"])
    assert run.code == 0, run.log
    assert statuses(standin) == [(o.merge, "success", "rayservice-impact")]
    [note] = standin.notes_of(PROJECT, 1)
    assert "rayservice-sample" in note["body"]


def test_an_older_pipelines_late_job_does_not_overwrite_a_newer_note(tmp_path) -> None:
    o, standin = with_mr(tmp_path, manifest("llm.base.yaml"), manifest("llm.head.yaml"))
    with running_server(standin.app, ready_path=None) as url:
        run_job(o.path, tmp_path / "1", ci_env(o, url, created="2026-12-06T05:10:00Z"),
                ref=REF["merged_result"])
        before = standin.notes_of(PROJECT, 1)[0]["body"]
        late = run_job(o.path, tmp_path / "2", ci_env(o, url, created="2026-12-06T04:00:00Z"),
                       ref=REF["merged_result"])
    assert late.code == 3
    assert standin.notes_of(PROJECT, 1)[0]["body"] == before
    assert "newer result" in late.log


def test_detached_pipelines_note_says_it_judged_the_head_not_the_merge(tmp_path) -> None:
    o, standin = with_mr(tmp_path, manifest("llm.base.yaml"), manifest("llm.head.yaml"))
    with running_server(standin.app, ready_path=None) as url:
        run = run_job(o.path, tmp_path / "1", ci_env(o, url, "detached"), ref=REF["detached"])
    assert run.code == 3, run.log
    [note] = standin.notes_of(PROJECT, 1)
    assert "not on the merged result" in note["body"]
    assert statuses(standin) == [(o.head, "failed", "rayservice-impact")]


def test_comment_on_hold_posts_only_the_status_for_an_approve(tmp_path) -> None:
    o, standin = with_mr(tmp_path, manifest("sample.base.yaml"), manifest("sample.head.yaml"))
    with running_server(standin.app, ready_path=None) as url:
        run = run_job(o.path, tmp_path / "1", ci_env(o, url), ref=REF["merged_result"],
                      inputs={"comment": "on-hold"})
    assert run.code == 0, run.log
    assert standin.notes_of(PROJECT, 1) == []
    assert statuses(standin) == [(o.merge, "success", "rayservice-impact")]


@pytest.mark.parametrize(("before", "after", "code"), [("sample.base.yaml", "sample.head.yaml", 1),
                                                       ("llm.base.yaml", "llm.head.yaml", 3)])
def test_a_refused_token_fails_a_passing_job_and_keeps_a_hold_at_3(tmp_path, before, after, code) -> None:
    o, standin = with_mr(tmp_path, manifest(before), manifest(after))
    wrong = "glpat-wrong0123456789abcdefgh"
    with running_server(standin.app, ready_path=None) as url:
        run = run_job(o.path, tmp_path / "1", ci_env(o, url, token=wrong), ref=REF["merged_result"])
    assert run.code == code, run.log
    assert "the note or the status was not posted" in run.log
    assert "401" in run.log
    assert wrong not in run.log
    assert standin.notes_of(PROJECT, 1) == [] and standin.statuses == []


def test_post_false_posts_nothing_even_with_a_token(tmp_path) -> None:
    o, standin = with_mr(tmp_path, manifest("llm.base.yaml"), manifest("llm.head.yaml"))
    with running_server(standin.app, ready_path=None) as url:
        run = run_job(o.path, tmp_path / "1", ci_env(o, url), ref=REF["merged_result"],
                      inputs={"post": "false"})
    assert run.code == 3
    assert standin.calls == []
    assert "not posted (post: false)" in run.log
