"""The HTTP service over real HTTP: routes, answers, errors, limits, concurrency, metrics, logs."""

from __future__ import annotations

import asyncio
import contextlib
import copy
import json
import logging
import re
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from fastapi import APIRouter, FastAPI
from prometheus_client.parser import text_string_to_metric_families
from serverutil import running_server

import diffing
from app import server as server_module
from app.logs import ACCESS_LOGGER, JSONFormatter
from app.middleware import BodyLimitMiddleware
from app.schemas import ReportResponse
from app.server import create_app
from app.settings import SettingsError, load_settings

SAMPLES = Path(__file__).resolve().parents[2] / "samples" / "kuberay-v1.7.0"
if not SAMPLES.is_dir():
    SAMPLES = Path("/work/shared/samples/kuberay-v1.7.0")
SAMPLE = (SAMPLES / "ray-service.sample.yaml").read_text()
SAMPLE_BUMPED = SAMPLE.replace("rayproject/ray:2.52.0", "rayproject/ray:2.53.0")
LLM = (SAMPLES / "ray-service.llm-serve.yaml").read_text()
LLM_BUMPED = LLM.replace("2.52.0", "2.53.0")


def slow_manifest(env_entries: int = 10_000) -> str:
    """A valid RayService whose analysis takes about a second (a huge env list)."""
    obj = yaml.safe_load(SAMPLE)
    container = obj["spec"]["rayClusterConfig"]["workerGroupSpecs"][0]["template"]["spec"]["containers"][0]
    container["env"] = [{"name": f"V{i}", "value": "x"} for i in range(env_entries)]
    return yaml.safe_dump(obj)


def post(base_url: str, path: str, **kwargs: Any) -> httpx.Response:
    return httpx.post(base_url + path, timeout=30, **kwargs)


def error(code: str, message: str, **location: Any) -> dict[str, Any]:
    detail: dict[str, Any] = {"code": code, "message": message}
    if location:
        detail["location"] = location
    return {"error": detail}


