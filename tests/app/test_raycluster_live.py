"""Standalone RayClusters and RayJobs in the shell: the live basis of a RayCluster read through the
real ``kubernetes`` client against the Kubernetes stand-in (a kubeconfig points at it), and the
HTTP API, the GitHub flow and the Argo CD PreSync hook feeding RayClusters and RayJobs to the core.

Rollout values of RayClusters and RayJobs are the core's (being written): these tests check the
kind, the name, that the resource is there, and what the shell hands ``diffing.analyze``."""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

import diffing
from app.cli import main
from app.github.flow import AnalysisOptions, analyse
from app.live import cluster_pod_facts, live_basis_for, live_targets, parse_key
from app.schemas import ReportResponse
from app.server import create_app
from app.settings import load_settings
from diffing.live import live_key

try:
    from . import argocd_standins as s
    from .serverutil import running_server
except ImportError:  # tests/app is not a package
    import argocd_standins as s  # type: ignore[no-redef]
    from serverutil import running_server  # type: ignore[no-redef]

NS, NAME = "ml", "raycluster-batch"
KEY = f"RayCluster/{NS}/{NAME}"
HASH = "C2VJ0OQ6N1S8EDTB4RKD2Q7M9A"  # a recreate hash as KubeRay writes it (base32 of a SHA-1)
HEAD_ANNOTATIONS = {"ray.io/upgrade-strategy-recreate-hash": HASH, "ray.io/kuberay-version": "v1.7.0",
                    "ray.io/ft-enabled": "false"}
ACTIVE_PODS = "fieldSelector=status.phase!=Succeeded,status.phase!=Failed"
API_TOKEN = "test-api-token-0123456789"
AUTH = {"authorization": f"Bearer {API_TOKEN}"}
TOLERATION = [{"key": "ray.io/node-type", "operator": "Equal", "value": "worker", "effect": "NoSchedule"}]


def container(name: str, image: str = "rayproject/ray:2.52.0", gpus: int = 0) -> dict[str, Any]:
    resources: dict[str, Any] = {"requests": {"cpu": "2", "memory": "4Gi"},
                                 "limits": {"cpu": "2", "memory": "4Gi"}}
    if gpus:
        resources["limits"]["nvidia.com/gpu"] = gpus
    return {"name": name, "image": image, "resources": resources}


def raycluster(*, gpus: int = 0, image: str = "rayproject/ray:2.52.0", name: str = NAME) -> dict[str, Any]:
    """The RayCluster in Git: one worker group ``workers`` (replicas 1, autoscaled)."""
    worker_spec: dict[str, Any] = {"containers": [container("ray-worker", image, gpus)]}
    if gpus:
        worker_spec["tolerations"] = TOLERATION
    return {
        "apiVersion": "ray.io/v1", "kind": "RayCluster",
        "metadata": {"name": name, "namespace": NS},
        "spec": {
            "rayVersion": "2.52.0", "enableInTreeAutoscaling": True,
            "headGroupSpec": {"rayStartParams": {},
                              "template": {"spec": {"containers": [container("ray-head", image)]}}},
            "workerGroupSpecs": [{"groupName": "workers", "replicas": 1, "minReplicas": 1, "maxReplicas": 5,
                                  "rayStartParams": {}, "template": {"spec": worker_spec}}],
        },
    }


def rayjob() -> dict[str, Any]:
    cluster = raycluster()["spec"]
    cluster.pop("enableInTreeAutoscaling")
    return {"apiVersion": "ray.io/v1", "kind": "RayJob",
            "metadata": {"name": "rayjob-nightly", "namespace": NS},
            "spec": {"entrypoint": "python /home/ray/samples/sample_code.py",
                     "shutdownAfterJobFinishes": True, "rayClusterSpec": cluster}}


