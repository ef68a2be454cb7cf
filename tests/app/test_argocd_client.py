from __future__ import annotations

import httpx
import pytest

from app.clients.argocd import ArgoCDClient, ArgoCDError

BODY = {"items": [{"group": "ray.io", "kind": "RayService", "name": "svc", "liveState": "null",
                   "targetState": "null"}]}


def client(handler, *, retries: int = 2, sleeps: list[float] | None = None) -> ArgoCDClient:
    return ArgoCDClient("https://argocd.example/", "tok", retries=retries, backoff=0.5,
                        transport=httpx.MockTransport(handler),
                        sleep=(sleeps.append if sleeps is not None else lambda _: None))


def test_managed_resources_sends_token_and_filters() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json=BODY)

    assert client(handler).managed_resources("my app", app_namespace="team-a") == BODY
    (req,) = seen
    assert req.url.raw_path.split(b"?")[0] == b"/api/v1/applications/my%20app/managed-resources"
    # The whole ray.io group in one call (Argo CD filters on one kind or none); the caller keeps
    # the RayServices, RayClusters and RayJobs.
    assert dict(req.url.params) == {"group": "ray.io", "appNamespace": "team-a"}
    assert req.headers["Authorization"] == "Bearer tok"


def test_managed_resources_can_still_ask_for_one_kind() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json=BODY)

    client(handler).managed_resources("a", kind="RayJob")
    assert dict(seen[0].url.params) == {"group": "ray.io", "kind": "RayJob"}


def test_managed_resources_retries_5xx_with_backoff() -> None:
    answers = [httpx.Response(502), httpx.Response(503), httpx.Response(200, json=BODY)]
    sleeps: list[float] = []
    assert client(lambda r: answers.pop(0), sleeps=sleeps).managed_resources("a") == BODY
    assert sleeps == [0.5, 1.0]


def test_managed_resources_gives_up_after_retries() -> None:
    calls = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(1)
        return httpx.Response(503, json={"error": "x", "code": 14, "message": "backend unavailable"})

    with pytest.raises(ArgoCDError, match=r"answered 503 .* after 3 attempt\(s\) \(Argo CD says: backend"):
        client(handler).managed_resources("a")
    assert len(calls) == 3


def test_managed_resources_retries_connect_errors() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("connection refused", request=request)

    with pytest.raises(ArgoCDError, match=r"cannot reach Argo CD at https://argocd.example .* 3 attempt"):
        client(handler).managed_resources("a")


@pytest.mark.parametrize(("status", "message"), [
    (401, "rejected the token (401 Unauthorized)"),
    (403, "403 Forbidden): the token's account needs 'applications, get'"),
    (404, "has no application 'a' (404 Not Found)"),
])
def test_managed_resources_auth_errors_fail_at_once(status: int, message: str) -> None:
    calls = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(1)
        return httpx.Response(status, json={"error": "denied", "code": 7, "message": "permission denied"})

    with pytest.raises(ArgoCDError, match=message.replace("(", r"\(").replace(")", r"\)")) as info:
        client(handler).managed_resources("a")
    assert (info.value.status, len(calls)) == (status, 1)


def test_managed_resources_rejects_html() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, text="<html>login</html>")

    with pytest.raises(ArgoCDError, match="not JSON"):
        client(handler).managed_resources("a")
