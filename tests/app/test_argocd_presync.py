"""End to end: ``python -m app argocd-presync`` against local Argo CD and Kubernetes stand-ins.

The Kubernetes side goes through the real ``kubernetes`` client, configured by a kubeconfig
that points at the stand-in."""

from __future__ import annotations

import copy
import json
import os
import socket
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from app.cli import main

try:
    from . import argocd_standins as s
except ImportError:  # tests/app is not a package
    import argocd_standins as s  # type: ignore[no-redef]

REPO = Path(__file__).resolve().parents[2]
APP = "ray-serving"
ACTIVE = "stable-diffusion-7xk2q"
OLD = "rayproject/ray-ml:2.46.0.0e19ea-py39-gpu"
NEW = "rayproject/ray-ml:2.47.0.8ac21f-py39-gpu"
GPU_TAINT = {"key": "ray.io/node-type", "value": "worker", "effect": "NoSchedule"}
TOLERATION = [{"key": "ray.io/node-type", "operator": "Equal", "value": "worker", "effect": "NoSchedule"}]


def _bump(obj: dict[str, Any], image: str) -> dict[str, Any]:
    out = copy.deepcopy(obj)
    rcc = out["spec"]["rayClusterConfig"]
    rcc["headGroupSpec"]["template"]["spec"]["containers"][0]["image"] = image
    for g in rcc["workerGroupSpecs"]:
        g["template"]["spec"]["containers"][0]["image"] = image
    return out


def scenario(*, node_gpus: int = 4, other_gpus: int = 0, replicas: int = 1, autoscaling: bool = False,
             bump: bool = True, pending: str | None = None, cluster_image: str | None = None
             ) -> tuple[s.ArgoCD, s.Kubernetes]:
    """The stable-diffusion sample running with ``replicas`` GPU workers on one GPU node."""
    base = s.sample()
    base["spec"]["rayClusterConfig"]["rayVersion"] = "2.46.0"
    if autoscaling:
        base["spec"]["rayClusterConfig"]["enableInTreeAutoscaling"] = True
    live = s.live_state(s.target_state(base, APP), active=ACTIVE, pending=pending)
    target = s.target_state(_bump(base, NEW) if bump else base, APP)
    rs_for_cluster = _bump(live, cluster_image) if cluster_image else live
    cluster = s.raycluster(rs_for_cluster, ACTIVE, {"gpu-group": replicas})
    nodes = [s.node("gpu-node-1", gpus=node_gpus, labels={"nvidia.com/gpu.product": "NVIDIA-L4"},
                    taints=[GPU_TAINT]),
             s.node("cpu-node-1")]
    pods = [s.pod(f"{ACTIVE}-head-x7k2p", "ml", "cpu-node-1", cpu="2")]
    pods += [s.pod(f"{ACTIVE}-gpu-group-worker-{i}", "ml", "gpu-node-1", gpus=1, cpu="3",
                   tolerations=TOLERATION) for i in range(replicas)]
    pods += [s.pod(f"other-team-trainer-{i}", "research", "gpu-node-1", gpus=1, tolerations=TOLERATION)
             for i in range(other_gpus)]
    pods.append(s.pod("finished-job", "research", "gpu-node-1", gpus=4, phase="Succeeded",
                      tolerations=TOLERATION))
    argo = s.ArgoCD(APP, [s.managed_item(live, target)])
    kube = s.Kubernetes(rayservices=[live], rayclusters=[cluster], nodes=nodes, pods=pods)
    return argo, kube


@dataclass
class Result:
    returncode: int
    stdout: str
    stderr: str


def hook_env(tmp_path: Path, argo_url: str | None, kube_url: str | None, **env: str) -> dict[str, str]:
    termination = tmp_path / "termination-log"
    termination.touch()
    out = {
        "HOME": str(tmp_path),
        "KUBECONFIG": str(s.write_kubeconfig(tmp_path / "kubeconfig", kube_url) if kube_url
                          else tmp_path / "no-kubeconfig"),
        "RAYSERVICE_IMPACT_ARGOCD_TOKEN": s.ARGO_TOKEN,
        "RAYSERVICE_IMPACT_ARGOCD_RETRIES": "1",
        "RAYSERVICE_IMPACT_TERMINATION_LOG": str(termination),
    }
    if argo_url:
        out["RAYSERVICE_IMPACT_ARGOCD_SERVER"] = argo_url
    out.update(env)
    return out


def _ours(name: str) -> bool:
    return name.startswith(("RAYSERVICE_IMPACT_", "KUBERNETES_", "KUBECONFIG"))


