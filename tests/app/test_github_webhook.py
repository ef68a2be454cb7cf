"""End to end: a real uvicorn running create_app, a real stand-in for GitHub, signed payloads."""

from __future__ import annotations

import json
import time

import httpx
import pytest
from github_helpers import (
    BASE_SHA,
    HEAD2_SHA,
    HEAD_SHA,
    MANIFEST,
    NUMBER,
    OWNER,
    REPO,
    TOKEN,
    add_sample_pull,
    github_service,
    manifest,
    payload,
    payload_bytes,
    post_event,
    raycluster_yaml,
    settle,
    signed_headers,
    statuses_for,
    wait_for,
)
from github_standin import GitHubStandIn
from serverutil import running_server

from app.github.comment import MARKER

COMMENTS = (OWNER, REPO, NUMBER)


def test_webhook_opened_posts_one_comment_and_a_status():
    with github_service() as (url, gh):
        add_sample_pull(gh)
        resp = post_event(url, "pull_request", payload_bytes("pull_request.opened.repo-webhook.json"))
        assert resp.status_code == 202
        assert resp.json()["status"] == "queued"
        wait_for(lambda: gh.statuses, what="a status")
        settle(gh)
    [comment] = gh.comments[COMMENTS]
    assert comment["body"].startswith(MARKER + "\n")
    assert "rayservice-sample" in comment["body"]
    assert f"head `{HEAD_SHA[:7]}`" in comment["body"]
    assert [(s["sha"], s["state"], s["context"]) for s in gh.statuses] == [
        (HEAD_SHA, "success", "rayservice-impact")]
    assert gh.statuses[0]["description"].startswith("approve: default/rayservice-sample")
    assert gh.check_runs == []  # a token, not an App: no check run
    assert all(c.headers["authorization"] == f"Bearer {TOKEN}" for c in gh.calls)


def test_webhook_typical_pr_call_count_and_latency(capsys):
    with github_service(render="none") as (url, gh):
        add_sample_pull(gh)
        started = time.monotonic()
        post_event(url, "pull_request", payload_bytes("pull_request.opened.repo-webhook.json"))
        wait_for(lambda: gh.statuses, what="a status")
        latency = time.monotonic() - started
        settle(gh)
    calls = [(c.method, c.path) for c in gh.calls]
    assert calls == [
        ("GET", f"/repos/{OWNER}/{REPO}/pulls/{NUMBER}/files"),
        ("GET", f"/repos/{OWNER}/{REPO}/contents/{MANIFEST}"),
        ("GET", f"/repos/{OWNER}/{REPO}/contents/{MANIFEST}"),
        ("GET", f"/repos/{OWNER}/{REPO}/contents/.github/rayservice-impact.yml"),  # the comment mode
        ("GET", f"/repos/{OWNER}/{REPO}/issues/{NUMBER}/comments"),
        ("POST", f"/repos/{OWNER}/{REPO}/issues/{NUMBER}/comments"),
        ("GET", f"/repos/{OWNER}/{REPO}/commits/{HEAD_SHA}/statuses"),  # a success: does anything hold?
        ("POST", f"/repos/{OWNER}/{REPO}/statuses/{HEAD_SHA}"),
    ]
    manifests = gh.calls_to("GET", f"/contents/{MANIFEST}")
    assert sorted(c.query["ref"] for c in manifests) == sorted([BASE_SHA, HEAD_SHA])
    assert [c.query["ref"] for c in gh.calls_to("GET", "/contents/.github/")] == [BASE_SHA]  # what runs now
    raw = "application/vnd.github.raw+json"
    assert all(c.headers["accept"] == raw for c in gh.calls_to("GET", "/contents/"))
    assert gh.calls[0].query == {"per_page": "100"}
    assert latency < 5.0
    with capsys.disabled():
        print(f"\n[github] typical PR: {len(calls)} API calls, webhook -> status {latency * 1000:.0f} ms")


