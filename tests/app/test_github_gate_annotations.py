"""Check-run annotations where the change is (GitHub App): the overlay line, batched at 50."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import httpx
import pytest
from github_helpers import TOKEN, app_standin, github_service, settle, wait_for
from github_standin import GitHubStandIn
from serverutil import running_server
from test_github_render import NEW_TAG, OWNER, REPO, git, image_bump, make_repo, run_webhook

from app.clients.github import GitHubClient, RetryPolicy, static_token
from app.render.kustomize import find_tool

pytestmark = pytest.mark.skipif(find_tool("kubectl") is None, reason="kubectl is not installed")


def test_check_run_annotates_the_overlay_line_that_holds(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    base = git(repo, "rev-parse", "HEAD")
    head = image_bump(repo)
    standin, key_file = app_standin(tmp_path, OWNER, REPO)
    with github_service(standin, github_app_id="31337", github_app_private_key_file=str(key_file),
                        github_token=None) as (url, gh):
        run_webhook(url, gh, repo, base, head)
        wait_for(lambda: gh.check_runs, timeout=30, what="a check run")
        settle(gh, 0.1)
    [run] = gh.check_runs
    assert run["conclusion"] == "failure"
    annotations = run["output"]["annotations"]
    failures = [a for a in annotations if a["annotation_level"] == "failure"]
    assert failures and {a["path"] for a in failures} == {"overlays/prod/kustomization.yaml"}
    line = failures[0]["start_line"]
    assert (repo / "overlays/prod/kustomization.yaml").read_text().splitlines()[line - 1].strip() == \
        f"newTag: {NEW_TAG}"
    assert "hold (new-cluster) ray-prod/ray-serve-llm" in failures[0]["title"]


def test_annotations_go_fifty_per_request() -> None:
    standin = GitHubStandIn(token=TOKEN)
    standin.app_public_key = b"any"  # check runs need an App: our token stands for its installation token
    standin.issued_tokens.append(TOKEN)
    annotations = [{"path": "k8s/rs.yaml", "start_line": i + 1, "end_line": i + 1,
                    "annotation_level": "warning", "title": f"t{i}", "message": "m"} for i in range(120)]

    async def body(gh: GitHubClient) -> Any:
        return await gh.create_check_run(OWNER, REPO, "a" * 40, "failure", "hold", "summary", annotations)

    with running_server(standin.app, ready_path=None) as url:
        async def main() -> Any:
            async with httpx.AsyncClient() as http:
                gh = GitHubClient(http, url, static_token(TOKEN), retry=RetryPolicy(write_interval=0))
                return await body(gh)
        asyncio.run(main())
    [run] = standin.check_runs
    assert len(run["output"]["annotations"]) == 120
    assert [len(c.body["output"].get("annotations") or []) for c in standin.calls
            if "/check-runs" in c.path] == [50, 50, 20]