def run_hook(tmp_path: Path, argo_url: str | None, kube_url: str | None, *args: str, **env: str) -> Result:
    """The real command line, as a subprocess."""
    environ = {k: v for k, v in os.environ.items() if not _ours(k)}
    environ.update(hook_env(tmp_path, argo_url, kube_url, **env))
    proc = subprocess.run([sys.executable, "-m", "app", "argocd-presync", "--app", APP, *args],
                          cwd=REPO, env=environ, capture_output=True, text=True, timeout=60)
    return Result(proc.returncode, proc.stdout, proc.stderr)


@pytest.fixture
def hook(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
         ) -> Callable[..., Result]:
    """The same command through ``app.cli.main`` in this process (no interpreter start-up)."""

    def run(argo_url: str | None, kube_url: str | None, *args: str, **env: str) -> Result:
        for name in [n for n in os.environ if _ours(n)]:
            monkeypatch.delenv(name)
        for name, value in hook_env(tmp_path, argo_url, kube_url, **env).items():
            monkeypatch.setenv(name, value)
        capsys.readouterr()
        code = main(["argocd-presync", "--app", APP, *args])
        out = capsys.readouterr()
        return Result(code, out.out, out.err)

    return run


def run_json(run: Callable[..., Result], argo: s.ArgoCD, kube: s.Kubernetes | None, *args: str,
             **env: str) -> tuple[Result, dict[str, Any]]:
    with s.serve(argo) as argo_url, s.serve(kube or s.Kubernetes()) as kube_url:
        proc = run(argo_url, kube_url if kube else None, "--format", "json", *args, **env)
    return proc, json.loads(proc.stdout)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_presync_gpu_bump_without_free_gpus_holds(tmp_path: Path) -> None:
    argo, kube = scenario(node_gpus=2, other_gpus=1)
    with s.serve(argo) as argo_url, s.serve(kube) as kube_url:
        proc = run_hook(tmp_path, argo_url, kube_url)
    assert proc.returncode == 3, proc.stderr
    assert "rayservice-impact: **hold**" in proc.stdout
    # With the live nodes the placement plan decides (docs/placement.md): the new worker finds no GPU.
    assert ("1 of 1 pod(s) of worker group gpu-group cannot be placed on the live nodes: 0/2 nodes are "
            "available: 2 Insufficient nvidia.com/gpu.") in proc.stdout
    assert "capacity basis: live" in proc.stdout
    assert "capacity basis: live (Kubernetes API via kubeconfig" in proc.stderr
    assert "exit 3, the sync stops here" in proc.stderr
    log = (tmp_path / "termination-log").read_text()
    assert log.startswith("HOLD: hold: ml/stable-diffusion → new-cluster")
    assert "cannot be placed on the live nodes: 0/2 nodes are available" in log


def test_presync_gpu_bump_with_free_gpus_approves(tmp_path: Path) -> None:
    argo, kube = scenario(node_gpus=4, other_gpus=1)
    with s.serve(argo) as argo_url, s.serve(kube) as kube_url:
        proc = run_hook(tmp_path, argo_url, kube_url)
    assert proc.returncode == 0, proc.stderr
    assert "rayservice-impact: **approve**" in proc.stdout
    assert "headroom: nvidia.com/gpu: 2" in proc.stdout
    assert "decision approve: exit 0" in proc.stderr
    assert (tmp_path / "termination-log").read_text() == ""


def test_presync_live_state_differing_only_by_server_defaults_approves(tmp_path: Path) -> None:
    argo, kube = scenario(bump=False)
    proc, report = run_json(partial(run_hook, tmp_path), argo, kube)
    assert proc.returncode == 0, proc.stderr
    (res,) = report["resources"]
    assert (report["decision"], res["rollout"], res["decision"]) == ("approve", "none", "approve")
    assert [c for c in res["changes"] if c["category"] != "no-op"] == []
    assert res["findings"] == []


def test_presync_live_replicas_size_the_new_cluster(tmp_path: Path) -> None:
    # Autoscaled to 3 GPU workers although Git says 1: the new cluster needs 3 GPUs, 2 are free.
    argo, kube = scenario(autoscaling=True, replicas=3, node_gpus=8, other_gpus=3)
    proc, report = run_json(partial(run_hook, tmp_path), argo, kube)
    assert proc.returncode == 3, proc.stderr
    cap = report["resources"][0]["capacity"]
    assert (cap["basis"], cap["extra"]["nvidia.com/gpu"], cap["headroom"]) == \
        ("live", 3, {"nvidia.com/gpu": 2})
    assert "ml/stable-diffusion; active RayCluster stable-diffusion-7xk2q (replicas gpu-group=3)" \
        in proc.stderr


