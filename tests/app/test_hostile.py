"""Issue 12: each hostile input or fault, reproduced, now answered as the contract says.

Real uvicorn servers on 127.0.0.1, real sockets for the slow-client cases, the real CLI.
"""

from __future__ import annotations

import contextlib
import http.client
import io
import json
import os
import re
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from serverutil import running_server

import diffing
from app.cli import main
from app.httpserver import protocol_with
from app.server import create_app
from app.settings import load_settings
from app.workers import ResultCache

try:
    from . import argocd_standins as s
except ImportError:  # tests/app is not a package
    import argocd_standins as s  # type: ignore[no-redef]

ROOT = Path(__file__).resolve().parents[2]
BEFORE = (ROOT / "samples/gpu-image-bump/before.yaml").read_text()
AFTER = (ROOT / "samples/gpu-image-bump/after.yaml").read_text()
JSON = {"content-type": "application/json"}


@pytest.fixture(scope="module")
def service() -> Iterator[str]:
    app = create_app(load_settings(analysis_workers=1, analysis_queue=4, live_basis="off", policy_file=None,
                                   body_timeout_seconds=1.0))
    with running_server(app, http=protocol_with(0.5)) as url:
        yield url


def post(url: str, body: bytes | str, path: str = "/v1/analyze") -> httpx.Response:
    data = body.encode() if isinstance(body, str) else body
    return httpx.post(url + path, content=data, headers=JSON, timeout=60)


# -- 1. one decoding rule: bytes that are not UTF-8 never read as an absent resource -------------

def test_git_render_none_non_utf8_file_is_an_input_error(tmp_path: Path, capsys) -> None:
    repo = tmp_path / "r"
    repo.mkdir()
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@e", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@e"}

    def git(*a: str) -> str:
        return subprocess.run(["git", "-C", str(repo), *a], check=True, capture_output=True, text=True,
                              env=env).stdout.strip()

    git("init", "-q")
    (repo / "rs.yaml").write_text(BEFORE)
    git("add", "-A")
    git("commit", "-qm", "base")
    base = git("rev-parse", "HEAD")
    (repo / "rs.yaml").write_bytes(AFTER.encode() + "# r\xe9sum\xe9\n".encode("latin-1"))
    git("commit", "-qam", "head")
    code = main(["git", base, "HEAD", "--repo", str(repo), "--render", "none", "--format", "json"])
    err = capsys.readouterr().err
    assert code == 2 and "rs.yaml" in err and "not UTF-8" in err and "byte" in err


# -- 2. quantities bounded the way Kubernetes holds them ------------------------------------------

@pytest.mark.parametrize("amount", ["1e200000", "9" * 5000, "1e4300", "1" + "0" * 30])
def test_absurd_quantities_are_refused_not_computed(amount: str) -> None:
    from diffing.kube.quantity import Quantity, QuantityError

    with pytest.raises(QuantityError):
        Quantity.parse(amount)
    after = AFTER.replace('cpu: "2"', f'cpu: "{amount}"', 1)
    assert after != AFTER
    report = diffing.analyze(BEFORE, after)
    assert report.decision == "hold"  # analysed at once, and the amount is named as unschedulable
    [finding] = [f for r in report.resources for f in r.findings if f.code == "pod-rejected"]
    assert "can never be scheduled" in finding.message and finding.path.endswith("limits.cpu")


def test_binary_quantities_cap_at_int64_like_apimachinery() -> None:
    from diffing.kube.quantity import MAX_MAGNITUDE, Quantity

    assert Quantity.parse("16Ei").value == MAX_MAGNITUDE


def test_a_job_over_its_budget_recycles_the_worker_and_readiness_follows(tmp_path: Path) -> None:
    sys.path.insert(0, str(ROOT / "bench"))
    from bench_core import build

    big_before, big_after = build(200, 500), build(200, 500, image="rayproject/ray:2.53.0")
    app = create_app(load_settings(analysis_workers=1, analysis_queue=1, live_basis="off", policy_file=None,
                                   analysis_timeout_seconds=0.05))
    pool = app.state.service.pool
    with running_server(app) as url:
        slow = post(url, json.dumps({"before": big_before, "after": big_after}))
        assert (slow.status_code, slow.json()["error"]["code"]) == (503, "analysis-timeout")
        assert pool.recycled == 1
        deadline = time.monotonic() + 30
        while httpx.get(url + "/readyz").status_code != 200 and time.monotonic() < deadline:
            time.sleep(0.05)
        small = post(url, json.dumps({"before": "", "after": ""}))
    assert small.status_code == 200


