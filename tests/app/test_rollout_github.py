"""End to end, the rollout report: a real uvicorn running create_app with a scripted Follower and an
in-memory Store, a real stand-in for GitHub (a GitHub App installed), a real git repository
behind it, signed push events and Argo CD notifications."""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from github_helpers import SECRET, app_standin, post_event, settle, wait_for
from github_standin import GitHubStandIn
from rollout_fakes import MemoryStore, Step, StepFollower
from serverutil import running_server

from app.github.comment import MARKER
from app.rollout.model import Phase
from app.rollout.present import SECTION_END, SECTION_START
from app.server import create_app
from app.settings import load_settings

OWNER, REPO, PR = "octo-org", "serving", 7
ROOT = Path(__file__).resolve().parents[2]
GPU_BEFORE = (ROOT / "samples/gpu-image-bump/before.yaml").read_text()
GPU_AFTER = (ROOT / "samples/gpu-image-bump/after.yaml").read_text()
BOT = "rayservice-impact[bot]"
ARGO_SECRET = "argo-shared-secret-0123456789"


def _git(path: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(path), *args], check=True, capture_output=True,
                          text=True).stdout.strip()


@pytest.fixture
def repo(tmp_path: Path) -> dict[str, str]:
    """main: c0 (the RayService before) -> c1 (the GPU image bump merged) -> c2 (README only)."""
    path = tmp_path / "repo"
    path.mkdir()
    _git(path, "init", "-q", "-b", "main")
    _git(path, "config", "user.email", "t@example.com")
    _git(path, "config", "user.name", "t")
    (path / "deploy").mkdir()
    (path / "deploy/rayservice.yaml").write_text(GPU_BEFORE)
    (path / "README.md").write_text("serving\n")
    _git(path, "add", "-A")
    _git(path, "commit", "-qm", "c0")
    c0 = _git(path, "rev-parse", "HEAD")
    (path / "deploy/rayservice.yaml").write_text(GPU_AFTER)
    _git(path, "commit", "-qam", "c1")
    c1 = _git(path, "rev-parse", "HEAD")
    (path / "README.md").write_text("serving, now with docs\n")
    _git(path, "commit", "-qam", "c2")
    c2 = _git(path, "rev-parse", "HEAD")
    return {"path": str(path), "c0": c0, "c1": c1, "c2": c2}


def push_event(before: str, after: str, *, ref: str = "refs/heads/main") -> dict[str, Any]:
    return {"ref": ref, "before": before, "after": after, "created": False, "deleted": False, "forced": False,
            "repository": {"id": 1, "name": REPO, "full_name": f"{OWNER}/{REPO}",
                           "owner": {"login": OWNER, "name": OWNER}, "default_branch": "main",
                           "clone_url": f"https://github.com/{OWNER}/{REPO}.git"},
            "installation": {"id": 77}, "head_commit": {"id": after}}


def sticky(standin: GitHubStandIn, body: str) -> dict[str, Any]:
    comment = {"id": 555, "body": body, "user": {"login": BOT, "type": "Bot"},
               "created_at": "2026-01-01T00:00:00Z", "updated_at": "2026-01-01T00:00:00Z"}
    standin.comments[(OWNER, REPO, PR)] = [comment]
    return comment


@pytest.fixture
def service(tmp_path: Path, repo: dict[str, str]) -> Iterator[Any]:
    """(url, standin, store, follower, app) with rollout reporting on."""
    def start(steps: list[Step], *, store: MemoryStore | None = None, rollout: bool = True,
              **settings: Any) -> Any:
        standin, key_file = app_standin(tmp_path, OWNER, REPO)
        standin.git_repos[(OWNER, REPO)] = Path(repo["path"])
        standin.merged_by[(OWNER, REPO, repo["c1"])] = [PR]
        store = store or MemoryStore()
        follower = StepFollower(steps)
        return standin, key_file, store, follower, rollout, settings

    yield start


