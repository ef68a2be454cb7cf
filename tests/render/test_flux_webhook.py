"""The GitHub webhook service on a Flux repository: real uvicorn servers, the GitHub stand-in and a
real git repository (tests/app/github_helpers.py), rendered from the revisions' tarballs. The
repository's URL is the one GitHub names, so the bootstrap GitRepository must point there."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from fluxrepo import kustomization, make_flux_repo
from gitops import IMAGE, NEW_TAG, commit, edit_yaml, git, write

from app.render.kustomize import find_tool

pytestmark = pytest.mark.skipif(find_tool("kubectl") is None, reason="kubectl is not installed")

ROOT = Path(__file__).resolve().parents[2]
FIGHT = ROOT / "samples" / "raycluster-autoscaler-fight"


def test_webhook_judges_flux_roots_and_gives_flux_advice(tmp_path: Path) -> None:
    sys.path.insert(0, str(ROOT / "tests" / "app"))
    from github_helpers import (
        OWNER,
        REPO,
        TOKEN,
        github_service,
        post_event,
        pull_event,
        statuses_for,
        wait_for,
    )
    from github_standin import GitHubStandIn

    repo = make_flux_repo(tmp_path)
    sync = repo / "clusters/prod/flux-system/gotk-sync.yaml"
    write(repo, "clusters/prod/flux-system/gotk-sync.yaml", sync.read_text().replace(
        "https://github.com/example-org/ray-gitops.git", f"https://github.com/{OWNER}/{REPO}"))
    write(repo, "clusters/prod/notebooks.yaml", kustomization("notebooks", "./notebooks"))
    write(repo, "notebooks/cluster.yaml", (FIGHT / "before.yaml").read_text())
    write(repo, "notebooks/kustomization.yaml", {"resources": ["cluster.yaml"], "namespace": "ray"})
    base = commit(repo, "this repository")
    edit_yaml(repo, "apps/prod/kustomization.yaml", lambda d: d["images"][0].update(newTag=NEW_TAG))
    bump = commit(repo, "bump")
    git(repo, "checkout", "-q", base)
    write(repo, "notebooks/cluster.yaml", (FIGHT / "after.yaml").read_text())
    scale = commit(repo, "replicas")
    with github_service(GitHubStandIn(token=TOKEN), render="auto") as (url, gh):
        for number, head in ((1, bump), (2, scale)):
            gh.add_git_pull(OWNER, REPO, number, base, head, repo)
            assert post_event(url, "pull_request", pull_event(number, base, head)).status_code == 202
        [held] = wait_for(lambda: statuses_for(gh, bump), timeout=60, what="the bump's status")
        [scaled] = wait_for(lambda: statuses_for(gh, scale), timeout=60, what="the replicas' status")
        assert (held["state"], held["description"].split(":")[0]) == ("failure", "hold")
        assert (scaled["state"], scaled["description"].split(":")[0]) == ("success", "ignore-differences")
        bodies = {n: " ".join(c["body"] for c in wait_for(lambda n=n: gh.comments.get((OWNER, REPO, n)),
                                                          timeout=60, what="a comment")) for n in (1, 2)}
    assert "Kustomization flux-system/apps" in bodies[1] and IMAGE in bodies[1]
    assert "Flux: leave what the autoscaler owns to it" in bodies[2] and "ignoreDifferences:" not in bodies[2]
