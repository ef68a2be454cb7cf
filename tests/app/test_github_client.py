"""The GitHub client against the stand-in on a real server: pagination, retries, App auth, JWT."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import time
from typing import Any

import httpx
import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from github_helpers import BASE_SHA, HEAD_SHA, NUMBER, OWNER, REPO, TOKEN
from github_standin import GitHubStandIn
from serverutil import running_server

from app.clients.github import (
    AppAuth,
    GitHubClient,
    GitHubError,
    GitHubNotFound,
    GitHubRetryExhausted,
    RetryPolicy,
    create_app_jwt,
    static_token,
)
from app.github.change import PullRequest, fetch_change, plan_fetches
from app.webhooks.github import is_valid_signature, should_analyse, signature_for

FAST = RetryPolicy(budget=5, backoff=0.01, not_found_waits=(0.01, 0.02), write_interval=0)


def _key() -> tuple[bytes, bytes]:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption())
    public = key.public_key().public_bytes(serialization.Encoding.PEM,
                                           serialization.PublicFormat.SubjectPublicKeyInfo)
    return private, public


def _run(standin: GitHubStandIn, body: Any, prefix: str = "", **kwargs: Any) -> Any:
    """Run ``body(client)`` against the stand-in served by uvicorn."""
    with running_server(standin.app, ready_path=None) as url:
        async def main() -> Any:
            async with httpx.AsyncClient() as http:
                gh = GitHubClient(http, url + prefix, static_token(TOKEN), retry=kwargs.get("retry", FAST))
                return await body(gh)
        return asyncio.run(main())


async def _collect(items: Any) -> list[Any]:
    return [item async for item in items]


def test_signature_matches_githubs_test_vector():
    digest = "757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"
    assert signature_for(b"It's a Secret to Everybody", b"Hello, World!") == f"sha256={digest}"
    assert is_valid_signature(b"It's a Secret to Everybody", b"Hello, World!", f"sha256={digest}")
    assert not is_valid_signature(b"It's a Secret to Everybody", b"Hello, World?", f"sha256={digest}")
    assert not is_valid_signature(b"secret", b"x", None)
    sha1 = "sha1=" + hmac.new(b"secret", b"x", hashlib.sha1).hexdigest()
    assert not is_valid_signature(b"secret", b"x", sha1)


@pytest.mark.parametrize(("event", "payload", "expected"), [
    ("pull_request", {"action": "opened"}, True),
    ("pull_request", {"action": "synchronize"}, True),
    ("pull_request", {"action": "reopened"}, True),
    ("pull_request", {"action": "ready_for_review"}, True),
    ("pull_request", {"action": "edited", "changes": {"base": {"ref": {"from": "x"}}}}, True),
    ("pull_request", {"action": "edited", "changes": {"body": {"from": "x"}}}, False),
    ("pull_request", {"action": "closed"}, False),
    ("pull_request", {"action": "stacked"}, False),
    ("pull_request_review", {"action": "submitted"}, False),
])
def test_should_analyse_only_the_contract_actions(event, payload, expected):
    assert should_analyse(event, payload)[0] is expected


@pytest.mark.parametrize(("entry", "expected"), [
    ({"filename": "a.yaml", "status": "modified"}, ("a.yaml", "a.yaml")),
    ({"filename": "a.YML", "status": "added"}, (None, "a.YML")),
    ({"filename": "a.yaml", "status": "removed"}, ("a.yaml", None)),
    ({"filename": "b.yaml", "status": "renamed", "previous_filename": "a.yaml"}, ("a.yaml", "b.yaml")),
    ({"filename": "b.yaml", "status": "renamed", "previous_filename": "a.txt"}, (None, "b.yaml")),
    ({"filename": "b.yaml", "status": "copied", "previous_filename": "a.yaml"}, (None, "b.yaml")),
    ({"filename": "a.yaml", "status": "unchanged"}, (None, None)),
    ({"filename": "main.py", "status": "modified"}, (None, None)),
    ({"filename": "yaml", "status": "modified"}, (None, None)),
])
def test_plan_fetches_follows_status_and_renames(entry, expected):
    assert plan_fetches(entry) == expected


def test_paginate_follows_link_pages():
    standin = GitHubStandIn()
    standin.comments[(OWNER, REPO, NUMBER)] = [{"id": i, "body": str(i)} for i in range(250)]
    items = _run(standin, lambda gh: _collect(gh.issue_comments(OWNER, REPO, NUMBER)))
    assert [c["id"] for c in items] == list(range(250))
    assert [c.query for c in standin.calls] == [{"per_page": "100"}, {"per_page": "100", "page": "2"},
                                                 {"per_page": "100", "page": "3"}]


def test_request_retries_5xx_then_succeeds():
    standin = GitHubStandIn()
    standin.add_pull(OWNER, REPO, NUMBER, BASE_SHA, HEAD_SHA, {"a.yaml": ("a", "b")})
    standin.fail("GET", "/files", 502, times=2)
    items = _run(standin, lambda gh: _collect(gh.pull_files(OWNER, REPO, NUMBER)))
    assert [i["filename"] for i in items] == ["a.yaml"]
    assert [c.status for c in standin.calls] == [502, 502, 200]


def test_request_gives_up_when_5xx_outlast_the_budget():
    standin = GitHubStandIn()
    standin.fail("GET", "/files", 503, times=100)
    retry = RetryPolicy(budget=0.05, backoff=0.02, write_interval=0)
    with pytest.raises(GitHubRetryExhausted, match=r"GitHub GET /repos/Codertocat/Hello-World/pulls/2/files: "
                                                   r"HTTP 503: gave up after \d attempts"):
        _run(standin, lambda gh: _collect(gh.pull_files(OWNER, REPO, NUMBER)), retry=retry)
    assert 2 <= len(standin.calls) <= 3


def test_request_secondary_rate_limit_honours_retry_after():
    standin = GitHubStandIn()
    standin.fail("POST", "/statuses/", 403, headers={"retry-after": "1"})
    _run(standin, lambda gh: gh.create_status(OWNER, REPO, HEAD_SHA, "success", "ok"))
    first, second = standin.calls
    assert (first.status, second.status) == (403, 201)
    assert second.at - first.at >= 1.0


def test_request_primary_rate_limit_waits_for_reset():
    standin = GitHubStandIn()
    standin.fail("GET", "/comments", 403, body={"message": "API rate limit exceeded"},
                 headers={"x-ratelimit-remaining": "0", "x-ratelimit-reset": str(int(time.time()) + 1)})
    _run(standin, lambda gh: _collect(gh.issue_comments(OWNER, REPO, NUMBER)))
    first, second = standin.calls
    assert second.at - first.at >= 0.9


def test_request_secondary_limit_without_hint_does_not_fit_a_small_budget():
    standin = GitHubStandIn()
    standin.fail("POST", "/comments", 403)  # "You have exceeded a secondary rate limit", no headers
    with pytest.raises(GitHubRetryExhausted, match="secondary rate limit"):
        _run(standin, lambda gh: gh.create_comment(OWNER, REPO, NUMBER, "x"))
    assert len(standin.calls) == 1


def test_request_plain_403_is_not_retried():
    standin = GitHubStandIn()
    standin.fail("POST", "/statuses/", 403, body={"message": "Resource not accessible by integration"})
    with pytest.raises(GitHubError, match="HTTP 403: Resource not accessible by integration"):
        _run(standin, lambda gh: gh.create_status(OWNER, REPO, HEAD_SHA, "success", "ok"))
    assert len(standin.calls) == 1


def test_request_404_right_after_the_event_is_retried_briefly():
    standin = GitHubStandIn()
    standin.contents[(HEAD_SHA, "k8s/a.yaml")] = "kind: RayService\n"
    standin.fail("GET", "/contents/", 404, times=2)
    data = _run(standin, lambda gh: gh.file_bytes(OWNER, REPO, "k8s/a.yaml", HEAD_SHA))
    assert data == b"kind: RayService\n"
    assert [c.status for c in standin.calls] == [404, 404, 200]


def test_request_404_that_persists_is_not_found():
    standin = GitHubStandIn()
    with pytest.raises(GitHubNotFound):
        _run(standin, lambda gh: gh.file_bytes(OWNER, REPO, "k8s/missing.yaml", HEAD_SHA))
    assert len(standin.calls) == 3  # the first try and the two brief retries


def test_client_works_under_a_ghes_prefix():
    standin = GitHubStandIn("/api/v3")
    standin.contents[(HEAD_SHA, "dir with space/a.yaml")] = "x: 1\n"
    data = _run(standin, lambda gh: gh.file_bytes(OWNER, REPO, "dir with space/a.yaml", HEAD_SHA),
                prefix="/api/v3")
    assert data == b"x: 1\n"
    assert standin.calls[0].path == f"/repos/{OWNER}/{REPO}/contents/dir with space/a.yaml"


def test_status_description_is_cut_to_140_characters():
    standin = GitHubStandIn()
    _run(standin, lambda gh: gh.create_status(OWNER, REPO, HEAD_SHA, "failure", "x" * 300))
    assert standin.statuses[0]["description"] == "x" * 140


def test_fetch_change_pairs_renamed_files_and_skips_non_rayservice_yaml():
    rs = "apiVersion: ray.io/v1\nkind: RayService\nmetadata: {name: a}\n"
    standin = GitHubStandIn()
    standin.add_pull(OWNER, REPO, NUMBER, BASE_SHA, HEAD_SHA,
                     {"new/a.yaml": (rs, rs + "# moved\n"),
                      "cm.yaml": ("kind: ConfigMap\n", "kind: ConfigMap\n"), "x.json": ("{}", "{}")},
                     renames={"new/a.yaml": "old/a.yaml"})
    pr = PullRequest(OWNER, REPO, NUMBER, BASE_SHA, HEAD_SHA)
    change = _run(standin, lambda gh: fetch_change(gh, pr))
    assert change.before == [(f"{BASE_SHA[:7]}:old/a.yaml", rs)]
    assert change.after == [(f"{HEAD_SHA[:7]}:new/a.yaml", rs + "# moved\n")]
    # x.json is a manifest file too (kubectl and Argo CD read JSON): fetched, then skipped as it
    # cannot hold a ray.io object
    assert (change.files_listed, change.yaml_files, change.is_truncated) == (3, 3, False)


def test_create_app_jwt_claims_and_expiry():
    private, public = _key()
    now = 1_760_000_000
    token = create_app_jwt("12345", private, now=now)
    header = jwt.get_unverified_header(token)
    claims = jwt.decode(token, public, algorithms=["RS256"],
                        options={"verify_exp": False, "verify_iat": False})
    assert header["alg"] == "RS256"
    assert claims == {"iss": "12345", "iat": now - 60, "exp": now + 540}
    assert claims["exp"] - now <= 600
    assert claims["exp"] - claims["iat"] <= 600


def test_create_app_jwt_verifies_now():
    private, public = _key()
    claims = jwt.decode(create_app_jwt("7", private), public, algorithms=["RS256"], issuer="7")
    assert claims["iat"] <= time.time() - 59
    assert time.time() < claims["exp"] <= time.time() + 600


def test_app_auth_caches_the_installation_token_until_shortly_before_expiry():
    private, public = _key()
    standin = GitHubStandIn()
    standin.app_public_key, standin.app_id = public, "42"
    standin.installations[f"{OWNER}/{REPO}"] = 99
    clock = [time.time()]
    auth = AppAuth("42", private, clock=lambda: clock[0])

    async def body(gh: GitHubClient) -> list[str]:
        installation = await auth.installation_id(gh, OWNER, REPO)
        source = auth.installation_token(gh, installation)
        tokens = [await source(False), await source(False)]
        await gh.with_token(source).create_status(OWNER, REPO, HEAD_SHA, "success", "ok")
        clock[0] += 3600 - 200   # inside the refresh margin: a new token
        tokens.append(await source(False))
        return tokens

    tokens = _run(standin, body)
    assert tokens == ["Bearer ghs_standin0_99", "Bearer ghs_standin0_99", "Bearer ghs_standin1_99"]
    assert [(c.method, c.path, c.status) for c in standin.calls] == [
        ("GET", f"/repos/{OWNER}/{REPO}/installation", 200),
        ("POST", "/app/installations/99/access_tokens", 201),
        ("POST", f"/repos/{OWNER}/{REPO}/statuses/{HEAD_SHA}", 201),
        ("POST", "/app/installations/99/access_tokens", 201),
    ]
    assert standin.calls[2].headers["authorization"] == "Bearer ghs_standin0_99"
    assert standin.statuses[0]["state"] == "success"


def test_app_auth_renews_a_token_the_api_rejects():
    private, public = _key()
    standin = GitHubStandIn()
    standin.app_public_key, standin.app_id = public, "42"
    auth = AppAuth("42", private)

    async def body(gh: GitHubClient) -> None:
        source = auth.installation_token(gh, 5)
        await source(False)
        standin.issued_tokens.clear()  # revoked behind our back
        await gh.with_token(source).create_status(OWNER, REPO, HEAD_SHA, "success", "ok")

    _run(standin, body)
    assert [c.status for c in standin.calls_to("POST", "/statuses/")] == [401, 201]
    assert len(standin.calls_to("POST", "/access_tokens")) == 2


@pytest.mark.parametrize("committed", [True, False], ids=["stored-then-502", "not-stored-502"])
def test_sticky_comment_is_never_posted_twice(committed: bool) -> None:
    """GitHub can store a comment and still answer 502 (or time out): a blind retry of the POST
    made two comments, and later runs edited only the first. Now the retry looks first."""
    from app.github.comment import Verdict
    from app.github.flow import post_sticky_comment

    standin = GitHubStandIn(token=TOKEN)
    standin.fail("POST", r"/issues/\d+/comments$", 502, after_commit=committed)
    pr = PullRequest(OWNER, REPO, NUMBER, BASE_SHA, HEAD_SHA, updated_at="2026-12-03T10:00:00Z")
    verdict = Verdict("failure", "hold", "## hold\n", "hold")
    outcome = _run(standin, lambda gh: post_sticky_comment(gh, pr, verdict))
    comments = standin.comments[(OWNER, REPO, NUMBER)]
    assert len(comments) == 1 and "## hold" in comments[0]["body"]
    assert outcome == "created"
    posts = standin.calls_to("POST", r"/issues/\d+/comments$")
    assert len(posts) == (1 if committed else 2)  # stored: edited instead of posted again
    assert len(standin.calls_to("PATCH", r"/issues/comments/\d+$")) == (1 if committed else 0)