def test_webhook_synchronize_edits_the_comment_and_posts_a_new_status():
    with github_service() as (url, gh):
        add_sample_pull(gh)
        post_event(url, "pull_request", payload_bytes("pull_request.opened.repo-webhook.json"))
        wait_for(lambda: gh.statuses, what="the first status")
        gh.add_pull(OWNER, REPO, NUMBER, BASE_SHA, HEAD2_SHA,
                    {MANIFEST: (manifest("llm.base.yaml"), manifest("llm.head.yaml"))})
        resp = post_event(url, "pull_request", payload("pull_request.synchronize.json", head=HEAD2_SHA,
                                                       updated_at="2019-05-15T15:21:00Z"))
        assert resp.json()["status"] == "queued"
        wait_for(lambda: statuses_for(gh, HEAD2_SHA), what="the second status")
        settle(gh)
    [comment] = gh.comments[COMMENTS]
    assert "ray-serve-llm" in comment["body"]
    assert f"head `{HEAD2_SHA[:7]}`" in comment["body"]
    assert len(gh.calls_to("POST", r"/issues/\d+/comments$")) == 1
    assert len(gh.calls_to("PATCH", r"/issues/comments/\d+$")) == 1
    assert [(s["sha"], s["state"]) for s in gh.statuses] == [(HEAD_SHA, "success"), (HEAD2_SHA, "failure")]
    assert gh.statuses[1]["description"].startswith("hold: default/ray-serve-llm")
    assert len(gh.statuses[1]["description"]) <= 140


def test_webhook_redelivery_leaves_one_comment_and_the_same_status():
    body = payload_bytes("pull_request.opened.repo-webhook.json")
    with github_service() as (url, gh):
        add_sample_pull(gh)
        first = post_event(url, "pull_request", body, delivery="72d3162e-cc78-11e3-81ab-4c9367dc0958")
        wait_for(lambda: gh.statuses, what="a status")
        settle(gh)
        calls = len(gh.calls)
        again = post_event(url, "pull_request", body, delivery="72d3162e-cc78-11e3-81ab-4c9367dc0958")
        other = post_event(url, "pull_request", payload("pull_request.reopened.json"))  # same head SHA
        settle(gh)
    assert (first.json()["status"], again.json()["status"], other.json()["status"]) == (
        "queued", "duplicate", "duplicate")
    assert len(gh.calls) == calls
    assert len(gh.comments[COMMENTS]) == 1
    assert [(s["sha"], s["state"]) for s in gh.statuses] == [(HEAD_SHA, "success")]


def test_webhook_redelivery_while_running_is_not_run_twice():
    body = payload_bytes("pull_request.opened.repo-webhook.json")
    with github_service(github_retry_budget_seconds=5) as (url, gh):
        add_sample_pull(gh)
        gh.fail("GET", "/pulls/2/files", 502, times=1)   # keeps the first run busy for a moment
        responses = [post_event(url, "pull_request", body, delivery="d-1") for _ in range(3)]
        wait_for(lambda: gh.statuses, what="a status")
        settle(gh)
    assert [r.json()["status"] for r in responses] == ["queued", "duplicate", "duplicate"]
    assert len(gh.comments[COMMENTS]) == 1
    assert len(gh.statuses) == 1


def test_webhook_bad_signature_is_401_and_calls_nothing():
    body = payload_bytes("pull_request.opened.repo-webhook.json")
    with github_service() as (url, gh):
        add_sample_pull(gh)
        wrong = post_event(url, "pull_request", body, secret="not the secret")
        tampered = httpx.post(url + "/webhooks/github", content=body + b" ",
                              headers=signed_headers(body, "pull_request"))
        missing = httpx.post(url + "/webhooks/github", content=body,
                             headers={"X-GitHub-Event": "pull_request", "X-GitHub-Delivery": "x"})
        settle(gh)
    assert [r.status_code for r in (wrong, tampered, missing)] == [401, 401, 401]
    assert wrong.json()["error"]["code"] == "invalid-signature"
    assert gh.calls == []


