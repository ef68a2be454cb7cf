"""The serverless path: action.yml's steps (the CLI, then app.github.post_comment) against the stand-in."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from action_runner import run_action
from github_helpers import MANIFEST, NUMBER, OWNER, REPO, TOKEN, manifest, raycluster_yaml
from github_standin import GitHubStandIn
from serverutil import running_server

from app.github.comment import MARKER
from app.github.post_comment import verdict_from_files


def _git(repo: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"}
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True,
                          env=env).stdout.strip()


def _repo(tmp_path: Path, base: str, head: str) -> tuple[Path, str, str]:
    repo = tmp_path / "repo"
    (repo / "k8s").mkdir(parents=True)
    _git(repo, "init", "-q", "-b", "main")
    (repo / MANIFEST).write_text(base)
    (repo / "app").mkdir()  # a repository with its own app/ package must not shadow ours
    (repo / "app" / "__init__.py").write_text("raise SystemExit('wrong app package')\n")
    _git(repo, "add", ".")
    _git(repo, "commit", "-q", "-m", "base")
    base_sha = _git(repo, "rev-parse", "HEAD")
    (repo / MANIFEST).write_text(head)
    _git(repo, "commit", "-q", "-am", "head")
    return repo, base_sha, _git(repo, "rev-parse", "HEAD")


def _run_action(repo: Path, tmp_path: Path, api_url: str, base: str, head: str) -> dict[str, Any]:
    """The Action on a pull_request event, with ``base`` and ``head`` given as inputs."""
    repo_ref = {"full_name": f"{OWNER}/{REPO}"}
    event = {"action": "synchronize", "number": NUMBER,
             "pull_request": {"number": NUMBER, "head": {"sha": head, "repo": repo_ref},
                              "base": {"sha": base, "ref": "main", "repo": repo_ref}},
             "repository": repo_ref}
    return run_action(repo, tmp_path, api_url, "pull_request", event, base=base, head=head,
                      pull_request=str(NUMBER), github_token=TOKEN)


def test_action_posts_the_sticky_comment_and_status(tmp_path):
    repo, base, head = _repo(tmp_path, manifest("sample.base.yaml"), manifest("sample.head.yaml"))
    standin = GitHubStandIn(token=TOKEN)
    with running_server(standin.app, ready_path=None) as url:
        run = _run_action(repo, tmp_path, url, base, head)
    assert run["outputs"]["exit-code"] == "0"
    assert [(name, code) for name, code, _ in run["steps"]] == [
        ("Analyse the RayService changes", 0), ("Post the sticky comment and the status", 0)]
    [comment] = standin.comments[(OWNER, REPO, NUMBER)]
    assert comment["body"].startswith(MARKER)
    assert "rayservice-sample" in comment["body"]
    assert [(s["sha"], s["state"], s["context"]) for s in standin.statuses] == [
        (head, "success", "rayservice-impact")]
    assert standin.statuses[0]["description"].startswith("approve: default/rayservice-sample")


def test_action_hold_edits_the_comment_fails_the_status_and_the_step(tmp_path):
    repo, base, head = _repo(tmp_path, manifest("llm.base.yaml"), manifest("llm.head.yaml"))
    standin = GitHubStandIn(token=TOKEN)
    standin.comments[(OWNER, REPO, NUMBER)] = [
        {"id": 1, "body": "a human's comment"},
        {"id": 2, "body": f"{MARKER}\nolder result\n", "user": {"login": "github-actions[bot]"}}]
    with running_server(standin.app, ready_path=None) as url:
        run = _run_action(repo, tmp_path, url, base, head)
    assert run["outputs"]["exit-code"] == "3"
    assert [(name, code) for name, code, _ in run["steps"]][-1] == ("Gate", 1)
    comments = standin.comments[(OWNER, REPO, NUMBER)]
    assert [c["id"] for c in comments] == [1, 2]
    assert "ray-serve-llm" in comments[1]["body"]
    assert standin.statuses[0]["state"] == "failure"


def test_action_invalid_manifest_is_an_error_status(tmp_path):
    broken = "apiVersion: ray.io/v1\nkind: RayService\nmetadata: {name: x\n"
    repo, base, head = _repo(tmp_path, manifest("sample.base.yaml"), broken)
    standin = GitHubStandIn(token=TOKEN)
    with running_server(standin.app, ready_path=None) as url:
        run = _run_action(repo, tmp_path, url, base, head)
    assert run["outputs"]["exit-code"] == "2"
    assert standin.statuses[0]["state"] == "error"
    assert MANIFEST in standin.comments[(OWNER, REPO, NUMBER)][0]["body"]


def test_post_comment_without_rayservice_change_posts_no_comment(tmp_path):
    (tmp_path / "r.md").write_text("approve: no RayService, RayCluster, RayJob or RayCronJob in the change\n")
    (tmp_path / "r.json").write_text('{"decision": "approve", "summary": "approve: none", "resources": []}')
    standin = GitHubStandIn(token=TOKEN)
    with running_server(standin.app, ready_path=None) as url:
        proc = subprocess.run(
            [sys.executable, "-m", "app.github.post_comment", "--repo", f"{OWNER}/{REPO}", "--pr", "5",
             "--sha", "a" * 40, "--markdown", str(tmp_path / "r.md"), "--json", str(tmp_path / "r.json"),
             "--exit-code", "0", "--api-url", url],
            env={**os.environ, "GITHUB_TOKEN": TOKEN}, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert standin.comments == {}
    states = [(s["state"], s["description"]) for s in standin.statuses]
    assert states == [("success", "No RayService, RayCluster, RayJob or RayCronJob changes")]


def test_post_comment_github_refusal_exits_1(tmp_path):
    (tmp_path / "r.md").write_text("x\n")
    standin = GitHubStandIn(token="another-token")
    with running_server(standin.app, ready_path=None) as url:
        proc = subprocess.run(
            [sys.executable, "-m", "app.github.post_comment", "--repo", f"{OWNER}/{REPO}", "--pr", "5",
             "--sha", "a" * 40, "--markdown", str(tmp_path / "r.md"), "--exit-code", "0", "--api-url", url],
            env={**os.environ, "GITHUB_TOKEN": TOKEN}, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1
    assert "401" in proc.stderr
    assert TOKEN not in proc.stderr + proc.stdout


@pytest.mark.parametrize(("code", "report", "error", "state"), [
    (0, '{"summary": "approve: a", "resources": [{}]}', "", "success"),
    (3, '{"summary": "hold: a", "resources": [{}]}', "", "failure"),
    (0, '{"summary": "approve: none", "resources": []}', "", "success"),
    (2, None, "rayservice-impact: invalid input: k8s/a.yaml: document 1, line 3", "error"),
    (1, None, "", "error"),
])
def test_verdict_from_files_maps_exit_codes(code, report, error, state):
    verdict = verdict_from_files("# md", report, code, error)
    assert verdict.state == state
    assert len(verdict.description) <= 140
    if error:
        assert "document 1, line 3" in verdict.description


def test_action_renders_the_overlay_image_bump_like_the_cli(tmp_path, capsys):
    """The GitOps layout of docs/argocd.md: an image bump through the overlay's kustomization.yaml
    holds in the Action, and the comment carries the very report ``rayservice-impact git`` prints."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "render"))
    from gitops import commit, edit_yaml, make_repo

    from app.cli import main
    from app.render.kustomize import find_tool

    if find_tool("kubectl") is None:
        pytest.skip("kubectl is not installed")
    repo = make_repo(tmp_path)
    base = _git(repo, "rev-parse", "HEAD")
    edit_yaml(repo, "overlays/prod/kustomization.yaml",
              lambda d: d["images"][0].update(newTag="2.53.0-py311-cu128"))
    head = commit(repo)
    standin = GitHubStandIn(token=TOKEN)
    with running_server(standin.app, ready_path=None) as url:
        run = _run_action(repo, tmp_path, url, base, head)
    assert run["outputs"]["exit-code"] == "3", run["steps"]
    [comment] = standin.comments[(OWNER, REPO, NUMBER)]
    assert [s["state"] for s in standin.statuses] == ["failure"]
    assert main(["git", base, head, "--repo", str(repo), "--format", "markdown"]) == 3
    cli_markdown = capsys.readouterr().out
    assert cli_markdown.strip() in comment["body"]
    assert "overlays/prod (kustomize)" in comment["body"] and "`ray-prod/ray-serve-llm`" in comment["body"]


def test_action_pull_changing_only_a_raycluster_is_analysed(tmp_path):
    """The Action's `rayservice-impact git` keeps a RayCluster file: analysed, not "no change"."""
    repo, base, head = _repo(tmp_path, raycluster_yaml(image="2.52.0"), raycluster_yaml(image="2.53.0"))
    standin = GitHubStandIn(token=TOKEN)
    with running_server(standin.app, ready_path=None) as url:
        run = _run_action(repo, tmp_path, url, base, head)
    report = json.loads((Path(run["outputs"]["dir"]) / "report.json").read_text())
    assert [(r["kind"], r["name"]) for r in report["resources"]] == [("RayCluster", "raycluster-batch")]
    assert [s["description"] for s in standin.statuses] != [
        "No RayService, RayCluster, RayJob or RayCronJob changes"]
    assert "raycluster-batch" in standin.statuses[0]["description"]
