"""A stand-in Kubernetes API server that speaks the real list and watch protocol, for the rollout watch.

Served by a real uvicorn on 127.0.0.1 (``tests/app/serverutil.py``). What it does as the API
server does (k8s.io/apiserver, the watch cache and ``WatchServer``):

* every write bumps one global ``resourceVersion``; a list answers ``metadata.resourceVersion``
  and pages with ``limit``/``continue``;
* ``?watch=1&resourceVersion=RV`` streams newline-delimited JSON events (chunked transfer
  encoding) after RV: ``ADDED``/``MODIFIED``/``DELETED``, ``BOOKMARK`` events (only the
  resourceVersion) when ``allowWatchBookmarks=true``, and ends the stream after ``timeoutSeconds``;
* a watch from a resourceVersion older than the kept history gets HTTP 200 and a single
  ``ERROR`` event whose object is a ``Status`` with ``code: 410`` (reason ``Expired``);
* ``labelSelector`` (``key``, ``key=value``) and ``fieldSelector`` (``reason=...``);
* ConfigMaps and Leases: create (409 AlreadyExists), update with a stale
  ``metadata.resourceVersion`` (409 Conflict), get (404), delete.

Test controls: :meth:`put` / :meth:`delete` (scripted status changes), :meth:`compact` (forget
the history: older watches get 410), :meth:`kick` (end every open watch as a timeout would),
:meth:`drop` (abort every open watch mid-stream, no final chunk), ``open_watches`` per
(plural, namespace) and every watch request's parameters.
"""

from __future__ import annotations

import asyncio
import copy
import json
import threading
from collections import Counter
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from typing import Any

from serverutil import running_server
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

PLURAL_KIND = {
    "rayservices": "RayService",
    "rayclusters": "RayCluster",
    "rayjobs": "RayJob",
    "pods": "Pod",
    "events": "Event",
    "configmaps": "ConfigMap",
    "leases": "Lease",
}


class Dropped(Exception):
    """Raised inside a watch stream to abort the connection (no terminating chunk)."""


def _status(code: int, reason: str, message: str) -> dict[str, Any]:
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }


def _labels_match(obj: dict[str, Any], selector: str | None) -> bool:
    if not selector:
        return True
    labels = (obj.get("metadata") or {}).get("labels") or {}
    for term in selector.split(","):
        if "=" in term:
            k, v = term.split("=", 1)
            if labels.get(k) != v:
                return False
        elif term not in labels:
            return False
    return True


def _fields_match(obj: dict[str, Any], selector: str | None) -> bool:
    if not selector:
        return True
    for term in selector.split(","):
        k, v = term.split("=", 1)
        value: Any = obj
        for part in k.split("."):
            value = value.get(part) if isinstance(value, dict) else None
        if str(value) != v:
            return False
    return True