def test_webhook_ping_is_200():
    with github_service() as (url, gh):
        resp = post_event(url, "ping", payload_bytes("ping.repository-hook.json"))
        settle(gh, 0.1)
    assert resp.status_code == 200
    assert gh.calls == []


@pytest.mark.parametrize(("event", "body"), [
    ("pull_request", payload("pull_request.closed.json")),
    ("pull_request", payload("pull_request.opened.repo-webhook.json", action="labeled")),
    ("pull_request", {**payload("pull_request.opened.repo-webhook.json", action="edited"),
                      "changes": {"title": {"from": "old"}}}),
    ("issue_comment", {"action": "created", "issue": {"number": 2}}),
    ("push", {"ref": "refs/heads/main"}),
])
def test_webhook_other_events_are_acknowledged_without_calls(event, body):
    with github_service() as (url, gh):
        add_sample_pull(gh)
        resp = post_event(url, event, body)
        settle(gh, 0.1)
    assert resp.status_code == 202
    assert resp.json()["status"] == "ignored"
    assert gh.calls == []


def test_webhook_edited_with_a_new_base_is_analysed():
    body = {**payload("pull_request.ready_for_review.json", action="edited"),
            "changes": {"base": {"ref": {"from": "develop"}, "sha": {"from": "0" * 40}}}}
    with github_service() as (url, gh):
        add_sample_pull(gh)
        resp = post_event(url, "pull_request", body)
        wait_for(lambda: gh.statuses, what="a status")
    assert resp.json()["status"] == "queued"
    assert gh.statuses[0]["state"] == "success"


def test_webhook_invalid_json_with_a_valid_signature_is_400():
    with github_service() as (url, gh):
        resp = post_event(url, "pull_request", b"{not json")
    assert resp.status_code == 400
    assert resp.json()["error"]["code"] == "malformed-json"
    assert gh.calls == []


def test_webhook_502s_then_success_are_retried():
    with github_service(render="none") as (url, gh):
        add_sample_pull(gh)
        gh.fail("GET", "/pulls/2/files", 502, times=2)
        gh.fail("GET", "/contents/", 503, times=1)
        post_event(url, "pull_request", payload_bytes("pull_request.opened.repo-webhook.json"))
        wait_for(lambda: gh.statuses, what="a status")
    assert [c.status for c in gh.calls_to("GET", "/pulls/2/files")] == [502, 502, 200]
    assert [c.status for c in gh.calls_to("GET", "/contents/")].count(503) == 1
    assert gh.statuses[0]["state"] == "success"
    assert len(gh.comments[COMMENTS]) == 1


def test_webhook_rate_limited_waits_as_told():
    with github_service() as (url, gh):
        add_sample_pull(gh)
        gh.fail("POST", r"/issues/\d+/comments$", 403, headers={"retry-after": "1"})
        gh.fail("GET", "/pulls/2/files", 429, headers={
            "x-ratelimit-remaining": "0", "x-ratelimit-reset": str(int(time.time()) + 1)}, body={
            "message": "API rate limit exceeded for installation ID 1."})
        post_event(url, "pull_request", payload_bytes("pull_request.opened.repo-webhook.json"))
        wait_for(lambda: gh.statuses, timeout=15, what="a status")
    files = gh.calls_to("GET", "/pulls/2/files")
    posts = gh.calls_to("POST", r"/issues/\d+/comments$")
    assert [c.status for c in posts] == [403, 201]
    assert posts[1].at - posts[0].at >= 1.0
    assert [c.status for c in files] == [429, 200]
    assert files[1].at - files[0].at >= 0.9
    assert len(gh.comments[COMMENTS]) == 1


def test_webhook_retry_budget_exhausted_sets_an_error_status():
    with github_service(github_retry_budget_seconds=2) as (url, gh):
        add_sample_pull(gh)
        gh.fail("GET", "/pulls/2/files", 403, headers={"retry-after": "30"})
        post_event(url, "pull_request", payload_bytes("pull_request.opened.repo-webhook.json"))
        wait_for(lambda: gh.statuses, what="a status")
        settle(gh)
    assert len(gh.calls_to("GET", "/pulls/2/files")) == 1  # a 30 s wait does not fit a 2 s budget
    assert gh.statuses[0]["state"] == "error"
    assert gh.statuses[0]["description"].startswith("could not analyse: cannot read the change")
    assert COMMENTS not in gh.comments


