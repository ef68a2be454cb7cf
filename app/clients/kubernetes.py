"""Read-only access to the Kubernetes API through the official ``kubernetes`` client.

Configuration, in order: the in-cluster service account (``KUBERNETES_SERVICE_HOST`` set and
the token mounted), else a kubeconfig (``$KUBECONFIG``, colon-separated lists included, else
``~/.kube/config``). :func:`connect` returns ``None`` when neither exists: the caller then
falls back to the manifest basis and says so. Everything else that goes wrong (a broken
kubeconfig, an unreachable API server, 401/403) is a :class:`KubernetesError`.

Objects come back as the API's own JSON (camelCase dicts), not the client's model classes,
so the pure code in :mod:`app.live` and :mod:`diffing` reads them like manifests.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import urllib3
from kubernetes import client as k8s
from kubernetes import config as k8s_config
from kubernetes.client.exceptions import ApiException
from kubernetes.config.config_exception import ConfigException

from .upstream import UpstreamError

RAY_GROUP, RAY_VERSION = "ray.io", "v1"
KUEUE_GROUP, KUEUE_VERSION = "kueue.x-k8s.io", "v1beta1"
PAGE = 500
ACTIVE_PODS = "status.phase!=Succeeded,status.phase!=Failed"  # pods that still hold resources


class KubernetesError(UpstreamError):
    service = "Kubernetes"


@dataclass(frozen=True, slots=True)
class Connection:
    api: k8s.ApiClient
    source: str  # "in-cluster service account" or "kubeconfig PATH (context NAME)"
    host: str


def kubeconfig_paths() -> list[Path]:
    raw = os.environ.get("KUBECONFIG")
    if raw is not None:
        return [Path(p).expanduser() for p in raw.split(os.pathsep) if p]
    return [Path("~/.kube/config").expanduser()]


def connect(*, timeout: float = 10.0) -> Connection | None:
    """An API client from in-cluster config or a kubeconfig; ``None`` when there is neither."""
    cfg = k8s.Configuration()
    source = ""
    if os.environ.get("KUBERNETES_SERVICE_HOST"):
        try:
            k8s_config.load_incluster_config(client_configuration=cfg)
            source = "in-cluster service account"
        except ConfigException:
            source = ""
    if not source:
        paths = [p for p in kubeconfig_paths() if p.is_file()]
        if not paths:
            return None
        joined = os.pathsep.join(str(p) for p in paths)
        try:
            _, active = k8s_config.list_kube_config_contexts(config_file=joined)
            k8s_config.load_kube_config(config_file=joined, client_configuration=cfg,
                                        persist_config=False)
        except (ConfigException, OSError, ValueError, TypeError, KeyError) as exc:
            raise KubernetesError(f"kubeconfig {joined} cannot be used: {exc}") from None
        context = (active or {}).get("name", "?")
        source = f"kubeconfig {joined} (context {context})"
    # One quick retry on connect errors; the caller's timeout bounds each request.
    cfg.retries = urllib3.Retry(total=1, connect=1, read=0, status=0, backoff_factor=0.2)
    return Connection(k8s.ApiClient(cfg), source, cfg.host)


@contextmanager
def _translated(what: str, host: str) -> Iterator[None]:
    try:
        yield
    except ApiException as exc:
        status = exc.status or None
        if status in (401, 403):
            hint = ("the credentials were rejected" if status == 401 else
                    "RBAC denies it: the service account needs get/list on this resource "
                    "(deploy/base/rbac.yaml)")
            raise KubernetesError(f"the Kubernetes API at {host} refused to {what} ({status} "
                                  f"{exc.reason}): {hint}", status=status) from None
        raise KubernetesError(f"the Kubernetes API at {host} failed to {what} ({status} {exc.reason})",
                              status=status) from None
    except (urllib3.exceptions.HTTPError, OSError) as exc:
        reason = getattr(exc, "reason", None) or exc
        raise KubernetesError(f"cannot reach the Kubernetes API at {host} to {what}: {reason}") from None


class KubeReader:
    """The handful of GET/LIST calls the live basis needs; each returns plain JSON dicts."""

    def __init__(self, conn: Connection, *, timeout: float = 10.0) -> None:
        self.conn = conn
        self.timeout = timeout
        self._custom = k8s.CustomObjectsApi(conn.api)
        self._core = k8s.CoreV1Api(conn.api)

    def _get_custom(self, plural: str, namespace: str, name: str) -> dict[str, Any] | None:
        try:
            with _translated(f"get {plural} {namespace}/{name}", self.conn.host):
                obj = self._custom.get_namespaced_custom_object(
                    RAY_GROUP, RAY_VERSION, namespace, plural, name, _request_timeout=self.timeout)
        except KubernetesError as exc:
            if exc.status == 404:
                return None
            raise
        return obj if isinstance(obj, dict) else None

    def get_rayservice(self, namespace: str, name: str) -> dict[str, Any] | None:
        return self._get_custom("rayservices", namespace, name)

    def get_raycluster(self, namespace: str, name: str) -> dict[str, Any] | None:
        return self._get_custom("rayclusters", namespace, name)

    def list_rayclusters(self, namespace: str, label_selector: str) -> list[dict[str, Any]]:
        with _translated(f"list rayclusters in {namespace}", self.conn.host):
            body = self._custom.list_namespaced_custom_object(
                RAY_GROUP, RAY_VERSION, namespace, "rayclusters", label_selector=label_selector,
                _request_timeout=self.timeout)
        items = body.get("items") if isinstance(body, dict) else None
        return [i for i in items or [] if isinstance(i, dict)]

    def list_custom(self, plural: str, namespace: str) -> list[dict[str, Any]]:
        """Every ``ray.io`` object of one kind in ``namespace``."""
        with _translated(f"list {plural} in {namespace}", self.conn.host):
            body = self._custom.list_namespaced_custom_object(
                RAY_GROUP, RAY_VERSION, namespace, plural, _request_timeout=self.timeout)
        items = body.get("items") if isinstance(body, dict) else None
        return [i for i in items or [] if isinstance(i, dict)]

    def list_custom_all(self, plural: str) -> list[dict[str, Any]]:
        """Every ``ray.io`` object of one kind in every namespace, page by page."""
        def call(**kwargs: Any) -> Any:
            return self._custom.list_cluster_custom_object(RAY_GROUP, RAY_VERSION, plural, **kwargs)

        return self._pages(f"list {plural} in every namespace", call)

    def list_kueue(self, plural: str, namespace: str | None = None) -> list[dict[str, Any]] | None:
        """Kueue's LocalQueues in ``namespace`` or its (cluster-scoped) ClusterQueues; ``None`` where
        Kueue is not installed (the API answers 404)."""
        where = f" in {namespace}" if namespace else ""
        try:
            with _translated(f"list {plural}{where}", self.conn.host):
                if namespace:
                    body = self._custom.list_namespaced_custom_object(
                        KUEUE_GROUP, KUEUE_VERSION, namespace, plural, _request_timeout=self.timeout)
                else:
                    body = self._custom.list_cluster_custom_object(
                        KUEUE_GROUP, KUEUE_VERSION, plural, _request_timeout=self.timeout)
        except KubernetesError as exc:
            if exc.status == 404:
                return None
            raise
        items = body.get("items") if isinstance(body, dict) else None
        return [i for i in items or [] if isinstance(i, dict)]

    def list_nodes(self) -> list[dict[str, Any]]:
        return self._pages("list nodes", self._core.list_node)

    def list_active_pods(self) -> list[dict[str, Any]]:
        """Pods in every namespace that still hold resources (not Succeeded, not Failed)."""
        return self._pages("list pods", self._core.list_pod_for_all_namespaces,
                           field_selector=ACTIVE_PODS)

    def list_cluster_pods(self, namespace: str) -> list[dict[str, Any]]:
        """Active pods of KubeRay clusters in ``namespace``: those labelled ``ray.io/cluster`` (any
        value; KubeRay sets it on every head and worker pod), not Succeeded, not Failed."""
        return self._pages(f"list pods in {namespace}", self._core.list_namespaced_pod, namespace=namespace,
                           label_selector="ray.io/cluster", field_selector=ACTIVE_PODS)

    def _pages(self, what: str, call: Any, **kwargs: Any) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = []
        token: str | None = None
        while True:
            extra = {"_continue": token} if token else {}
            with _translated(what, self.conn.host):
                response = call(limit=PAGE, _preload_content=False, _request_timeout=self.timeout,
                                **kwargs, **extra)
                data = response.data
            try:
                body = json.loads(data)
            except ValueError:
                raise KubernetesError(f"the Kubernetes API at {self.conn.host} answered {what} "
                                      "with something that is not JSON") from None
            items.extend(i for i in body.get("items") or [] if isinstance(i, dict))
            token = (body.get("metadata") or {}).get("continue") or None
            if not token:
                return items