class KubeStandin:
    def __init__(self, *, bookmark_seconds: float = 0.2, history: int = 10_000) -> None:
        self.lock = threading.Lock()
        self.objects: dict[tuple[str, str, str], dict[str, Any]] = {}
        self.version = 100
        self.events: list[tuple[int, str, str, dict[str, Any]]] = []  # (rv, plural, type, object)
        self.oldest = 0  # a watch from below this resourceVersion is too old (410)
        self.history = history
        self.bookmark_seconds = bookmark_seconds
        self.open_watches: Counter[tuple[str, str]] = Counter()
        self.watch_requests: list[dict[str, str]] = []
        self.list_requests: Counter[tuple[str, str]] = Counter()
        self.hold = False  # deliver nothing to open watches while set
        self.inject: dict[str, list[bytes]] = {}  # plural -> lines its next watch sends first
        self.deny: set[str] = set()  # plurals answered 403 Forbidden (RBAC denies them)
        self._wakers: set[tuple[asyncio.AbstractEventLoop, asyncio.Event]] = set()
        self._kick = 0
        self._drop = 0
        self.app = Starlette(
            routes=[
                Route("/readyz", lambda r: Response("ok")),
                Route("/api/v1/{plural}", self.collection, methods=["GET", "POST"]),
                Route("/api/v1/namespaces/{ns}/{plural}", self.collection, methods=["GET", "POST"]),
                Route("/api/v1/namespaces/{ns}/{plural}/{name}", self.item, methods=["GET", "PUT", "DELETE"]),
                Route("/apis/{group}/{version}/{plural}", self.collection, methods=["GET", "POST"]),
                Route(
                    "/apis/{group}/{version}/namespaces/{ns}/{plural}",
                    self.collection,
                    methods=["GET", "POST"],
                ),
                Route(
                    "/apis/{group}/{version}/namespaces/{ns}/{plural}/{name}",
                    self.item,
                    methods=["GET", "PUT", "DELETE"],
                ),
            ]
        )

    # -- test controls ------------------------------------------------------------------------

    def _record(self, plural: str, kind: str, obj: dict[str, Any]) -> dict[str, Any]:
        self.version += 1
        obj = copy.deepcopy(obj)
        obj.setdefault("kind", PLURAL_KIND.get(plural, "Object"))
        meta = obj.setdefault("metadata", {})
        meta["resourceVersion"] = str(self.version)
        self.events.append((self.version, plural, kind, obj))
        if len(self.events) > self.history:
            drop = len(self.events) - self.history
            self.oldest = self.events[drop - 1][0] + 1
            del self.events[:drop]
        self._wake()
        return obj

    def _wake(self) -> None:
        for loop, event in list(self._wakers):
            loop.call_soon_threadsafe(event.set)

    def put(self, plural: str, obj: dict[str, Any]) -> dict[str, Any]:
        """Create or replace an object (an ADDED or MODIFIED event)."""
        meta = obj["metadata"]
        key = (plural, meta.get("namespace", ""), meta["name"])
        with self.lock:
            old = self.objects.get(key)
            if old is not None and "generation" not in meta:
                meta = dict(meta, generation=(old.get("metadata") or {}).get("generation", 1))
                obj = dict(obj, metadata=meta)
            stored = self._record(plural, "MODIFIED" if old is not None else "ADDED", obj)
            self.objects[key] = stored
            return stored

    def delete(self, plural: str, namespace: str, name: str) -> None:
        with self.lock:
            old = self.objects.pop((plural, namespace, name), None)
            if old is not None:
                self._record(plural, "DELETED", old)

    def compact(self) -> None:
        """Forget every event so far: a watch from an older resourceVersion gets 410."""
        with self.lock:
            self.oldest = self.version  # watching from the newest version (a new list's) is fine
            self.events.clear()

    def kick(self) -> None:
        """End every open watch cleanly, as its timeoutSeconds would."""
        self._kick += 1
        self._wake()

    def drop(self) -> None:
        """Abort every open watch mid-stream (a dropped connection)."""
        self._drop += 1
        self._wake()

    def get(self, plural: str, namespace: str, name: str) -> dict[str, Any] | None:
        with self.lock:
            return copy.deepcopy(self.objects.get((plural, namespace, name)))

    @contextmanager
    def serving(self) -> Iterator[str]:
        with running_server(self.app, ready_path="/readyz") as url:
            yield url

    # -- the API ------------------------------------------------------------------------------

    def _selected(self, plural: str, ns: str, request: Request) -> list[dict[str, Any]]:
        labels, fields = request.query_params.get("labelSelector"), request.query_params.get("fieldSelector")
        return [
            o
            for (p, n, _), o in sorted(self.objects.items())
            if p == plural and (not ns or n == ns) and _labels_match(o, labels) and _fields_match(o, fields)
        ]

    async def collection(self, request: Request) -> Response:
        plural = request.path_params["plural"]
        ns = request.path_params.get("ns", "")
        if plural in self.deny:
            return JSONResponse(
                _status(
                    403, "Forbidden", f'{plural} is forbidden: User "system:serviceaccount:x:y" cannot list'
                ),
                status_code=403,
            )
        if request.method == "POST":
            return await self._create(request, plural, ns)
        if request.query_params.get("watch") in ("1", "true"):
            return await self._watch(request, plural, ns)
        with self.lock:
            self.list_requests[(plural, ns)] += 1
            items = self._selected(plural, ns, request)
            version = str(self.version)
        limit = int(request.query_params.get("limit") or 0) or len(items) or 1
        start = int(request.query_params.get("continue") or 0)
        page = items[start : start + limit]
        meta: dict[str, Any] = {"resourceVersion": version}
        if start + limit < len(items):
            meta["continue"] = str(start + limit)
        return JSONResponse({"kind": "List", "apiVersion": "v1", "metadata": meta, "items": page})

    async def _create(self, request: Request, plural: str, ns: str) -> Response:
        try:
            body = json.loads(await request.body())
            name = body["metadata"]["name"]
        except (ValueError, KeyError, TypeError):
            return JSONResponse(_status(400, "BadRequest", "bad body"), status_code=400)
        with self.lock:
            if (plural, ns, name) in self.objects:
                return JSONResponse(
                    _status(409, "AlreadyExists", f'{plural} "{name}" already exists'), status_code=409
                )
            body["metadata"]["namespace"] = ns
            stored = self._record(plural, "ADDED", body)
            self.objects[(plural, ns, name)] = stored
        return JSONResponse(stored, status_code=201)

    async def item(self, request: Request) -> Response:
        plural, ns, name = (
            request.path_params["plural"],
            request.path_params.get("ns", ""),
            request.path_params["name"],
        )
        key = (plural, ns, name)
        if request.method == "GET":
            with self.lock:
                obj = self.objects.get(key)
            if obj is None:
                return JSONResponse(_status(404, "NotFound", f'{plural} "{name}" not found'), status_code=404)
            return JSONResponse(obj)
        if request.method == "DELETE":
            self.delete(plural, ns, name)
            return JSONResponse(_status(200, "", "deleted"))
        try:
            body = json.loads(await request.body())
            sent = str((body.get("metadata") or {}).get("resourceVersion") or "")
        except (ValueError, AttributeError):
            return JSONResponse(_status(400, "BadRequest", "bad body"), status_code=400)
        with self.lock:
            old = self.objects.get(key)
            if old is None:
                return JSONResponse(_status(404, "NotFound", f'{plural} "{name}" not found'), status_code=404)
            if sent and sent != old["metadata"]["resourceVersion"]:
                return JSONResponse(
                    _status(
                        409,
                        "Conflict",
                        "Operation cannot be fulfilled: the object has been "
                        "modified; please apply your changes to the latest version",
                    ),
                    status_code=409,
                )
            stored = self._record(plural, "MODIFIED", body)
            self.objects[key] = stored
        return JSONResponse(stored)

    async def _watch(self, request: Request, plural: str, ns: str) -> Response:
        q = request.query_params
        self.watch_requests.append({"plural": plural, "ns": ns, **q})
        since = int(q.get("resourceVersion") or 0)
        timeout = float(q.get("timeoutSeconds") or 1800)
        bookmarks = q.get("allowWatchBookmarks") == "true"
        labels, fields = q.get("labelSelector"), q.get("fieldSelector")
        loop = asyncio.get_running_loop()
        kick, drop = self._kick, self._drop  # a kick or drop after the request reaches this watch

        async def stream() -> AsyncIterator[bytes]:
            waker = (loop, asyncio.Event())
            self._wakers.add(waker)
            self.open_watches[(plural, ns)] += 1
            try:
                if since and since < self.oldest:
                    yield (
                        json.dumps(
                            {
                                "type": "ERROR",
                                "object": _status(
                                    410, "Expired", f"too old resource version: {since} ({self.oldest - 1})"
                                ),
                            }
                        ).encode()
                        + b"\n"
                    )
                    return
                for line in self.inject.pop(plural, []):
                    yield line
                sent = since
                end = loop.time() + timeout
                last_bookmark = loop.time()
                while loop.time() < end:
                    if self._drop != drop:
                        yield b'{"type":"MODIFIED","object":{"kind":'  # half an event, then it dies
                        raise Dropped("connection dropped by the stand-in")
                    if self._kick != kick:
                        return
                    if not self.hold:
                        with self.lock:
                            fresh = [e for e in self.events if e[0] > sent and e[1] == plural]
                            top = self.version
                        for rv, _, kind, obj in fresh:
                            meta = obj.get("metadata") or {}
                            if (
                                (not ns or meta.get("namespace") == ns)
                                and _labels_match(obj, labels)
                                and _fields_match(obj, fields)
                            ):
                                yield json.dumps({"type": kind, "object": obj}).encode() + b"\n"
                            sent = rv
                        if bookmarks and loop.time() - last_bookmark >= self.bookmark_seconds:
                            last_bookmark = loop.time()
                            sent = max(sent, top)
                            yield (
                                json.dumps(
                                    {
                                        "type": "BOOKMARK",
                                        "object": {
                                            "kind": PLURAL_KIND.get(plural, "Object"),
                                            "metadata": {"resourceVersion": str(sent)},
                                        },
                                    }
                                ).encode()
                                + b"\n"
                            )
                    waker[1].clear()
                    wait = min(end - loop.time(), self.bookmark_seconds if bookmarks else 3600)
                    try:
                        await asyncio.wait_for(waker[1].wait(), max(0.001, wait))
                    except TimeoutError:
                        pass
            finally:
                self._wakers.discard(waker)
                self.open_watches[(plural, ns)] -= 1

        return StreamingResponse(stream(), media_type="application/json")


