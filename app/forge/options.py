"""What one run of the change-request flow is given and what it did, for either forge: the options
(:class:`AnalysisOptions`) and the outcome (:class:`Outcome`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from app.github.revisions import MERGEABLE_WAITS
from app.render.pipeline import RenderOptions
from diffing.versions import DEFAULT

if TYPE_CHECKING:
    from app.workers import AnalysisPool


@dataclass(frozen=True, slots=True)
class AnalysisOptions:
    kuberay_version: str = DEFAULT
    policy: dict[str, Any] | None = None
    timeout: float = 10.0
    live_enabled: bool = False  # live basis from the Kubernetes API (the service runs in-cluster)
    kubernetes_timeout: float = 10.0
    pool: AnalysisPool | None = None  # the service's worker processes (None: a thread, for tools/tests)
    # "auto": render what the PR deploys (tarballs, or Argo CD when a client is given);
    # "none": the changed RayService/RayCluster/RayJob files as they are. The default keeps
    # embedders' old behaviour.
    render: str = "none"
    render_options: RenderOptions = field(default_factory=RenderOptions)
    tarball_max_bytes: int = 200 * 1024 * 1024
    # Signs and verifies ``/rayservice-impact approve`` stamps (the webhook secret); empty: the
    # stamps are neither written nor honoured.
    approval_key: bytes = b""
    mergeable_waits: tuple[float, ...] = MERGEABLE_WAITS  # polling GET pulls/{n} while mergeable is null


@dataclass(slots=True)
class Outcome:
    """What one run did; ``state`` is the posted status (or "superseded" / "failed")."""

    state: str
    description: str = ""
    comment: str = "none"       # created | updated | unchanged | stale | quiet | none | failed
    suggestions: str = "none"   # none | unchanged | posted N | failed (:mod:`.suggestions`)
    check_run: bool = False
    retryable: bool = False     # a GitHub failure, not a verdict: the same event may run again
    timings: dict[str, float] = field(default_factory=dict)


def notes_text(notes: tuple[str, ...] | list[str]) -> str:
    """Several notes as one (paragraphs of the comment's warning box)."""
    return "\n>\n> ".join(notes)
