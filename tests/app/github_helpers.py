"""Shared pieces of the GitHub tests: payloads, signing, the stand-in and the real service."""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
from github_standin import GitHubStandIn
from serverutil import running_server
from standin_base import settle as settle
from standin_base import wait_for as wait_for

from app.server import create_app
from app.settings import load_settings

DATA = Path(__file__).resolve().parent.parent / "data" / "github"
SECRET = "It's a Secret to Everybody"
TOKEN = "ghp_standintoken0123456789abcdefABCDEF01"
OWNER, REPO, NUMBER = "Codertocat", "Hello-World", 2
BASE_SHA = "f95f852bd8fca8fcc58a9a2d6c842781e32a215e"   # the examples' PR
HEAD_SHA = "ec26c3e57ca3a959ca5aad62de7213c562f8c821"
HEAD2_SHA = "1111111111111111111111111111111111111111"
MANIFEST = "k8s/rayservice.yaml"
SERVICE_LOGIN = "rayservice-impact-bot"   # the user whose token the service runs with


def manifest(name: str) -> str:
    return (DATA / "manifests" / name).read_text()


def raycluster_yaml(*, image: str = "2.52.0", replicas: int = 1) -> str:
    """A standalone RayCluster file (``raycluster-batch``) as a PR changes it: its Ray image tag
    and its worker replicas are the parameters."""
    return f"""\
apiVersion: ray.io/v1
kind: RayCluster
metadata:
  name: raycluster-batch
spec:
  rayVersion: "2.52.0"
  headGroupSpec:
    rayStartParams: {{}}
    template:
      spec:
        containers:
        - name: ray-head
          image: rayproject/ray:{image}
  workerGroupSpecs:
  - groupName: workers
    replicas: {replicas}
    minReplicas: 1
    maxReplicas: 5
    rayStartParams: {{}}
    template:
      spec:
        containers:
        - name: ray-worker
          image: rayproject/ray:{image}
"""


def payload_bytes(name: str) -> bytes:
    return (DATA / name).read_bytes()


def payload(name: str, **changes: Any) -> dict[str, Any]:
    """An example payload with ``head``/``base``/``updated_at``/``number`` rewritten."""
    data = json.loads(payload_bytes(name))
    pr = data["pull_request"]
    if "head" in changes:
        pr["head"]["sha"] = changes["head"]
        if "after" in data:
            data["after"] = changes["head"]
    if "base" in changes:
        pr["base"]["sha"] = changes["base"]
    if "updated_at" in changes:
        pr["updated_at"] = changes["updated_at"]
    if "number" in changes:
        pr["number"] = data["number"] = changes["number"]
    if "action" in changes:
        data["action"] = changes["action"]
    return data