def serve(standin: GitHubStandIn, key_file: Path, store: MemoryStore, follower: StepFollower, *,
          rollout: bool = True, rescan_replica: bool = False, **settings: Any) -> Any:
    """The service on a real uvicorn; ``rescan_replica``: a second replica (its own holder, and a
    store rescan every 0.05 s, so it sees every watch the first one records)."""
    options: dict[str, Any] = {"rescan_interval": 3600.0, "holder": "replica-1"}
    if rescan_replica:
        options = {"rescan_interval": 0.05, "holder": "replica-2"}
    import contextlib

    @contextlib.contextmanager
    def run() -> Iterator[tuple[str, Any]]:
        with running_server(standin.app, ready_path=None) as github_url:
            values = {"github_webhook_secret": SECRET, "github_api_url": github_url,
                      "github_app_id": "31337", "github_app_private_key_file": str(key_file),
                      "github_write_interval_seconds": 0.0, "analysis_executor": "thread",
                      "live_basis": "off", "render": "none", "rollout_write_interval_seconds": 0.0,
                      "argocd_webhook_secret": ARGO_SECRET, **settings}
            app = create_app(load_settings(**values),
                             rollout=(lambda s: (store, follower)) if rollout else (lambda s: None),
                             reporter_options=options)
            with running_server(app) as url:
                yield url, app
    return run()


HAPPY = [Step(Phase.WAITING), Step(Phase.PROGRESSING, "pending cluster not ready", pending_pods=2,
                                   reasons=("0/3 nodes are available: 3 Insufficient nvidia.com/gpu.",)),
         Step(Phase.DONE, "new cluster serving")]


def rollout_runs(standin: GitHubStandIn, sha: str) -> list[dict[str, Any]]:
    return [r for r in standin.check_runs
            if r["name"] == "rayservice-impact/rollout" and r["head_sha"] == sha]


def test_push_of_a_merge_commit_reports_in_progress_then_success(service: Any, repo: dict[str, str]) -> None:
    standin, key_file, store, follower, _, _ = service(HAPPY)
    original = (f"{MARKER}\n<!-- rayservice-impact:head=abc at=x -->\n### report\r\nkept as is\n\n"
                "<sub>footer</sub>\n")
    sticky(standin, original)
    with serve(standin, key_file, store, follower) as (url, _app):
        started = time.monotonic()
        resp = post_event(url, "push", push_event(repo["c0"], repo["c1"]))
        answered = time.monotonic() - started
        assert resp.status_code == 202 and resp.json()["status"] == "queued"
        wait_for(lambda: rollout_runs(standin, repo["c1"]), what="the check run")
        first_run = time.monotonic() - started
        wait_for(lambda: store.finished, what="the watch to finish")
        settle(standin)
        metrics = httpx.get(url + "/metrics").text
        listed = httpx.get(url + "/v1/rollouts").json()
        one = httpx.get(url + f"/v1/rollouts/github:{OWNER}/{REPO}@{repo['c1']}").json()
    calls = [c for c in standin.calls if "/access_tokens" not in c.path and not c.path.startswith("/app/")]
    print(f"[rollout] push answered in {answered * 1000:.0f} ms, check run in_progress after "
          f"{first_run * 1000:.0f} ms; {len(calls)} GitHub API calls for the whole rollout "
          f"({sum(c.method != 'GET' for c in calls)} writes)")
    [run] = rollout_runs(standin, repo["c1"])
    history = [tuple(h) for h in run["history"]]
    assert history[0] == ("in_progress", None)
    assert history[-1] == ("completed", "success")
    assert len(history) == 3                     # one write per step: waiting, progressing, done
    assert run["output"]["title"] == "rollout done: 1 of 1, as predicted"
    assert "new cluster ready in" in run["output"]["summary"]
    assert "4 nvidia.com/gpu extra at peak, as predicted" in run["output"]["summary"]
    [watch] = follower.followed
    assert [t.key for t in watch.targets] == ["RayService/default/ray-serve-llm"]
    assert watch.targets[0].predicted_extra == {"nvidia.com/gpu": 4}
    assert watch.deadline_seconds == 30 * 60
    assert watch.sink["github"] == {"owner": OWNER, "repo": REPO, "sha": repo["c1"], "pr": [PR],
                                    "create_comment": True}
    [comment] = standin.comments[(OWNER, REPO, PR)]
    body = comment["body"]
    assert body.startswith(original)             # the analysis' comment, byte for byte
    assert body.count(SECTION_START) == 1 and body.rstrip("\n").endswith(SECTION_END)
    assert "## Rollout" in body and "as predicted" in body
    assert 'rayservice_impact_rollouts_followed_total{outcome="success"} 1.0' in metrics
    assert [r["key"] for r in listed["rollouts"]] == [f"github:{OWNER}/{REPO}@{repo['c1']}"]
    assert one["conclusion"] == "success" and one["observations"][0]["phase"] == "done"