def cluster_pods(*, gpus: int = 0) -> list[dict[str, Any]]:
    """What runs for the cluster: its head (hash annotations), 3 workers of ``workers`` (the
    autoscaler's), 2 of ``old-group`` (a group Git removed: orphans), and pods that must not count."""
    node = "gpu-node-1" if gpus else "cpu-node-1"
    tol = TOLERATION if gpus else None
    return [
        s.ray_pod(NAME, NS, "headgroup", 0, annotations=HEAD_ANNOTATIONS),
        *[s.ray_pod(NAME, NS, "workers", i, node_name=node, gpus=gpus, tolerations=tol,
                    annotations={"ray.io/kuberay-version": "v1.7.0"}) for i in range(3)],
        *[s.ray_pod(NAME, NS, "old-group", i) for i in range(2)],
        s.ray_pod(NAME, NS, "workers", 7, deleting=True),  # scaled in, on its way out
        s.ray_pod(NAME, NS, "workers", 8, phase="Succeeded"),  # ended: not an active pod
        s.ray_pod("another-cluster", NS, "workers", 0),  # another cluster in the namespace
        s.ray_pod(NAME, "research", "workers", 0),  # same name, another namespace
        s.pod("plain-pod", NS, "cpu-node-1"),  # no ray.io/cluster label
    ]


def kube_with_cluster(*, gpus: int = 0, free_gpus: int = 0) -> tuple[s.Kubernetes, dict[str, Any]]:
    live = s.standalone_raycluster(raycluster(gpus=gpus), {"workers": 3})
    nodes = [s.node("cpu-node-1")]
    if gpus:
        nodes.append(s.node("gpu-node-1", gpus=3 * gpus + free_gpus))
    return s.Kubernetes(rayclusters=[live], pods=cluster_pods(gpus=gpus), nodes=nodes), live


@pytest.fixture
def kubeconfig(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[s.Kubernetes], str]]:
    """Serve a Kubernetes stand-in and point ``$KUBECONFIG`` at it; answers its URL."""
    opened: list[Any] = []

    def serve(kube: s.Kubernetes) -> str:
        ctx = s.serve(kube)
        url = ctx.__enter__()
        opened.append(ctx)
        monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
        monkeypatch.setenv("KUBECONFIG", str(s.write_kubeconfig(tmp_path / "kubeconfig", url)))
        return url

    yield serve
    for ctx in opened:
        ctx.__exit__(None, None, None)


