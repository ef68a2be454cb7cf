"""``KubeFollower``: the :class:`~app.rollout.model.Follower` on the Kubernetes watch API.

For one :class:`~app.rollout.model.Watch` it asks the :class:`~app.rollout.watch.WatchHub` for
the namespaces of its targets (informers shared with every other followed watch), and each time
the hub reports a change it judges every target again with :func:`diffing.observe.observe`. It
yields the tuple of observations when one of them changed, and ends when all are final. A
target still progressing (or still waiting) past ``watch.started + watch.deadline_seconds``
turns STUCK with the ways out (:func:`diffing.observe.stuck`); a final target stays as it was.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from dataclasses import replace
from typing import Any, Protocol

from diffing.observe import Memory, Seen, memory_from_json, memory_to_json, observe, stuck

from .kubeapi import KubeAPIError
from .model import Observation, Phase, Target, Watch
from .watch import PLURAL_OF, WatchHub

log = logging.getLogger(__name__)

SYNC_TIMEOUT = 60.0


def _signature(o: Observation) -> tuple[object, ...]:
    """What makes an observation new (the summary's "so far" time alone does not)."""
    return (
        o.phase,
        o.observed_rollout,
        tuple(sorted(o.observed_extra.items())),
        o.pending_pods,
        o.reasons,
        tuple(sorted(o.serve_apps.items())),
        o.summary.split(";")[0],
    )


class Memo(Protocol):
    """Where a follower keeps what it remembers of each target (``KubeStore`` does, in the watch's
    ConfigMap), so that a restarted replica judges from the first sight, not from its own."""

    async def load_memories(self, key: str) -> dict[str, Any]: ...

    async def save_memories(self, key: str, memories: Mapping[str, Any]) -> None: ...


class KubeFollower:
    def __init__(
        self,
        hub: WatchHub,
        accelerators: Iterable[str] = (),
        clock: Callable[[], float] = time.time,
        memo: Memo | None = None,
    ) -> None:
        self.hub = hub
        self.accelerators = tuple(accelerators)
        self.clock = clock
        self.memo = memo

    async def aclose(self) -> None:
        """Stop every watch stream and close the API client (the service is shutting down)."""
        await self.hub.close()
        await self.hub.api.aclose()

    async def _load(self, watch: Watch) -> dict[str, Memory]:
        loaded: dict[str, Any] = {}
        if self.memo is not None:
            try:
                loaded = await self.memo.load_memories(watch.key)
            except KubeAPIError as exc:
                log.warning("rollout watch %s: cannot read what was remembered (%s)", watch.key, exc)
        return {t.key: memory_from_json(loaded.get(t.key)) for t in watch.targets}

    async def _save(self, watch: Watch, memories: dict[str, Memory]) -> None:
        if self.memo is None:
            return
        try:
            await self.memo.save_memories(watch.key, {k: memory_to_json(m) for k, m in memories.items()})
        except KubeAPIError as exc:
            log.warning("rollout watch %s: cannot keep what was seen (%s)", watch.key, exc)

    def _judge(self, target: Target, memory: Memory, since: float, now: float) -> tuple[Seen, Memory]:
        hub, ns = self.hub, target.namespace
        obj = hub.get(PLURAL_OF.get(target.kind, "rayclusters"), ns, target.name)
        clusters = {
            str((c.get("metadata") or {}).get("name")): c for c in hub.in_namespace("rayclusters", ns)
        }
        return observe(
            target,
            obj,
            clusters=clusters,
            pods=hub.in_namespace("pods", ns),
            events=hub.in_namespace("events", ns),
            memory=memory,
            since=since,
            now=now,
            accelerators=self.accelerators,
        )

    async def follow(self, watch: Watch) -> AsyncIterator[tuple[Observation, ...]]:
        namespaces = sorted({t.namespace for t in watch.targets})
        deadline = watch.started + watch.deadline_seconds
        await self.hub.acquire(namespaces)
        changed = self.hub.subscribe()
        try:
            await self.hub.wait_synced(
                namespaces, timeout=max(1.0, min(SYNC_TIMEOUT, deadline - self.clock()))
            )
            memories = await self._load(watch)
            saved = dict(memories)
            finals: dict[str, Observation] = {}
            last: tuple[tuple[object, ...], ...] | None = None
            while True:
                changed.clear()
                now = self.clock()
                out: list[Observation] = []
                for target in watch.targets:
                    if target.key in finals:
                        out.append(finals[target.key])
                        continue
                    seen, memories[target.key] = self._judge(target, memories[target.key], watch.started, now)
                    errors = self.hub.errors(target.namespace)
                    if seen.phase == Phase.WAITING and errors:  # e.g. RBAC denies the watch: say so
                        seen = replace(seen, summary=f"{seen.summary} (the watch fails: {errors[0]})")
                    if now >= deadline and not Phase(seen.phase).final:
                        seen = stuck(target, seen, deadline_seconds=watch.deadline_seconds)
                    obs = Observation(
                        target=target,
                        phase=Phase(seen.phase),
                        summary=seen.summary,
                        observed_rollout=seen.observed_rollout,
                        observed_extra=seen.observed_extra,
                        pending_pods=seen.pending_pods,
                        reasons=seen.reasons,
                        serve_apps=seen.serve_apps,
                        since=watch.started,
                        updated=now,
                    )
                    if obs.phase.final:
                        finals[target.key] = obs
                    out.append(obs)
                if memories != saved:
                    await self._save(watch, memories)
                    saved = dict(memories)
                signature = tuple(_signature(o) for o in out)
                if signature != last:
                    last = signature
                    yield tuple(out)
                if len(finals) == len(watch.targets):
                    return
                wait = deadline - self.clock()
                try:
                    await asyncio.wait_for(changed.wait(), timeout=max(0.0, wait) if wait > 0 else 0.0)
                except TimeoutError:
                    pass
        finally:
            self.hub.unsubscribe(changed)
            await self.hub.release(namespaces)