def test_stuck_rollout_fails_with_the_ways_out(service: Any, repo: dict[str, str]) -> None:
    steps = [Step(Phase.PROGRESSING, "pending cluster not ready", pending_pods=3,
                  reasons=("0/3 nodes are available",)),
             Step(Phase.STUCK, "pending cluster not ready after the deadline", pending_pods=3,
                  reasons=("0/3 nodes are available",))]
    standin, key_file, store, follower, _, _ = service(steps)
    with serve(standin, key_file, store, follower) as (url, _app):
        post_event(url, "push", push_event(repo["c0"], repo["c1"]))
        wait_for(lambda: store.finished, what="the watch to finish")
        settle(standin)
    [run] = rollout_runs(standin, repo["c1"])
    assert (run["status"], run["conclusion"]) == ("completed", "failure")
    summary = run["output"]["summary"]
    assert "`ray.io/initializing-timeout` does not apply here" in summary and "revert the change" in summary
    assert "free capacity" in summary and "3 pods Pending" in summary
    # no sticky comment before: one holding the section only
    [comment] = standin.comments[(OWNER, REPO, PR)]
    assert comment["body"].startswith(MARKER + "\n" + SECTION_START)


def test_mismatch_is_counted_and_logged(service: Any, repo: dict[str, str],
                                        caplog: pytest.LogCaptureFixture) -> None:
    steps = [Step(Phase.DONE, "new cluster serving", observed_rollout="new-cluster",
                  observed_extra={"nvidia.com/gpu": 8})]
    standin, key_file, store, follower, _, _ = service(steps)
    with caplog.at_level("WARNING", logger="app.rollout.report"):
        with serve(standin, key_file, store, follower) as (url, _app):
            post_event(url, "push", push_event(repo["c0"], repo["c1"]))
            wait_for(lambda: store.finished, what="the watch to finish")
            settle(standin)
            metrics = httpx.get(url + "/metrics").text
    assert ('rayservice_impact_prediction_mismatch_total{kind="RayService",rollout="new-cluster"} 1.0'
            in metrics)
    assert any("differs from the prediction" in r.getMessage() for r in caplog.records)
    [run] = rollout_runs(standin, repo["c1"])
    assert run["output"]["title"] == "rollout done: 1 of 1, differs from the prediction"


def test_redelivered_push_starts_one_watch(service: Any, repo: dict[str, str]) -> None:
    standin, key_file, store, follower, _, _ = service(HAPPY)
    with serve(standin, key_file, store, follower) as (url, _app):
        event = push_event(repo["c0"], repo["c1"])
        for _ in range(3):
            assert post_event(url, "push", event, delivery="same-delivery").status_code == 202
        wait_for(lambda: store.finished, what="the watch to finish")
        settle(standin, 0.4)
    assert len(follower.followed) == 1
    assert len(rollout_runs(standin, repo["c1"])) == 1


def test_push_without_ray_changes_starts_nothing(service: Any, repo: dict[str, str]) -> None:
    standin, key_file, store, follower, _, _ = service(HAPPY)
    with serve(standin, key_file, store, follower) as (url, _app):
        assert post_event(url, "push", push_event(repo["c1"], repo["c2"])).status_code == 202
        wait_for(lambda: standin.calls_to("GET", r"/compare/"), what="the comparison")
        settle(standin, 0.4)
    assert store.watches == {} and follower.followed == []
    assert rollout_runs(standin, repo["c2"]) == []
    assert writes_of(standin) == []


