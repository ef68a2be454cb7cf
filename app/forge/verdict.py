"""The verdict of a rendered change, for either forge: :func:`rendered_verdict` (the core's report as
the comment, status and annotations take it) in the service's worker pool, where a runaway analysis
is killed rather than waited for, else in a thread bounded by the time budget."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from typing import TYPE_CHECKING, Any

import diffing
from app.annotate import rendered_locator
from app.errors import ServiceUnavailable
from app.github.comment import Verdict, verdict_for_error, verdict_for_no_change, verdict_for_report
from app.github.suggestions import edits_for
from app.live import live_basis_for_texts
from app.render.pipeline import RenderedChange, analyze_rendered
from diffing.render.annotations import annotate
from diffing.render.codequality import fingerprint

if TYPE_CHECKING:
    from .options import AnalysisOptions

log = logging.getLogger(__name__)


async def verdict_of(name: str, rendered: RenderedChange, note: str, patches: dict[str, str],
                     options: AnalysisOptions) -> Verdict:
    """``note``: said above the verdict; ``patches``: the change's files (path -> patch), for the
    edits it can carry as suggestions; ``name``: for the logs."""
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


def rendered_verdict(rendered: RenderedChange, kwargs: dict[str, Any], note: str,
                     patches: dict[str, str] | None = None) -> Verdict:
    """The verdict of a rendered change, computed where the analysis runs (a pool worker: only
    plain values come back). Errors are verdicts too. ``patches``: the pull request's files list
    (path -> patch), for the edits it can carry as suggestions."""
    try:
        report = analyze_rendered(rendered, **kwargs)
    except diffing.ManifestError as exc:
        return verdict_for_error(f"invalid manifest: {exc.message}")
    except diffing.DiffingError as exc:
        return verdict_for_error(str(exc))
    if not report.resources and not report.findings and not report.not_analysed:
        return verdict_for_no_change()  # rendered, but no Ray object (nor any problem) in it
    verdict = rendered_report_verdict(report, rendered, note, patches or {})
    return dataclasses.replace(verdict, annotations=check_annotations(report, rendered))


def rendered_report_verdict(report: diffing.Report, rendered: RenderedChange, note: str,
                             patches: dict[str, str]) -> Verdict:
    locate = rendered_locator(rendered, rendered.read_head)
    return verdict_for_report(report, note=note, locate=locate,
                              edits=edits_for(report, rendered.read_head, patches, locate))


def check_annotations(report: diffing.Report, rendered: RenderedChange) -> tuple[dict[str, Any], ...]:
    """The report's annotations as the Checks API takes them, on files of the pull request only
    (a root's label becomes the first changed file it reads). Each also carries its Code Quality
    ``fingerprint`` (:func:`diffing.render.codequality.fingerprint`: the check, the root, the
    object, the field; never the line) and whether its line is its own (``located``), which the
    GitHub client leaves out."""
    items = annotate(report, rendered_locator(rendered, rendered.read_head))
    out = []
    for a in items:
        path = a.file
        if path in rendered.root_files:
            files = rendered.root_files[path]
            if not files:
                continue
            path = files[0]
        if "(" in path or path.startswith("Application "):
            continue
        line = a.line or 1
        out.append({"path": path, "start_line": line, "end_line": line, "annotation_level": a.level,
                    "title": a.title[:255], "message": a.message[:64000],
                    # not GitHub's: which finding it is (GitLab's threads, app.gitlab.inline)
                    "fingerprint": fingerprint(a.rule, a.subject or f"{a.file}\0{a.title}"),
                    "located": a.line is not None})
    return tuple(out)
