"""The Argo CD calls of the PreSync hook and of the webhook's Argo CD rendering.

* ``GET {server}/api/v1/applications/{name}/managed-resources?group=ray.io``: an Application's
  managed ``ray.io`` objects (argocd notes §2.1), for the PreSync hook, which keeps the
  RayServices, RayClusters and RayJobs;
* ``GET {server}/api/v1/applications`` (Applications, to find those of a repository) and
  ``GET {server}/api/v1/applications/{name}/manifests?revision=SHA`` (what repo-server renders
  at a revision, notes §2.2), for the webhook.

A bearer token (notes §2.4) on every call. Connection errors, timeouts and 5xx answers are
retried with exponential backoff; 401/403/404 fail at once with a message that says what to
check. Every failure is an :class:`ArgoCDError`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any
from urllib.parse import quote

import httpx

from .upstream import UpstreamError

RETRY_STATUS = frozenset({500, 502, 503, 504})


class ArgoCDError(UpstreamError):
    service = "Argo CD"


def _server_message(response: httpx.Response) -> str:
    """The gRPC-gateway error body's ``message`` (or ``error``), if any."""
    try:
        body = response.json()
    except ValueError:
        return response.text.strip()[:200]
    if isinstance(body, dict):
        return str(body.get("message") or body.get("error") or "")[:200]
    return ""


class ArgoCDClient:
    """A small synchronous client; ``transport`` lets tests inject ``httpx.MockTransport``."""

    def __init__(self, server: str, token: str, *, timeout: float = 10.0, retries: int = 3,
                 backoff: float = 0.5, verify: bool | str = True,
                 transport: httpx.BaseTransport | None = None,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self.server = server.rstrip("/")
        self.retries = retries
        self.backoff = backoff
        self._sleep = sleep
        self._client = httpx.Client(
            base_url=self.server, timeout=httpx.Timeout(timeout, connect=min(timeout, 5.0)),
            headers={"Authorization": f"Bearer {token}", "Accept": "application/json",
                     "User-Agent": "rayservice-impact"},
            verify=verify, transport=transport, follow_redirects=False)

    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> ArgoCDClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def managed_resources(self, app: str, *, app_namespace: str | None = None,
                          group: str = "ray.io", kind: str | None = None) -> dict[str, Any]:
        """The ``applicationManagedResourcesResponse`` body (``{"items": [...]}``).

        Argo CD filters on one ``kind`` or none (``isMatchingResource`` in
        server/application/application.go: an empty filter matches every kind), so the default
        asks for the whole ``ray.io`` group in one call and the caller keeps the kinds it wants."""
        params = {"group": group}
        if kind:
            params["kind"] = kind
        if app_namespace:
            params["appNamespace"] = app_namespace
        path = f"/api/v1/applications/{quote(app, safe='')}/managed-resources"
        return self._object(self._get(path, params, what=f"application {app!r}"), path, "'items'")

    def application(self, name: str, *, app_namespace: str | None = None) -> dict[str, Any]:
        """One Application (``v1alpha1Application``): its sources and the operation in progress."""
        params = {"appNamespace": app_namespace} if app_namespace else {}
        path = f"/api/v1/applications/{quote(name, safe='')}"
        return self._object(self._get(path, params, what=f"application {name!r}"), path, "'spec'")

    def applications(self, repo: str | None = None) -> list[dict[str, Any]]:
        """Every Application the token may see (``applicationApplicationList``'s ``items``).

        ``repo`` is Argo CD's own filter: an exact match on the first source's ``repoURL`` only,
        so a caller that must also find ``.git``-less spellings or ``sources[]`` lists all
        (``repo=None``) and matches itself."""
        params = {"repo": repo} if repo else {}
        path = "/api/v1/applications"
        body = self._object(self._get(path, params, what="the list of applications"), path, "'items'")
        items = body.get("items") or []  # Argo CD answers "items": null when there are none
        if not isinstance(items, list):
            raise ArgoCDError(f"Argo CD answered {path} with 'items' that is not a list")
        return [i for i in items if isinstance(i, dict)]

    def application_manifests(self, name: str, revision: str, app_namespace: str | None = None, *,
                              source_positions: Sequence[int] = ()) -> dict[str, Any]:
        """The ``repositoryManifestResponse`` of ``name`` rendered at ``revision`` by repo-server:
        ``manifests`` is a list of JSON strings, one object each. ``source_positions`` (1-based)
        asks a multi-source Application for ``revision`` at those sources only, the others at
        their targetRevision (Argo CD's ``revisions`` + ``sourcePositions``)."""
        params: dict[str, str | list[str]] = {}
        if source_positions:
            params["revisions"] = [revision] * len(source_positions)
            params["sourcePositions"] = [str(p) for p in source_positions]
        else:
            params["revision"] = revision
        if app_namespace:
            params["appNamespace"] = app_namespace
        path = f"/api/v1/applications/{quote(name, safe='')}/manifests"
        what = f"the manifests of application {name!r} at revision {revision[:12]}"
        return self._object(self._get(path, params, what=what), path, "'manifests'")

    def _object(self, response: httpx.Response, path: str, expected: str) -> dict[str, Any]:
        try:
            body = response.json()
        except ValueError:
            raise ArgoCDError(f"Argo CD at {self.server} answered {path} with something that is not "
                              "JSON (is RAYSERVICE_IMPACT_ARGOCD_SERVER the argocd-server URL?)",
                              status=response.status_code) from None
        if not isinstance(body, dict):
            raise ArgoCDError(f"Argo CD answered {path} with a JSON {type(body).__name__}, "
                              f"expected an object with {expected}", status=response.status_code)
        return body

    def _get(self, path: str, params: Mapping[str, str | list[str]], *, what: str) -> httpx.Response:
        attempt = 0
        while True:
            try:
                response = self._client.get(path, params=params)
            except httpx.TransportError as exc:
                if attempt < self.retries:
                    self._pause(attempt)
                    attempt += 1
                    continue
                raise ArgoCDError(f"cannot reach Argo CD at {self.server} "
                                  f"({type(exc).__name__}: {exc or 'no detail'}) after "
                                  f"{attempt + 1} attempt(s)") from None
            status = response.status_code
            if status in RETRY_STATUS and attempt < self.retries:
                self._pause(attempt)
                attempt += 1
                continue
            if status < 300:
                return response
            raise self._status_error(response, what, attempt + 1)

    def _pause(self, attempt: int) -> None:
        self._sleep(min(self.backoff * 2**attempt, 8.0))

    def _status_error(self, response: httpx.Response, what: str, attempts: int) -> ArgoCDError:
        status, detail = response.status_code, _server_message(response)
        suffix = f" (Argo CD says: {detail})" if detail else ""
        if status == 401:
            text = (f"Argo CD at {self.server} rejected the token (401 Unauthorized): check "
                    "RAYSERVICE_IMPACT_ARGOCD_TOKEN (expired, revoked or for another instance?)")
        elif status == 403:
            text = (f"Argo CD refused to show {what} (403 Forbidden): the token's account needs "
                    "'applications, get' on <project>/<app>; Argo CD also answers 403 for an "
                    "application that does not exist, so check --app and --app-namespace")
        elif status == 404:
            text = (f"Argo CD has no {what} (404 Not Found): check --app and --app-namespace, "
                    "and that RAYSERVICE_IMPACT_ARGOCD_SERVER is the argocd-server base URL")
        else:
            text = f"Argo CD answered {status} for {what} after {attempts} attempt(s)"
        return ArgoCDError(text + suffix, status=status)
