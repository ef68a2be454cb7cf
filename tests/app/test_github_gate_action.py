"""The composite Action on the events it meets: a pull request (GitHub's test merge commit checked
out, as actions/checkout does), a pull request from a fork (read-only token: job summary, no
writes, the job's outcome from the verdict, a notice), a token that turns out read-only (403 on
the first write), a merge queue's group, a checkout of the head instead of the merge.

action.yml's shell steps run as the runner runs them (bash, GITHUB_OUTPUT, GITHUB_STEP_SUMMARY,
GITHUB_EVENT_PATH), against the GitHub stand-in on uvicorn; setup-python and pip install are
skipped (this venv has the package).
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from action_runner import run_action
from github_helpers import NUMBER, OWNER, REPO, TAG, TOKEN, gitops_module, writes
from github_standin import GitHubStandIn
from serverutil import running_server

from app.github.action import SUMMARY_MAX_BYTES, Plan, summary_text
from app.github.comment import MARKER

pytestmark = pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")

g = gitops_module()
FRUIT = "overlays/prod/fruit.yaml"


def pull_request(number: int, base: str, head: str, *, fork: bool = False) -> dict[str, Any]:
    """The parts of a pull_request event the Action reads."""
    base_repo = {"full_name": f"{OWNER}/{REPO}", "fork": False}
    head_repo = {"full_name": f"contributor/{REPO}", "fork": True} if fork else base_repo
    return {"action": "synchronize", "number": number,
            "pull_request": {"number": number, "head": {"sha": head, "ref": "changes", "repo": head_repo},
                             "base": {"sha": base, "ref": "main", "repo": base_repo}},
            "repository": {"full_name": f"{OWNER}/{REPO}"}}


def checkout_merge(repo: Path, base: str, head: str) -> str:
    """What actions/checkout leaves for a pull_request event: GitHub's test merge commit
    (refs/pull/N/merge: the base branch's tip, then the PR's head, as parents), detached."""
    g.git(repo, "checkout", "-q", "--detach", base)
    g.git(repo, "merge", "-q", "--no-ff", "-m", f"Merge {head} into {base}", head)
    return g.git(repo, "rev-parse", "HEAD")


def moved_on(tmp_path: Path, pr_change: Any, main_change: Any) -> tuple[Path, str, str, str]:
    """(repository, the stale base.sha, main's tip, the PR's head): the PR branched from the
    first; main moved on since."""
    repo = g.make_repo(tmp_path)
    g.write(repo, FRUIT, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "fruit"},
                          "data": {"fruit": "apple"}})
    g.edit_yaml(repo, "overlays/prod/kustomization.yaml", lambda d: d["resources"].append("fruit.yaml"))
    start = g.commit(repo, "fruit")
    g.git(repo, "checkout", "-q", "-b", "changes")
    pr_change(repo)
    head = g.commit(repo, "the PR")
    g.git(repo, "checkout", "-q", "main")
    main_change(repo)
    return repo, start, g.commit(repo, "main moves on"), head


def banana(repo: Path) -> None:
    g.write(repo, FRUIT, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "fruit"},
                          "data": {"fruit": "banana"}})


def bump(repo: Path) -> None:
    g.edit_yaml(repo, "overlays/prod/kustomization.yaml", lambda d: d["images"][0].update(newTag=TAG))


def readme(repo: Path) -> None:
    g.write(repo, "README.md", "# ray gitops, documented\n")


def test_action_pr_compares_the_test_merge_and_posts_on_the_head(tmp_path: Path) -> None:
    """main bumped the LLM image after the PR (fruit only) branched: judged on the test merge the
    runner checked out, the PR changes no RayService, so it is approved (base.sha..head held)."""
    repo, stale, tip, head = moved_on(tmp_path, banana, bump)
    merge = checkout_merge(repo, tip, head)
    standin = GitHubStandIn(token=TOKEN)
    with running_server(standin.app, ready_path=None) as url:
        run = run_action(repo, tmp_path, url, "pull_request", pull_request(NUMBER, tip, head))
    assert run["outputs"]["exit-code"] == "0", run["steps"]
    assert [(name, code) for name, code, _ in run["steps"]] == [
        ("Analyse the RayService changes", 0), ("Post the sticky comment and the status", 0)]
    # the status goes on the head, not on the merge commit
    assert [(s["sha"], s["state"]) for s in standin.statuses] == [(head, "success")]
    [comment] = standin.comments[(OWNER, REPO, NUMBER)]
    assert comment["body"].startswith(MARKER) and "**approve**" in comment["body"]
    assert f"base `{tip[:7]}` → merge `{merge[:7]}` of head `{head[:7]}`" in comment["body"]
    assert "rayservice-impact: **approve**" in run["summary"]
    assert stale != tip


def test_action_fork_pr_writes_the_summary_posts_nothing_and_fails_on_hold(tmp_path: Path) -> None:
    repo, _, tip, head = moved_on(tmp_path, bump, readme)
    checkout_merge(repo, tip, head)
    standin = GitHubStandIn(token=TOKEN)
    with running_server(standin.app, ready_path=None) as url:
        run = run_action(repo, tmp_path, url, "pull_request", pull_request(NUMBER, tip, head, fork=True))
        relaxed = run_action(repo, tmp_path, url, "pull_request", pull_request(NUMBER, tip, head, fork=True),
                             fail_on_hold="false")
    assert run["outputs"]["exit-code"] == "3" and run["outputs"]["post"] == "false"
    names = [(name, code) for name, code, _ in run["steps"]]
    assert names == [("Analyse the RayService changes", 0), ("Post the sticky comment and the status", 0),
                     ("Gate", 1)]                                  # the job's outcome is the verdict
    post_log = run["steps"][1][2]
    assert post_log.startswith("::notice title=rayservice-impact::not posted: a pull request from a fork")
    assert len(post_log.strip().splitlines()) == 1
    assert standin.calls == []                                     # not one call, let alone a write
    assert "rayservice-impact: **hold**" in run["summary"] and "ray-prod/ray-serve-llm" in run["summary"]
    assert "read-only token" in run["summary"]
    assert [name for name, _, _ in relaxed["steps"]][-1] != "Gate"   # fail-on-hold: false keeps it green


def test_action_read_only_token_is_a_notice_on_the_first_write(tmp_path: Path) -> None:
    """Not a fork by the event, yet the token cannot write (Dependabot, a restricted token):
    GitHub's 403 on the first write is a notice, not a red job; nothing else is tried."""
    repo, _, tip, head = moved_on(tmp_path, bump, readme)
    checkout_merge(repo, tip, head)
    standin = GitHubStandIn(token=TOKEN)
    standin.fail("POST", r"/issues/\d+/comments$", 403, times=5, body={
        "message": "Resource not accessible by integration",
        "documentation_url": "https://docs.github.com/rest/issues/comments#create-an-issue-comment"})
    with running_server(standin.app, ready_path=None) as url:
        run = run_action(repo, tmp_path, url, "pull_request", pull_request(NUMBER, tip, head))
    assert [(name, code) for name, code, _ in run["steps"]] == [
        ("Analyse the RayService changes", 0), ("Post the sticky comment and the status", 0), ("Gate", 1)]
    assert "::notice title=rayservice-impact::not posted: the token cannot write" in run["steps"][1][2]
    assert "403" in run["steps"][1][2] and TOKEN not in run["steps"][1][2]
    assert writes(standin) == [("POST", f"/repos/{OWNER}/{REPO}/issues/{NUMBER}/comments")]
    assert standin.statuses == [] and standin.comments == {}


