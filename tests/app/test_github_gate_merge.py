"""The gate judges what the merge would change: the base branch's tip against GitHub's test merge
commit (or, when GitHub says the PR cannot merge, its merge base against its head), never the
event's stale ``base.sha`` against the head.

Real git repositories (tests/render/gitops.py), real kubectl, the GitHub stand-in on uvicorn
serving real merge commits (``git merge-tree``), the real service.
"""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path
from typing import Any

import httpx
import pytest
from github_helpers import (
    OWNER,
    REPO,
    TAG,
    TOKEN,
    github_service,
    gitops_module,
    post_event,
    pull_event,
    settle,
    statuses_for,
    wait_for,
)
from github_standin import GitHubStandIn
from serverutil import running_server

from app.cli import main
from app.clients.github import GitHubClient, static_token
from app.github.change import PullRequest
from app.github.comment import MARKER, state_of
from app.github.revisions import NOTE_COMPARE_CAP, pull_revisions

pytestmark = pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")

g = gitops_module()
FRUIT = "overlays/prod/fruit.yaml"
KUSTOMIZATION = "overlays/prod/kustomization.yaml"


def fruit(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "fruit"}, "data": {"fruit": name}}


def bump(repo: Path) -> None:
    g.edit_yaml(repo, KUSTOMIZATION, lambda d: d["images"][0].update(newTag=TAG))


def fruit_repo(tmp_path: Path) -> tuple[Path, str]:
    """The GitOps repository with a ConfigMap ``fruit`` in the prod overlay, next to the LLM
    RayService: (repository, the commit the pull requests branch from)."""
    repo = g.make_repo(tmp_path)
    g.write(repo, FRUIT, fruit("apple"))
    g.edit_yaml(repo, KUSTOMIZATION, lambda d: d["resources"].append("fruit.yaml"))
    return repo, g.commit(repo, "fruit")


def branch(repo: Path, name: str, start: str, change: Any) -> str:
    g.git(repo, "checkout", "-q", "-b", name, start)
    change(repo)
    sha = g.commit(repo, name)
    g.git(repo, "checkout", "-q", "main")
    return sha


def run_event(url: str, gh: GitHubStandIn, event: dict[str, Any], head: str, timeout: float = 30
              ) -> tuple[dict[str, Any], str | None]:
    number = event["pull_request"]["number"]
    before = len(statuses_for(gh, head))
    assert post_event(url, "pull_request", event).status_code == 202
    wait_for(lambda: len(statuses_for(gh, head)) > before, timeout=timeout, what="a status")
    settle(gh, 0.1)
    status = statuses_for(gh, head)[-1]
    comments = gh.comments.get((OWNER, REPO, number)) or []
    return status, comments[0]["body"] if comments else None


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, Any]]:
    capsys.readouterr()
    code = main(["git", *args, "--format", "json"])
    out = capsys.readouterr()
    return code, json.loads(out.out) if out.out else {"stderr": out.err}


def test_gate_main_moved_on_the_phantom_hold_is_gone(tmp_path: Path, capsys) -> None:
    """A PR touches only fruit.yaml; main bumps the RayService's image after the PR branched. The
    event's base.sha (main's new tip) against the head shows main's bump reversed: a hold for a
    RayService the PR never touched. Judged on the merge, it is approved."""
    repo, start = fruit_repo(tmp_path)
    head = branch(repo, "feature", start, lambda r: g.write(r, FRUIT, fruit("banana")))
    bump(repo)
    tip = g.commit(repo, "main bumps the LLM image")

    # The old comparisons: base.sha..head (the Action's and the CLI's two-dot form) holds ...
    code, report = cli(capsys, tip, head, "--repo", str(repo))
    assert code == 3 and report["decision"] == "hold"
    assert report["resources"][0]["name"] == "ray-serve-llm"
    # ... the merge-base form (git A...B) sees only the PR's change
    code, report = cli(capsys, f"{tip}...{head}", "--repo", str(repo))
    assert code == 0 and report["decision"] == "approve"

    with github_service(GitHubStandIn(token=TOKEN)) as (url, gh):
        # 1) as the webhook did (GitHub does not show the PR: the event's base.sha and head as they are)
        gh.add_git_merge_pull(OWNER, REPO, 1, repo, base_ref="main", head_sha=head)
        del gh.pulls[(OWNER, REPO, 1)]
        old_status, old_body = run_event(url, gh, pull_event(1, tip, head), head)
        # 2) the merge: GitHub still computing mergeability for the first two reads
        pull = gh.add_git_merge_pull(OWNER, REPO, 2, repo, base_ref="main", head_sha=head,
                                     mergeable_after=2)
        status, body = run_event(url, gh, pull_event(2, tip, head), head)
    merge = pull["merge_commit_sha"]
    assert old_status["state"] == "failure"
    assert old_status["description"].startswith("hold: ray-prod/ray-serve-llm")
    assert old_body is not None and "did not show this pull request" in old_body
    # judged on what the merge deploys: main's tip against the test merge commit
    assert status["state"] == "success"
    assert status["sha"] == head            # the status stays on the PR's head, never the merge commit
    tarballs = [c.path.rsplit("/", 1)[1] for c in gh.calls_to("GET", "/tarball/")]
    assert sorted(tarballs[2:]) == sorted([tip, merge])
    assert g.git(repo, "rev-parse", f"{merge}^1", f"{merge}^2").split() == [tip, head]
    assert len(gh.calls_to("GET", r"/pulls/2$")) == 3              # mergeable: null twice, then true
    compare = gh.calls_to("GET", "/compare/")[-1].path
    assert compare == f"/repos/{OWNER}/{REPO}/compare/{tip}...{merge}"
    assert body is not None and "rayservice-impact: **approve**" in body
    assert "no change to this RayService" in body
    assert f"base `{tip[:7]}` (main) → merge `{merge[:7]}` of head `{head[:7]}`" in body
    assert "[!WARNING]" not in body