def test_presync_without_kubeconfig_uses_manifest_basis(hook: Callable[..., Result]) -> None:
    argo, _ = scenario(autoscaling=True, replicas=3)
    proc, report = run_json(hook, argo, None)
    cap = report["resources"][0]["capacity"]
    assert (cap["basis"], cap["extra"]["nvidia.com/gpu"], cap["headroom"]) == ("manifest", 1, None)
    assert "capacity basis: manifest (no in-cluster service account and no kubeconfig" in proc.stderr
    assert proc.returncode == 3  # unknown headroom covers nothing


def test_presync_reports_latent_divergence(tmp_path: Path) -> None:
    # The running cluster still has an older image: an earlier change was never applied.
    argo, kube = scenario(bump=False, cluster_image="rayproject/ray-ml:2.45.0-py39-gpu")
    proc, report = run_json(partial(run_hook, tmp_path), argo, kube)
    found = [f["path"] for f in report["resources"][0]["findings"] if f["code"] == "latent-divergence"]
    worker = [p for p in found if p.startswith("spec.rayClusterConfig.workerGroupSpecs[groupName=gpu-group]")]
    assert len(found) == 2 and len(worker) == 1 and worker[0].endswith(".image")
    assert proc.returncode == 0  # a latent divergence is a warning, not a hold
    assert "path(s) where the running cluster differs from the live spec" in proc.stderr


def test_presync_reports_upgrade_in_flight(hook: Callable[..., Result]) -> None:
    argo, kube = scenario(node_gpus=8, pending="stable-diffusion-q9w3v")
    proc, report = run_json(hook, argo, kube)
    codes = [f["code"] for f in report["resources"][0]["findings"]]
    assert "upgrade-in-progress" in codes
    assert "upgrade in flight: pending RayCluster stable-diffusion-q9w3v" in proc.stderr


def test_presync_new_rayservice_is_created_without_live_cluster(hook: Callable[..., Result]) -> None:
    argo, kube = scenario()
    target = json.loads(argo.items[0]["targetState"])
    argo.items = [s.managed_item(None, target)]
    kube.rayservices, kube.rayclusters = [], []
    proc, report = run_json(hook, argo, kube)
    assert proc.returncode == 0, proc.stderr
    res = report["resources"][0]
    assert (res["rollout"], res["capacity"]["basis"], res["capacity"]["headroom"]) == \
        ("create", "manifest", {"nvidia.com/gpu": 3})


def test_presync_queries_managed_resources_with_filters(hook: Callable[..., Result]) -> None:
    argo, kube = scenario()
    run_json(hook, argo, kube, "--app-namespace", "team-a")
    path = f"/api/v1/applications/{APP}/managed-resources"
    assert argo.requests == [  # the ray.io objects, then where an operator upgrade would show
        (path, {"group": ["ray.io"], "appNamespace": ["team-a"]}),
        (path, {"group": ["apps"], "kind": ["Deployment"], "appNamespace": ["team-a"]}),
        (path, {"group": ["apiextensions.k8s.io"], "kind": ["CustomResourceDefinition"],
                "appNamespace": ["team-a"]})]
    assert "/apis/ray.io/v1/namespaces/ml/rayservices" in kube.requests  # one list per namespace
    assert ("/api/v1/pods?fieldSelector=status.phase!=Succeeded,status.phase!=Failed&limit=500"
            in kube.requests)


def test_presync_retries_after_argocd_503(hook: Callable[..., Result]) -> None:
    argo, kube = scenario()
    argo.fail_first = 1
    proc, _ = run_json(hook, argo, kube)
    assert proc.returncode == 0, proc.stderr
    assert len(argo.requests) == 4  # the 503, its retry, then the Deployment and CRD filters


def test_presync_argocd_down_fails_closed(tmp_path: Path) -> None:
    proc = run_hook(tmp_path, f"http://127.0.0.1:{_free_port()}", None)
    assert proc.returncode == 1
    assert "cannot reach Argo CD at http://127.0.0.1:" in proc.stderr
    assert "failing closed (exit 1)" in proc.stderr
    assert "could not check the sync" in (tmp_path / "termination-log").read_text()


def test_presync_argocd_down_fail_open_exits_zero(tmp_path: Path) -> None:
    proc = run_hook(tmp_path, f"http://127.0.0.1:{_free_port()}", None, RAYSERVICE_IMPACT_FAIL_OPEN="true")
    assert proc.returncode == 0
    assert "RAYSERVICE_IMPACT_FAIL_OPEN=true: letting the sync go ahead unchecked" in proc.stderr