def signed_headers(body: bytes, event: str, delivery: str | None = None,
                   secret: str = SECRET) -> dict[str, str]:
    return {"Content-Type": "application/json", "User-Agent": "GitHub-Hookshot/044aadd",
            "X-GitHub-Event": event, "X-GitHub-Delivery": delivery or str(uuid.uuid4()),
            "X-GitHub-Hook-ID": "292430182",
            "X-Hub-Signature-256": "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()}


def post_event(base_url: str, event: str, body: bytes | dict[str, Any], *, delivery: str | None = None,
               secret: str = SECRET) -> httpx.Response:
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    return httpx.post(base_url + "/webhooks/github", content=raw,
                      headers=signed_headers(raw, event, delivery, secret), timeout=10)


@contextlib.contextmanager
def github_service(standin: GitHubStandIn | None = None, *, prefix: str = "",
                   **settings: Any) -> Iterator[tuple[str, GitHubStandIn]]:
    """The stand-in and the real service (create_app) wired to it, both on real uvicorn servers.
    With a token, the service runs as a user's token (``SERVICE_LOGIN`` unless the stand-in names
    another ``token_login``)."""
    standin = standin or GitHubStandIn(prefix, token=TOKEN)
    with running_server(standin.app, ready_path=None) as github_url:
        values = {"github_webhook_secret": SECRET, "github_api_url": github_url + prefix,
                  "github_token": TOKEN, "github_write_interval_seconds": 0.0,
                  "analysis_executor": "thread", "live_basis": "off", **settings}
        if values["github_token"] and standin.token_login is None:
            standin.token_login = SERVICE_LOGIN
        app = create_app(load_settings(**values))
        with running_server(app) as base_url:
            yield base_url, standin


def add_sample_pull(standin: GitHubStandIn, head_sha: str = HEAD_SHA, head: str = "sample.head.yaml",
                    **kwargs: Any) -> None:
    standin.add_pull(OWNER, REPO, NUMBER, BASE_SHA, head_sha,
                     {MANIFEST: (manifest("sample.base.yaml"), manifest(head)),
                      "README.md": ("old", "new")}, **kwargs)


def statuses_for(standin: GitHubStandIn, sha: str) -> list[dict[str, Any]]:
    return [s for s in standin.statuses if s["sha"] == sha]


# -- the PR gate: git-backed pull requests, merge groups, comment commands -------------------------

GITOPS = Path(__file__).resolve().parent.parent / "render"   # tests/render/gitops.py: the repo builder
TAG = "2.53.0-py311-cu128"


def gitops_module() -> Any:
    """tests/render/gitops.py (a real GitOps repository, kustomize base and overlays)."""
    import sys

    if str(GITOPS) not in sys.path:
        sys.path.append(str(GITOPS))
    import gitops

    return gitops


def pull_event(number: int, base_sha: str, head_sha: str, *, base_ref: str = "main",
               action: str = "opened", updated_at: str = "2019-05-15T15:20:33Z",
               head_repo: str | None = None) -> dict[str, Any]:
    """GitHub's pull_request payload (the examples') for these commits and base branch."""
    data = payload("pull_request.opened.repo-webhook.json", base=base_sha, head=head_sha,
                   number=number, updated_at=updated_at, action=action)
    data["pull_request"]["base"]["ref"] = base_ref
    if head_repo is not None:
        head = data["pull_request"]["head"]["repo"]
        head.update(full_name=head_repo, name=head_repo.split("/")[1], fork=True)
        head["owner"] = {**head["owner"], "login": head_repo.split("/")[0]}
        data["pull_request"]["head"]["label"] = f"{head_repo.split('/')[0]}:changes"
    if action == "synchronize":
        data["before"], data["after"] = "0" * 40, head_sha
    return data


def merge_group_event(base_sha: str, head_sha: str, *, pr: int = 2, base_ref: str = "main",
                      action: str = "checks_requested") -> dict[str, Any]:
    """tests/data/github/merge_group.checks_requested.json for these commits."""
    data = json.loads(payload_bytes("merge_group.checks_requested.json"))
    group = data["merge_group"]
    group.update(base_sha=base_sha, head_sha=head_sha, base_ref=f"refs/heads/{base_ref}",
                 head_ref=f"refs/heads/gh-readonly-queue/{base_ref}/pr-{pr}-{base_sha}")
    group["head_commit"]["id"] = head_sha
    data["action"] = action
    return data


_comment_ids = iter(range(492700401, 492800000))


def comment_event(number: int, body: str, *, user: str = "Codertocat", user_type: str = "User",
                  created_at: str | None = None, comment_id: int | None = None) -> dict[str, Any]:
    """tests/data/github/issue_comment.created.pull_request.json with this comment, written now
    (GitHub's ``created_at``, the stand-in's clock) unless ``created_at`` says when."""
    data = json.loads(payload_bytes("issue_comment.created.pull_request.json"))
    created_at = created_at or time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    data["issue"]["number"] = number
    comment = data["comment"]
    comment.update(id=comment_id or next(_comment_ids), body=body, created_at=created_at,
                   updated_at=created_at)
    comment["user"] = {**comment["user"], "login": user, "type": user_type}
    data["sender"] = comment["user"]
    return data


def writes(standin: GitHubStandIn) -> list[tuple[str, str]]:
    """Every call that would change something on GitHub."""
    return [(c.method, c.path) for c in standin.calls if c.method not in ("GET", "HEAD")]


APP_ID = "31337"


def app_standin(tmp_path: Path, owner: str, repo: str) -> tuple[GitHubStandIn, Path]:
    """A stand-in that knows a GitHub App (a fresh RSA key) installed on ``owner/repo``, and the
    key file for the service's RAYSERVICE_IMPACT_GITHUB_APP_PRIVATE_KEY_FILE."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    key_file = tmp_path / "app.pem"
    key_file.write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                           serialization.PrivateFormat.TraditionalOpenSSL,
                                           serialization.NoEncryption()))
    standin = GitHubStandIn()
    standin.app_public_key = key.public_key().public_bytes(serialization.Encoding.PEM,
                                                           serialization.PublicFormat.SubjectPublicKeyInfo)
    standin.app_id, standin.installations[f"{owner}/{repo}"] = APP_ID, 77
    return standin, key_file