def test_webhook_3000_file_pr_fetches_only_the_yaml_files():
    files = {f"src/module_{i}.py": ("a", "b") for i in range(2990)}
    files |= {f"docs/page_{i}.md": ("a", "b") for i in range(4)}
    files |= {MANIFEST: (manifest("sample.base.yaml"), manifest("sample.head.yaml")),
              "k8s/llm.yml": (None, manifest("llm.head.yaml")),              # added
              "k8s/old.yaml": (manifest("llm.base.yaml"), None),             # removed
              "k8s/configmap.yaml": ("kind: ConfigMap\n", "kind: ConfigMap\ndata: {}\n"),
              "k8s/new-name.yaml": ("kind: Secret\n", "kind: Secret\n")}     # renamed
    with github_service(render="none") as (url, gh):
        gh.add_pull(OWNER, REPO, NUMBER, BASE_SHA, HEAD_SHA, files,
                    renames={"k8s/new-name.yaml": "k8s/x.yaml"})
        post_event(url, "pull_request", payload_bytes("pull_request.opened.repo-webhook.json"))
        wait_for(lambda: gh.statuses, timeout=15, what="a status")
        settle(gh)
    assert len(gh.files[(OWNER, REPO, NUMBER)]) == 2999
    assert len(gh.calls_to("GET", "/pulls/2/files")) == 30
    fetched = sorted((c.path.split("/contents/")[1], c.query["ref"])
                     for c in gh.calls_to("GET", "/contents/") if "/contents/.github/" not in c.path)
    assert fetched == sorted([(MANIFEST, BASE_SHA), (MANIFEST, HEAD_SHA), ("k8s/llm.yml", HEAD_SHA),
                              ("k8s/old.yaml", BASE_SHA), ("k8s/configmap.yaml", BASE_SHA),
                              ("k8s/configmap.yaml", HEAD_SHA), ("k8s/x.yaml", BASE_SHA),
                              ("k8s/new-name.yaml", HEAD_SHA)])
    body = gh.comments[COMMENTS][0]["body"]
    assert "ray-serve-llm" in body and "rayservice-sample" in body
    assert gh.statuses[0]["state"] == "failure"  # the added LLM service needs GPUs nobody vouched for


def test_webhook_pr_capped_at_3000_files_warns_in_the_comment():
    files = {f"src/module_{i}.py": ("a", "b") for i in range(3100)}
    files[MANIFEST] = (manifest("sample.base.yaml"), manifest("sample.head.yaml"))
    with github_service() as (url, gh):
        gh.add_pull(OWNER, REPO, NUMBER, BASE_SHA, HEAD_SHA, dict(reversed(files.items())))
        post_event(url, "pull_request", payload_bytes("pull_request.opened.repo-webhook.json"))
        wait_for(lambda: gh.statuses, timeout=15, what="a status")
    assert "at most 3 000 files" in gh.comments[COMMENTS][0]["body"]


def test_webhook_without_rayservice_change_sets_success_and_no_comment():
    with github_service() as (url, gh):
        gh.add_pull(OWNER, REPO, NUMBER, BASE_SHA, HEAD_SHA,
                    {"README.md": ("a", "b"), "k8s/cm.yaml": ("kind: ConfigMap\n", "kind: ConfigMap\n")})
        post_event(url, "pull_request", payload_bytes("pull_request.opened.repo-webhook.json"))
        wait_for(lambda: gh.statuses, what="a status")
        settle(gh)
    assert COMMENTS not in gh.comments
    assert [(s["state"], s["description"]) for s in gh.statuses] == [
        ("success", "No RayService, RayCluster, RayJob or RayCronJob changes")]