def test_readiness_says_saturated_when_every_slot_is_busy() -> None:
    app = create_app(load_settings(analysis_workers=1, analysis_queue=1, live_basis="off", policy_file=None))
    pool = app.state.service.pool
    with running_server(app) as url:
        pool.in_flight = pool.capacity  # as if two analyses were running
        busy = httpx.get(url + "/readyz")
        pool.in_flight = 0
        free = httpx.get(url + "/readyz")
    assert (busy.status_code, busy.json()["error"]["code"], free.status_code) == (503, "saturated", 200)


# -- 3. alias amplification, answer size, cache bytes --------------------------------------------

def test_alias_bomb_is_refused_with_its_location(service: str) -> None:
    anchor = "a: &x [" + ",".join(["v"] * 1000) + "]\nb: [" + ",".join(["*x"] * 1000) + "]\n"
    r = post(service, json.dumps({"before": "", "after": anchor}))
    assert r.status_code == 422
    err = r.json()["error"]
    assert "aliases expand to more than" in err["message"] and err["location"]["document"] == 1


def test_aliases_are_counted_over_all_documents_of_a_text() -> None:
    doc = "a: &x [" + ",".join(["v"] * 100) + "]\nb: [" + ",".join(["*x"] * 100) + "]\n"
    text = "---\n".join([doc] * 10)  # 10 × ~10 000 nodes: fine alone, too many together
    with pytest.raises(diffing.ManifestError, match="aliases expand") as exc:
        diffing.analyze("", text, limits=diffing.Limits(max_nodes=50_000))
    assert exc.value.document is not None and exc.value.document > 1


def test_answer_over_the_limit_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    from app import workers

    job = {"before": BEFORE, "after": AFTER, "kuberay_version": "1.7.0", "headroom": None, "policy": None,
           "sources": ("before", "after"), "max_bytes": 1 << 20, "format": "json", "max_answer_bytes": 1000}
    out = workers.run_job(job)
    assert (out["status"], out["error"]) == (422, "answer-too-large")
    assert "over the 1000-byte limit" in json.loads(out["body"])["error"]["message"]


def test_result_cache_is_bounded_in_bytes() -> None:
    cache = ResultCache(entries=100, max_bytes=8000)
    for i in range(10):
        cache.put(bytes([i]), {"status": 200, "body": b"x" * 900})
    assert cache.bytes <= 8000 and len(cache._items) == 8
    cache.put(b"huge", {"status": 200, "body": b"x" * 1001})  # over an eighth: never held
    assert cache.get(b"huge") is None and cache.get(bytes([9])) is not None


# -- 5. input that used to be a 5xx is a located 4xx ----------------------------------------------

@pytest.mark.parametrize(("body", "path", "status", "code", "says"), [
    ('{"before": "", "after": "", "x": %s}' % ("9" * 5000), "/v1/analyze", 400, "malformed-json",
     "5000 digits"),
    ('{"before": "", "after": "", "x": NaN}', "/v1/analyze", 400, "malformed-json", "NaN is not JSON"),
    ('{"items": [{"kind": "RayService", "name": "x", "liveState": "null", "targetState": "{\\"a\\": %s}"}]}'
     % ("9" * 5000), "/v1/argocd/managed-resources", 422, "invalid-managed-resources", "targetState"),
    (json.dumps({"before": "", "after": AFTER.replace('rayVersion: "2.53.0"', "rayVersion: !!bool maybe")}),
     "/v1/analyze", 422, "invalid-manifest", "'maybe' is not a boolean"),
    (json.dumps({"before": "", "after": AFTER.replace('rayVersion: "2.53.0"', "rayVersion: !!float 1e999")}),
     "/v1/analyze", 422, "invalid-manifest", "infinite or NaN"),
])
def test_inputs_that_were_5xx(service: str, body: str, path: str, status: int, code: str, says: str) -> None:
    r = post(service, body, path)
    assert (r.status_code, r.json()["error"]["code"]) == (status, code), r.text
    assert says in r.json()["error"]["message"]


def test_utf16_json_is_400(service: str) -> None:
    r = post(service, json.dumps({"before": "", "after": ""}).encode("utf-16"))
    assert (r.status_code, r.json()["error"]["code"]) == (400, "malformed-json")


