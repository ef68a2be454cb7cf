"""Stand-ins for the Kubernetes side of the rollout watch: an in-memory :class:`Store` and a
scripted :class:`Follower` that yields given tuples of observations.

The real ``KubeStore``/``KubeFollower`` (app/rollout/kube.py) keep the same contract; these let
the reporting side be tested without a cluster.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field

from app.rollout.model import Observation, Phase, Watch


@dataclass
class MemoryStore:
    """Shared by every "replica" of a test: watches, claims (holder, expiry) and finished keys."""

    clock: Callable[[], float] = time.monotonic
    watches: dict[str, Watch] = field(default_factory=dict)
    claims: dict[str, tuple[str, float]] = field(default_factory=dict)
    finished: dict[str, tuple[Observation, ...]] = field(default_factory=dict)
    claim_calls: list[tuple[str, str, bool]] = field(default_factory=list)

    async def add(self, watch: Watch) -> bool:
        if watch.key in self.watches:
            return False
        self.watches[watch.key] = watch
        return True

    async def claim(self, key: str, holder: str, ttl_seconds: float) -> bool:
        now = self.clock()
        current = self.claims.get(key)
        won = current is None or current[0] == holder or current[1] <= now
        if won:
            self.claims[key] = (holder, now + ttl_seconds)
        self.claim_calls.append((key, holder, won))
        return won

    async def unfinished(self) -> list[Watch]:
        return [w for k, w in self.watches.items() if k not in self.finished]

    async def finish(self, key: str, final: tuple[Observation, ...]) -> None:
        self.finished[key] = final


@dataclass
class ScriptedFollower:
    """Yields ``script`` (tuples of observations) for every watch, ``gap`` seconds apart; with
    ``block_after`` it stops after that many tuples and waits until cancelled (a replica that
    dies mid-rollout)."""

    script: Sequence[tuple[Observation, ...]] = ()
    gap: float = 0.0
    block_after: int | None = None
    followed: list[str] = field(default_factory=list)
    by_key: dict[str, Sequence[tuple[Observation, ...]]] = field(default_factory=dict)

    async def follow(self, watch: Watch) -> AsyncIterator[tuple[Observation, ...]]:
        self.followed.append(watch.key)
        script = self.by_key.get(watch.key, self.script)
        for i, observations in enumerate(script):
            if self.block_after is not None and i >= self.block_after:
                await asyncio.Event().wait()
            if self.gap:
                await asyncio.sleep(self.gap)
            yield observations


@dataclass
class RecordingSink:
    writes: list[tuple[str, tuple[Observation, ...]]] = field(default_factory=list)

    async def write(self, watch: Watch, observations: tuple[Observation, ...], now: float) -> None:
        self.writes.append((watch.key, observations))


@dataclass
class Step:
    """One moment of a scripted rollout, applied to every target of the watch: its phase and,
    when given, what was observed (``None``: what was predicted)."""

    phase: Phase
    summary: str = ""
    observed_rollout: str | None = None
    observed_extra: dict[str, int] | None = None
    pending_pods: int = 0
    reasons: tuple[str, ...] = ()


@dataclass
class StepFollower:
    """Yields, for every ``Step``, one observation per target of the watch (the targets come from
    the real analysis), ``gap`` seconds apart."""

    steps: Sequence[Step] = ()
    gap: float = 0.05
    followed: list[Watch] = field(default_factory=list)

    async def follow(self, watch: Watch) -> AsyncIterator[tuple[Observation, ...]]:
        self.followed.append(watch)
        for step in self.steps:
            await asyncio.sleep(self.gap)
            out = []
            for t in watch.targets:
                final = step.phase.final
                rollout = step.observed_rollout or (t.predicted_rollout if final else None)
                extra = step.observed_extra if step.observed_extra is not None else (
                    dict(t.predicted_extra) if final else {})
                out.append(Observation(t, step.phase, step.summary or step.phase.value,
                                       observed_rollout=rollout, observed_extra=extra,
                                       pending_pods=step.pending_pods, reasons=step.reasons,
                                       since=watch.started, updated=time.time()))
            yield tuple(out)
