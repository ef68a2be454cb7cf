"""A GitOps repository laid out as docs/argocd.md recommends, as a real git repo, for render tests.

    base/                 kustomization.yaml + rayservice.yaml (KubeRay's LLM sample)
    overlays/prod/        namespace ray-prod, images: newTag, a strategic-merge patch
    overlays/staging/     namespace ray-staging
    apps/llm-prod.yaml    Argo CD Application -> overlays/prod   (only with ``with_apps``)
    apps/llm-staging.yaml Argo CD Application -> overlays/staging
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "samples" / "gpu-image-bump" / "before.yaml"
REPO_URL = "https://github.com/example-org/ray-gitops.git"
IMAGE = "rayproject/ray-llm"
NEW_TAG = "2.53.0-py311-cu128"


def git(repo: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"}
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True,
                          env=env).stdout.strip()


def write(repo: Path, rel: str, content: str | dict[str, Any]) -> None:
    path = repo / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(content if isinstance(content, str) else yaml.safe_dump(content, sort_keys=False))


def commit(repo: Path, message: str = "change") -> str:
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "--allow-empty", "-m", message)
    return git(repo, "rev-parse", "HEAD")


def application(name: str, path: str, namespace: str, **source: Any) -> dict[str, Any]:
    return {"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
            "metadata": {"name": name, "namespace": "argocd"},
            "spec": {"project": "default",
                     "source": {"repoURL": REPO_URL, "targetRevision": "main", "path": path, **source},
                     "destination": {"server": "https://kubernetes.default.svc", "namespace": namespace}}}


def make_repo(tmp: Path, *, with_apps: bool = False) -> Path:
    repo = tmp / "gitops"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    git(repo, "remote", "add", "origin", REPO_URL)
    write(repo, "base/rayservice.yaml", SAMPLE.read_text())
    write(repo, "base/kustomization.yaml", {"resources": ["rayservice.yaml"]})
    write(repo, "overlays/prod/kustomization.yaml", {
        "namespace": "ray-prod", "resources": ["../../base"],
        "images": [{"name": IMAGE, "newTag": "2.52.0-py311-cu128"}],
        "patches": [{"path": "serve-patch.yaml"}]})
    write(repo, "overlays/prod/serve-patch.yaml", {
        "apiVersion": "ray.io/v1", "kind": "RayService", "metadata": {"name": "ray-serve-llm"},
        "spec": {"rayClusterConfig": {"rayVersion": "2.52.0"}}})
    write(repo, "overlays/staging/kustomization.yaml", {"namespace": "ray-staging",
                                                         "resources": ["../../base"]})
    write(repo, "README.md", "# ray gitops\n")
    if with_apps:
        write(repo, "apps/llm-prod.yaml", application("llm-prod", "overlays/prod", "ray-prod"))
        write(repo, "apps/llm-staging.yaml", application("llm-staging", "overlays/staging", "ray-staging"))
    commit(repo, "initial")
    return repo


def run(repo: Path, base: str, head: str, capsys: Any, *extra: str) -> tuple[int, dict[str, Any]]:
    """``rayservice-impact git BASE HEAD --format json`` in this process: (exit code, report)."""
    from app.cli import main

    code = main(["git", base, head, "--repo", str(repo), "--format", "json", *extra])
    out = capsys.readouterr()
    return code, json.loads(out.out) if out.out else {"stderr": out.err}


def edit_yaml(repo: Path, rel: str, change: Any) -> None:
    doc = yaml.safe_load((repo / rel).read_text())
    change(doc)
    write(repo, rel, doc)
