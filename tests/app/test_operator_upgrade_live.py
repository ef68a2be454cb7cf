"""An operator upgrade seen where no repository is rendered: the Argo CD PreSync hook of the
operator's own Application, the HTTP API's managed-resources and analyze endpoints, and the CLI's
two files. With the live basis the cluster's RayServices, RayClusters and RayJobs are read (one
list per kind) and judged; a cluster that cannot be read holds (docs/operator-upgrade.md)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from app.server import create_app
from app.settings import load_settings

try:
    from . import argocd_standins as s
    from .serverutil import running_server
    from .test_argocd_presync import APP, Result, hook, run_json  # noqa: F401 - the fixture
except ImportError:  # tests/app is not a package
    import argocd_standins as s  # type: ignore[no-redef]
    from serverutil import running_server  # type: ignore[no-redef]
    from test_argocd_presync import APP, Result, hook, run_json  # type: ignore[no-redef]  # noqa: F401

REPO = Path(__file__).resolve().parents[2]
LIST = "/apis/ray.io/v1/{}?limit=500"


def _operator(tag: str) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "kuberay-operator", "namespace": "kuberay-system"},
            "spec": {"selector": {"matchLabels": {"app": "kuberay-operator"}},
                     "template": {"metadata": {"labels": {"app": "kuberay-operator"}},
                                  "spec": {"containers": [{"name": "kuberay-operator",
                                                           "image": f"quay.io/kuberay/operator:{tag}"}]}}}}


def _cluster_objects() -> s.Kubernetes:
    """A cluster running the stable-diffusion RayService (its RayCluster owned by it) and one
    standalone RayCluster."""
    live = s.live_state(s.target_state(s.sample(), "serving"), active="stable-diffusion-7xk2q")
    owned = s.raycluster(live, "stable-diffusion-7xk2q", {"gpu-group": 1})
    standalone = s.standalone_raycluster(s.target_state(yaml.safe_load(
        (REPO / "samples/raycluster-image-bump/before.yaml").read_text()), "training"))
    return s.Kubernetes(rayservices=[live], rayclusters=[owned, standalone])


def _argo(old: str, new: str) -> s.ArgoCD:
    return s.ArgoCD(APP, [s.managed_item(_operator(old), _operator(new), group="apps")])


def test_presync_of_the_operator_app_judges_every_object_in_the_cluster(hook: Callable[..., Result]) -> None:
    kube = _cluster_objects()
    proc, report = run_json(hook, _argo("v1.6.2", "v1.7.0"), kube)
    up = report["operatorUpgrade"]
    assert (up["from"], up["to"], up["crds"]["state"]) == ("1.6.2", "1.7.0", "not-upgraded")
    judged = sorted((o["kind"], o["name"]) for o in up["objects"])
    standalone = kube.rayclusters[1]["metadata"]["name"]
    assert judged == [("RayCluster", standalone), ("RayService", "stable-diffusion")]  # not the owned one
    assert proc.returncode == 0 and report["decision"] == "approve", proc.stderr
    assert "operator upgrade: 3 ray.io objects read from the cluster" in proc.stderr
    for plural in ("rayservices", "rayclusters", "rayjobs"):  # one cluster-wide list per kind
        assert kube.requests.count(LIST.format(plural)) == 1


def test_presync_holds_when_the_cluster_cannot_be_read(hook: Callable[..., Result]) -> None:
    kube = _cluster_objects()
    kube.forbidden = ("/apis/ray.io/v1/rayclusters",)
    proc, report = run_json(hook, _argo("v1.6.2", "v1.7.0"), kube)
    assert proc.returncode == 3 and report["decision"] == "hold"
    assert "could not be read" in report["operatorUpgrade"]["summary"]
    assert "403" in report["operatorUpgrade"]["summary"]


def test_presync_without_kubernetes_says_only_the_change_was_judged(hook: Callable[..., Result]) -> None:
    proc, report = run_json(hook, _argo("v1.6.2", "v1.7.0"), None)
    up = report["operatorUpgrade"]
    assert up["objects"] == [] and proc.returncode == 0
    assert any("only the 0 objects in the change were judged" in n for n in up["notes"])


def test_presync_to_a_version_not_modelled_holds(hook: Callable[..., Result]) -> None:
    proc, report = run_json(hook, _argo("v1.6.2", "v1.9.0"), _cluster_objects())
    assert proc.returncode == 3 and report["operatorUpgrade"]["supported"] is False


def test_presync_an_unmodified_deployment_is_no_upgrade(hook: Callable[..., Result]) -> None:
    argo = _argo("v1.6.2", "v1.7.0")
    argo.items[0]["modified"] = False  # Argo CD normalised the difference away
    kube = _cluster_objects()
    proc, report = run_json(hook, argo, kube)
    assert "operatorUpgrade" not in report and proc.returncode == 0
    assert not any(r.startswith("/apis/ray.io/v1/rayservices?") for r in kube.requests)


API_TOKEN = "test-api-token-0123456789"


@pytest.fixture
def live_service(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    tokens = tmp_path / "api-tokens"
    tokens.write_text(API_TOKEN + "\n")

    def start(kube: s.Kubernetes) -> Any:
        ctx = s.serve(kube)
        url = ctx.__enter__()
        opened.append(ctx)
        monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
        monkeypatch.setenv("KUBECONFIG", str(s.write_kubeconfig(tmp_path / "kubeconfig", url)))
        return running_server(create_app(load_settings(analysis_executor="thread", live_basis="auto",
                                                       api_tokens_file=tokens)))

    opened: list[Any] = []
    yield start
    for ctx in opened:
        ctx.__exit__(None, None, None)


def test_http_managed_resources_judge_the_cluster(live_service: Any) -> None:
    kube = _cluster_objects()
    body = {"items": [s.managed_item(_operator("v1.6.2"), _operator("v1.7.0"), group="apps")]}
    with live_service(kube) as base:
        r = httpx.post(f"{base}/v1/argocd/managed-resources", json=body, timeout=30,
                       headers={"authorization": f"Bearer {API_TOKEN}"})
        again = httpx.post(f"{base}/v1/argocd/managed-resources", json=body, timeout=30,
                           headers={"authorization": f"Bearer {API_TOKEN}"})
    assert r.status_code == 200, r.text
    up = r.json()["operatorUpgrade"]
    assert sorted(o["kind"] for o in up["objects"]) == ["RayCluster", "RayService"]
    assert again.json() == r.json()
    assert kube.requests.count(LIST.format("rayservices")) == 2  # the cluster changes: never cached


def test_http_analyze_two_texts_judge_the_cluster_and_hold_when_it_refuses(live_service: Any) -> None:
    kube = _cluster_objects()
    kube.forbidden = ("/apis/ray.io/v1/rayjobs",)
    body = {"before": yaml.safe_dump(_operator("v1.6.2")), "after": yaml.safe_dump(_operator("v1.7.0"))}
    with live_service(kube) as base:
        r = httpx.post(f"{base}/v1/analyze", json=body, timeout=30,
                       headers={"authorization": f"Bearer {API_TOKEN}"})
    assert r.status_code == 200, r.text
    assert r.json()["decision"] == "hold"
    assert "could not be read" in r.json()["operatorUpgrade"]["summary"]


def test_cli_two_files(tmp_path: Path) -> None:
    svc = (REPO / "samples/gpu-image-bump/before.yaml").read_text()
    before, after = tmp_path / "before.yaml", tmp_path / "after.yaml"
    before.write_text(yaml.safe_dump(_operator("v1.6.2")) + "---\n" + svc)
    after.write_text(yaml.safe_dump(_operator("v1.7.0")) + "---\n" + svc)
    proc = subprocess.run([sys.executable, "-m", "app", "analyze", str(before), str(after),
                           "--format", "json"], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    up = json.loads(proc.stdout)["operatorUpgrade"]
    assert [(o["name"], o["firstReconcile"]) for o in up["objects"]] == [
        ("ray-serve-llm", "annotations-only")]