def writes_of(standin: GitHubStandIn) -> list[tuple[str, str]]:
    return [(c.method, c.path) for c in standin.calls if c.method not in ("GET", "HEAD")
            and "/access_tokens" not in c.path]


def test_push_elsewhere_and_unconfigured(service: Any, repo: dict[str, str]) -> None:
    standin, key_file, store, follower, _, _ = service(HAPPY)
    with serve(standin, key_file, store, follower) as (url, _app):
        resp = post_event(url, "push", push_event(repo["c0"], repo["c1"], ref="refs/heads/feature"))
        assert resp.json() == {"status": "ignored",
                               "reason": "only pushes to the default branch 'main' are followed"}
        bad = post_event(url, "push", push_event(repo["c0"], repo["c1"]), secret="wrong")
        assert bad.status_code == 401
        resp = post_event(url, "push", {"ref": "refs/heads/main"})
        assert resp.status_code == 400 and "push payload without" in resp.json()["error"]["message"]
    with serve(standin, key_file, store, follower, rollout=False) as (url, _app):
        resp = post_event(url, "push", push_event(repo["c0"], repo["c1"]))
        assert resp.status_code == 202
        assert resp.json()["reason"].startswith("rollout reporting is not configured")
        assert httpx.get(url + "/v1/rollouts").status_code == 503
    assert store.watches == {}


def test_repo_config_sets_the_deadline(service: Any, repo: dict[str, str]) -> None:
    path = Path(repo["path"])
    (path / ".github").mkdir()
    (path / ".github/rayservice-impact.yml").write_text("comment: on-hold\nrollout:\n  deadlineMinutes: 45\n")
    (path / "deploy/rayservice.yaml").write_text(GPU_BEFORE)
    _git(path, "add", "-A")
    _git(path, "commit", "-qm", "c3")
    c3 = _git(path, "rev-parse", "HEAD")
    standin, key_file, store, follower, _, _ = service(HAPPY)
    with serve(standin, key_file, store, follower) as (url, _app):
        post_event(url, "push", push_event(repo["c2"], c3))
        wait_for(lambda: store.finished, what="the watch to finish")
    assert follower.followed[0].deadline_seconds == 45 * 60
    assert follower.followed[0].sink["github"]["pr"] == []   # no pull request merged c3
    assert follower.followed[0].sink["github"]["create_comment"] is False   # a quiet comment mode


def test_two_replicas_sharing_a_store_report_once(service: Any, repo: dict[str, str]) -> None:
    standin, key_file, store, follower, _, _ = service(HAPPY)
    second = StepFollower(HAPPY)
    with serve(standin, key_file, store, follower) as (url, _app), \
            serve(standin, key_file, store, second, rescan_replica=True) as (url2, _app2):
        # the same push delivered to both replicas (two webhooks, or a retry that landed elsewhere)
        post_event(url, "push", push_event(repo["c0"], repo["c1"]))
        post_event(url2, "push", push_event(repo["c0"], repo["c1"]))
        wait_for(lambda: store.finished, what="the watch to finish")
        settle(standin, 0.4)
    assert len(follower.followed) + len(second.followed) == 1
    assert len(rollout_runs(standin, repo["c1"])) == 1
    [comment] = standin.comments[(OWNER, REPO, PR)]
    assert comment["body"].count(SECTION_START) == 1


