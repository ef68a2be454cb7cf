"""The GitOps repository the comment-mode tests share (GitHub's and GitLab's): the LLM RayService
with a ConfigMap in the prod overlay, the repository's settings files, and the edits a pull or
merge request makes to it, each a commit on its branch."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from github_helpers import TAG, gitops_module

g = gitops_module()
KUSTOMIZATION = "overlays/prod/kustomization.yaml"
CONFIGMAP = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "llm-settings"},
             "data": {"LOG_LEVEL": "info"}}


def settings_repo(tmp_path: Path, files: dict[str, str]) -> tuple[Path, str]:
    """The repository with ``files`` (the settings) committed on main; (repository, main's tip)."""
    repo = g.make_repo(tmp_path)
    g.write(repo, "overlays/prod/settings.yaml", CONFIGMAP)
    g.edit_yaml(repo, KUSTOMIZATION, lambda d: d["resources"].append("settings.yaml"))
    for path, text in files.items():
        g.write(repo, path, text)
    return repo, g.commit(repo, "settings")


def push(repo: Path, branch: str, edit: Any, message: str) -> str:
    """A commit on ``branch`` (created from main when new) made by ``edit(repo)``; back on main."""
    exists = g.git(repo, "branch", "--list", branch)
    g.git(repo, "checkout", "-q", *(() if exists else ("-b",)), branch)
    edit(repo)
    head = g.commit(repo, message)
    g.git(repo, "checkout", "-q", "main")
    return head


def configmap_only(repo: Path) -> None:
    g.write(repo, "overlays/prod/settings.yaml", {**CONFIGMAP, "data": {"LOG_LEVEL": "debug"}})


def image_bump(repo: Path) -> None:
    g.edit_yaml(repo, KUSTOMIZATION, lambda d: d["images"][0].update(newTag=TAG))


def image_back(repo: Path) -> None:
    g.edit_yaml(repo, KUSTOMIZATION, lambda d: d["images"][0].update(newTag="2.52.0-py311-cu128"))


def readme(text: str) -> Any:
    return lambda repo: g.write(repo, "README.md", text)
