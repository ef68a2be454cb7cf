"""The seam of the rollout watch: what is followed, what is seen, where it is kept.

Two sides meet here. The Kubernetes side (``app/rollout/watch.py``, ``tracker.py``, ``store.py``)
lists and watches the ray.io kinds and the pods and events of their clusters, turns what it sees
into :class:`Observation` values with the pure judgement in ``diffing/observe.py``, and keeps the
record of every :class:`Watch` in a Kubernetes object the service owns, so that a restarted pod or
a second replica finds it. The reporting side (``app/rollout/report.py``) starts a watch when a
change is deployed (a push of a merge commit to the base branch, an Argo CD sync) and writes what
the follower yields to the PR: the ``rayservice-impact/rollout`` check run and a section of the
sticky comment.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Protocol


class Phase(StrEnum):
    """Where one followed object is. ``DONE``, ``STUCK`` and ``FAILED`` are final."""

    WAITING = "waiting"          # the change has not reached the object yet (no new generation seen)
    PROGRESSING = "progressing"  # a pending cluster, pods Pending, Serve apps deploying, a job running
    DONE = "done"                # the operator finished: new cluster serving, job succeeded, ...
    STUCK = "stuck"              # still progressing past the deadline
    FAILED = "failed"            # validation failure, job failed, object deleted under the watch

    @property
    def final(self) -> bool:
        return self in (Phase.DONE, Phase.STUCK, Phase.FAILED)


@dataclass(frozen=True, slots=True)
class Target:
    """One object of an analysed report, with what the analysis predicted for it."""

    kind: str                      # "RayService" | "RayCluster" | "RayJob"
    namespace: str
    name: str
    predicted_rollout: str         # a diffing.vocab.Rollout value: "new-cluster", "serve-in-place", ...
    predicted_extra: Mapping[str, int] = field(default_factory=dict)  # accelerator -> extra at peak

    @property
    def key(self) -> str:
        return f"{self.kind}/{self.namespace}/{self.name}"


@dataclass(frozen=True, slots=True)
class Observation:
    """One target as last seen."""

    target: Target
    phase: Phase
    summary: str                               # one line a human reads
    observed_rollout: str | None = None        # what the operator did, in the same vocabulary
    observed_extra: Mapping[str, int] = field(default_factory=dict)  # peak extra accelerators seen
    pending_pods: int = 0
    reasons: tuple[str, ...] = ()              # FailedScheduling messages, validation failure, ...
    serve_apps: Mapping[str, str] = field(default_factory=dict)  # Serve application -> status
    since: float = 0.0                         # epoch seconds the watch started
    updated: float = 0.0                       # epoch seconds of the newest event behind it

    @property
    def as_predicted(self) -> bool:
        """Whether the observed rollout and extra accelerators match the prediction (only
        meaningful once the phase is final)."""
        return (self.observed_rollout == self.target.predicted_rollout
                and dict(self.observed_extra) == dict(self.target.predicted_extra))


@dataclass(frozen=True, slots=True)
class Watch:
    """One deployed change being followed; its record survives restarts."""

    key: str                        # stable: "github:OWNER/REPO@MERGE_SHA" or "argocd:APP@REVISION"
    targets: tuple[Target, ...]
    started: float                  # epoch seconds
    deadline_seconds: float         # after it, a target still progressing is STUCK
    sink: Mapping[str, Any]         # where to report, e.g. {"github": {"owner", "repo", "sha", "pr"}}


class Follower(Protocol):
    """Follows a watch's targets; yields every target's newest observation each time one of them
    changes, and ends when all are final (the deadline makes every one final eventually)."""

    def follow(self, watch: Watch) -> AsyncIterator[tuple[Observation, ...]]: ...


class Store(Protocol):
    """Where watches are kept, shared by every replica of the service."""

    async def add(self, watch: Watch) -> bool:
        """Record ``watch``; ``False`` when a watch with its key exists already (a redelivery)."""
        ...

    async def claim(self, key: str, holder: str, ttl_seconds: float) -> bool:
        """Take (or renew) the right to report ``key`` for ``ttl_seconds``; ``False`` while another
        live holder has it. Two replicas report once."""
        ...

    async def unfinished(self) -> list[Watch]:
        """Every watch not yet finished: what a restarted replica resumes."""
        ...

    async def finish(self, key: str, final: tuple[Observation, ...]) -> None:
        """Mark ``key`` finished with its last observations."""
        ...