def test_webhook_rayservice_change_reverted_updates_the_comment():
    with github_service() as (url, gh):
        add_sample_pull(gh)
        post_event(url, "pull_request", payload_bytes("pull_request.opened.repo-webhook.json"))
        wait_for(lambda: gh.statuses, what="the first status")
        gh.add_pull(OWNER, REPO, NUMBER, BASE_SHA, HEAD2_SHA, {"README.md": ("a", "b")})
        post_event(url, "pull_request", payload("pull_request.synchronize.json", head=HEAD2_SHA,
                                                updated_at="2019-05-15T15:30:00Z"))
        wait_for(lambda: statuses_for(gh, HEAD2_SHA), what="the second status")
        settle(gh)
    [comment] = gh.comments[COMMENTS]
    assert comment["body"].startswith(MARKER)
    assert "No RayService, RayCluster, RayJob or RayCronJob changes in this pull request" in comment["body"]
    assert statuses_for(gh, HEAD2_SHA)[0]["state"] == "success"


def test_webhook_invalid_manifest_sets_an_error_status_and_explains():
    broken = "apiVersion: ray.io/v1\nkind: RayService\nmetadata: {name: x\nspec: [\n"
    with github_service() as (url, gh):
        gh.add_pull(OWNER, REPO, NUMBER, BASE_SHA, HEAD_SHA,
                    {MANIFEST: (manifest("sample.base.yaml"), broken)})
        post_event(url, "pull_request", payload_bytes("pull_request.opened.repo-webhook.json"))
        wait_for(lambda: gh.statuses, what="a status")
        settle(gh)
    assert gh.statuses[0]["state"] == "error"
    assert gh.statuses[0]["description"].startswith("could not analyse: invalid manifest")
    assert MANIFEST in gh.comments[COMMENTS][0]["body"]


def test_webhook_newer_head_supersedes_the_running_one():
    older = payload("pull_request.synchronize.json", updated_at="2019-05-15T15:21:00Z")
    newer = payload("pull_request.synchronize.json", head=HEAD2_SHA, updated_at="2019-05-15T15:22:00Z")
    with github_service() as (url, gh):
        add_sample_pull(gh)
        gh.contents[(HEAD2_SHA, MANIFEST)] = manifest("sample.head2.yaml")
        gh.fail("GET", "/pulls/2/files", 502, times=1)   # the older run is in its backoff ...
        first = post_event(url, "pull_request", older)
        time.sleep(0.1)
        second = post_event(url, "pull_request", newer)  # ... when the newer head arrives
        wait_for(lambda: statuses_for(gh, HEAD2_SHA), what="the newer status")
        settle(gh)
        late = post_event(url, "pull_request", older, delivery="late-redelivery")
        settle(gh)
    assert (first.json()["status"], second.json()["status"], late.json()["status"]) == (
        "queued", "queued", "stale")
    assert statuses_for(gh, HEAD_SHA) == []
    [comment] = gh.comments[COMMENTS]
    assert f"head `{HEAD2_SHA[:7]}`" in comment["body"]


def test_webhook_older_result_never_overwrites_a_newer_comment():
    newer_body = (f"{MARKER}\n<!-- rayservice-impact:head={HEAD2_SHA} at=2030-01-01T00:00:00Z -->\nnewer\n")
    with github_service() as (url, gh):
        add_sample_pull(gh)
        gh.comments[COMMENTS] = [{"id": 7, "body": newer_body, "user": {"login": "other-replica[bot]"}}]
        post_event(url, "pull_request", payload_bytes("pull_request.opened.repo-webhook.json"))
        wait_for(lambda: gh.statuses, what="a status")
        settle(gh)
    assert gh.comments[COMMENTS][0]["body"] == newer_body
    assert gh.calls_to("PATCH", "/issues/comments/") == []


def test_webhook_ghes_base_url():
    with github_service(GitHubStandIn("/api/v3", token=TOKEN), prefix="/api/v3") as (url, gh):
        add_sample_pull(gh)
        post_event(url, "pull_request", payload_bytes("pull_request.opened.repo-webhook.json"))
        wait_for(lambda: gh.statuses, what="a status")
    assert gh.calls[0].path == f"/repos/{OWNER}/{REPO}/pulls/{NUMBER}/files"
    assert gh.statuses[0]["state"] == "success"
    assert len(gh.comments[COMMENTS]) == 1