# -- the objects of the scripted upgrades (KubeRay v1.7.0 status fields, see diffing/observe.py) --

NS = "serving"
GPU_MESSAGE = "0/4 nodes are available: 4 Insufficient nvidia.com/gpu."


def rayservice(
    gen: int,
    *,
    active: str = "svc-a",
    pending: str = "",
    ready: str = "True",
    reason: str = "NonZeroServeEndpoints",
    message: str = "",
    apps: str = "RUNNING",
    name: str = "svc",
    ns: str = NS,
) -> dict[str, Any]:
    status: dict[str, Any] = {
        "observedGeneration": gen,
        "conditions": [
            {"type": "Ready", "status": ready, "reason": reason, "message": message},
            {"type": "UpgradeInProgress", "status": "True" if pending else "False"},
        ],
        "activeServiceStatus": {"rayClusterName": active, "applicationStatuses": {"app": {"status": apps}}},
    }
    if pending:
        status["pendingServiceStatus"] = {
            "rayClusterName": pending,
            "applicationStatuses": {"app": {"status": "DEPLOYING"}},
        }
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayService",
        "metadata": {"name": name, "namespace": ns, "generation": gen},
        "spec": {},
        "status": status,
    }


def pod(name: str, cluster: str, phase: str, gpus: int = 4) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": NS, "uid": name, "labels": {"ray.io/cluster": cluster}},
        "spec": {"containers": [{"name": "ray", "resources": {"limits": {"nvidia.com/gpu": str(gpus)}}}]},
        "status": {"phase": phase},
    }


def failed_scheduling(pod_name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": f"{pod_name}.1", "namespace": NS},
        "reason": "FailedScheduling",
        "type": "Warning",
        "message": GPU_MESSAGE,
        "lastTimestamp": "2026-01-01T00:00:00Z",
        "involvedObject": {"kind": "Pod", "namespace": NS, "name": pod_name},
    }


def rayjob(deployment: str, job_status: str = "", failed: int = 0) -> dict[str, Any]:
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayJob",
        "metadata": {"name": "job", "namespace": NS, "generation": 1},
        "status": {
            "jobDeploymentStatus": deployment,
            "jobStatus": job_status,
            "failed": failed,
            "rayClusterName": "job-c",
            "observedGeneration": 1,
        },
    }
