"""End to end with GitHub App credentials: JWT -> installation token -> comment, status, check run."""

from __future__ import annotations

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from github_helpers import (
    HEAD2_SHA,
    HEAD_SHA,
    NUMBER,
    OWNER,
    REPO,
    TOKEN,
    add_sample_pull,
    github_service,
    payload,
    payload_bytes,
    post_event,
    settle,
    statuses_for,
    wait_for,
)
from github_standin import GitHubStandIn


def _app_standin(tmp_path):
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL,
                            serialization.NoEncryption())
    key_file = tmp_path / "app.pem"
    key_file.write_bytes(pem)
    standin = GitHubStandIn()
    standin.app_public_key = key.public_key().public_bytes(serialization.Encoding.PEM,
                                                           serialization.PublicFormat.SubjectPublicKeyInfo)
    standin.app_id = "31337"
    standin.installations[f"{OWNER}/{REPO}"] = 77
    settings = {"github_app_id": "31337", "github_app_private_key_file": str(key_file), "github_token": None}
    return standin, settings


def test_app_installation_from_payload_posts_a_check_run(tmp_path):
    standin, settings = _app_standin(tmp_path)
    with github_service(standin, **settings) as (url, gh):
        add_sample_pull(gh)
        post_event(url, "pull_request", payload_bytes("pull_request.opened.app-installation.json"))
        wait_for(lambda: gh.check_runs, what="a check run")
        add_sample_pull(gh, HEAD2_SHA, "sample.head2.yaml")
        post_event(url, "pull_request", payload("pull_request.synchronize.json", head=HEAD2_SHA,
                                                updated_at="2019-05-15T15:21:00Z"))
        wait_for(lambda: len(gh.check_runs) == 2, what="the second check run")
        settle(gh)
    assert [c.path for c in gh.calls_to("POST", "/access_tokens")] == ["/app/installations/1/access_tokens"]
    assert gh.calls_to("GET", "/installation$") == []   # the payload named installation 1
    assert [(r["head_sha"], r["name"], r["status"], r["conclusion"]) for r in gh.check_runs] == [
        (HEAD_SHA, "rayservice-impact", "completed", "success"),
        (HEAD2_SHA, "rayservice-impact", "completed", "success")]
    assert gh.check_runs[0]["output"]["title"].startswith("approve: default/rayservice-sample")
    assert "rayservice-sample" in gh.check_runs[0]["output"]["summary"]
    assert [s["state"] for s in gh.statuses] == ["success", "success"]
    assert len(gh.comments[(OWNER, REPO, NUMBER)]) == 1
    token_calls = [c for c in gh.calls if not c.path.startswith("/app/")]
    assert {c.headers["authorization"] for c in token_calls} == {"Bearer ghs_standin0_1"}
    assert TOKEN not in str([c.headers for c in gh.calls])


def test_app_repo_webhook_looks_the_installation_up(tmp_path):
    standin, settings = _app_standin(tmp_path)
    with github_service(standin, **settings) as (url, gh):
        add_sample_pull(gh)
        post_event(url, "pull_request", payload_bytes("pull_request.opened.repo-webhook.json"))
        wait_for(lambda: gh.check_runs, what="a check run")
    assert [(c.method, c.path) for c in gh.calls[:2]] == [
        ("GET", f"/repos/{OWNER}/{REPO}/installation"), ("POST", "/app/installations/77/access_tokens")]
    assert statuses_for(gh, HEAD_SHA)[0]["state"] == "success"


def test_app_hold_is_a_failing_check_run(tmp_path):
    from github_helpers import BASE_SHA, MANIFEST, manifest

    standin, settings = _app_standin(tmp_path)
    with github_service(standin, **settings) as (url, gh):
        gh.add_pull(OWNER, REPO, NUMBER, BASE_SHA, HEAD_SHA,
                    {MANIFEST: (manifest("llm.base.yaml"), manifest("llm.head.yaml"))})
        post_event(url, "pull_request", payload_bytes("pull_request.opened.app-installation.json"))
        wait_for(lambda: gh.check_runs, what="a check run")
    assert gh.check_runs[0]["conclusion"] == "failure"
    assert gh.statuses[0]["state"] == "failure"