def test_a_restarted_replica_resumes_and_finishes(service: Any, repo: dict[str, str]) -> None:
    clock = [time.monotonic()]
    store = MemoryStore(clock=lambda: clock[0])
    blocking = [Step(Phase.PROGRESSING, "pending cluster not ready", pending_pods=1)] + [
        Step(Phase.PROGRESSING, "still pending")] * 200
    standin, key_file, _, follower, _, _ = service(blocking, store=store)
    with serve(standin, key_file, store, follower) as (url, _app):
        post_event(url, "push", push_event(repo["c0"], repo["c1"]))
        wait_for(lambda: rollout_runs(standin, repo["c1"]), what="the check run in progress")
    assert store.finished == {} and len(store.watches) == 1
    clock[0] += 3600  # the first replica's claim has expired
    again = StepFollower(HAPPY)
    with serve(standin, key_file, store, again) as (url, _app):
        wait_for(lambda: store.finished, what="the resumed watch to finish")
        settle(standin)
    assert len(again.followed) == 1
    [run] = rollout_runs(standin, repo["c1"])   # the same check run, updated: never a second one
    assert (run["status"], run["conclusion"]) == ("completed", "success")


# -- Argo CD ---------------------------------------------------------------------------------------

def argo_post(url: str, body: bytes | dict[str, Any], secret: str | None = ARGO_SECRET) -> httpx.Response:
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    headers = {"Content-Type": "application/json"}
    if secret is not None:
        headers["X-RayService-Impact-Secret"] = secret
    return httpx.post(url + "/webhooks/argocd", content=raw, headers=headers, timeout=10)


def test_argocd_webhook_refusals(service: Any, repo: dict[str, str]) -> None:
    standin, key_file, store, follower, _, _ = service(HAPPY)
    note = {"app": "serving", "namespace": "argocd", "revision": repo["c1"], "phase": "Running",
            "repoURL": f"https://github.com/{OWNER}/{REPO}.git"}
    with serve(standin, key_file, store, follower, argocd_webhook_secret=None) as (url, _app):
        resp = argo_post(url, note)
        assert resp.status_code == 503 and "RAYSERVICE_IMPACT_ARGOCD_WEBHOOK_SECRET" in resp.text
    with serve(standin, key_file, store, follower) as (url, _app):
        assert argo_post(url, note, secret="wrong").status_code == 401
        assert argo_post(url, note, secret=None).status_code == 401
        assert argo_post(url, b"{" + b" " * 70_000 + b"}").status_code == 413
        resp = argo_post(url, b"{not json")
        assert resp.status_code == 400 and "not JSON" in resp.json()["error"]["message"]
        resp = argo_post(url, {**note, "revision": None})
        assert resp.status_code == 400 and "'revision' is missing" in resp.json()["error"]["message"]
        resp = argo_post(url, {**note, "app": "Not A Name"})
        assert resp.status_code == 400
        resp = argo_post(url, {**note, "phase": "Failed"})
        assert resp.status_code == 202 and resp.json()["status"] == "ignored"
        resp = argo_post(url, note)   # no Argo CD API configured: cannot analyse
        assert resp.status_code == 202 and "Argo CD API is not configured" in resp.json()["reason"]
    assert store.watches == {}


def first_rayservice(text: str) -> dict[str, Any]:
    import yaml

    return next(d for d in yaml.safe_load_all(text) if d and d.get("kind") == "RayService")


def test_argocd_sync_starts_a_watch(service: Any, repo: dict[str, str]) -> None:
    from argocd_standins import ARGO_TOKEN, ArgoCD, managed_item
    from argocd_standins import serve as serve_argocd

    before, after = first_rayservice(GPU_BEFORE), first_rayservice(GPU_AFTER)
    for obj in (before, after):
        obj["metadata"]["namespace"] = "ml"
    argocd = ArgoCD("serving", [managed_item(before, after)])
    standin, key_file, store, follower, _, _ = service(HAPPY)
    note = {"app": "serving", "namespace": "argocd", "revision": repo["c1"], "phase": "Running",
            "repoURL": f"https://github.com/{OWNER}/{REPO}.git"}
    with serve_argocd(argocd) as argocd_url, \
            serve(standin, key_file, store, follower, argocd_server=argocd_url, argocd_token=ARGO_TOKEN) \
            as (url, _app):
        resp = argo_post(url, note)
        key = f"argocd:argocd/serving@{repo['c1']}"
        assert resp.status_code == 202 and resp.json() == {"status": "accepted", "key": key}
        wait_for(lambda: store.finished, what="the watch to finish")
        settle(standin)
        assert argo_post(url, {**note, "phase": "Succeeded"}).status_code == 202   # the same sync, later
        settle(standin, 0.4)
        got = httpx.get(url + f"/v1/rollouts/{key}").json()
    [watch] = follower.followed
    assert watch.key == key
    assert [t.key for t in watch.targets] == ["RayService/ml/ray-serve-llm"]
    assert watch.sink["github"] == {"owner": OWNER, "repo": REPO, "sha": repo["c1"], "pr": [PR]}
    assert watch.sink["argocd"]["app"] == "serving"
    [run] = rollout_runs(standin, repo["c1"])
    assert run["conclusion"] == "success"
    assert got["key"] == key and got["observations"][0]["kind"] == "RayService"
    assert argocd.requests[0][1].get("appNamespace") == ["argocd"]