def test_webhook_tokens_never_appear_in_logs(caplog):
    caplog.set_level("DEBUG")
    with github_service(github_retry_budget_seconds=3) as (url, gh):
        add_sample_pull(gh)
        gh.fail("GET", "/pulls/2/files", 502)
        gh.fail("POST", "/statuses/", 401, body={"message": "Bad credentials"}, times=5)
        post_event(url, "pull_request", payload_bytes("pull_request.opened.repo-webhook.json"))
        wait_for(lambda: gh.calls_to("POST", "/statuses/"), what="a status attempt")
        settle(gh)
    assert "github" in caplog.text
    assert TOKEN not in caplog.text
    assert json.dumps(TOKEN)[1:-1] not in caplog.text


def test_webhook_route_is_off_without_a_secret():
    from app.server import create_app
    from app.settings import load_settings
    from app.webhooks.github import build_router

    assert build_router(load_settings(github_webhook_secret=None)) is None
    assert build_router(load_settings(github_webhook_secret="")) is None
    app = create_app(load_settings(github_webhook_secret=None, analysis_executor="thread"))
    assert "/webhooks/github" not in app.openapi()["paths"]
    # a delivery to a server without the secret is refused, and says what is missing
    with running_server(app) as url:
        resp = httpx.post(f"{url}/webhooks/github", content=b"{}", headers={"x-github-event": "ping"})
    assert resp.status_code == 503
    assert resp.json()["error"]["code"] == "not-configured"
    assert "RAYSERVICE_IMPACT_GITHUB_WEBHOOK_SECRET" in resp.json()["error"]["message"]
    assert "github-webhook-secret" in resp.json()["error"]["message"]  # where deploy/base reads it from
    app = create_app(load_settings(github_webhook_secret="s", analysis_executor="thread"))
    assert "/webhooks/github" in app.openapi()["paths"]


def test_webhook_accepts_payloads_up_to_githubs_25_mb_cap():
    """The analysis API keeps its 5 MiB limit; GitHub may send up to 25 MB, signed."""
    big = json.loads(payload_bytes("ping.repository-hook.json"))
    big["padding"] = "x" * (8 * 1024 * 1024)
    with github_service(max_body_bytes=5 * 1024 * 1024) as (url, gh):
        accepted = post_event(url, "ping", big)
        too_big = post_event(url, "ping", {"padding": "x" * (26 * 1024 * 1024)})
        analyze = httpx.post(url + "/v1/analyze", json={"before": "x" * (8 * 1024 * 1024), "after": ""},
                             timeout=30)
    assert (accepted.status_code, too_big.status_code, analyze.status_code) == (200, 413, 413)
    assert gh.calls == []


@pytest.mark.parametrize("render", ["auto", "none"])
def test_webhook_pull_changing_only_a_raycluster_is_analysed(render):
    """A RayCluster file is a change to analyse, not "no change": rendered from the tarballs
    (plain files pass the kind hint) or read as the changed files."""
    with github_service(render=render) as (url, gh):
        gh.add_pull(OWNER, REPO, NUMBER, BASE_SHA, HEAD_SHA,
                    {"k8s/raycluster.yaml": (raycluster_yaml(replicas=1), raycluster_yaml(replicas=2)),
                     "README.md": ("a", "b")})
        post_event(url, "pull_request", payload_bytes("pull_request.opened.repo-webhook.json"))
        wait_for(lambda: gh.statuses, what="a status")
        settle(gh)
    [status] = gh.statuses
    assert "No RayService, RayCluster, RayJob or RayCronJob changes" not in status["description"]
    assert "raycluster-batch" in status["description"]
    [comment] = gh.comments[COMMENTS]
    assert comment["body"].startswith(MARKER) and "raycluster-batch" in comment["body"]
