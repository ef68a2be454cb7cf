"""The live basis in the HTTP service and the GitHub flow, through the real ``kubernetes`` client
against the Kubernetes stand-in (a kubeconfig points at it)."""

from __future__ import annotations

import asyncio
import copy
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from app.github.flow import AnalysisOptions, analyse
from app.server import create_app
from app.settings import load_settings

try:
    from . import argocd_standins as s
    from .serverutil import running_server
except ImportError:  # tests/app is not a package
    import argocd_standins as s  # type: ignore[no-redef]
    from serverutil import running_server  # type: ignore[no-redef]

ACTIVE = "stable-diffusion-7xk2q"
TOLERATION = [{"key": "ray.io/node-type", "operator": "Equal", "value": "worker", "effect": "NoSchedule"}]


def _manifests() -> tuple[dict[str, Any], dict[str, Any]]:
    base = s.target_state(s.sample(), "app")
    base["spec"]["rayClusterConfig"]["enableInTreeAutoscaling"] = True
    bumped = copy.deepcopy(base)
    for spec in [bumped["spec"]["rayClusterConfig"]["headGroupSpec"]] + \
            bumped["spec"]["rayClusterConfig"]["workerGroupSpecs"]:
        spec["template"]["spec"]["containers"][0]["image"] = "rayproject/ray-ml:2.47.0-py39-gpu"
    return base, bumped


def _kube(free_gpus: int) -> s.Kubernetes:
    base, _ = _manifests()
    live = s.live_state(base, active=ACTIVE)
    cluster = s.raycluster(live, ACTIVE, {"gpu-group": 3})  # the autoscaler runs 3, Git says 1
    pods = [s.pod(f"{ACTIVE}-gpu-{i}", "ml", "gpu-node", gpus=1, tolerations=TOLERATION) for i in range(3)]
    return s.Kubernetes(rayservices=[live], rayclusters=[cluster], pods=pods,
                        nodes=[s.node("gpu-node", gpus=3 + free_gpus)])