def test_argocd_sync_of_a_non_github_repo_reports_to_the_logs(service: Any, repo: dict[str, str],
                                                              caplog: pytest.LogCaptureFixture) -> None:
    from argocd_standins import ARGO_TOKEN, ArgoCD, managed_item
    from argocd_standins import serve as serve_argocd

    argocd = ArgoCD("serving", [managed_item(first_rayservice(GPU_BEFORE), first_rayservice(GPU_AFTER))])
    standin, key_file, store, follower, _, _ = service(HAPPY)
    note = {"app": "serving", "revision": "v1.2.3", "phase": "Running",
            "repoURL": "https://gitlab.example.com/ml/serving.git"}
    with caplog.at_level("INFO", logger="app.rollout.report"):
        with serve_argocd(argocd) as argocd_url, \
                serve(standin, key_file, store, follower, argocd_server=argocd_url, argocd_token=ARGO_TOKEN) \
                as (url, _app):
            assert argo_post(url, note).status_code == 202
            wait_for(lambda: store.finished, what="the watch to finish")
    [watch] = follower.followed
    assert "github" not in watch.sink
    assert rollout_runs(standin, "v1.2.3") == [] and writes_of(standin) == []
    assert any("completed (success)" in r.getMessage() for r in caplog.records)


def test_push_rendered_from_the_tarballs(service: Any, repo: dict[str, str]) -> None:
    """The default rendering (RAYSERVICE_IMPACT_RENDER=auto): both commits' tarballs, rendered as a
    pull request's are."""
    standin, key_file, store, follower, _, _ = service(HAPPY)
    with serve(standin, key_file, store, follower, render="auto") as (url, _app):
        post_event(url, "push", push_event(repo["c0"], repo["c1"]))
        wait_for(lambda: store.finished, timeout=30, what="the watch to finish")
        settle(standin)
    assert standin.calls_to("GET", rf"/tarball/{repo['c0']}")
    assert standin.calls_to("GET", rf"/tarball/{repo['c1']}")
    [watch] = follower.followed
    assert [(t.key, t.predicted_rollout, dict(t.predicted_extra)) for t in watch.targets] == [
        ("RayService/default/ray-serve-llm", "new-cluster", {"nvidia.com/gpu": 4})]


