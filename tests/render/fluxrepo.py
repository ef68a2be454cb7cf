"""A Flux repository laid out as ``flux bootstrap`` leaves it, as a real git repo, for render tests.

    clusters/prod/flux-system/gotk-sync.yaml  GitRepository flux-system (this repository) and the
                                              Kustomization flux-system -> ./clusters/prod
    clusters/prod/flux-system/kustomization.yaml
    clusters/prod/apps.yaml                   Kustomization apps -> ./apps/prod
    apps/base/                                kustomization.yaml + rayservice.yaml (KubeRay's LLM sample)
    apps/prod/                                namespace ray-prod, images: newTag
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gitops import IMAGE, REPO_URL, SAMPLE, commit, git, write

KS_API = "kustomize.toolkit.fluxcd.io/v1"
HR_API = "helm.toolkit.fluxcd.io/v2"
SRC_API = "source.toolkit.fluxcd.io/v1"
SOURCE = {"kind": "GitRepository", "name": "flux-system"}


def kustomization(name: str, path: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": KS_API, "kind": "Kustomization",
            "metadata": {"name": name, "namespace": "flux-system"},
            "spec": {"interval": "10m", "path": path, "prune": True, "sourceRef": dict(SOURCE), **spec}}


def helm_release(name: str, namespace: str, chart: dict[str, Any] | None = None,
                 **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"interval": "10m", **spec}
    if chart is not None:
        body["chart"] = {"spec": chart}
    return {"apiVersion": HR_API, "kind": "HelmRelease", "metadata": {"name": name, "namespace": namespace},
            "spec": body}


def gotk_sync(url: str = REPO_URL) -> str:
    import yaml

    repo = {"apiVersion": SRC_API, "kind": "GitRepository",
            "metadata": {"name": "flux-system", "namespace": "flux-system"},
            "spec": {"interval": "1m0s", "ref": {"branch": "main"}, "url": url}}
    return yaml.safe_dump_all([repo, kustomization("flux-system", "./clusters/prod")], sort_keys=False)


def make_flux_repo(tmp: Path, *, apps: dict[str, Any] | None = None) -> Path:
    repo = tmp / "flux-gitops"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    git(repo, "remote", "add", "origin", REPO_URL)
    write(repo, "clusters/prod/flux-system/gotk-sync.yaml", gotk_sync())
    write(repo, "clusters/prod/flux-system/kustomization.yaml", {
        "apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization",
        "resources": ["gotk-sync.yaml"]})
    write(repo, "clusters/prod/apps.yaml", apps or kustomization("apps", "./apps/prod"))
    write(repo, "apps/base/rayservice.yaml", SAMPLE.read_text())
    write(repo, "apps/base/kustomization.yaml", {"resources": ["rayservice.yaml"]})
    write(repo, "apps/prod/kustomization.yaml", {
        "namespace": "ray-prod", "resources": ["../base"],
        "images": [{"name": IMAGE, "newTag": "2.52.0-py311-cu128"}]})
    write(repo, "README.md", "# flux gitops\n")
    commit(repo, "initial")
    return repo
