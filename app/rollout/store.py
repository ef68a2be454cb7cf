"""``KubeStore``: the :class:`~app.rollout.model.Store` on the Kubernetes API.

Each watch is one ConfigMap in the service's namespace (``POD_NAMESPACE`` from the downward API,
else ``rollout_namespace``), labelled ``app.kubernetes.io/managed-by: rayservice-impact``, named
``rollout-`` and 40 hex digits of the SHA-256 of the watch's key (any key gives a valid, fixed
name), holding the Watch as JSON and, once finished, the final observations. A restarted pod or
a second replica lists the unfinished ones and resumes them.

Who reports a watch is a ``coordination.k8s.io/v1`` Lease of the same name: taking it is a
create (409: someone else created it first) or an update with the resourceVersion read
(409: someone else wrote it in between), so of two replicas racing exactly one wins; a lease
whose ``renewTime + leaseDurationSeconds`` has passed may be taken over.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import math
import os
import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

from .kubeapi import Conflict, KubeAPI, KubeAPIError, api_path
from .model import Observation, Phase, Target, Watch

log = logging.getLogger(__name__)

MANAGED_BY = "app.kubernetes.io/managed-by"
MANAGER = "rayservice-impact"
WATCH_LABEL = "rayservice-impact/rollout-watch"
FINISHED_LABEL = "rayservice-impact/finished"
FINISHED_AT = "rayservice-impact/finished-at"
KEY_ANNOTATION = "rayservice-impact/watch-key"
MAX_PAYLOAD = 900 * 1024  # a ConfigMap holds at most 1 MiB


def object_name(key: str) -> str:
    return "rollout-" + hashlib.sha256(key.encode()).hexdigest()[:40]


def default_namespace(configured: str) -> str:
    return os.environ.get("POD_NAMESPACE") or configured


def _target_json(t: Target) -> dict[str, Any]:
    return {
        "kind": t.kind,
        "namespace": t.namespace,
        "name": t.name,
        "predictedRollout": t.predicted_rollout,
        "predictedExtra": dict(t.predicted_extra),
    }


def _target(d: Mapping[str, Any]) -> Target:
    return Target(
        str(d["kind"]),
        str(d["namespace"]),
        str(d["name"]),
        str(d["predictedRollout"]),
        {str(k): int(v) for k, v in (d.get("predictedExtra") or {}).items()},
    )


def watch_json(w: Watch) -> str:
    return json.dumps(
        {
            "key": w.key,
            "targets": [_target_json(t) for t in w.targets],
            "started": w.started,
            "deadlineSeconds": w.deadline_seconds,
            "sink": dict(w.sink),
        },
        sort_keys=True,
    )


def watch_from_json(text: str) -> Watch:
    d = json.loads(text)
    return Watch(
        key=str(d["key"]),
        targets=tuple(_target(t) for t in d["targets"]),
        started=float(d["started"]),
        deadline_seconds=float(d["deadlineSeconds"]),
        sink=dict(d.get("sink") or {}),
    )


def observation_json(o: Observation) -> dict[str, Any]:
    return {
        "target": _target_json(o.target),
        "phase": str(o.phase),
        "summary": o.summary,
        "observedRollout": o.observed_rollout,
        "observedExtra": dict(o.observed_extra),
        "pendingPods": o.pending_pods,
        "reasons": list(o.reasons),
        "serveApps": dict(o.serve_apps),
        "since": o.since,
        "updated": o.updated,
    }


def observation_from_json(d: Mapping[str, Any]) -> Observation:
    return Observation(
        target=_target(d["target"]),
        phase=Phase(d["phase"]),
        summary=str(d["summary"]),
        observed_rollout=d.get("observedRollout"),
        observed_extra=dict(d.get("observedExtra") or {}),
        pending_pods=int(d.get("pendingPods") or 0),
        reasons=tuple(d.get("reasons") or ()),
        serve_apps=dict(d.get("serveApps") or {}),
        since=float(d.get("since") or 0),
        updated=float(d.get("updated") or 0),
    )


def _micro(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _epoch(text: Any) -> float | None:
    if not isinstance(text, str) or not text:
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


class KubeStore:
    def __init__(self, api: KubeAPI, namespace: str, *, clock: Callable[[], float] = time.time,
                 retention_seconds: float = 7 * 86400.0, prune_interval: float = 3600.0) -> None:
        self.api = api
        self.namespace = namespace
        self.clock = clock
        self.retention_seconds = retention_seconds
        self.prune_interval = prune_interval
        self._pruned = float("-inf")

    async def aclose(self) -> None:
        await self.api.aclose()

    def _cm(self, name: str | None = None) -> str:
        return api_path("v1", "configmaps", self.namespace, name)

    def _lease(self, name: str | None = None) -> str:
        return api_path("coordination.k8s.io/v1", "leases", self.namespace, name)

    async def add(self, watch: Watch) -> bool:
        payload = watch_json(watch)
        if len(payload) > MAX_PAYLOAD:
            raise KubeAPIError(f"the watch {watch.key} is too large to keep ({len(payload)} bytes)")
        body = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": object_name(watch.key),
                "namespace": self.namespace,
                "labels": {MANAGED_BY: MANAGER, WATCH_LABEL: "true", FINISHED_LABEL: "false"},
                "annotations": {KEY_ANNOTATION: watch.key[:1000]},
            },
            "data": {"watch": payload},
        }
        try:
            await self.api.create(self._cm(), body)
        except Conflict:
            return False
        return True

    async def claim(self, key: str, holder: str, ttl_seconds: float) -> bool:
        name = object_name(key)
        now = self.clock()
        duration = max(1, math.ceil(ttl_seconds))
        lease = await self.api.get(self._lease(name))
        if lease is None:
            body = {
                "apiVersion": "coordination.k8s.io/v1",
                "kind": "Lease",
                "metadata": {"name": name, "namespace": self.namespace, "labels": {MANAGED_BY: MANAGER}},
                "spec": {
                    "holderIdentity": holder,
                    "leaseDurationSeconds": duration,
                    "acquireTime": _micro(now),
                    "renewTime": _micro(now),
                    "leaseTransitions": 0,
                },
            }
            try:
                await self.api.create(self._lease(), body)
            except Conflict:
                return False
            return True
        spec = lease.get("spec") or {}
        current = spec.get("holderIdentity")
        renewed = _epoch(spec.get("renewTime")) or 0.0
        expired = renewed + float(spec.get("leaseDurationSeconds") or 0) < now
        if current and current != holder and not expired:
            return False
        new_spec = dict(spec, holderIdentity=holder, leaseDurationSeconds=duration, renewTime=_micro(now))
        if current != holder:
            new_spec["acquireTime"] = _micro(now)
            new_spec["leaseTransitions"] = int(spec.get("leaseTransitions") or 0) + 1
        body = dict(lease, spec=new_spec)  # metadata.resourceVersion as read: a compare-and-swap
        try:
            await self.api.update(self._lease(name), body)
        except Conflict:
            return False
        return True

    async def unfinished(self) -> list[Watch]:
        items, _ = await self.api.list(
            self._cm(), label_selector=f"{MANAGED_BY}={MANAGER},{WATCH_LABEL}=true,{FINISHED_LABEL}=false"
        )
        out = []
        for item in items:
            try:
                out.append(watch_from_json((item.get("data") or {})["watch"]))
            except (KeyError, ValueError, TypeError) as exc:
                log.warning(
                    "rollout watch %s cannot be read (%s); skipped",
                    (item.get("metadata") or {}).get("name"),
                    type(exc).__name__,
                )
        return sorted(out, key=lambda w: w.started)

    async def finish(self, key: str, final: tuple[Observation, ...]) -> None:
        name = object_name(key)
        for _ in range(5):
            cm = await self.api.get(self._cm(name))
            if cm is None:
                return
            meta = dict(cm.get("metadata") or {})
            meta["labels"] = dict(meta.get("labels") or {}, **{FINISHED_LABEL: "true"})
            meta["annotations"] = dict(meta.get("annotations") or {}, **{FINISHED_AT: _micro(self.clock())})
            data = dict(
                cm.get("data") or {}, final=json.dumps([observation_json(o) for o in final], sort_keys=True)
            )
            try:
                await self.api.update(self._cm(name), dict(cm, metadata=meta, data=data))
                return
            except Conflict:
                continue
        raise KubeAPIError(f"the rollout watch {key} kept changing while being finished")

    async def prune(self) -> int:
        """Delete the ConfigMaps (and Leases) of watches finished more than ``retention_seconds``
        ago; at most once per ``prune_interval`` (the reporter calls it on every rescan). A record
        without a finish time counts from the watch's start. How many were deleted."""
        now = self.clock()
        if now - self._pruned < self.prune_interval:
            return 0
        self._pruned = now
        items, _ = await self.api.list(
            self._cm(), label_selector=f"{MANAGED_BY}={MANAGER},{WATCH_LABEL}=true,{FINISHED_LABEL}=true"
        )
        deleted = 0
        for item in items:
            meta = item.get("metadata") or {}
            when = _epoch((meta.get("annotations") or {}).get(FINISHED_AT))
            if when is None:
                try:
                    when = watch_from_json((item.get("data") or {})["watch"]).started
                except (KeyError, ValueError, TypeError):
                    when = None
            if when is None or now - when < self.retention_seconds or not meta.get("name"):
                continue
            with contextlib.suppress(KubeAPIError):  # gone already, or a 404 Lease
                await self.api.delete(self._lease(meta["name"]))
            with contextlib.suppress(KubeAPIError):
                await self.api.delete(self._cm(meta["name"]))
                deleted += 1
        return deleted

    async def load_memories(self, key: str) -> dict[str, Any]:
        """What the follower of ``key`` remembered (first sight, peaks), by target key."""
        cm = await self.api.get(self._cm(object_name(key)))
        text = ((cm or {}).get("data") or {}).get("memory")
        try:
            loaded = json.loads(text) if text else {}
        except ValueError:
            return {}
        return loaded if isinstance(loaded, dict) else {}

    async def save_memories(self, key: str, memories: Mapping[str, Any]) -> None:
        name = object_name(key)
        text = json.dumps(memories, sort_keys=True)
        if len(text) > MAX_PAYLOAD // 2:
            return  # too large to keep: a restart then starts from what it sees
        for _ in range(5):
            cm = await self.api.get(self._cm(name))
            if cm is None:
                return
            try:
                await self.api.update(self._cm(name), dict(cm, data=dict(cm.get("data") or {}, memory=text)))
                return
            except Conflict:
                continue

    async def final(self, key: str) -> tuple[Observation, ...] | None:
        """The final observations of a finished watch (``None`` while unfinished or unknown)."""
        cm = await self.api.get(self._cm(object_name(key)))
        text = ((cm or {}).get("data") or {}).get("final")
        return tuple(observation_from_json(d) for d in json.loads(text)) if text else None