@pytest.fixture
def analyze_calls(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """The keyword arguments of every ``diffing.analyze`` call given a live basis (the real core
    still answers)."""
    calls: list[dict[str, Any]] = []
    real = diffing.analyze

    def spy(*args: Any, **kwargs: Any) -> diffing.Report:
        if kwargs.get("live") is not None:  # not the service's warm-up, not a manifest-basis call
            calls.append(kwargs)
        return real(*args, **kwargs)

    monkeypatch.setattr(diffing, "analyze", spy)
    return calls


# -- the live basis of a standalone RayCluster -------------------------------------------------------


def test_live_keys_and_targets_of_a_text() -> None:
    owned = raycluster(name="svc-raycluster-x1")
    owned["metadata"]["ownerReferences"] = [{"apiVersion": "ray.io/v1", "kind": "RayService", "name": "svc",
                                             "uid": "u", "controller": True}]
    rs = s.target_state(s.sample(), "app")
    text = yaml.safe_dump_all([raycluster(), owned, rayjob(), rs])
    targets = live_targets(text)
    # not the owned cluster; the RayJob for the room its pods need
    assert sorted(targets) == [KEY, "RayJob/ml/rayjob-nightly", "ml/stable-diffusion"]
    assert targets[KEY]["kind"] == "RayCluster"
    for key in targets:
        assert live_key(parse_key(key)) == key


def test_raycluster_live_basis_reads_head_hash_replicas_and_orphaned_groups(kubeconfig: Any) -> None:
    kube, live = kube_with_cluster()
    kubeconfig(kube)
    basis = live_basis_for([KEY], targets={KEY: raycluster()}, timeout=10)
    assert basis == {KEY: diffing.LiveCluster(
        active_cluster=NAME, worker_replicas={"workers": 3}, headroom=None,
        head_hash=HASH, head_kuberay_version="v1.7.0",
        group_pods={"old-group": 2, "workers": 3},  # old-group is no longer in the spec: orphans
        cluster_spec=live["spec"])}
    # One RayCluster list for the namespace; the nodes and the active pods once, for the
    # placement plan (docs/placement.md); the cluster's pods come from that list: nothing else.
    assert kube.requests == [
        f"/apis/ray.io/v1/namespaces/{NS}/rayclusters", "/api/v1/nodes?limit=500",
        f"/api/v1/pods?{ACTIVE_PODS}&limit=500"]


def test_raycluster_absent_from_the_cluster_has_no_live_state(kubeconfig: Any,
                                                              analyze_calls: list[dict[str, Any]]) -> None:
    kube = s.Kubernetes(rayclusters=[], pods=cluster_pods())
    kubeconfig(kube)
    after = yaml.safe_dump(raycluster())
    report = asyncio.run(analyse([], [("head:rc.yaml", after)],
                                 AnalysisOptions(live_enabled=True, timeout=30)))
    (res,) = report.to_dict()["resources"]
    assert (res["kind"], res["namespace"], res["name"]) == ("RayCluster", NS, NAME)
    (call,) = analyze_calls
    assert call["live"] == {KEY: diffing.LiveCluster()}  # read, and not there: it is created
    assert call["live"][KEY].cluster_spec is None and call["live"][KEY].head_hash is None
    assert call["live"][KEY].cluster is not None  # the nodes and pods, for the plan of its creation
    assert kube.requests == [f"/apis/ray.io/v1/namespaces/{NS}/rayclusters", "/api/v1/nodes?limit=500",
                             f"/api/v1/pods?{ACTIVE_PODS}&limit=500"]


def test_raycluster_and_rayservice_share_the_namespace_reads(kubeconfig: Any) -> None:
    """A GPU cluster makes the reader list nodes and every active pod once (the headroom); the
    cluster's pods then come from that list, and one RayCluster list serves the RayService too."""
    kube, live = kube_with_cluster(gpus=1, free_gpus=2)
    rs_target = s.target_state(s.sample(), "app")
    rs_live = s.live_state(rs_target, active="stable-diffusion-7xk2q")
    kube.rayservices = [rs_live]
    kube.rayclusters.append(s.raycluster(rs_live, "stable-diffusion-7xk2q", {"gpu-group": 1}))
    kubeconfig(kube)
    targets = {KEY: raycluster(gpus=1), "ml/stable-diffusion": rs_target}
    basis = live_basis_for(list(targets), targets=targets, timeout=10)
    assert basis is not None
    rc = basis[KEY]
    assert (rc.head_hash, rc.head_kuberay_version, dict(rc.group_pods), dict(rc.worker_replicas)) == (
        HASH, "v1.7.0", {"old-group": 2, "workers": 3}, {"workers": 3})
    assert rc.headroom == {"nvidia.com/gpu": 2}
    assert basis["ml/stable-diffusion"].active_cluster == "stable-diffusion-7xk2q"
    assert sorted(p.partition("?")[0] for p in kube.requests) == [
        "/api/v1/nodes", "/api/v1/pods",
        f"/apis/ray.io/v1/namespaces/{NS}/rayclusters", f"/apis/ray.io/v1/namespaces/{NS}/rayservices"]


def test_cluster_pod_facts_prefers_the_live_head_and_skips_terminating_pods() -> None:
    old_head = s.ray_pod(NAME, NS, "headgroup", 0, deleting=True,
                         annotations={"ray.io/upgrade-strategy-recreate-hash": "OLD"})
    new_head = s.ray_pod(NAME, NS, "headgroup", 1, annotations=HEAD_ANNOTATIONS)
    assert cluster_pod_facts([old_head, new_head], NAME) == (HASH, "v1.7.0", {})
    assert cluster_pod_facts([old_head], NAME) == (None, None, {})


# -- the HTTP API ------------------------------------------------------------------------------------


def test_http_analyze_answers_a_raycluster_and_a_rayjob(analysis_service: Any) -> None:
    before = yaml.safe_dump_all([raycluster(), rayjob()])
    bumped_job = rayjob()
    bumped_job["spec"]["entrypoint"] = "python /home/ray/samples/other.py"
    after = yaml.safe_dump_all([raycluster(image="rayproject/ray:2.53.0"), bumped_job])
    response = httpx.post(f"{analysis_service.base_url}/v1/analyze", json={"before": before, "after": after},
                          timeout=30)
    assert response.status_code == 200, response.text
    report = response.json()
    ReportResponse.model_validate(report)  # the documented model takes it
    assert [(r["kind"], r["namespace"], r["name"]) for r in report["resources"]] == [
        ("RayCluster", NS, NAME), ("RayJob", NS, "rayjob-nightly")]


def test_http_analyze_reads_the_raycluster_live(kubeconfig: Any, tmp_path: Path,
                                                analyze_calls: list[dict[str, Any]]) -> None:
    kube, _ = kube_with_cluster()
    kubeconfig(kube)
    tokens = tmp_path / "api-tokens"
    tokens.write_text(f"{API_TOKEN}\n")
    app = create_app(load_settings(analysis_executor="thread", live_basis="auto", api_tokens_file=tokens))
    body = {"before": yaml.safe_dump(raycluster()),
            "after": yaml.safe_dump(raycluster(image="rayproject/ray:2.53.0"))}
    with running_server(app) as base_url:
        response = httpx.post(f"{base_url}/v1/analyze", json=body, headers=AUTH, timeout=30)
    assert response.status_code == 200, response.text
    (res,) = response.json()["resources"]
    assert (res["kind"], res["name"]) == ("RayCluster", NAME)
    (call,) = analyze_calls
    live = call["live"][KEY]
    assert (live.head_hash, dict(live.group_pods), dict(live.worker_replicas)) == (
        HASH, {"old-group": 2, "workers": 3}, {"workers": 3})
    assert kube.requests == [
        f"/apis/ray.io/v1/namespaces/{NS}/rayclusters", "/api/v1/nodes?limit=500",
        f"/api/v1/pods?{ACTIVE_PODS}&limit=500"]


def test_http_managed_resources_with_a_raycluster_item(analysis_service: Any) -> None:
    live = s.standalone_raycluster(raycluster(), {"workers": 3})
    body = {"items": [s.managed_item(live, raycluster(image="rayproject/ray:2.53.0")),
                      s.managed_item(None, rayjob())]}
    response = httpx.post(f"{analysis_service.base_url}/v1/argocd/managed-resources", json=body, timeout=30)
    assert response.status_code == 200, response.text
    assert [(r["kind"], r["name"]) for r in response.json()["resources"]] == [
        ("RayCluster", NAME), ("RayJob", "rayjob-nightly")]


# -- the Argo CD PreSync hook --------------------------------------------------------------------------


def test_presync_reads_rayclusters_and_rayjobs_from_argocd_and_the_cluster_live(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        analyze_calls: list[dict[str, Any]]) -> None:
    kube, live = kube_with_cluster()
    owned = s.raycluster(s.live_state(s.target_state(s.sample(), "ray-serving"), active="sd-x1"), "sd-x1")
    items = [s.managed_item(live, raycluster(image="rayproject/ray:2.53.0")),
             s.managed_item(None, rayjob()),
             s.managed_item(owned, owned),  # a RayService's cluster: the owner's, never read live
             s.managed_item(None, {"apiVersion": "ray.io/v1", "kind": "RayCronJob",
                                   "metadata": {"name": "nightly", "namespace": NS}, "spec": {}})]
    argo = s.ArgoCD("ray-serving", items)
    with s.serve(argo) as argo_url, s.serve(kube) as kube_url:
        for name in [n for n in os.environ if n.startswith(("RAYSERVICE_IMPACT_", "KUBERNETES_"))]:
            monkeypatch.delenv(name)
        monkeypatch.setenv("HOME", str(tmp_path))
        monkeypatch.setenv("KUBECONFIG", str(s.write_kubeconfig(tmp_path / "kubeconfig", kube_url)))
        monkeypatch.setenv("RAYSERVICE_IMPACT_ARGOCD_SERVER", argo_url)
        monkeypatch.setenv("RAYSERVICE_IMPACT_ARGOCD_TOKEN", s.ARGO_TOKEN)
        monkeypatch.setenv("RAYSERVICE_IMPACT_ARGOCD_RETRIES", "1")
        monkeypatch.setenv("RAYSERVICE_IMPACT_TERMINATION_LOG", str(tmp_path / "termination-log"))
        capsys.readouterr()
        code = main(["argocd-presync", "--app", "ray-serving", "--format", "json"])
        out = capsys.readouterr()
    assert code in (0, 3), out.err  # the verdict is the core's; the check ran
    # One call for the whole ray.io group: Argo CD filters on one kind or none.
    assert argo.requests[0] == ("/api/v1/applications/ray-serving/managed-resources", {"group": ["ray.io"]})
    assert [q.get("kind") for _, q in argo.requests[1:]] == [["Deployment"], ["CustomResourceDefinition"]]
    report = json.loads(out.out)
    # The RayCronJob is analysed from Argo CD's target alone: it has no live basis.
    assert [(r["kind"], r["name"]) for r in report["resources"]] == [
        ("RayCluster", NAME), ("RayJob", "rayjob-nightly"), ("RayCronJob", "nightly")]
    assert "1 RayCluster(s), 1 RayJob(s), 1 RayCronJob(s) managed by ray-serving" in out.err
    assert (f"{KEY}; running (replicas workers=3; worker pods old-group=2, workers=3); head pod hash {HASH}, "
            "KubeRay v1.7.0") in out.err
    (call,) = analyze_calls
    # not the owned cluster; the CPU-only RayJob gets the nodes and pods for its run's plan
    assert sorted(call["live"]) == [KEY, "RayJob/ml/rayjob-nightly"]
    assert call["live"]["RayJob/ml/rayjob-nightly"].cluster is not None
    assert call["live"][KEY].cluster_spec == live["spec"]
    assert call["before_is_live"] is True
    assert kube.requests == [
        f"/apis/ray.io/v1/namespaces/{NS}/rayclusters", "/api/v1/nodes?limit=500",
        f"/api/v1/pods?{ACTIVE_PODS}&limit=500"]


def test_managed_resources_texts_keep_rayclusters_and_rayjobs() -> None:
    from app.managed import texts_from_managed_resources

    other = {"group": "apps", "kind": "Deployment", "namespace": NS, "name": "web",
             "liveState": json.dumps({"kind": "Deployment"}), "targetState": "null"}
    rc = raycluster()
    items = [s.managed_item(None, rc), s.managed_item(None, rayjob()), other]
    before, after = texts_from_managed_resources({"items": items})
    assert before == []
    assert [json.loads(text)["kind"] for _, text in after] == ["RayCluster", "RayJob"]



def test_a_gpu_rayjob_gets_the_free_accelerators_its_pods_fit_and_the_core_weighs_them(
        kubeconfig: Any) -> None:
    """A RayJob builds a new RayCluster per run: its live basis is the room its pods can use (nodes
    and active pods listed once), and with it a resume that fits is approved, one that does not
    holds."""
    kube, _ = kube_with_cluster(gpus=1, free_gpus=2)
    kubeconfig(kube)
    job = rayjob()
    job["spec"]["rayClusterSpec"]["workerGroupSpecs"][0]["template"]["spec"] = {
        "containers": [container("ray-worker", gpus=1)], "tolerations": TOLERATION}
    key = "RayJob/ml/rayjob-nightly"
    basis = live_basis_for([key], targets={key: job}, timeout=10)
    assert basis is not None and dict(basis[key].headroom or {}) == {"nvidia.com/gpu": 2}
    assert sorted(p.partition("?")[0] for p in kube.requests) == ["/api/v1/nodes", "/api/v1/pods"]

    suspended = {**job, "spec": {**job["spec"], "suspend": True}}
    resumed = yaml.safe_dump(job)
    fits = diffing.analyze(yaml.safe_dump(suspended), resumed, live=basis).to_dict()["resources"][0]
    assert (fits["rollout"], fits["decision"]) == ("resume", "approve")
    tight = {key: diffing.LiveCluster(headroom={"nvidia.com/gpu": 0})}
    held = diffing.analyze(yaml.safe_dump(suspended), resumed, live=tight).to_dict()["resources"][0]
    assert (held["rollout"], held["decision"]) == ("resume", "hold")
