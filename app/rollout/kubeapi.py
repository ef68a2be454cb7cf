"""A small async Kubernetes API client on httpx: list, watch, get, create, update.

The rollout watch needs what the official client does not do well in asyncio: long watch streams
read line by line, many at once, on one event loop. Configuration comes from the same sources as
``app/clients/kubernetes.py`` (the in-cluster service account, else a kubeconfig), read through
its :func:`~app.clients.kubernetes.connect` so that both agree on what is configured.

Bounded: every request has a timeout, a list is read page by page (``limit``/``continue``) up to
``max_items``, a response body up to ``max_bytes``, a watch event (one line) up to
``max_event_bytes``. Errors are :class:`KubeAPIError` (``status`` set for HTTP answers); a
``410 Gone`` answer is :class:`Gone` (the resourceVersion is too old: list again).
"""

from __future__ import annotations

import json
import ssl
from collections.abc import AsyncGenerator, Mapping
from pathlib import Path
from typing import Any

import httpx

TOKEN_FILE = Path("/var/run/secrets/kubernetes.io/serviceaccount/token")
PAGE = 500


class KubeAPIError(Exception):
    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class Gone(KubeAPIError):
    """The resourceVersion asked for is older than the API server keeps: list again."""


class Conflict(KubeAPIError):
    """The object changed (or exists) under a write: someone else won."""


def api_path(group_version: str, plural: str, namespace: str | None = None, name: str | None = None) -> str:
    """``/api/v1/namespaces/NS/pods`` or ``/apis/ray.io/v1/rayservices`` (cluster-wide)."""
    root = "/api/v1" if group_version == "v1" else f"/apis/{group_version}"
    ns = f"/namespaces/{namespace}" if namespace else ""
    tail = f"/{name}" if name else ""
    return f"{root}{ns}/{plural}{tail}"


