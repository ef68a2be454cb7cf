"""Green means safe over HTTP: junk posted to /v1/argocd/managed-resources is a 422 naming what is
wrong (it used to read as "no resources" and answer 200 approve), and integers beyond 64 bits
are a located 4xx, not a 500. A real uvicorn server (``analysis_service``, tests/app/conftest.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from app.managed import ManagedResourcesError, check_managed_body, texts_from_managed_resources

ROOT = Path(__file__).resolve().parents[2]
BEFORE = (ROOT / "samples/gpu-image-bump/before.yaml").read_text()
ROUTE = "/v1/argocd/managed-resources"
HUGE_HEX = "0x" + "f" * 3600
RS = {"apiVersion": "ray.io/v1", "kind": "RayService", "metadata": {"name": "svc", "namespace": "ns"},
      "spec": {"rayClusterConfig": {"headGroupSpec": {"rayStartParams": {}, "template": {"spec": {
          "containers": [{"name": "ray-head", "image": "rayproject/ray:2.52.0"}]}}}}}}


def post(base_url: str, path: str, body: Any) -> httpx.Response:
    return httpx.post(base_url + path, content=json.dumps(body), timeout=60,
                      headers={"content-type": "application/json"})


def item(live: Any = None, target: Any = None, **fields: Any) -> dict[str, Any]:
    out = {"group": "ray.io", "kind": "RayService", "namespace": "ns", "name": "svc", **fields}
    if live is not None:
        out["liveState"] = live if isinstance(live, str) else json.dumps(live)
    if target is not None:
        out["targetState"] = target if isinstance(target, str) else json.dumps(target)
    return out


def error_of(response: httpx.Response) -> tuple[int, str, str]:
    body = response.json()
    return response.status_code, body["error"]["code"], body["error"]["message"]


# -- 4. junk is never "no resources, approve" -----------------------------------------------------

@pytest.mark.parametrize(("body", "says"), [
    ({}, "no 'items' array"),
    ({"before": "", "after": ""}, "keys found: after, before"),
    ({"items": None}, "no 'items' array"),
    ({"error": "permission denied", "code": 7, "message": "permission denied"},
     "Argo CD's error answer, not its managed resources: permission denied (code 7)"),
    ({"code": 16, "message": "invalid session: token signature is invalid"},
     "error answer, not its managed resources: invalid session"),
    ({"items": [item(None, RS), item(name="other")]},
     "items[1] (RayService other): neither targetState nor liveState"),
    ({"items": [item("null", "null")]}, "items[0] (RayService svc): neither targetState nor liveState"),
    ({"items": [{"kind": "Deployment", "targetState": ""}]}, "items[0] (Deployment): neither"),
])
def test_junk_is_a_422_naming_what_is_wrong(analysis_service, body: Any, says: str) -> None:
    status, code, message = error_of(post(analysis_service.base_url, ROUTE, body))
    assert (status, code) == (422, "invalid-managed-resources"), message
    assert says in message


def test_junk_with_markdown_is_still_a_422(analysis_service) -> None:
    response = post(analysis_service.base_url, ROUTE + "?format=markdown", {})
    assert response.status_code == 422


def test_an_explicit_empty_items_list_is_an_application_without_resources(analysis_service) -> None:
    response = post(analysis_service.base_url, ROUTE, {"items": []})
    assert (response.status_code, response.json()["decision"]) == (200, "approve")
    assert "no RayService, RayCluster, RayJob or RayCronJob" in response.json()["summary"]


def test_a_real_answer_still_analyses(analysis_service) -> None:
    response = post(analysis_service.base_url, ROUTE, {"items": [item("null", RS)]})
    assert response.status_code == 200, response.text
    assert response.json()["resources"][0]["rollout"] == "create"


def test_the_hook_takes_argo_cds_own_empty_answer_as_none() -> None:
    """Argo CD leaves an empty list out (``json:"items,omitempty"``): ``{}`` from Argo CD itself,
    which the PreSync hook reads, is an application without ray.io resources. Junk still is not."""
    assert texts_from_managed_resources({}) == ([], [])
    assert check_managed_body({}, require_items=False) == []
    with pytest.raises(ManagedResourcesError, match="no 'items' array"):
        check_managed_body({})
    for junk in ({"error": "x", "code": 2, "message": "x"}, {"items": [item()]}, [], {"items": "x"}):
        with pytest.raises(ManagedResourcesError):
            texts_from_managed_resources(junk)


# -- 3. integers beyond 64 bits over HTTP ---------------------------------------------------------

def test_a_huge_hex_integer_in_a_manifest_is_a_located_422(analysis_service) -> None:
    after = BEFORE.replace("- replicas: 1", f"- replicas: {HUGE_HEX}", 1)
    assert after != BEFORE
    response = post(analysis_service.base_url, "/v1/analyze", {"before": BEFORE, "after": after})
    status, code, message = error_of(response)
    assert (status, code) == (422, "invalid-manifest") and "out of range" in message
    location = response.json()["error"]["location"]
    assert (location["source"], location["document"]) == ("after", 1)
    assert location["line"] == after[:after.index(HUGE_HEX)].count("\n") + 1
    assert location["path"].endswith("workerGroupSpecs[0].replicas")


def test_a_huge_integer_in_an_argo_cd_state_is_a_located_422(analysis_service) -> None:
    target = json.loads(json.dumps(RS))
    target["spec"]["rayClusterConfig"]["workerGroupSpecs"] = [{"groupName": "g", "replicas": 10**30}]
    response = post(analysis_service.base_url, ROUTE, {"items": [item("null", target)]})
    status, code, message = error_of(response)
    assert (status, code) == (422, "invalid-manifest") and "out of range" in message
    path = response.json()["error"]["location"]["path"]
    assert path == "spec.rayClusterConfig.workerGroupSpecs[0].replicas"


@pytest.mark.parametrize("fields", [
    {"headroom": {"nvidia.com/gpu": 10**999}},
    {"policy": {"thresholds": {"nvidia.com/gpu": 10**999}}},
    {"policy": {"operator": {"env": {"ENABLE_ZERO_DOWNTIME": 10**999}}}},
    {"policy": {"thresholds": {"cpu": f"{HUGE_HEX}"}}},
])
def test_huge_numbers_in_headroom_and_policy_are_a_422(analysis_service, fields: dict[str, Any]) -> None:
    response = post(analysis_service.base_url, "/v1/analyze", {"before": BEFORE, "after": BEFORE, **fields})
    status, code, message = error_of(response)
    # a headroom error says headroom (issue 24): it is no policy
    assert (status, code) == (422, "invalid-headroom" if "headroom" in fields else "invalid-policy"), message
    assert len(message) < 400


def test_huge_serve_config_integers_hold_over_http(analysis_service) -> None:
    after = BEFORE.replace("min_replicas: 1", f"min_replicas: {HUGE_HEX}", 1)
    assert after != BEFORE
    response = post(analysis_service.base_url, "/v1/analyze", {"before": BEFORE, "after": after})
    assert (response.status_code, response.json()["decision"]) == (200, "hold")