def test_sink_in_a_quiet_comment_mode_adds_no_comment(tmp_path: Path) -> None:
    import asyncio

    from app.clients.github import GitHubClient, static_token
    from app.github.rollout import GitHubRolloutSink
    from app.rollout.model import Observation, Target, Watch

    standin = GitHubStandIn(token="t0ken", token_login="svc")
    target = Target("RayService", "ml", "s", "new-cluster")
    done = (Observation(target, Phase.DONE, "ok", observed_rollout="new-cluster"),)

    async def write(url: str, watch: Watch) -> None:
        async with httpx.AsyncClient() as http:
            gh = GitHubClient(http, url, static_token("t0ken"))

            async def client_for(owner: str, repo: str) -> GitHubClient:
                return gh
            await GitHubRolloutSink(watch, client_for, check_run=False).write(watch, done, 0.0)

    sink = {"owner": OWNER, "repo": REPO, "sha": "a" * 40, "pr": [PR], "create_comment": False}
    watch = Watch("k", (target,), 0.0, 60.0, {"github": sink})
    with running_server(standin.app, ready_path=None) as url:
        asyncio.run(write(url, watch))
        assert standin.comments.get((OWNER, REPO, PR), []) == []
        mine = {"id": 9, "body": f"{MARKER}\nreport\n", "user": {"login": "svc", "type": "User"}}
        theirs = {"id": 8, "body": f"{MARKER}\nforged\n", "user": {"login": "mallory", "type": "User"}}
        standin.comments[(OWNER, REPO, PR)] = [theirs, mine]
        asyncio.run(write(url, watch))
    assert theirs["body"] == f"{MARKER}\nforged\n"                 # not ours: never edited
    assert mine["body"].startswith(f"{MARKER}\nreport\n\n{SECTION_START}\n## Rollout")
    assert standin.check_runs == []


def test_argocd_sync_of_an_unknown_app_starts_nothing(service: Any, repo: dict[str, str],
                                                      caplog: pytest.LogCaptureFixture) -> None:
    from argocd_standins import ARGO_TOKEN, ArgoCD
    from argocd_standins import serve as serve_argocd

    argocd = ArgoCD("serving", [])
    standin, key_file, store, follower, _, _ = service(HAPPY)
    note = {"app": "other", "revision": repo["c1"], "phase": "Running"}
    with caplog.at_level("INFO", logger="app.webhooks.argocd"):
        with serve_argocd(argocd) as argocd_url, \
                serve(standin, key_file, store, follower, argocd_server=argocd_url, argocd_token=ARGO_TOKEN,
                      argocd_retries=0) as (url, _app):
            assert argo_post(url, note).json()["status"] == "accepted"
            wait_for(lambda: argocd.requests, what="the managed-resources call")
            wait_for(lambda: any("cannot read the managed resources" in r.getMessage()
                                 for r in caplog.records), what="the failure to be logged")
            note_ok = {"app": "serving", "revision": repo["c1"], "phase": "Running"}
            assert argo_post(url, note_ok).json()["status"] == "accepted"   # no ray.io object: nothing
            wait_for(lambda: any("no RayService, RayCluster or RayJob to follow" in r.getMessage()
                                 for r in caplog.records), what="nothing to follow")
    assert store.watches == {} and follower.followed == []


def _presync(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, argocd_url: str, service_url: str) -> int:
    """The PreSync hook in this process, configured to announce what it lets through."""
    from app.cli import main

    for name in [n for n in os.environ if n.startswith(("RAYSERVICE_IMPACT_", "KUBERNETES_"))]:
        monkeypatch.delenv(name)
    for name, value in {"KUBECONFIG": str(tmp_path / "no-kubeconfig"), "HOME": str(tmp_path),
                        "RAYSERVICE_IMPACT_ARGOCD_SERVER": argocd_url,
                        "RAYSERVICE_IMPACT_ARGOCD_TOKEN": "argocd-test-token",
                        "RAYSERVICE_IMPACT_ARGOCD_RETRIES": "1",
                        "RAYSERVICE_IMPACT_TERMINATION_LOG": str(tmp_path / "termination-log"),
                        "RAYSERVICE_IMPACT_ROLLOUT_SERVICE_URL": service_url,
                        "RAYSERVICE_IMPACT_ARGOCD_WEBHOOK_SECRET": ARGO_SECRET}.items():
        monkeypatch.setenv(name, value)
    return main(["argocd-presync", "--app", "serving", "--app-namespace", "argocd"])


@pytest.mark.parametrize(("sample", "code", "followed"),
                         [("serve-only", 0, True), ("gpu-image-bump", 3, False)])
