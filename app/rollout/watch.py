"""One list+watch per (kind, namespace), shared by every followed object: the :class:`WatchHub`.

Following 200 RayServices must not open 200 watches. The hub keeps, for each namespace a
followed object lives in (or once for the whole cluster, ``rollout_cluster_wide``), one
informer per kind: RayServices, RayClusters and RayJobs (``ray.io/v1``), the pods KubeRay made
(label ``ray.io/cluster`` present) and the scheduler's ``FailedScheduling`` events. Each informer
lists (page by page), then watches from the list's resourceVersion with bookmarks; it keeps the
newest resourceVersion seen (events and bookmarks) and, when the stream ends or drops, watches
again from there after a backoff. A ``410 Gone`` answer, or an ``ERROR`` event (the API server
sends a ``Status`` object with ``code: 410`` when the version is too old), makes it list again
and replace its cache: nothing is lost, only re-read. Subscribers are woken on every change.

Bounds: ``max_watches`` concurrent watch streams (5 per namespace; :class:`HubFull` past it),
``max_objects`` cached objects in all (past it new objects are not cached and counted in
``dropped``), ``timeout_seconds`` per watch request (the server ends the stream; the informer
resumes). Namespaces are released when no follower needs them any more.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from .kubeapi import Gone, KubeAPI, KubeAPIError, api_path

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Kind:
    plural: str
    group_version: str
    label_selector: str | None = None
    field_selector: str | None = None


KINDS: dict[str, Kind] = {
    "rayservices": Kind("rayservices", "ray.io/v1"),
    "rayclusters": Kind("rayclusters", "ray.io/v1"),
    "rayjobs": Kind("rayjobs", "ray.io/v1"),
    "pods": Kind("pods", "v1", label_selector="ray.io/cluster"),
    "events": Kind("events", "v1", field_selector="reason=FailedScheduling"),
}
PLURAL_OF = {"RayService": "rayservices", "RayCluster": "rayclusters", "RayJob": "rayjobs"}
ALL = ""  # the namespace key of a cluster-wide informer


class HubFull(KubeAPIError):
    """Following one more namespace would pass ``max_watches``."""


def _key(obj: dict[str, Any]) -> tuple[str, str]:
    meta = obj.get("metadata") or {}
    return str(meta.get("namespace") or ""), str(meta.get("name") or "")


class Informer:
    """One kind in one namespace (or all): list, then watch from the resourceVersion."""

    def __init__(self, hub: WatchHub, kind: Kind, namespace: str) -> None:
        self.hub = hub
        self.kind = kind
        self.namespace = namespace
        self.path = api_path(kind.group_version, kind.plural, namespace or None)
        self.cache: dict[tuple[str, str], dict[str, Any]] = {}
        self.version = ""
        self.synced = asyncio.Event()
        self.error = ""
        self.lists = 0
        self.task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self.task = asyncio.create_task(self._run(), name=f"watch {self.path}")

    async def stop(self) -> None:
        if self.task is not None:
            self.task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self.task
        self.hub._count(-len(self.cache))
        self.cache.clear()

    async def _list(self) -> None:
        items, version = await self.hub.api.list(
            self.path, label_selector=self.kind.label_selector, field_selector=self.kind.field_selector
        )
        self.lists += 1
        self.hub._count(-len(self.cache))
        self.cache = {}
        for item in items:
            self._put(item)
        self.version = version
        self.error = ""
        self.synced.set()
        self.hub._changed()

    def _put(self, obj: dict[str, Any]) -> None:
        meta = obj.get("metadata")
        if isinstance(meta, dict):
            meta.pop("managedFields", None)  # the bulk of many objects; nothing here reads it
        key = _key(obj)
        if key not in self.cache:
            if self.hub.cached >= self.hub.max_objects:
                self.hub.dropped += 1
                return
            self.hub._count(1)
        self.cache[key] = obj

    def _apply(self, event: dict[str, Any]) -> bool:
        """Apply one watch event; ``False`` asks for a new list (an ERROR event)."""
        kind, obj = event.get("type"), event["object"]
        version = str((obj.get("metadata") or {}).get("resourceVersion") or "")
        if kind == "ERROR":
            code = obj.get("code")
            log.info("watch %s: ERROR event %s (%s); listing again", self.path, code, obj.get("reason"))
            return False
        if version:
            self.version = version
        if kind == "BOOKMARK":
            return True
        if kind == "DELETED":
            if self.cache.pop(_key(obj), None) is not None:
                self.hub._count(-1)
        elif kind in ("ADDED", "MODIFIED"):
            self._put(obj)
        else:
            return True
        self.hub._changed()
        return True

    async def _run(self) -> None:
        failures = 0
        need_list = True
        while True:
            try:
                if need_list:
                    await self._list()
                    need_list = False
                self.hub.watch_requests += 1
                opened = asyncio.get_running_loop().time()
                events = self.hub.api.watch(
                    self.path,
                    self.version,
                    label_selector=self.kind.label_selector,
                    field_selector=self.kind.field_selector,
                    timeout_seconds=self.hub.timeout_seconds,
                )
                async with contextlib.aclosing(events):  # a break closes the stream at once
                    async for event in events:
                        failures = 0
                        if not self._apply(event):
                            need_list = True
                            if event["object"].get("code") != 410:  # not "too old": a server error
                                failures = 1
                            break
                if not need_list:
                    # The server ended the stream (timeoutSeconds): watch again from version; a
                    # server that ends streams at once is not asked again in a busy loop.
                    if asyncio.get_running_loop().time() - opened < 1.0:
                        await asyncio.sleep(self.hub.backoff)
                    continue
            except Gone:
                need_list = True
                continue
            except KubeAPIError as exc:
                failures += 1
                self.error = str(exc)
                log.warning("watch %s: %s; again in a moment", self.path, exc)
                if exc.status == 403 or not self.version:
                    need_list = True
            if need_list and failures == 0:
                continue
            delay = min(self.hub.backoff_max, self.hub.backoff * 2 ** min(failures, 10))
            await asyncio.sleep(delay * (0.5 + random.random() / 2))


class WatchHub:
    def __init__(
        self,
        api: KubeAPI,
        *,
        cluster_wide: bool = False,
        max_objects: int = 20_000,
        max_watches: int = 50,
        timeout_seconds: int = 300,
        backoff: float = 0.5,
        backoff_max: float = 30.0,
        kinds: Iterable[str] = tuple(KINDS),
    ) -> None:
        self.api = api
        self.cluster_wide = cluster_wide
        self.max_objects = max_objects
        self.max_watches = max_watches
        self.timeout_seconds = timeout_seconds
        self.backoff = backoff
        self.backoff_max = backoff_max
        self.kinds = tuple(kinds)
        self.informers: dict[tuple[str, str], Informer] = {}
        self.users: dict[str, int] = {}
        self.cached = 0
        self.dropped = 0
        self.watch_requests = 0
        self._subscribers: set[asyncio.Event] = set()
        self._lock = asyncio.Lock()

    def _ns(self, namespace: str) -> str:
        return ALL if self.cluster_wide else namespace

    def _count(self, n: int) -> None:
        self.cached += n

    def _changed(self) -> None:
        for event in self._subscribers:
            event.set()

    def subscribe(self) -> asyncio.Event:
        event = asyncio.Event()
        self._subscribers.add(event)
        return event

    def unsubscribe(self, event: asyncio.Event) -> None:
        self._subscribers.discard(event)

    async def acquire(self, namespaces: Iterable[str]) -> None:
        """Start the informers of ``namespaces`` (shared: counted per user)."""
        async with self._lock:
            wanted = {self._ns(n) for n in namespaces}
            new = [n for n in wanted if n not in self.users]
            if (len(self.users) + len(new)) * len(self.kinds) > self.max_watches:
                raise HubFull(
                    f"following namespaces {sorted(new)} would need more than "
                    f"{self.max_watches} watches (rollout_max_watches)"
                )
            for ns in wanted:
                self.users[ns] = self.users.get(ns, 0) + 1
                if ns in new:
                    for plural in self.kinds:
                        informer = Informer(self, KINDS[plural], ns)
                        self.informers[(plural, ns)] = informer
                        informer.start()

    async def release(self, namespaces: Iterable[str]) -> None:
        async with self._lock:
            for ns in {self._ns(n) for n in namespaces}:
                self.users[ns] = self.users.get(ns, 1) - 1
                if self.users[ns] <= 0:
                    del self.users[ns]
                    for plural in self.kinds:
                        informer = self.informers.pop((plural, ns), None)
                        if informer is not None:
                            await informer.stop()

    async def wait_synced(self, namespaces: Iterable[str], timeout: float | None = None) -> bool:
        informers = [
            self.informers[(p, self._ns(n))]
            for n in set(namespaces)
            for p in self.kinds
            if (p, self._ns(n)) in self.informers
        ]
        try:
            await asyncio.wait_for(asyncio.gather(*(i.synced.wait() for i in informers)), timeout)
        except TimeoutError:
            return False
        return True

    def get(self, plural: str, namespace: str, name: str) -> dict[str, Any] | None:
        informer = self.informers.get((plural, self._ns(namespace)))
        return informer.cache.get((namespace, name)) if informer else None

    def in_namespace(self, plural: str, namespace: str) -> list[dict[str, Any]]:
        informer = self.informers.get((plural, self._ns(namespace)))
        if informer is None:
            return []
        if not self.cluster_wide:
            return list(informer.cache.values())
        return [o for (ns, _), o in informer.cache.items() if ns == namespace]

    def errors(self, namespace: str) -> list[str]:
        return [i.error for (p, ns), i in self.informers.items() if ns == self._ns(namespace) and i.error]

    @property
    def open_watches(self) -> int:
        return len(self.informers)

    async def close(self) -> None:
        async with self._lock:
            for informer in self.informers.values():
                await informer.stop()
            self.informers.clear()
            self.users.clear()