@pytest.fixture
def kubeconfig(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    def serve(kube: s.Kubernetes) -> Any:
        ctx = s.serve(kube)
        url = ctx.__enter__()
        monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
        monkeypatch.setenv("KUBECONFIG", str(s.write_kubeconfig(tmp_path / "kubeconfig", url)))
        opened.append(ctx)
        return kube

    opened: list[Any] = []
    yield serve
    for ctx in opened:
        ctx.__exit__(None, None, None)


API_TOKEN = "test-api-token-0123456789"
AUTH = {"authorization": f"Bearer {API_TOKEN}"}


@pytest.fixture
def tokens_file(tmp_path: Path) -> Path:
    path = tmp_path / "api-tokens"
    path.write_text(f"# one per line\n{API_TOKEN}\n")
    return path


def _post(base_url: str, before: dict[str, Any], after: dict[str, Any],
          headers: dict[str, str] | None = None) -> dict[str, Any]:
    body = {"before": yaml.safe_dump(before), "after": yaml.safe_dump(after)}
    response = httpx.post(f"{base_url}/v1/analyze", json=body, timeout=30,
                          headers=AUTH if headers is None else headers)
    assert response.status_code == 200, response.text
    return response.json()["resources"][0]


@pytest.mark.parametrize(("free", "decision"), [(2, "hold"), (3, "approve")])
def test_service_uses_the_live_basis_when_kubernetes_is_configured(kubeconfig: Any, free: int,
                                                                   decision: str, tokens_file: Path) -> None:
    kube = kubeconfig(_kube(free))
    app = create_app(load_settings(analysis_executor="thread", live_basis="auto",
                                   api_tokens_file=tokens_file))
    before, after = _manifests()
    with running_server(app) as base_url:
        r = _post(base_url, before, after)
        again = _post(base_url, before, after)
    assert (r["capacity"]["basis"], r["capacity"]["extra"]["nvidia.com/gpu"]) == ("live", 3)
    assert r["capacity"]["headroom"] == {"nvidia.com/gpu": free}
    assert r["decision"] == decision
    assert again == r
    lists = [p for p in kube.requests if p.startswith("/api/v1/nodes")]
    assert len(lists) == 2  # answered live twice: never from the cache


def test_service_live_basis_off_keeps_the_manifest_basis(kubeconfig: Any) -> None:
    kube = kubeconfig(_kube(0))
    app = create_app(load_settings(analysis_executor="thread", live_basis="off"))
    before, after = _manifests()
    with running_server(app) as base_url:
        r = _post(base_url, before, after)
    assert (r["capacity"]["basis"], r["capacity"]["extra"]["nvidia.com/gpu"]) == ("manifest", 1)
    assert kube.requests == []


def test_service_falls_back_to_manifests_when_kubernetes_refuses(kubeconfig: Any, tokens_file: Path) -> None:
    kube = _kube(2)
    kube.token = "another-token"  # our kubeconfig's token is rejected: 401
    kubeconfig(kube)
    app = create_app(load_settings(analysis_executor="thread", live_basis="auto",
                                   api_tokens_file=tokens_file))
    before, after = _manifests()
    with running_server(app) as base_url:
        r = _post(base_url, before, after)
    assert r["capacity"]["basis"] == "manifest"
    assert kube.requests  # it tried


def test_github_flow_analysis_uses_the_live_basis(kubeconfig: Any) -> None:
    kubeconfig(_kube(5))
    before, after = _manifests()
    report = asyncio.run(analyse([("base:rs.yaml", yaml.safe_dump(before))],
                                 [("head:rs.yaml", yaml.safe_dump(after))],
                                 AnalysisOptions(live_enabled=True, timeout=30)))
    capacity = report.to_dict()["resources"][0]["capacity"]
    assert (capacity["basis"], capacity["extra"]["nvidia.com/gpu"], capacity["headroom"]) == (
        "live", 3, {"nvidia.com/gpu": 5})
    assert json.dumps(report.to_dict())


def test_service_managed_resources_use_the_live_basis(kubeconfig: Any, tokens_file: Path) -> None:
    kubeconfig(_kube(2))
    before, after = _manifests()
    body = {"items": [s.managed_item(s.live_state(before, active=ACTIVE), after)]}
    app = create_app(load_settings(analysis_executor="thread", live_basis="auto",
                                   api_tokens_file=tokens_file))
    with running_server(app) as base_url:
        response = httpx.post(f"{base_url}/v1/argocd/managed-resources", json=body, timeout=30,
                              headers=AUTH)
    r = response.json()["resources"][0]
    assert (response.status_code, r["capacity"]["basis"], r["decision"]) == (200, "live", "hold")
    assert r["capacity"]["extra"]["nvidia.com/gpu"] == 3


def test_without_api_tokens_the_cluster_is_never_read(kubeconfig: Any) -> None:
    """An open analysis API answers from the manifests: nobody learns the cluster's free GPUs."""
    kube = kubeconfig(_kube(5))
    app = create_app(load_settings(analysis_executor="thread", live_basis="auto"))
    before, after = _manifests()
    with running_server(app) as base_url:
        r = _post(base_url, before, after, headers={})
    assert (r["capacity"]["basis"], r["capacity"]["headroom"]) == ("manifest", None)
    assert kube.requests == []


def test_with_api_tokens_a_caller_without_one_is_refused(kubeconfig: Any, tokens_file: Path) -> None:
    kube = kubeconfig(_kube(5))
    app = create_app(load_settings(analysis_executor="thread", live_basis="auto",
                                   api_tokens_file=tokens_file))
    before, after = _manifests()
    body = {"before": yaml.safe_dump(before), "after": yaml.safe_dump(after)}
    with running_server(app) as base_url:
        answers = [httpx.post(f"{base_url}/v1/analyze", json=body, timeout=30, headers=h)
                   for h in ({}, {"authorization": "Bearer wrong-token-0123456789"},
                             {"authorization": f"Basic {API_TOKEN}"})]
        open_routes = [httpx.get(f"{base_url}{p}", timeout=30).status_code
                       for p in ("/healthz", "/readyz", "/metrics")]
    assert [(a.status_code, a.json()["error"]["code"], a.headers.get("www-authenticate"))
            for a in answers] == [(401, "unauthorized", "Bearer")] * 3
    assert open_routes == [200, 200, 200]
    assert kube.requests == []


def _short_of_cpu() -> s.Kubernetes:
    """Enough free GPUs on the GPU node for the new cluster (3 of 6), not enough cpu (5 of 8)."""
    base, _ = _manifests()
    live = s.live_state(base, active=ACTIVE)
    cluster = s.raycluster(live, ACTIVE, {"gpu-group": 3})
    pods = [s.pod(f"{ACTIVE}-gpu-{i}", "ml", "gpu-node", gpus=1, tolerations=TOLERATION) for i in range(3)]
    return s.Kubernetes(rayservices=[live], rayclusters=[cluster], pods=pods,
                        nodes=[s.node("gpu-node", gpus=6, cpu="8")])


def test_service_placement_plan_holds_what_the_gpu_totals_approve(kubeconfig: Any, tokens_file: Path) -> None:
    # The headroom (free GPUs in whole pods) covers the 3 new workers, so the totals approved. The
    # plan places each pod (docs/placement.md): the first worker takes 3 of the 5 free cpu; the
    # second worker (3 cpu) and the head (2 cpu + the autoscaler's 500m) find too little cpu.
    kube = kubeconfig(_short_of_cpu())
    app = create_app(load_settings(analysis_executor="thread", live_basis="auto",
                                   api_tokens_file=tokens_file))
    before, after = _manifests()
    with running_server(app) as base_url:
        r = _post(base_url, before, after)
    assert r["capacity"]["headroom"] == {"nvidia.com/gpu": 3}
    plan = r["capacity"]["placement"]
    assert plan["fits"] is False and plan["nodes"] == 1 and plan["pods"] == 4
    groups = {g["group"]: g for g in plan["groups"]}
    assert (groups["gpu-group"]["placed"], groups["gpu-group"]["unplaced"]) == (1, 2)
    assert groups["gpu-group"]["message"] == "0/1 nodes are available: 1 Insufficient cpu."
    assert groups["head"]["unplaced"] == 1
    assert plan["addNodes"][0]["placesAll"] is True
    assert r["decision"] == "hold"
    assert any("cannot be placed on the live nodes: 0/1 nodes are available: 1 Insufficient cpu." in reason
               for reason in r["reasons"])
    # One list of nodes and one of pods per request (the reads stay bounded).
    assert len([p for p in kube.requests if p.startswith("/api/v1/nodes")]) == 1
    assert len([p for p in kube.requests if p.startswith("/api/v1/pods")]) == 1


def test_github_flow_comment_shows_the_placement(kubeconfig: Any) -> None:
    from diffing.render.markdown import render_markdown

    kubeconfig(_kube(5))
    before, after = _manifests()
    report = asyncio.run(analyse([("base:rs.yaml", yaml.safe_dump(before))],
                                 [("head:rs.yaml", yaml.safe_dump(after))],
                                 AnalysisOptions(live_enabled=True, timeout=30)))
    plan = report.to_dict()["resources"][0]["capacity"]["placement"]
    assert plan["fits"] is True and "addNodes" not in plan
    text = render_markdown(report)
    assert "**Placement:** fits: 4 new pod(s) on the 1 live node(s)" in text
    # the picture per node pool: the GPU node's 8, 3 held by the old cluster, the 3 new workers' 3
    assert "| `node gpu-node` <sub>(1 node(s))</sub> | 3 | 3 | 2 | 8 |" in text
    assert "<summary>Placement per node pool</summary>" in text


def _queued(used_gpus: str) -> s.Kubernetes:
    """The RayService labelled for Kueue queue team-a (LocalQueue in ml -> ClusterQueue gpu-cq of
    8 GPUs nominal, ``used_gpus`` reserved: the old cluster's 3 among them)."""
    kube = _kube(5)
    kube.localqueues = [{"metadata": {"name": "team-a", "namespace": "ml"},
                         "spec": {"clusterQueue": "gpu-cq"}}]
    kube.clusterqueues = [{
        "metadata": {"name": "gpu-cq"},
        "spec": {"resourceGroups": [{"coveredResources": ["cpu", "memory", "nvidia.com/gpu"], "flavors": [
            {"name": "a100", "resources": [{"name": "cpu", "nominalQuota": "200"},
                                           {"name": "memory", "nominalQuota": "2Ti"},
                                           {"name": "nvidia.com/gpu", "nominalQuota": "8"}]}]}]},
        "status": {"flavorsReservation": [{"name": "a100", "resources": [
            {"name": "cpu", "total": "12"}, {"name": "memory", "total": "48Gi"},
            {"name": "nvidia.com/gpu", "total": used_gpus}]}]}}]
    return kube


def _labelled() -> tuple[dict[str, Any], dict[str, Any]]:
    before, after = _manifests()
    for obj in (before, after):
        obj["metadata"].setdefault("labels", {})["kueue.x-k8s.io/queue-name"] = "team-a"
    return before, after


@pytest.mark.parametrize(("used", "admitted", "decision"), [("3", True, "approve"), ("6", False, "hold")])
def test_service_kueue_admission_of_the_new_cluster(kubeconfig: Any, tokens_file: Path, used: str,
                                                     admitted: bool, decision: str) -> None:
    # The new cluster needs 3 GPUs (3 autoscaled workers). 8 nominal: with 3 reserved (the old
    # cluster) 5 are free, admitted; with 6 reserved only 2 are free: it waits for quota.
    kube = kubeconfig(_queued(used))
    app = create_app(load_settings(analysis_executor="thread", live_basis="auto",
                                   api_tokens_file=tokens_file))
    before, after = _labelled()
    with running_server(app) as base_url:
        r = _post(base_url, before, after)
    q = r["capacity"]["kueue"]
    assert (q["queue"], q["clusterQueue"], q["admitted"]) == ("ml/team-a", "gpu-cq", admitted)
    gpu = next(row for row in q["resources"] if row["resource"] == "nvidia.com/gpu")
    assert gpu["needs"] == "3" and gpu["free"] == str(8 - int(used))
    assert r["decision"] == decision
    if not admitted:
        said = ("Kueue: the new cluster waits for quota in ClusterQueue gpu-cq: "
                "nvidia.com/gpu needs 3 in flavor a100, 2 free")
        assert any(reason.startswith(said) for reason in r["reasons"])
    # One list of LocalQueues (the namespace) and one of ClusterQueues.
    kueue = "/apis/kueue.x-k8s.io/v1beta1"
    assert [p for p in kube.requests if "kueue" in p] == [f"{kueue}/clusterqueues",
                                                          f"{kueue}/namespaces/ml/localqueues"]


def test_kueue_not_installed_reads_nothing_more(kubeconfig: Any, tokens_file: Path) -> None:
    kube = _kube(5)  # no Kueue: its API answers 404
    kubeconfig(kube)
    app = create_app(load_settings(analysis_executor="thread", live_basis="auto",
                                   api_tokens_file=tokens_file))
    before, after = _labelled()
    with running_server(app) as base_url:
        r = _post(base_url, before, after)
    # Without Kueue its label does nothing: no admission to wait for, and no LocalQueue read.
    assert "kueue" not in r["capacity"]
    assert [p for p in kube.requests if "kueue" in p] == ["/apis/kueue.x-k8s.io/v1beta1/clusterqueues"]
    assert r["decision"] == "approve"