def test_action_merge_group_posts_the_status_on_the_group_head_only(tmp_path: Path) -> None:
    repo, _, tip, head = moved_on(tmp_path, bump, readme)
    group = checkout_merge(repo, tip, head)   # the queue's group: main + the PR, on its own branch
    event = {"action": "checks_requested",
             "merge_group": {"head_sha": group, "base_sha": tip, "base_ref": "refs/heads/main",
                             "head_ref": f"refs/heads/gh-readonly-queue/main/pr-{NUMBER}-{tip}"}}
    standin = GitHubStandIn(token=TOKEN)
    with running_server(standin.app, ready_path=None) as url:
        run = run_action(repo, tmp_path, url, "merge_group", event)
    assert run["outputs"]["exit-code"] == "3" and run["outputs"]["pr"] == ""
    assert writes(standin) == [("POST", f"/repos/{OWNER}/{REPO}/statuses/{group}")]
    assert [(s["sha"], s["state"]) for s in standin.statuses] == [(group, "failure")]
    assert standin.comments == {}


def test_action_head_checkout_compares_the_merge_base_and_says_so(tmp_path: Path) -> None:
    """A workflow that checks out the PR's head (``ref: ${{ github.event.pull_request.head.sha }}``)
    has no merge to judge: the merge base with the base branch → the head, said in the comment."""
    repo, start, tip, head = moved_on(tmp_path, bump, readme)
    g.git(repo, "checkout", "-q", "--detach", head)
    standin = GitHubStandIn(token=TOKEN)
    with running_server(standin.app, ready_path=None) as url:
        run = run_action(repo, tmp_path, url, "pull_request", pull_request(NUMBER, tip, head))
    assert run["outputs"]["exit-code"] == "3"
    [comment] = standin.comments[(OWNER, REPO, NUMBER)]
    assert "is not GitHub's test merge commit" in comment["body"]
    assert "merge base of `origin/main`" not in comment["body"]   # no origin remote branch here ...
    assert f"merge base of `{tip}` → head `{head[:7]}`" in comment["body"]   # ... the event's base
    assert [(s["sha"], s["state"]) for s in standin.statuses] == [(head, "failure")]
    assert start != tip


def test_action_summary_stays_under_githubs_1_mib() -> None:
    markdown = "## 🔴 rayservice-impact: **hold**\n\n" + "<details>\n\n```text\n" + "ü line\n" * 400_000
    text = summary_text(Plan(skip="not posted: fork", notes=["a note"]), markdown, "stderr line\n")
    assert len(text.encode("utf-8")) <= SUMMARY_MAX_BYTES
    assert "## 🔴 rayservice-impact: **hold**" in text[:400] and "not posted: fork" in text
    assert text.count("```") % 2 == 0 and "truncated" in text


def test_action_footer_never_cuts_a_branch_name() -> None:
    """`base`/`head` inputs may be branch names: shown whole; only full SHAs are shortened (issue 24)."""
    from app.github.action import make_plan

    base, head = "origin/release/2024-summer-gpu-rollout", "feature/bump-the-llm-image-to-2.53"
    plan = make_plan({"BASE": base, "HEAD": head}, "workflow_dispatch", {})
    assert plan.footer == f"rayservice-impact · {base} → {head}"
    sha = "0123456789abcdef0123456789abcdef01234567"
    plan = make_plan({"BASE": f"{base}...{sha}"}, "workflow_dispatch", {})
    assert plan.footer == f"rayservice-impact · {base}...{sha[:12]}"