def test_presync_wrong_token_fails_closed(hook: Callable[..., Result]) -> None:
    argo, _ = scenario()
    with s.serve(argo) as argo_url:
        proc = hook(argo_url, None, RAYSERVICE_IMPACT_ARGOCD_TOKEN="stale")
    assert proc.returncode == 1
    assert "rejected the token (401 Unauthorized)" in proc.stderr
    assert len(argo.requests) == 1  # a 401 is not retried


def test_presync_unknown_app_fails_closed(hook: Callable[..., Result]) -> None:
    argo, _ = scenario()
    argo.app = "another-app"
    with s.serve(argo) as argo_url:
        proc = hook(argo_url, None)
    assert proc.returncode == 1
    assert "403 Forbidden" in proc.stderr and "check --app and --app-namespace" in proc.stderr


def test_presync_token_missing_is_usage_error(tmp_path: Path) -> None:
    proc = run_hook(tmp_path, "http://127.0.0.1:9", None, RAYSERVICE_IMPACT_ARGOCD_TOKEN="")
    assert proc.returncode == 2
    assert "argocd-presync needs RAYSERVICE_IMPACT_ARGOCD_TOKEN" in proc.stderr
    assert proc.stdout == ""


def test_presync_server_missing_is_usage_error(hook: Callable[..., Result]) -> None:
    proc = hook(None, None)
    assert proc.returncode == 2
    assert "argocd-presync needs RAYSERVICE_IMPACT_ARGOCD_SERVER" in proc.stderr


def test_presync_kubernetes_forbidden_fails_closed(hook: Callable[..., Result]) -> None:
    argo, kube = scenario()
    kube.forbidden = ("/api/v1/nodes",)
    with s.serve(argo) as argo_url, s.serve(kube) as kube_url:
        proc = hook(argo_url, kube_url)
    assert proc.returncode == 1
    assert "refused to list nodes (403 Forbidden)" in proc.stderr
    assert proc.stdout == ""


def test_presync_kubernetes_forbidden_fail_open_prints_advisory_report(hook: Callable[..., Result]) -> None:
    argo, kube = scenario()
    kube.forbidden = ("/api/v1/nodes",)
    with s.serve(argo) as argo_url, s.serve(kube) as kube_url:
        proc = hook(argo_url, kube_url, RAYSERVICE_IMPACT_FAIL_OPEN="true")
    assert proc.returncode == 0
    assert "rayservice-impact: **hold**" in proc.stdout  # manifest basis: headroom unknown
    assert "advisory only" in proc.stderr


def test_presync_kubernetes_unreachable_fails_closed(hook: Callable[..., Result], tmp_path: Path) -> None:
    argo, _ = scenario()
    with s.serve(argo) as argo_url:
        s.write_kubeconfig(tmp_path / "kubeconfig", f"http://127.0.0.1:{_free_port()}")
        proc = hook(argo_url, f"http://127.0.0.1:{_free_port()}")
    assert proc.returncode == 1
    assert "cannot reach the Kubernetes API at http://127.0.0.1:" in proc.stderr


def test_presync_app_without_rayservices_passes_without_kubernetes_calls(hook: Callable[..., Result]) -> None:
    argo, kube = scenario()
    argo.items = []
    with s.serve(argo) as argo_url, s.serve(kube) as kube_url:
        proc = hook(argo_url, kube_url)
    assert proc.returncode == 0, proc.stderr
    assert "rayservice-impact: **approve**" in proc.stdout
    assert "no RayService, RayCluster, RayJob or RayCronJob in the change" in proc.stdout
    assert kube.requests == []


def test_sync_note_reads_the_operation_in_progress() -> None:
    from app.hooks.argocd import sync_note

    one = {"metadata": {"namespace": "argocd"}, "spec": {"source": {"repoURL": "https://github.com/o/r.git"}},
           "status": {"operationState": {"operation": {"sync": {"revision": "abc123"}}}}}
    assert sync_note(one, "serving", None) == {"app": "serving", "namespace": "argocd", "revision": "abc123",
                                               "phase": "Running", "repoURL": "https://github.com/o/r.git"}
    several = {"spec": {"sources": [{"repoURL": "https://github.com/o/a.git"}, {"repoURL": "x"}]},
               "status": {"operationState": {"operation": {"sync": {"revisions": ["r1", "r2"]}}}}}
    assert sync_note(several, "serving", "team-a") == {
        "app": "serving", "namespace": "team-a", "revision": "r1", "phase": "Running",
        "repoURL": "https://github.com/o/a.git"}
    assert sync_note({"spec": {}, "status": {"sync": {"revision": "old"}}}, "serving", None) is None
