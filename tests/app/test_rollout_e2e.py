"""The rollout report with both real sides joined: the service (real uvicorn, create_app's own
wiring, no injected parts) finds the cluster through a kubeconfig, a push of the merge commit
starts a watch that the Kubernetes side (list + watch against the watch-protocol stand-in, the
watch record in a ConfigMap, the claim in a Lease) follows, and the GitHub check run ends as the
cluster did (docs/rollout.md, docs/rollout-watch.md)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from github_helpers import SECRET, app_standin, post_event, wait_for
from kube_standin import KubeStandin, rayservice
from serverutil import running_server
from test_rollout_github import OWNER, PR, REPO, push_event, repo, rollout_runs  # noqa: F401 - fixture

from app.server import create_app
from app.settings import load_settings

NS, NAME = "default", "ray-serve-llm"  # the sample's RayService (no namespace: default)
HOME = "rayservice-impact"


def _pod(name: str, cluster: str, phase: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": NS, "uid": name, "labels": {"ray.io/cluster": cluster}},
            "spec": {"containers": [{"name": "ray", "resources": {"limits": {"nvidia.com/gpu": "4"}}}]},
            "status": {"phase": phase}}


@pytest.fixture
def kube(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[KubeStandin]:
    server = KubeStandin(bookmark_seconds=0.2)
    with server.serving() as url:
        config = tmp_path / "kubeconfig"
        config.write_text("apiVersion: v1\nkind: Config\ncurrent-context: c\n"
                          f"clusters: [{{name: k, cluster: {{server: '{url}'}}}}]\n"
                          "users: [{name: u, user: {token: kube-token}}]\n"
                          "contexts: [{name: c, context: {cluster: k, user: u}}]\n")
        monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
        monkeypatch.setenv("KUBECONFIG", str(config))
        monkeypatch.setenv("POD_NAMESPACE", HOME)
        monkeypatch.setenv("POD_NAME", "replica-1")
        yield server


def _service(tmp_path: Path, merged: dict[str, str]) -> tuple[Any, Path]:
    standin, key_file = app_standin(tmp_path, OWNER, REPO)
    standin.git_repos[(OWNER, REPO)] = Path(merged["path"])
    standin.merged_by[(OWNER, REPO, merged["c1"])] = [PR]
    return standin, key_file


def _settings(github_url: str, key_file: Path) -> Any:
    return load_settings(github_webhook_secret=SECRET, github_api_url=github_url, github_app_id="31337",
                         github_app_private_key_file=str(key_file), github_write_interval_seconds=0.0,
                         analysis_executor="thread", live_basis="off", render="none",
                         rollout_write_interval_seconds=0.0, rollout_watch=True)


def _start_upgrade(kube: KubeStandin, standin: Any, sha: str) -> None:
    """The operator prepares the new cluster llm-b; its head pod waits for a node, and the check
    run says so."""
    kube.put("rayservices", rayservice(2, name=NAME, ns=NS, active="llm-a", pending="llm-b"))
    kube.put("pods", _pod("llm-b-head", "llm-b", "Pending"))
    wait_for(lambda: "Pending" in (rollout_runs(standin, sha)[-1].get("output") or {}).get("summary", ""),
             what="the Pending pod reported")


def _finish_upgrade(kube: KubeStandin) -> None:
    kube.put("pods", _pod("llm-b-head", "llm-b", "Running"))
    kube.put("rayservices", rayservice(2, name=NAME, ns=NS, active="llm-b"))


def _stored(kube: KubeStandin, plural: str) -> list[dict[str, Any]]:
    return [o for (p, ns, _), o in kube.objects.items() if p == plural and ns == HOME]


def test_merge_followed_on_the_cluster_to_a_success_as_predicted(
        kube: KubeStandin, tmp_path: Path, repo: dict[str, str]) -> None:  # noqa: F811 - the fixture
    kube.put("rayservices", rayservice(1, name=NAME, ns=NS, active="llm-a"))
    standin, key_file = _service(tmp_path, repo)
    with running_server(standin.app, ready_path=None) as github_url:
        app = create_app(_settings(github_url, key_file))  # the real wiring: kube_parts from the kubeconfig
        with running_server(app) as url:
            assert post_event(url, "push", push_event(repo["c0"], repo["c1"])).status_code == 202
            wait_for(lambda: rollout_runs(standin, repo["c1"]), what="the rollout check run")
            assert rollout_runs(standin, repo["c1"])[-1]["status"] == "in_progress"
            # restart safety: the watch is recorded in a ConfigMap, the claim in a Lease
            wait_for(lambda: _stored(kube, "configmaps") and _stored(kube, "leases"), what="the watch record")
            time.sleep(0.3)  # the follower has seen the RayService as it was
            _start_upgrade(kube, standin, repo["c1"])
            _finish_upgrade(kube)
            run = wait_for(lambda: next((r for r in rollout_runs(standin, repo["c1"])
                                         if r.get("conclusion")), None), timeout=20, what="the conclusion")
    assert run["conclusion"] == "success", run
    text = run["output"]["title"] + run["output"]["summary"]
    assert "as predicted" in text and "4" in text
    assert len({r["id"] for r in rollout_runs(standin, repo["c1"])}) == 1  # one check run, updated in place
    (record,) = _stored(kube, "configmaps")
    assert "finished" in str(record.get("data", {})) or "final" in str(record.get("data", {}))


def test_no_kubernetes_configuration_turns_rollout_reporting_off(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path, repo: dict[str, str]) -> None:  # noqa: F811
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "none"))
    standin, key_file = _service(tmp_path, repo)
    with running_server(standin.app, ready_path=None) as github_url:
        with running_server(create_app(_settings(github_url, key_file))) as url:
            resp = post_event(url, "push", push_event(repo["c0"], repo["c1"]))
    assert resp.status_code == 202 and "not configured" in resp.text
    assert not rollout_runs(standin, repo["c1"])


def test_a_restart_mid_rollout_resumes_from_the_cluster_and_finishes(kube: KubeStandin, tmp_path: Path,
                                                                     repo: dict[str, str]) -> None:  # noqa: F811
    """Replica 1 starts the watch and goes away mid-rollout; replica 2, a new process's worth of
    objects with nothing in memory, finds the watch in its ConfigMap, takes the Lease once it has
    expired, and finishes the same check run."""
    kube.put("rayservices", rayservice(1, name=NAME, ns=NS, active="llm-a"))
    standin, key_file = _service(tmp_path, repo)
    fast = {"claim_ttl": 1.0, "rescan_interval": 0.2}
    with running_server(standin.app, ready_path=None) as github_url:
        first = create_app(_settings(github_url, key_file), reporter_options={**fast, "holder": "replica-1"})
        with running_server(first) as url:
            assert post_event(url, "push", push_event(repo["c0"], repo["c1"])).status_code == 202
            wait_for(lambda: rollout_runs(standin, repo["c1"]), what="the rollout check run")
            time.sleep(0.3)
            _start_upgrade(kube, standin, repo["c1"])
        # replica 1 is gone; the cluster finishes while nobody watches
        _finish_upgrade(kube)
        second = create_app(_settings(github_url, key_file), reporter_options={**fast, "holder": "replica-2"})
        with running_server(second):
            run = wait_for(lambda: next((r for r in rollout_runs(standin, repo["c1"])
                                         if r.get("conclusion")), None), timeout=20, what="the conclusion")
    assert run["conclusion"] == "success", run
    assert "as predicted" in run["output"]["title"] + run["output"]["summary"]
    assert len({r["id"] for r in rollout_runs(standin, repo["c1"])}) == 1  # the same check run
    (lease,) = _stored(kube, "leases")
    assert lease["spec"]["holderIdentity"] == "replica-2"