def test_a_bug_is_a_500_with_a_request_id_in_the_log_and_the_connection_kept(
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    from app.api import analyze

    def broken(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("a bug")

    app = create_app(load_settings(analysis_workers=1, analysis_queue=1, live_basis="off", policy_file=None))
    with running_server(app) as url:
        monkeypatch.setattr(analyze, "validate", broken)
        host, port = url.removeprefix("http://").split(":")
        conn = http.client.HTTPConnection(host, int(port), timeout=10)
        body = json.dumps({"before": "", "after": ""})
        conn.request("POST", "/v1/analyze", body=body, headers=JSON)
        first = conn.getresponse()
        answer = json.loads(first.read())
        conn.request("GET", "/healthz")  # the same connection: still open
        second = conn.getresponse()
        second.read()
        conn.close()
    request_id = answer["error"]["requestId"]
    assert first.status == 500 and first.getheader("x-request-id") == request_id
    assert request_id in answer["error"]["message"] and "a bug" not in json.dumps(answer)
    assert second.status == 200
    logged = [r for r in caplog.records if getattr(r, "request_id", None) == request_id and r.exc_info]
    assert logged and "a bug" in str(logged[0].exc_info[1])


# -- 7. slow and odd clients ----------------------------------------------------------------------

def _connect(url: str) -> socket.socket:
    host, port = url.removeprefix("http://").split(":")
    return socket.create_connection((host, int(port)), timeout=10)


def test_a_request_head_that_never_ends_is_closed(service: str) -> None:
    sock = _connect(service)
    sock.sendall(b"POST /v1/analyze HTTP/1.1\r\nHost: x\r\n")
    started = time.monotonic()
    closed = False
    while time.monotonic() - started < 5:
        try:
            sock.sendall(b"X-Slow: 1\r\n")
            if sock.recv(1, socket.MSG_DONTWAIT) == b"":
                closed = True
                break
        except BlockingIOError:
            pass
        except OSError:
            closed = True
            break
        time.sleep(0.1)
    sock.close()
    assert closed and time.monotonic() - started < 3  # 0.5 s head deadline in this server


def _head_never_ends_closes(url: str) -> bool:
    sock = _connect(url)
    sock.sendall(b"POST /v1/analyze HTTP/1.1\r\nHost: x\r\n")
    started = time.monotonic()
    try:
        while time.monotonic() - started < 5:
            try:
                sock.sendall(b"X-Slow: 1\r\n")
                if sock.recv(1, socket.MSG_DONTWAIT) == b"":
                    return time.monotonic() - started < 3
            except BlockingIOError:
                pass
            except OSError:
                return time.monotonic() - started < 3
            time.sleep(0.1)
        return False
    finally:
        sock.close()


@pytest.mark.parametrize("parser", ["httptools", "h11"])
def test_both_http_parsers_carry_the_head_deadline_and_keep_alive(parser: str) -> None:
    """The service runs on httptools (uvicorn[standard]) and falls back to h11: each closes a head
    that never ends, and neither cuts a keep-alive connection that sends its next request in time."""
    protocol = protocol_with(0.5, parser=parser)
    from uvicorn.protocols.http.h11_impl import H11Protocol
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

    assert issubclass(protocol, HttpToolsProtocol if parser == "httptools" else H11Protocol)
    app = create_app(load_settings(analysis_workers=1, analysis_queue=2, live_basis="off", policy_file=None))
    with running_server(app, http=protocol) as url:
        assert _head_never_ends_closes(url)
        with httpx.Client(base_url=url, timeout=30) as client:  # one connection, three requests
            for pause in (0.0, 0.3, 0.8):  # the last waits past the head deadline between requests
                time.sleep(pause)
                answer = client.post("/v1/analyze", json={"before": BEFORE, "after": AFTER})
                assert answer.status_code == 200 and answer.json()["decision"] == "hold"


def test_a_body_that_never_ends_is_408(service: str) -> None:
    sock = _connect(service)
    sock.sendall(b"POST /v1/analyze HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                 b"Content-Length: 1000\r\n\r\n{\"before\": ")
    data = b""
    while chunk := sock.recv(4096):  # the server closes: the rest of the body is never read
        data += chunk
    sock.close()
    assert data.startswith(b"HTTP/1.1 408") and b"did not arrive within 1 s" in data


@pytest.mark.parametrize("option", ["before", "policy"])
def test_cli_refuses_a_fifo(tmp_path: Path, capsys, option: str) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    sample = str(ROOT / "samples/gpu-image-bump/after.yaml")
    args = [str(fifo), sample] if option == "before" else [sample, sample, "--policy", str(fifo)]
    assert main(["analyze", *args]) == 2
    assert "not a regular file" in capsys.readouterr().err


def test_hook_has_an_overall_deadline(tmp_path: Path) -> None:
    def slow(method: str, path: str, query: Any, headers: Any) -> tuple[int, Any]:
        time.sleep(1.5)
        return 503, {"error": "slow", "code": 14, "message": "unavailable"}

    environ = {k: v for k, v in os.environ.items() if not k.startswith(("RAYSERVICE_IMPACT_", "KUBE"))}
    termination = tmp_path / "termination-log"
    termination.touch()
    with s.serve(slow) as argo_url:
        environ.update({"HOME": str(tmp_path), "KUBECONFIG": str(tmp_path / "none"),
                        "RAYSERVICE_IMPACT_ARGOCD_SERVER": argo_url,
                        "RAYSERVICE_IMPACT_ARGOCD_TOKEN": "t", "RAYSERVICE_IMPACT_ARGOCD_RETRIES": "10",
                        "RAYSERVICE_IMPACT_HOOK_DEADLINE_SECONDS": "2",
                        "RAYSERVICE_IMPACT_TERMINATION_LOG": str(termination)})
        started = time.monotonic()
        proc = subprocess.run([sys.executable, "-m", "app", "argocd-presync", "--app", "x"], cwd=ROOT,
                              env=environ, capture_output=True, text=True, timeout=60)
        took = time.monotonic() - started
    assert proc.returncode == 1 and took < 10
    assert "did not finish within 2 s" in proc.stderr
    assert "did not finish within 2 s" in termination.read_text()


# -- 8. operations -----------------------------------------------------------------------------------

def test_every_module_logger_writes_json_lines() -> None:
    code = ("import logging; from app.logs import configure_logging; configure_logging('info'); "
            "logging.getLogger('app.github.flow').info('a run'); "
            "logging.getLogger('app.clients.github').warning('a retry')")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    lines = [json.loads(line) for line in proc.stderr.splitlines()]
    assert [(x["level"], x["logger"], x["msg"]) for x in lines] == [
        ("info", "app.github.flow", "a run"), ("warning", "app.clients.github", "a retry")]


# -- the CLI on hostile files and git blobs (hypothesis) ----------------------------------------------

@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(junk=st.binary(min_size=1, max_size=64), at=st.integers(min_value=0, max_value=4000))
def test_fuzz_cli_invalid_bytes_in_files_and_git_blobs(tmp_path_factory: pytest.TempPathFactory,
                                                       junk: bytes, at: int) -> None:
    """Bytes spliced into a real manifest file: the answer is a verdict (0/3) or a located input
    error (2), never an internal error; bytes that are not UTF-8 are always the input error, never
    a file read as empty, which would make the RayService look deleted. (Git
    blobs: test_git_render_none_non_utf8_file_is_an_input_error here, and the rendered flow's
    test_non_utf8_plain_file_holds_instead_of_reading_as_deleted in tests/render.)"""
    tmp = tmp_path_factory.mktemp("fuzz")
    data = AFTER.encode()
    bad = data[:at] + junk + data[at:]
    (tmp / "before.yaml").write_text(BEFORE)
    (tmp / "after.yaml").write_bytes(bad)
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        code = main(["analyze", str(tmp / "before.yaml"), str(tmp / "after.yaml"), "--format", "json"])
    assert code in (0, 2, 3)
    try:
        bad.decode("utf-8")
    except UnicodeDecodeError:
        assert code == 2  # never read as an empty file (which would read as a deleted RayService)
    # Valid text may legitimately change anything (a '#' before apiVersion removes the RayService).


def test_docs_work_offline(service: str) -> None:
    """Swagger UI's files come from the service itself: nothing is fetched from a CDN."""
    page = httpx.get(service + "/docs")
    assert page.status_code == 200 and "/docs/assets/swagger-ui-bundle.js" in page.text
    assert not re.search(r"https?://(?!127\.0\.0\.1)", page.text.replace("https://fastapi.tiangolo.com", ""))
    for asset in ("swagger-ui-bundle.js", "swagger-ui.css"):
        r = httpx.get(f"{service}/docs/assets/{asset}")
        assert r.status_code == 200 and len(r.content) > 10_000
