"""Shared pieces of the GitLab tests: payloads (tests/data/gitlab/), the stand-in and the real
service wired to it, the GitOps repository of tests/render/gitops.py."""

from __future__ import annotations

import contextlib
import json
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
from github_helpers import gitops_module
from gitlab_standin import GitLabStandIn
from serverutil import running_server
from standin_base import settle
from standin_base import wait_for as _wait_for

from app.server import create_app
from app.settings import load_settings

DATA = Path(__file__).resolve().parent.parent / "data" / "gitlab"
SECRET = "gitlab-webhook-secret-token-0123"
TOKEN = "glpat-standin-0123456789abcdef"
PROJECT_ID, PATH = 7, "platform/ray-gitops"
FORK_ID, FORK_PATH = 8, "mallory/ray-gitops"
TAG = "2.53.0-py311-cu128"
KUSTOMIZATION = "overlays/prod/kustomization.yaml"
RAYSERVICE = "base/rayservice.yaml"

g = gitops_module()


def payload(name: str) -> dict[str, Any]:
    return json.loads((DATA / name).read_text())


def mr_event(iid: int, head: str, *, action: str = "open", target_branch: str = "main",
             updated_at: str = "2026-12-01 10:00:00 UTC", oldrev: str | None = None,
             source_project_id: int = PROJECT_ID) -> dict[str, Any]:
    data = payload("merge_request.open.json")
    attrs = data["object_attributes"]
    attrs.update(iid=iid, action=action, target_branch=target_branch, updated_at=updated_at,
                 source_project_id=source_project_id)
    attrs["last_commit"]["id"] = head
    if oldrev is not None:
        attrs["oldrev"] = oldrev
    if source_project_id != PROJECT_ID:
        attrs["source"] = {**attrs["source"], "id": source_project_id, "path_with_namespace": FORK_PATH}
    return data


def note_event(iid: int, text: str, *, user_id: int = 2, username: str = "bob", note_id: int | None = None,
               created_at: str | None = None) -> dict[str, Any]:
    data = payload("note.merge_request.json")
    attrs = data["object_attributes"]
    attrs.update(note=text, id=note_id or int(time.monotonic() * 1000) % 10**9, author_id=user_id,
                 created_at=created_at or time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()))
    data["user"] = {**data["user"], "id": user_id, "username": username}
    data["merge_request"]["iid"] = iid
    return data


def push_event(after: str, *, branch: str = "main") -> dict[str, Any]:
    data = payload("push.json")
    data.update(after=after, checkout_sha=after, ref=f"refs/heads/{branch}")
    return data


def post_hook(url: str, event: str, body: dict[str, Any] | bytes, *, token: str | None = SECRET,
              uuid_: str | None = None) -> httpx.Response:
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    headers = {"Content-Type": "application/json", "User-Agent": "GitLab/17.6.0", "X-Gitlab-Event": event,
               "X-Gitlab-Event-UUID": uuid_ or str(uuid.uuid4()), "X-Gitlab-Instance": "https://gitlab.example.com",
               "X-Gitlab-Webhook-UUID": "1b3a8f4e-0000-4000-8000-000000000001"}
    if token is not None:
        headers["X-Gitlab-Token"] = token
    return httpx.post(url + "/webhooks/gitlab", content=raw, headers=headers, timeout=10)


def wait_for(predicate: Callable[[], Any], timeout: float = 30.0, what: str = "condition") -> Any:
    """:func:`standin_base.wait_for` with the 30 s default the GitLab tests were written for."""
    return _wait_for(predicate, timeout, what)


@contextlib.contextmanager
def gitlab_service(standin: GitLabStandIn, *, prefix: str = "", **settings: Any) -> Iterator[str]:
    """The stand-in and the real service (create_app) wired to it, both on real uvicorn servers."""
    with running_server(standin.app, ready_path=None) as gitlab_url:
        values = {"gitlab_webhook_secret": SECRET, "gitlab_url": gitlab_url + prefix, "gitlab_token": TOKEN,
                  "analysis_executor": "thread", "live_basis": "off", **settings}
        app = create_app(load_settings(**values))
        with running_server(app) as base_url:
            yield base_url


def gitops_repo(tmp_path: Path) -> tuple[Path, str]:
    repo = g.make_repo(tmp_path)
    return repo, g.git(repo, "rev-parse", "HEAD")


def branch(repo: Path, name: str, start: str, change: Callable[[Path], None]) -> str:
    g.git(repo, "checkout", "-q", "-b", name, start)
    change(repo)
    sha = g.commit(repo, name)
    g.git(repo, "checkout", "-q", "main")
    return sha


def bump(repo: Path) -> None:
    g.edit_yaml(repo, KUSTOMIZATION, lambda d: d["images"][0].update(newTag=TAG))


def serve_only(repo: Path) -> None:
    path = repo / RAYSERVICE
    path.write_text(path.read_text().replace("max_model_len: 1024", "max_model_len: 2048"))


def broken_overlay(repo: Path) -> None:
    (repo / KUSTOMIZATION).write_text("resources:\n- ../../base\n- missing.yaml\nnamespace: [\n")


def statuses(standin: GitLabStandIn, sha: str) -> list[dict[str, Any]]:
    return [s for s in standin.statuses if s["sha"] == sha]


def our_notes(standin: GitLabStandIn, iid: int, project: int = PROJECT_ID) -> list[dict[str, Any]]:
    return [n for n in standin.notes_of(project, iid) if n["author"]["id"] == standin.bot["id"]]


def judged(url: str, standin: GitLabStandIn, event: dict[str, Any], head: str, *, before: int | None = None,
           timeout: float = 60) -> dict[str, Any]:
    """Send a Merge Request Hook and wait for the status it leads to."""
    count = len(statuses(standin, head)) if before is None else before
    answer = post_hook(url, "Merge Request Hook", event)
    assert answer.status_code == 202, answer.text
    wait_for(lambda: len(statuses(standin, head)) > count, timeout=timeout, what="a status")
    settle(standin, 0.1)
    return statuses(standin, head)[-1]