class KubeAPI:
    def __init__(
        self,
        base_url: str,
        *,
        token: str | None = None,
        token_file: Path | None = None,
        verify: ssl.SSLContext | bool = True,
        cert: tuple[str, str] | None = None,
        timeout: float = 10.0,
        max_bytes: int = 32 * 1024 * 1024,
        max_event_bytes: int = 4 * 1024 * 1024,
        max_items: int = 50_000,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self._token = token
        self._token_file = token_file
        self.timeout = timeout
        self.max_bytes = max_bytes
        self.max_event_bytes = max_event_bytes
        self.max_items = max_items
        kwargs: dict[str, Any] = {"verify": verify}
        if cert:
            kwargs["cert"] = cert
        if transport is not None:
            kwargs["transport"] = transport
        self._client = httpx.AsyncClient(
            base_url=self.base_url,
            timeout=timeout,
            limits=httpx.Limits(max_connections=64, max_keepalive_connections=16),
            **kwargs,
        )

    @classmethod
    def from_environment(cls, *, timeout: float = 10.0) -> KubeAPI | None:
        """From the in-cluster service account or a kubeconfig; ``None`` when there is neither."""
        from app.clients.kubernetes import connect

        conn = connect(timeout=timeout)
        if conn is None:
            return None
        cfg = conn.api.configuration
        verify: ssl.SSLContext | bool = True
        if not cfg.verify_ssl:
            verify = False
        elif cfg.ssl_ca_cert:
            verify = ssl.create_default_context(cafile=cfg.ssl_ca_cert)
        cert = (cfg.cert_file, cfg.key_file) if cfg.cert_file and cfg.key_file else None
        token = (cfg.api_key or {}).get("authorization") or (cfg.api_key or {}).get("BearerToken")
        token_file = TOKEN_FILE if conn.source.startswith("in-cluster") and TOKEN_FILE.is_file() else None
        conn.api.close()  # only its configuration is kept: this client speaks httpx
        return cls(cfg.host, token=token, token_file=token_file, verify=verify, cert=cert, timeout=timeout)

    def _headers(self) -> dict[str, str]:
        headers = {"Accept": "application/json"}
        token = self._token
        if self._token_file is not None:  # the kubelet rotates the projected token: read it again
            try:
                token = self._token_file.read_text(encoding="utf-8").strip()
            except OSError:
                pass
        if token:
            headers["Authorization"] = token if token.lower().startswith("bearer ") else f"Bearer {token}"
        return headers

    async def aclose(self) -> None:
        await self._client.aclose()

    async def _request(
        self, method: str, path: str, *, params: Mapping[str, Any] | None = None, body: Any = None
    ) -> dict[str, Any] | None:
        what = f"{method} {path}"
        content = json.dumps(body).encode() if body is not None else None
        headers = self._headers()
        if content is not None:
            headers["Content-Type"] = "application/json"
        try:
            async with self._client.stream(
                method, path, params=params, content=content, headers=headers
            ) as resp:
                data = bytearray()
                async for chunk in resp.aiter_bytes():
                    data += chunk
                    if len(data) > self.max_bytes:
                        raise KubeAPIError(
                            f"the Kubernetes API answered {what} with more than {self.max_bytes} bytes"
                        )
                status = resp.status_code
        except httpx.HTTPError as exc:
            raise KubeAPIError(
                f"cannot reach the Kubernetes API at {self.base_url} to {what}: {type(exc).__name__}"
            ) from None
        if status == 404:
            return None
        if status >= 300:
            message = _status_message(bytes(data)) or f"HTTP {status}"
            error = Gone if status == 410 else Conflict if status == 409 else KubeAPIError
            hint = " (RBAC: see docs/rollout-watch.md)" if status == 403 else ""
            raise error(f"the Kubernetes API refused {what}: {message}{hint}", status=status)
        try:
            parsed = json.loads(data)
        except ValueError:
            raise KubeAPIError(
                f"the Kubernetes API answered {what} with something that is not JSON"
            ) from None
        if not isinstance(parsed, dict):
            raise KubeAPIError(f"the Kubernetes API answered {what} with JSON that is not an object")
        return parsed

    async def get(self, path: str) -> dict[str, Any] | None:
        return await self._request("GET", path)

    async def create(self, path: str, body: Mapping[str, Any]) -> dict[str, Any]:
        out = await self._request("POST", path, body=body)
        if out is None:
            raise KubeAPIError(f"the Kubernetes API has no {path} (404)", status=404)
        return out

    async def update(self, path: str, body: Mapping[str, Any]) -> dict[str, Any]:
        """PUT: with ``metadata.resourceVersion`` set, a compare-and-swap (409 when stale)."""
        out = await self._request("PUT", path, body=body)
        if out is None:
            raise KubeAPIError(f"the Kubernetes API has no {path} (404)", status=404)
        return out

    async def delete(self, path: str) -> None:
        await self._request("DELETE", path)

    async def list(
        self,
        path: str,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
        page: int = PAGE,
    ) -> tuple[list[dict[str, Any]], str]:
        """Every item (page by page) and the list's resourceVersion, to watch from."""
        items: list[dict[str, Any]] = []
        token: str | None = None
        version = ""
        while True:
            params: dict[str, Any] = {"limit": page}
            if label_selector:
                params["labelSelector"] = label_selector
            if field_selector:
                params["fieldSelector"] = field_selector
            if token:
                params["continue"] = token
            body = await self._request("GET", path, params=params)
            if body is None:
                raise KubeAPIError(
                    f"the Kubernetes API has no {path} (404: is the CRD installed?)", status=404
                )
            items.extend(i for i in body.get("items") or [] if isinstance(i, dict))
            if len(items) > self.max_items:
                raise KubeAPIError(f"{path} holds more than {self.max_items} objects")
            meta = body.get("metadata") or {}
            version = str(meta.get("resourceVersion") or version)
            token = meta.get("continue") or None
            if not token:
                return items, version

    async def watch(
        self,
        path: str,
        resource_version: str,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
        timeout_seconds: int = 300,
    ) -> AsyncGenerator[dict[str, Any], None]:
        """The watch events after ``resource_version`` (with bookmarks), until the server ends the
        stream (``timeoutSeconds``) or the connection drops (:class:`KubeAPIError`)."""
        params: dict[str, Any] = {
            "watch": "1",
            "resourceVersion": resource_version,
            "allowWatchBookmarks": "true",
            "timeoutSeconds": timeout_seconds,
        }
        if label_selector:
            params["labelSelector"] = label_selector
        if field_selector:
            params["fieldSelector"] = field_selector
        # The server closes after timeoutSeconds; reading waits a little longer than that.
        timeout = httpx.Timeout(self.timeout, read=timeout_seconds + self.timeout)
        try:
            async with self._client.stream(
                "GET", path, params=params, headers=self._headers(), timeout=timeout
            ) as resp:
                if resp.status_code >= 300:
                    data = await resp.aread()
                    message = _status_message(data[: self.max_event_bytes]) or f"HTTP {resp.status_code}"
                    error = Gone if resp.status_code == 410 else KubeAPIError
                    raise error(
                        f"the Kubernetes API refused to watch {path}: {message}", status=resp.status_code
                    )
                buffer = bytearray()
                async for chunk in resp.aiter_bytes():
                    buffer += chunk
                    while (cut := buffer.find(b"\n")) >= 0:
                        if cut > self.max_event_bytes:
                            raise KubeAPIError(
                                f"a watch event of {path} is larger than {self.max_event_bytes} bytes"
                            )
                        line = bytes(buffer[:cut])
                        del buffer[: cut + 1]
                        if line.strip():
                            yield _event(line, path)
                    if len(buffer) > self.max_event_bytes:
                        raise KubeAPIError(
                            f"a watch event of {path} is larger than {self.max_event_bytes} bytes"
                        )
                if buffer.strip():
                    yield _event(bytes(buffer), path)
        except httpx.HTTPError as exc:
            raise KubeAPIError(f"the watch of {path} broke: {type(exc).__name__}") from None


def _event(line: bytes, path: str) -> dict[str, Any]:
    try:
        event = json.loads(line)
    except ValueError:
        raise KubeAPIError(f"the watch of {path} sent a line that is not JSON") from None
    if not isinstance(event, dict) or not isinstance(event.get("object"), dict):
        raise KubeAPIError(f"the watch of {path} sent an event without an object")
    return event


def _status_message(data: bytes) -> str:
    try:
        body = json.loads(data)
    except ValueError:
        return ""
    return str(body.get("message") or "")[:300] if isinstance(body, dict) else ""