def test_presync_hook_announces_the_sync_it_lets_through(service: Any, repo: dict[str, str], tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch,
                                                         capsys: pytest.CaptureFixture[str], sample: str,
                                                         code: int, followed: bool) -> None:
    """Argo CD without notifications: the PreSync hook that approves tells the service, which reads
    the live state before the sync applies it (the hook waits for that) and follows the rollout; a
    hold announces nothing (the sync does not happen)."""
    from argocd_standins import ARGO_TOKEN, ArgoCD, managed_item
    from argocd_standins import serve as serve_argocd

    before = first_rayservice((ROOT / f"samples/{sample}/before.yaml").read_text())
    after = first_rayservice((ROOT / f"samples/{sample}/after.yaml").read_text())
    application = {"metadata": {"name": "serving", "namespace": "argocd"},
                   "spec": {"source": {"repoURL": f"https://github.com/{OWNER}/{REPO}.git",
                                       "path": "deploy"}},
                   "status": {"operationState": {"phase": "Running",
                                                 "operation": {"sync": {"revision": repo["c1"]}}}}}
    argocd = ArgoCD("serving", [managed_item(before, after)], application=application)
    standin, key_file, store, follower, _, _ = service(HAPPY)
    with serve_argocd(argocd) as argocd_url, \
            serve(standin, key_file, store, follower, argocd_server=argocd_url, argocd_token=ARGO_TOKEN) \
            as (url, _app):
        assert _presync(monkeypatch, tmp_path, argocd_url, url) == code
        err = capsys.readouterr().err
        if followed:
            key = f"argocd:argocd/serving@{repo['c1']}"
            assert f"rollout report: announced serving@{repo['c1']}" in err and "(started)" in err
            assert key in store.watches  # recorded before the hook exits: before the sync applies
            wait_for(lambda: store.finished, what="the watch to finish")
    if followed:
        [watch] = follower.followed
        assert [(t.key, t.predicted_rollout) for t in watch.targets] == [
            (f"RayService/{before['metadata'].get('namespace', 'default')}/{before['metadata']['name']}",
             "serve-in-place")]
        assert watch.sink["github"]["sha"] == repo["c1"]
    else:
        assert "announced" not in err and store.watches == {}


@pytest.mark.parametrize(("live_basis", "extra"), [("auto", 3), ("off", 1)])
def test_argocd_sync_predicts_with_the_live_basis(service: Any, repo: dict[str, str], tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch, live_basis: str,
                                                  extra: int) -> None:
    """The prediction a rollout is measured against is the one the hook and the PR gave: with the
    live basis the autoscaler's 3 GPU workers (Git says 1) are what the new cluster needs."""
    from argocd_standins import ARGO_TOKEN, ArgoCD, live_state, managed_item, write_kubeconfig
    from argocd_standins import serve as serve_argocd
    from test_live_basis_flows import ACTIVE, _kube, _manifests

    base, bumped = _manifests()
    argocd = ArgoCD("serving", [managed_item(live_state(base, active=ACTIVE), bumped)])
    kube = _kube(5)
    standin, key_file, store, follower, _, _ = service(HAPPY)
    note = {"app": "serving", "namespace": "argocd", "revision": repo["c1"], "phase": "Running",
            "repoURL": f"https://github.com/{OWNER}/{REPO}.git"}
    with serve_argocd(kube) as kube_url, serve_argocd(argocd) as argocd_url:
        monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
        monkeypatch.setenv("KUBECONFIG", str(write_kubeconfig(tmp_path / "kubeconfig", kube_url)))
        with serve(standin, key_file, store, follower, argocd_server=argocd_url, argocd_token=ARGO_TOKEN,
                   live_basis=live_basis) as (url, _app):
            assert argo_post(url, note).status_code == 202
            wait_for(lambda: store.finished, what="the watch to finish")
    [watch] = follower.followed
    assert [(t.key, t.predicted_rollout, dict(t.predicted_extra)) for t in watch.targets] == [
        ("RayService/ml/stable-diffusion", "new-cluster", {"nvidia.com/gpu": extra})]
    assert any(r.startswith("/api/v1/nodes") for r in kube.requests) == (live_basis == "auto")