def test_gate_unmergeable_pr_falls_back_to_merge_base_and_says_so(tmp_path: Path) -> None:
    repo, start = fruit_repo(tmp_path)

    def change(r: Path) -> None:
        g.write(r, FRUIT, fruit("banana"))
        bump(r)

    head = branch(repo, "feature", start, change)
    g.write(repo, FRUIT, fruit("cherry"))       # main changes the same line: the PR conflicts
    tip = g.commit(repo, "main picks cherries")
    with github_service(GitHubStandIn(token=TOKEN)) as (url, gh):
        pull = gh.add_git_merge_pull(OWNER, REPO, 3, repo, base_ref="main", head_sha=head)
        status, body = run_event(url, gh, pull_event(3, tip, head), head)
    assert (pull["mergeable"], pull["merge_commit_sha"]) == (False, None)
    assert status["state"] == "failure"
    assert status["description"].startswith("hold: ray-prod/ray-serve-llm → new-cluster")
    assert body is not None and body.startswith(MARKER) and state_of(body) == "failure"
    assert "cannot be merged into `main`" in body and f"merge base `{start[:7]}`" in body
    assert body.index("cannot be merged") < body.index("rayservice-impact: **hold**")
    assert f"rayservice-impact · merge base `{start[:7]}` → head `{head[:7]}`" in body
    tarballs = sorted(c.path.rsplit("/", 1)[1] for c in gh.calls_to("GET", "/tarball/"))
    assert tarballs == sorted([start, head])     # the merge base and the head: main's cherry is not in it


def test_gate_merge_with_over_300_changed_files_uses_the_pr_files_list(tmp_path: Path) -> None:
    repo, start = fruit_repo(tmp_path)

    def change(r: Path) -> None:
        for i in range(305):
            g.write(r, f"docs/page-{i:03}.md", f"page {i}\n")
        bump(r)

    head = branch(repo, "feature", start, change)
    with github_service(GitHubStandIn(token=TOKEN)) as (url, gh):
        pull = gh.add_git_merge_pull(OWNER, REPO, 4, repo, base_ref="main", head_sha=head)
        status, body = run_event(url, gh, pull_event(4, start, head), head)
    assert len(gh.files[(OWNER, REPO, 4)]) == 306
    assert status["state"] == "failure"
    assert body is not None and NOTE_COMPARE_CAP in body
    assert f"merge `{pull['merge_commit_sha'][:7]}` of head `{head[:7]}`" in body


def test_gate_stale_test_merge_is_compared_with_what_it_was_built_on(tmp_path: Path) -> None:
    """main moved after GitHub built the test merge: the merge commit's own base is compared
    (never main's newer tip: that would mix main's new changes in, reversed), and it says so."""
    repo, start = fruit_repo(tmp_path)
    head = branch(repo, "feature", start, bump)
    standin = GitHubStandIn(token=TOKEN)
    pull = standin.add_git_merge_pull(OWNER, REPO, 5, repo, base_ref="main", head_sha=head)
    g.write(repo, FRUIT, fruit("kiwi"))
    tip = g.commit(repo, "main moves on")
    pr = PullRequest(OWNER, REPO, 5, start, head, base_ref="main")

    async def go(url: str) -> Any:
        async with httpx.AsyncClient(timeout=30) as http:
            gh = GitHubClient(http, url, static_token(TOKEN))
            return await pull_revisions(gh, pr, frozenset({"x"}), 1, waits=(0.01,))

    with running_server(standin.app, ready_path=None) as url:
        revisions = asyncio.run(go(url))
    assert (revisions.form, revisions.base, revisions.head) == ("merge", start, pull["merge_commit_sha"])
    assert revisions.changed == frozenset({KUSTOMIZATION})
    assert f"has moved on to `{tip[:7]}`" in revisions.notes[0]
    assert len(standin.calls_to("GET", r"/pulls/5$")) == 2   # asked again once, then settled for it


def test_cli_git_three_dot_range_is_the_merge_base_form(tmp_path: Path, capsys) -> None:
    repo, start = fruit_repo(tmp_path)
    head = branch(repo, "feature", start, bump)
    g.write(repo, FRUIT, fruit("cherry"))
    tip = g.commit(repo, "main moves on")
    r = ("--repo", str(repo))
    three = cli(capsys, f"{tip}...{head}", *r)
    assert three == cli(capsys, start, head, *r)                 # the merge base, explicitly
    assert three[0] == 3 and three[1]["resources"][0]["rollout"] == "new-cluster"
    assert cli(capsys, "main...feature", *r) == three            # branch names, as git takes them
    assert cli(capsys, f"{tip}..{head}", *r) == cli(capsys, tip, head, *r)   # two dots: as they are
    g.git(repo, "checkout", "-q", "feature")
    assert cli(capsys, "main...", *r) == three                   # an empty side is HEAD
    g.git(repo, "checkout", "-q", "main")
    code, out = cli(capsys, f"{tip}...{head}", head, *r)
    assert code == 2 and "is a range already" in out["stderr"]
    code, out = cli(capsys, f"{tip}...nope", *r)
    assert code == 2 and "unknown revision 'nope'" in out["stderr"]
    code, out = cli(capsys, tip, *r)
    assert code == 2 and "BASE...HEAD" in out["stderr"]
