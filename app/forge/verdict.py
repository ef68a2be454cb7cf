"""The verdict of a rendered change, for either forge: :func:`app.github.flow.rendered_verdict` (the
core's report as the comment, status and annotations take it) in the service's worker pool, where
a runaway analysis is killed rather than waited for, else in a thread bounded by the time budget."""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

import diffing
from app.errors import ServiceUnavailable
from app.github.comment import Verdict, verdict_for_error, verdict_for_no_change
from app.live import live_basis_for_texts
from app.render.pipeline import RenderedChange

if TYPE_CHECKING:
    from app.github.flow import AnalysisOptions

log = logging.getLogger(__name__)


async def verdict_of(name: str, rendered: RenderedChange, note: str, patches: dict[str, str],
                     options: AnalysisOptions) -> Verdict:
    """``note``: said above the verdict; ``patches``: the change's files (path -> patch), for the
    edits it can carry as suggestions; ``name``: for the logs."""
    from app.github.flow import rendered_verdict  # the flow imports this module

    if not rendered.before and not rendered.after and not rendered.notes:
        return verdict_for_no_change()
    live = await live_basis_for_texts(rendered.after, enabled=options.live_enabled,
                                      kuberay_version=options.kuberay_version, headroom=None,
                                      timeout=options.kubernetes_timeout, budget=options.timeout)
    kwargs = {"kuberay_version": options.kuberay_version, "policy": options.policy, "live": live}
    if options.pool is not None:
        try:
            verdict: Verdict = await options.pool.call(rendered_verdict, rendered, kwargs, note, patches,
                                                       timeout=options.timeout)
        except ServiceUnavailable as exc:
            return verdict_for_error(exc.message)
        except Exception as exc:  # noqa: BLE001 - a core bug must still leave an error status
            log.exception("%s: analysis failed", name)
            return verdict_for_error(f"internal error ({type(exc).__name__})")
        return verdict
    try:
        return await asyncio.wait_for(asyncio.to_thread(rendered_verdict, rendered, kwargs, note, patches),
                                      timeout=options.timeout)
    except TimeoutError:
        return verdict_for_error(f"the analysis took longer than {options.timeout:g} s")
    except diffing.DiffingError as exc:
        return verdict_for_error(str(exc))
    except Exception as exc:  # noqa: BLE001 - a core bug must still leave an error status
        log.exception("%s: analysis failed", name)
        return verdict_for_error(f"internal error ({type(exc).__name__})")