def metric_values(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    out = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            out[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return out


# --- routes ------------------------------------------------------------------------------------

def test_healthz_answers_ok(analysis_service):
    response = httpx.get(analysis_service.base_url + "/healthz")
    assert (response.status_code, response.json()) == (200, {"status": "ok"})


def test_readyz_reports_the_warm_pool(analysis_service):
    response = httpx.get(analysis_service.base_url + "/readyz")
    assert (response.status_code, response.json()) == (
        200, {"status": "ready", "workers": 2, "inFlight": 0, "capacity": 10})


def test_analyze_image_bump_equals_in_process_report(analysis_service):
    response = post(analysis_service.base_url, "/v1/analyze", json={"before": SAMPLE, "after": SAMPLE_BUMPED})
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    assert response.json() == diffing.analyze(SAMPLE, SAMPLE_BUMPED).to_dict()
    ReportResponse.model_validate(response.json())  # the documented schema describes the real answer
    assert response.json()["resources"][0]["rollout"] == "new-cluster"


def test_analyze_markdown_equals_rendered_report(analysis_service):
    response = post(analysis_service.base_url, "/v1/analyze?format=markdown",
                    json={"before": SAMPLE, "after": SAMPLE_BUMPED})
    assert response.status_code == 200
    assert response.headers["content-type"] == "text/markdown; charset=utf-8"
    assert response.text == diffing.render_markdown(diffing.analyze(SAMPLE, SAMPLE_BUMPED))


def test_analyze_headroom_and_policy_are_passed_to_the_core(analysis_service):
    policy = {"operator": {"featureGates": {"RayServiceIncrementalUpgrade": False}}}
    for headroom in (None, {"nvidia.com/gpu": 64}, {"nvidia.com/gpu": "1"}):
        body = {"before": LLM, "after": LLM_BUMPED, "headroom": headroom, "policy": policy,
                "kuberayVersion": "1.6.0"}
        response = post(analysis_service.base_url, "/v1/analyze", json=body)
        expected = diffing.analyze(LLM, LLM_BUMPED, "1.6.0", headroom, policy)
        assert (response.status_code, response.json()) == (200, expected.to_dict())
    assert expected.decision == "hold"  # 1 free GPU does not cover the new cluster


def test_analyze_created_resource_from_empty_before(analysis_service):
    response = post(analysis_service.base_url, "/v1/analyze", json={"before": "", "after": SAMPLE})
    resource = response.json()["resources"][0]
    assert (response.status_code, resource["action"], resource["rollout"]) == (200, "created", "create")


def test_analyze_repeated_request_is_served_from_cache(analysis_service):
    body = {"before": SAMPLE, "after": SAMPLE.replace("rayservice-sample", "cached-sample")}
    first = post(analysis_service.base_url, "/v1/analyze", json=body)
    hits = metric_values(httpx.get(analysis_service.base_url + "/metrics").text)
    second = post(analysis_service.base_url, "/v1/analyze", json=body)
    after = metric_values(httpx.get(analysis_service.base_url + "/metrics").text)
    key = ("rayservice_impact_analysis_cache_hits_total", ())
    assert (second.status_code, second.content) == (200, first.content)
    assert after[key] == hits[key] + 1


def test_openapi_describes_the_request_and_report(analysis_service):
    spec = httpx.get(analysis_service.base_url + "/openapi.json").json()
    assert sorted(spec["paths"]) == ["/healthz", "/metrics", "/readyz", "/v1/analyze",
                                     "/v1/argocd/managed-resources"]
    analyze = spec["paths"]["/v1/analyze"]["post"]
    assert analyze["requestBody"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/AnalyzeRequest"}
    assert analyze["responses"]["200"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/ReportResponse"}
    assert sorted(analyze["responses"]) == ["200", "400", "413", "415", "422", "503"]
    request = spec["components"]["schemas"]["AnalyzeRequest"]
    assert (sorted(request["properties"]), request["required"]) == (
        ["after", "before", "headroom", "kuberayVersion", "policy"], ["before", "after"])
    rollout = spec["components"]["schemas"]["ResourceModel"]["properties"]["rollout"]
    assert "incremental" in rollout["enum"]
    docs = httpx.get(analysis_service.base_url + "/docs")
    assert docs.status_code == 200 and "swagger-ui" in docs.text


# --- Argo CD ------------------------------------------------------------------------------------

def live_and_target() -> tuple[dict[str, Any], dict[str, Any]]:
    """The sample as Git has it, and as the API server returns it (server fields, defaults)."""
    target = yaml.safe_load(SAMPLE)
    target["metadata"]["namespace"] = "default"
    live = copy.deepcopy(target)
    live["metadata"].update(
        uid="6f1c", resourceVersion="4711", generation=3, creationTimestamp="2026-01-02T03:04:05Z",
        annotations={"kubectl.kubernetes.io/last-applied-configuration": json.dumps(target)},
        managedFields=[{"manager": "argocd-controller", "operation": "Apply", "fieldsType": "FieldsV1",
                        "fieldsV1": {"f:spec": {}}}],
        finalizers=["ray.io/rayservice-finalizer"])
    live["status"] = {"serviceStatus": "Running", "activeServiceStatus": {"rayClusterName": "rs-abc"}}
    for group in live["spec"]["rayClusterConfig"]["workerGroupSpecs"]:
        group["numOfHosts"] = 1
    for container in live["spec"]["rayClusterConfig"]["headGroupSpec"]["template"]["spec"]["containers"]:
        for port in container.get("ports", []):
            port["protocol"] = "TCP"
    return live, target


def managed_body(live: Any, target: Any) -> dict[str, Any]:
    return {"items": [
        {"group": "ray.io", "kind": "RayService", "namespace": "default", "name": "rayservice-sample",
         "liveState": json.dumps(live), "targetState": json.dumps(target), "modified": True},
        {"group": "", "kind": "Service", "namespace": "default", "name": "other",
         "liveState": "null", "targetState": json.dumps({"kind": "Service"})},
    ]}


def test_argocd_live_with_server_fields_and_defaults_is_no_rollout(analysis_service):
    live, target = live_and_target()
    response = post(analysis_service.base_url, "/v1/argocd/managed-resources",
                    json=managed_body(live, target))
    report = response.json()
    resource = report["resources"][0]
    # The live side is the API server's view: its defaults and server fields are no change at all.
    assert (response.status_code, report["decision"], resource["rollout"], resource["action"]) == (
        200, "approve", "none", "unchanged")
    assert resource["changes"] == []


def test_argocd_target_change_is_analysed_live_to_target(analysis_service):
    live, target = live_and_target()
    bumped = json.loads(json.dumps(target).replace("rayproject/ray:2.52.0", "rayproject/ray:2.53.0"))
    response = post(analysis_service.base_url, "/v1/argocd/managed-resources?format=markdown",
                    json=managed_body(live, bumped))
    assert response.status_code == 200
    assert response.headers["content-type"] == "text/markdown; charset=utf-8"
    assert "new-cluster" in response.text


def test_argocd_absent_live_state_is_a_creation(analysis_service):
    _, target = live_and_target()
    response = post(analysis_service.base_url, "/v1/argocd/managed-resources",
                    json=managed_body("__null__", target))
    assert response.status_code == 422  # "liveState" must be a JSON string of an object or "null"
    body = managed_body(None, target)
    body["items"][0]["liveState"] = "null"
    response = post(analysis_service.base_url, "/v1/argocd/managed-resources", json=body)
    resource = response.json()["resources"][0]
    assert (response.status_code, resource["rollout"]) == (200, "create")


def test_argocd_state_that_is_not_json_is_422(analysis_service):
    body = {"items": [{"group": "ray.io", "kind": "RayService", "name": "x", "liveState": "{not json",
                       "targetState": "null"}]}
    response = post(analysis_service.base_url, "/v1/argocd/managed-resources", json=body)
    assert (response.status_code, response.json()) == (422, error(
        "invalid-managed-resources",
        "items[0].liveState is not JSON: "
        "Expecting property name enclosed in double quotes at line 1 column 2"))


def test_argocd_wrong_shape_is_422(analysis_service):
    response = post(analysis_service.base_url, "/v1/argocd/managed-resources", json={"items": {"a": 1}})
    assert (response.status_code, response.json()) == (422, error(
        "invalid-request", "items: Input should be a valid list"))


# --- errors ---------------------------------------------------------------------------------------

def test_analyze_malformed_json_is_400(analysis_service):
    response = post(analysis_service.base_url, "/v1/analyze", content=b'{"before": ',
                    headers={"content-type": "application/json"})
    assert (response.status_code, response.json()) == (400, error(
        "malformed-json", "the body is not JSON: Expecting value at line 1 column 12"))


def test_analyze_invalid_utf8_is_400(analysis_service):
    response = post(analysis_service.base_url, "/v1/analyze", content=b'{"before": "\xff\xfe"}',
                    headers={"content-type": "application/json"})
    expected = error("malformed-json", "the body is not UTF-8 (byte 12)")
    assert (response.status_code, response.json()) == (400, expected)


@pytest.mark.parametrize("content_type", ["text/plain", "application/x-www-form-urlencoded", None])
def test_analyze_wrong_content_type_is_415(analysis_service, content_type):
    headers = {"content-type": content_type} if content_type else {}
    response = post(analysis_service.base_url, "/v1/analyze", content=b'{"before": "", "after": ""}',
                    headers=headers)
    assert (response.status_code, response.json()) == (415, error(
        "unsupported-media-type", "send the body as application/json"))


def test_analyze_declared_length_over_limit_is_413(analysis_service):
    body = json.dumps({"before": "", "after": "x" * (5 * 1024 * 1024)}).encode()
    response = post(analysis_service.base_url, "/v1/analyze", content=body,
                    headers={"content-type": "application/json"})
    assert (response.status_code, response.json()["error"]["code"]) == (413, "body-too-large")


def test_analyze_streamed_body_over_limit_is_413(analysis_service):
    sent = []

    def chunks():  # no Content-Length: chunked transfer encoding
        yield b'{"before": "", "after": "'
        for _ in range(6):
            sent.append(1)
            yield b"x" * (1024 * 1024)
        yield b'"}'

    response = post(analysis_service.base_url, "/v1/analyze", content=chunks(),
                    headers={"content-type": "application/json"})
    assert (response.status_code, response.json()) == (413, error(
        "body-too-large",
        "the request body is over the 4194304-byte limit (RAYSERVICE_IMPACT_MAX_BODY_BYTES)"))


def test_body_limit_stops_delivering_at_the_limit_and_drains_boundedly(monkeypatch):
    """ASGI level: the chunk crossing the limit never reaches the app; the rest of an endless
    body is read and dropped only up to DRAIN_BYTES, then the connection is closed."""
    import app.middleware as middleware

    monkeypatch.setattr(middleware, "DRAIN_BYTES", 50_000)
    read, sent, delivered = [], [], []

    async def endless_receive():
        read.append(1)
        return {"type": "http.request", "body": b"x" * 1000, "more_body": True}

    async def send(message):
        sent.append(message)

    async def app(scope, receive, send):
        while True:
            delivered.append(await receive())

    scope = {"type": "http", "method": "POST", "path": "/", "headers": []}
    asyncio.run(BodyLimitMiddleware(app, max_bytes=10_000)(scope, endless_receive, send))
    assert (len(delivered), sent[0]["status"]) == (10, 413)
    assert len(read) == 11 + 51  # the crossing chunk, then at most DRAIN_BYTES (+1 chunk) dropped
    assert (b"connection", b"close") in sent[0]["headers"]
    assert json.loads(sent[1]["body"])["error"]["code"] == "body-too-large"


def test_body_limit_drains_a_finite_body_and_keeps_the_connection():
    chunks = [{"type": "http.request", "body": b"x" * 1000, "more_body": i < 29} for i in range(30)]
    sent = []

    async def receive():
        return chunks.pop(0)

    async def send(message):
        sent.append(message)

    async def app(scope, receive, send):
        while (await receive()).get("more_body"):
            pass

    scope = {"type": "http", "method": "POST", "path": "/", "headers": [(b"content-length", b"30000")]}
    asyncio.run(BodyLimitMiddleware(app, max_bytes=10_000)(scope, receive, send))
    assert (sent[0]["status"], chunks) == (413, [])
    assert (b"connection", b"close") not in sent[0]["headers"]


def test_analyze_yaml_that_cannot_be_read_is_422_with_location(analysis_service):
    response = post(analysis_service.base_url, "/v1/analyze",
                    json={"before": SAMPLE, "after": "---\nkind: x\n---\na: [1, 2\nb: 3\n"})
    assert (response.status_code, response.json()) == (422, error(
        "invalid-manifest",
        "after, document 2, line 5: not valid YAML: while parsing a flow sequence; "
        "did not find expected ',' or ']'",
        source="after", document=2, line=5))


def test_analyze_rayservice_without_name_is_422(analysis_service):
    response = post(analysis_service.base_url, "/v1/analyze",
                    json={"before": "", "after": "apiVersion: ray.io/v1\nkind: RayService\nspec: {}\n"})
    assert (response.status_code, response.json()) == (422, error(
        "invalid-manifest", "after, document 1, line 1, metadata.name: a RayService without metadata.name",
        source="after", document=1, line=1, path="metadata.name"))


@pytest.mark.parametrize(("body", "message"), [
    ({"before": 1, "after": ""}, "before: Input should be a valid string"),
    ({"after": ""}, "before: Field required"),
    ({"before": "", "after": "", "headroom": ["gpu"]}, "headroom: Input should be a valid dictionary"),
    ({"before": "", "after": "", "kuberay_version": "1.7.0"},
     "kuberay_version: Extra inputs are not permitted"),
    ([], "body: Input should be a valid dictionary or instance of AnalyzeRequest"),
])
def test_analyze_wrong_shape_is_422(analysis_service, body, message):
    response = post(analysis_service.base_url, "/v1/analyze", json=body)
    assert (response.status_code, response.json()) == (422, error("invalid-request", message))


def test_analyze_unknown_kuberay_version_is_422(analysis_service):
    response = post(analysis_service.base_url, "/v1/analyze",
                    json={"before": "", "after": "", "kuberayVersion": "0.9.0"})
    assert (response.status_code, response.json()) == (422, error(
        "unsupported-version", "KubeRay version '0.9.0' is not supported; use one of: 1.6.x, 1.7.x"))


def test_analyze_bad_policy_and_headroom_are_422(analysis_service):
    response = post(analysis_service.base_url, "/v1/analyze",
                    json={"before": "", "after": "", "policy": {"nope": 1}})
    assert (response.status_code, response.json()["error"]["code"]) == (422, "invalid-policy")
    response = post(analysis_service.base_url, "/v1/analyze",
                    json={"before": "", "after": SAMPLE, "headroom": {"nvidia.com/gpu": "lots"}})
    assert (response.status_code, response.json()) == (422, error(
        "invalid-headroom", "headroom nvidia.com/gpu: 'lots' is not an amount"))


def test_analyze_lone_surrogate_is_422(analysis_service):
    response = post(analysis_service.base_url, "/v1/analyze",
                    content=b'{"before": "a: \\ud800", "after": ""}',
                    headers={"content-type": "application/json"})
    assert (response.status_code, response.json()) == (422, error(
        "invalid-request", "before: not valid Unicode (a lone surrogate at character 3)"))


def test_unknown_route_and_method_use_the_error_shape(analysis_service):
    missing = httpx.get(analysis_service.base_url + "/v2/nothing")
    wrong_method = httpx.get(analysis_service.base_url + "/v1/analyze")
    assert (missing.status_code, missing.json()) == (404, error("not-found", "Not Found"))
    assert (wrong_method.status_code, wrong_method.json()) == (405, error("method-not-allowed",
                                                                          "Method Not Allowed"))


# --- concurrency, budget, saturation, readiness ----------------------------------------------------

def test_slow_analysis_does_not_stall_healthz(analysis_service):
    slow = slow_manifest()
    result: dict[str, Any] = {}

    def call() -> None:
        result["response"] = post(analysis_service.base_url, "/v1/analyze",
                                  json={"before": slow, "after": slow.replace("V1", "W1")})

    thread = threading.Thread(target=call)
    thread.start()
    with httpx.Client(base_url=analysis_service.base_url) as client:
        deadline = time.monotonic() + 10
        while client.get("/readyz").json()["inFlight"] == 0 and time.monotonic() < deadline:
            time.sleep(0.005)
        latencies = []
        while thread.is_alive() and len(latencies) < 20:
            started = time.perf_counter()
            assert client.get("/healthz").status_code == 200
            latencies.append(time.perf_counter() - started)
        in_flight_meanwhile = client.get("/readyz").json()["inFlight"]
    thread.join()
    assert result["response"].status_code == 200
    assert (len(latencies), in_flight_meanwhile) == (20, 1)  # all 20 answered while the analysis ran
    assert max(latencies) < 0.25


@contextlib.contextmanager
def small_service(**overrides: Any):
    settings = load_settings(**{"analysis_executor": "thread", "analysis_workers": 1, "analysis_queue": 1,
                                "analysis_cache_entries": 0, **overrides})
    with running_server(create_app(settings)) as base_url:
        yield base_url


def test_time_budget_and_saturation_answer_503(monkeypatch):
    import app.workers as workers

    real = workers.diffing.analyze

    def slow_analyze(*args, **kwargs):  # the worker keeps its slot for a whole second
        time.sleep(1.0)
        return real(*args, **kwargs)

    monkeypatch.setattr(workers.diffing, "analyze", slow_analyze)
    slow = slow_manifest(10)
    with small_service(analysis_timeout_seconds=0.05) as base_url:
        answers = [post(base_url, "/v1/analyze", json={"before": slow, "after": slow.replace("V1", f"W{i}")})
                   for i in range(3)]
        metrics = metric_values(httpx.get(base_url + "/metrics").text)
    statuses = [(r.status_code, r.headers.get("retry-after"), r.json()["error"]["code"]) for r in answers]
    # The first two time out but keep their slot until the worker finishes: the third is refused.
    assert statuses == [(503, "1", "analysis-timeout"), (503, "1", "analysis-timeout"),
                        (503, "1", "overloaded")]
    assert answers[2].json()["error"]["message"] == "all 2 analysis slots are busy; retry shortly"
    assert metrics[("rayservice_impact_analyses_rejected_total", (("reason", "overloaded"),))] == 1
    assert metrics[("rayservice_impact_analyses_rejected_total", (("reason", "analysis-timeout"),))] == 2


def test_readyz_is_503_until_the_warm_up_ran(monkeypatch):
    release = threading.Event()
    original = server_module.AnalysisPool.start

    async def gated_start(self):
        await asyncio.get_running_loop().run_in_executor(None, release.wait, 10)
        await original(self)

    monkeypatch.setattr(server_module.AnalysisPool, "start", gated_start)
    settings = load_settings(analysis_executor="thread", analysis_workers=1)
    with running_server(create_app(settings), ready_path=None) as base_url:
        not_ready = httpx.get(base_url + "/readyz")
        refused = post(base_url, "/v1/analyze", json={"before": "", "after": ""})
        alive = httpx.get(base_url + "/healthz")
        release.set()
        deadline = time.monotonic() + 10
        while httpx.get(base_url + "/readyz").status_code != 200 and time.monotonic() < deadline:
            time.sleep(0.01)
        ready = httpx.get(base_url + "/readyz")
    assert (not_ready.status_code, not_ready.headers["retry-after"], not_ready.json()) == (
        503, "1", error("not-ready", "the analysis pool is not ready"))
    assert (refused.status_code, refused.json()["error"]["code"]) == (503, "not-ready")
    assert (alive.status_code, ready.status_code) == (200, 200)


# --- metrics and logs ---------------------------------------------------------------------------------

REQUESTS = "rayservice_impact_http_requests_total"


def test_metrics_count_requests_decisions_rollouts_and_accelerators(analysis_service):
    base = analysis_service.base_url
    before = metric_values(httpx.get(base + "/metrics").text)
    body = {"before": LLM, "after": LLM_BUMPED.replace("llm", "metrics-llm"),
            "headroom": {"nvidia.com/gpu": 0}}
    report = post(base, "/v1/analyze", json=body).json()
    post(base, "/v1/analyze", json={"before": "a: [", "after": ""})
    response = httpx.get(base + "/metrics")
    after = metric_values(response.text)
    assert response.headers["content-type"].startswith("text/plain; version=")

    def delta(name: str, **labels: str) -> float:
        key = (name, tuple(sorted(labels.items())))
        return after.get(key, 0) - before.get(key, 0)

    gpus = sum(r["capacity"]["extra"].get("nvidia.com/gpu", 0) for r in report["resources"])
    rollout = report["resources"][0]["rollout"]
    assert gpus > 0
    assert {
        "ok": delta(REQUESTS, method="POST", route="/v1/analyze", status="200"),
        "bad": delta(REQUESTS, method="POST", route="/v1/analyze", status="422"),
        "decision": delta("rayservice_impact_analyses_total", decision=report["decision"]),
        "rollout": delta("rayservice_impact_resource_rollouts_total", kind="RayService", rollout=rollout,
                         decision=report["resources"][0]["decision"]),
        "gpus": delta("rayservice_impact_extra_accelerators_requested_total", resource="nvidia.com/gpu"),
        "latency": delta("rayservice_impact_http_request_duration_seconds_count", method="POST",
                         route="/v1/analyze", status="200"),
    } == {"ok": 1, "bad": 1, "decision": 1, "rollout": 1, "gpus": gpus, "latency": 1}


def test_each_app_has_its_own_metrics_registry():
    first, second = create_app(load_settings()), create_app(load_settings())
    assert first.state.service.metrics.registry is not second.state.service.metrics.registry


def access_records(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == ACCESS_LOGGER and getattr(r, "route", "") == "/v1/analyze"]


def test_request_log_line_is_json_without_body(analysis_service, caplog):
    secret_text = SAMPLE.replace("rayservice-sample", "log-secret-sample")
    with caplog.at_level(logging.INFO, logger=ACCESS_LOGGER):
        post(analysis_service.base_url, "/v1/analyze", json={"before": "", "after": secret_text})
        post(analysis_service.base_url, "/v1/analyze", content=b"{",
             headers={"content-type": "application/json"})
        deadline = time.monotonic() + 5
        while len(access_records(caplog)) < 2 and time.monotonic() < deadline:  # written after the answer
            time.sleep(0.01)
    lines = [json.loads(JSONFormatter().format(r)) for r in access_records(caplog)[-2:]]
    for line in lines:
        assert line.pop("duration_ms") >= 0
        assert re.fullmatch(r"[0-9a-f]{16}", line.pop("request_id"))
        line.pop("ts")
    assert lines == [
        {"level": "info", "logger": ACCESS_LOGGER, "msg": "request", "method": "POST", "route": "/v1/analyze",
         "status": 200, "decision": "approve", "cache": False},
        {"level": "info", "logger": ACCESS_LOGGER, "msg": "request", "method": "POST", "route": "/v1/analyze",
         "status": 400, "error": "malformed-json"},
    ]
    assert "log-secret-sample" not in caplog.text


# --- the factory and serve --------------------------------------------------------------------------------

def test_create_app_refuses_a_bad_policy_file(tmp_path):
    policy = tmp_path / "policy.yaml"
    policy.write_text("nope: 1\n")
    with pytest.raises(SettingsError, match="RAYSERVICE_IMPACT_POLICY_FILE: .*unknown key"):
        create_app(load_settings(policy_file=policy))


def test_policy_file_is_the_default_policy(tmp_path):
    policy = tmp_path / "policy.yaml"
    policy.write_text("operator:\n  env:\n    ENABLE_ZERO_DOWNTIME: 'false'\n")
    with small_service(policy_file=policy, analysis_timeout_seconds=10) as base_url:
        body = {"before": SAMPLE, "after": SAMPLE_BUMPED}
        default = post(base_url, "/v1/analyze", json=body).json()["resources"][0]
        explicit = post(base_url, "/v1/analyze", json={**body, "policy": {}}).json()["resources"][0]
    assert (default["rollout"], explicit["rollout"]) == ("not-applied", "new-cluster")


def test_run_refuses_a_bad_variable(monkeypatch, capsys):
    monkeypatch.setenv("RAYSERVICE_IMPACT_MAX_BODY_BYTES", "-5")
    assert server_module.run(port=0) == 2
    assert "RAYSERVICE_IMPACT_MAX_BODY_BYTES" in capsys.readouterr().err


def test_webhook_router_is_included_and_its_lifespan_runs(monkeypatch):
    events = []

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI):
        events.append("start")
        yield
        events.append("stop")

    router = APIRouter(lifespan=lifespan)

    @router.post("/webhooks/github")
    async def hook() -> dict[str, str]:
        return {"seen": "yes"}

    monkeypatch.setattr("app.webhooks.github.build_router", lambda settings, **_: router)
    with small_service() as base_url:
        answer = httpx.post(base_url + "/webhooks/github")
        running = list(events)
    assert (answer.status_code, answer.json(), running, events) == (
        200, {"seen": "yes"}, ["start"], ["start", "stop"])
