"""Merge queues: a ``merge_group`` ``checks_requested`` event is analysed like a pull request (the
group's base against its head, both rendered) and the ``rayservice-impact`` status (and, with an
App, check run) goes on the group's head SHA, with no comment: without it a required check never
reports in a merge queue.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from github_helpers import (
    OWNER,
    REPO,
    TAG,
    TOKEN,
    app_standin,
    github_service,
    gitops_module,
    merge_group_event,
    payload_bytes,
    post_event,
    settle,
    statuses_for,
    wait_for,
    writes,
)
from github_standin import GitHubStandIn

from app.github.change import PullRequest

pytestmark = pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")

g = gitops_module()


def queued_group(tmp_path: Path, *, pages: int = 0) -> tuple[Path, str, str]:
    """(repository, main's tip, the merge group's head: main + a PR bumping the LLM image, built
    the way the merge queue does, on a gh-readonly-queue branch)."""
    repo = g.make_repo(tmp_path)
    base = g.git(repo, "rev-parse", "HEAD")
    g.git(repo, "checkout", "-q", "-b", "feature")
    g.edit_yaml(repo, "overlays/prod/kustomization.yaml", lambda d: d["images"][0].update(newTag=TAG))
    for i in range(pages):
        g.write(repo, f"docs/page-{i:03}.md", f"page {i}\n")
    pr_head = g.commit(repo, "bump")
    g.git(repo, "checkout", "-q", "-b", f"gh-readonly-queue/main/pr-2-{base}", base)
    g.git(repo, "merge", "-q", "--no-ff", "-m", "Merge pull request #2", pr_head)
    group_head = g.git(repo, "rev-parse", "HEAD")
    g.git(repo, "checkout", "-q", "main")
    return repo, base, group_head


def test_merge_group_fixture_has_githubs_shape() -> None:
    import json

    data = json.loads(payload_bytes("merge_group.checks_requested.json"))
    assert data["action"] == "checks_requested"
    assert set(data["merge_group"]) >= {"head_sha", "head_ref", "base_sha", "base_ref", "head_commit"}
    pr = PullRequest.from_merge_group(data)
    assert (pr.number, pr.base_ref, pr.head_sha) == (0, "master", data["merge_group"]["head_sha"])
    assert pr.key == ("codertocat", "hello-world", data["merge_group"]["head_ref"])
    assert pr.is_merge_group and "merge group gh-readonly-queue/master/pr-2-" in pr.full_name


def test_merge_group_gets_the_status_on_its_head_and_no_comment(tmp_path: Path) -> None:
    repo, base, head = queued_group(tmp_path)
    with github_service(GitHubStandIn(token=TOKEN)) as (url, gh):
        gh.git_repos[(OWNER, REPO)] = repo
        ignored = post_event(url, "merge_group", merge_group_event(base, head, action="destroyed"))
        resp = post_event(url, "merge_group", merge_group_event(base, head))
        [status] = wait_for(lambda: statuses_for(gh, head), timeout=30, what="the group's status")
        settle(gh, 0.1)
    assert ignored.json()["status"] == "ignored"
    assert resp.status_code == 202 and resp.json()["status"] == "queued"
    assert (status["state"], status["context"]) == ("failure", "rayservice-impact")
    assert status["description"].startswith("hold: ray-prod/ray-serve-llm → new-cluster")
    assert gh.comments == {}
    assert writes(gh) == [("POST", f"/repos/{OWNER}/{REPO}/statuses/{head}")]
    assert gh.calls_to("GET", "/issues/") == [] and gh.calls_to("GET", "/pulls/") == []
    assert sorted(c.path.rsplit("/", 1)[1] for c in gh.calls_to("GET", "/tarball/")) == sorted([base, head])
    assert [c.path for c in gh.calls_to("GET", "/compare/")] == [
        f"/repos/{OWNER}/{REPO}/compare/{base}...{head}"]


def test_merge_group_with_an_app_posts_a_check_run_and_lists_trees_past_300_files(tmp_path: Path) -> None:
    repo, base, head = queued_group(tmp_path, pages=305)
    standin, key_file = app_standin(tmp_path, OWNER, REPO)
    with github_service(standin, github_app_id="31337", github_app_private_key_file=str(key_file),
                        github_token=None) as (url, gh):
        gh.git_repos[(OWNER, REPO)] = repo
        post_event(url, "merge_group", merge_group_event(base, head))
        wait_for(lambda: gh.check_runs, timeout=30, what="a check run")
        settle(gh, 0.1)
    [run] = gh.check_runs
    assert (run["head_sha"], run["name"], run["conclusion"]) == (head, "rayservice-impact", "failure")
    assert [s["state"] for s in statuses_for(gh, head)] == ["failure"]
    assert gh.comments == {}
    # the comparison lists 300 of 306 files: both trees are listed and compared instead
    assert sorted(c.path.rsplit("/", 1)[1] for c in gh.calls_to("GET", "/git/trees/")) == sorted([base, head])
    assert all(c.query == {"recursive": "1"} for c in gh.calls_to("GET", "/git/trees/"))
