"""Judging a change through a :class:`app.forge.Forge`: revisions, archives, render, verdict.

The same pipeline as ``rayservice-impact git BASE HEAD`` (:func:`app.render.pipeline.render_change`
on two unpacked archives) and the GitHub flow's verdict (:func:`app.forge.verdict.rendered_verdict`,
in the service's worker pool when it has one), then :func:`app.forge.publish.publish`. A revision
whose archive is over the cap or cannot be unpacked is a ``render-failed`` error finding naming
it, so the change holds; a host that cannot be read is an error status, never a pass. The
repository's comment mode is read from the base archive as it is unpacked (:mod:`app.forge.settings`,
the files the caller names), so it costs no call of its own.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable, Sequence
from typing import Any

from app.clients.upstream import UpstreamError
from app.github.comment import verdict_for_error
from app.render.pipeline import RenderedChange
from app.render.snapshot import Snapshot

from . import Change, Forge, Revisions
from .options import AnalysisOptions, Outcome, notes_text
from .publish import publish
from .render import render_archives
from .settings import BaseSettings, warned
from .verdict import verdict_of

log = logging.getLogger(__name__)

VIA_ARCHIVES = "rendered from the repository archives"
ARCHIVE_ROOT = "repository archive"


async def judge_and_publish(forge: Forge, change: Change, options: AnalysisOptions, *,
                            is_current: Any = lambda: True, repo_url: str = "",
                            settings: Sequence[str] = ()) -> Outcome:
    """One run: the verdict of ``change`` published through ``forge``. ``settings``: the
    repository's settings files, the first found at the base deciding the comment mode (none:
    ``always``)."""
    started = time.monotonic()
    timings: dict[str, float] = {}
    base = (change.base_ref, "")
    setting = BaseSettings(settings)
    try:
        revisions = await forge.revisions()
        base = (revisions.base_ref or change.base_ref, revisions.base)
        rendered = await render_revisions(forge, revisions, options, repo_url=repo_url,
                                          on_base=setting if settings else None)
    except UpstreamError as exc:
        log.error("%s: cannot read the change: %s", change.name, exc)
        verdict = verdict_for_error(f"cannot read the change from {forge.host} ({exc})", comment=False)
        outcome = await publish(forge, change, verdict, footer="", key=options.approval_key, base=base,
                                is_current=is_current, timings=timings)
        outcome.retryable = True
        return outcome
    except Exception as exc:  # noqa: BLE001 - a renderer bug must still leave a failed status
        log.exception("%s: rendering failed", change.name)
        verdict = verdict_for_error(f"internal error while rendering ({type(exc).__name__})")
        return await publish(forge, change, verdict, footer="", key=options.approval_key, base=base,
                             is_current=is_current, timings=timings)
    timings["render"] = time.monotonic() - started
    if not is_current():
        return Outcome("superseded")
    verdict = await verdict_of(change.name, rendered, notes_text(revisions.notes), revisions.patches, options)
    timings["analyse"] = time.monotonic() - started
    footer = revisions.footer(VIA_ARCHIVES) + (f" · re-run by @{change.requested_by}"
                                               if change.requested_by else "")
    verdict = warned(verdict, setting.config)
    return await publish(forge, change, verdict, footer=footer, key=options.approval_key, base=base,
                         is_current=is_current, timings=timings, mode=setting.config.comment)


async def render_revisions(forge: Forge, revisions: Revisions, options: AnalysisOptions, *,
                           repo_url: str = "", on_base: Callable[[Snapshot], None] | None = None
                           ) -> RenderedChange:
    """Both archives, rendered (:func:`app.forge.render.render_archives`, ``on_base`` included)."""
    render_options = dataclasses.replace(options.render_options,
                                         repo_url=repo_url or options.render_options.repo_url)
    return await render_archives(forge, revisions.base, revisions.head, revisions.changed, render_options,
                                 max_bytes=options.tarball_max_bytes, word="archive", root=ARCHIVE_ROOT,
                                 on_base=on_base)
