"""A GitLab merge request on a Flux repository: the real service and the GitLab stand-in on uvicorn,
a real git repository laid out as ``flux bootstrap`` leaves it (tests/render/fluxrepo.py), real
``kubectl kustomize``. The bootstrap GitRepository names the project by its SSH URL while GitLab's
webhook names it by ``git_http_url``: the two forms are the same repository.

What the Flux set asserts on GitHub (tests/render/test_flux_webhook.py), on GitLab: an image bump
through the overlay a Flux Kustomization deploys holds, a replicas-only change of a standalone
RayCluster gets Flux's drift advice (never the Argo CD snippet), and a Kustomization whose source
is another repository holds as not seen.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from gitlab_helpers import PROJECT_ID, TOKEN, branch, gitlab_service, judged, mr_event, our_notes
from gitlab_standin import GitLabStandIn

from app.github.comment import state_of

pytestmark = pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")

ROOT = Path(__file__).resolve().parents[2]
FIGHT = ROOT / "samples" / "raycluster-autoscaler-fight"
SSH_URL = "ssh://git@gitlab.example.com/platform/ray-gitops.git"  # the project of the payloads


def _flux() -> tuple[Any, Any]:
    import sys

    sys.path.insert(0, str(ROOT / "tests" / "render"))
    import fluxrepo
    import gitops

    return fluxrepo, gitops


def test_gitlab_merge_requests_on_a_flux_repository(tmp_path: Path) -> None:
    fluxrepo, g = _flux()
    repo = fluxrepo.make_flux_repo(tmp_path)
    g.write(repo, "clusters/prod/flux-system/gotk-sync.yaml", fluxrepo.gotk_sync(SSH_URL))
    g.write(repo, "clusters/prod/notebooks.yaml",
            fluxrepo.kustomization("notebooks", "./notebooks"))
    g.write(repo, "notebooks/cluster.yaml", (FIGHT / "before.yaml").read_text())
    g.write(repo, "notebooks/kustomization.yaml",
            {"resources": ["cluster.yaml"], "namespace": "ray"})
    start = g.commit(repo, "this repository")

    def bump(r: Path) -> None:
        g.edit_yaml(r, "apps/prod/kustomization.yaml",
                    lambda d: d["images"][0].update(newTag=g.NEW_TAG))

    def scale(r: Path) -> None:
        (r / "notebooks/cluster.yaml").write_text((FIGHT / "after.yaml").read_text())

    def elsewhere(r: Path) -> None:
        other = fluxrepo.kustomization(
            "apps", "./apps/prod", sourceRef={"kind": "GitRepository", "name": "platform-charts"})
        g.write(r, "clusters/prod/apps.yaml", other)
        g.edit_yaml(r, "apps/prod/kustomization.yaml",
                    lambda d: d["images"][0].update(newTag=g.NEW_TAG))

    heads = {iid: branch(repo, name, start, change)
             for iid, name, change in ((1, "bump", bump), (2, "scale", scale), (3, "elsewhere", elsewhere))}
    s = GitLabStandIn(token=TOKEN)
    s.add_project(PROJECT_ID, "platform/ray-gitops", repo)
    for iid, head in heads.items():
        s.add_merge_request(PROJECT_ID, iid, source_branch=("bump", "scale", "elsewhere")[iid - 1],
                            head_sha=head)
    with gitlab_service(s, render="auto") as url:
        statuses = {iid: judged(url, s, mr_event(iid, head), head) for iid, head in heads.items()}
    bodies = {iid: our_notes(s, iid)[0]["body"] for iid in heads}

    assert statuses[1]["status"] == "failed" and statuses[1]["description"].startswith("hold")
    assert state_of(bodies[1]) == "failure"
    assert "Kustomization flux-system/apps" in bodies[1] and g.IMAGE in bodies[1]

    assert statuses[2]["status"] == "success"
    assert statuses[2]["description"].startswith("ignore-differences")
    assert "Flux: leave what the autoscaler owns to it" in bodies[2]
    assert "ignoreDifferences:" not in bodies[2]

    assert statuses[3]["status"] == "failed"
    assert "unknown-source" in bodies[3] and "platform-charts" in bodies[3]
