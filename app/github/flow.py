"""One pull request (or merge group), end to end: read the change, analyse it, post comment,
status, check run.

The change is what runs now against what the merge would deploy (:mod:`.revisions`: the base
branch's tip and GitHub's test merge commit), rendered at both (:mod:`.rendering`: from the
repository tarballs, or by Argo CD when it is configured); with ``RAYSERVICE_IMPACT_RENDER=none``
it is the changed RayService, RayCluster and RayJob files as they are (:func:`.change.fetch_change`).
The status and check run go on the head SHA; a hold a maintainer accepted for exactly this result
(:mod:`.commands`: this pull request, head, base and report) is posted as success, and a success
goes up only when no other pull request with the same head SHA holds it (:mod:`.gate`).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable

import diffing
from app.clients.argocd import ArgoCDClient, ArgoCDError
from app.clients.github import GitHubClient, GitHubError
from app.forge import Change
from app.forge.github import GitHubForge
from app.forge.options import AnalysisOptions, Outcome, notes_text
from app.forge.publish import gate, post_sticky
from app.forge.settings import warned
from app.forge.verdict import rendered_report_verdict, verdict_of
from app.gitdiff import SUBMODULE_MOVED
from app.live import live_basis_for_texts
from app.render.pipeline import RenderedChange, analyze_rendered

from .change import PullRequest, fetch_change
from .comment import (
    Approval,
    Binding,
    Verdict,
    approved,
    verdict_for_error,
    verdict_for_no_change,
    verdict_for_report,
)
from .gate import commit_lock
from .rendering import RenderedPull, render_pull
from .repo_config import ALWAYS, read_config
from .revisions import NOTE_PR_FILES_CAP, merge_group_entries, resolve
from .suggestions import edits_for, post_suggestions

log = logging.getLogger(__name__)


async def analyse(change_before: list[tuple[str, str]], change_after: list[tuple[str, str]],
                  options: AnalysisOptions, notes: list[diffing.Finding] | None = None) -> diffing.Report:
    """The pure core in a worker thread, bounded by ``options.timeout``; live basis when enabled."""
    live = await live_basis_for_texts(change_after, enabled=options.live_enabled,
                                      kuberay_version=options.kuberay_version, headroom=None,
                                      timeout=options.kubernetes_timeout)
    return await asyncio.wait_for(
        asyncio.to_thread(diffing.analyze, change_before, change_after,
                          kuberay_version=options.kuberay_version, policy=options.policy,
                          sources=("base", "head"), live=live, notes=notes or ()),
        timeout=options.timeout)


async def analyse_rendered(rendered: RenderedChange, options: AnalysisOptions) -> diffing.Report:
    """:func:`analyse` for a rendered change: the same core call as ``rayservice-impact git``
    (:func:`app.render.pipeline.analyze_rendered`), so both give the same report."""
    live = await live_basis_for_texts(rendered.after, enabled=options.live_enabled,
                                      kuberay_version=options.kuberay_version, headroom=None,
                                      timeout=options.kubernetes_timeout)
    return await asyncio.wait_for(
        asyncio.to_thread(analyze_rendered, rendered, kuberay_version=options.kuberay_version,
                          policy=options.policy, live=live),
        timeout=options.timeout)


def footer_for(pr: PullRequest, via: str = "") -> str:
    """The comment's last line: the revisions compared and, when rendered, which way."""
    return f"rayservice-impact · base `{pr.base_sha[:7]}` → head `{pr.head_sha[:7]}`" + (
        f" · {via}" if via else "")


async def run_pull_request(gh: GitHubClient, pr: PullRequest, options: AnalysisOptions, *,
                           check_run: bool = False, is_current: Callable[[], bool] = lambda: True,
                           argocd: ArgoCDClient | None = None) -> Outcome:
    """Analyse ``pr`` and publish the result, unless a newer head supersedes it meanwhile.

    ``argocd``: render through Argo CD instead of the tarballs (``options.render == "auto"``).
    """
    if options.render != "none":
        return await _run_rendered(gh, pr, options, check_run=check_run, is_current=is_current,
                                   argocd=argocd)
    started = time.monotonic()
    timings: dict[str, float] = {}
    try:
        # A pull request's files at its event's base and head (the files list is GitHub's
        # merge-base diff); a merge group's at its base and head.
        entries = await merge_group_entries(gh, pr) if pr.is_merge_group else None
        change = await fetch_change(gh, pr, entries)
    except diffing.ManifestError as exc:  # a file that may hold a KubeRay object and cannot be decoded
        verdict = verdict_for_error(f"invalid manifest: {exc.message}")
        return await publish_verdict(gh, pr, verdict, check_run=check_run, is_current=is_current,
                                     timings=timings, approval_key=options.approval_key)
    except GitHubError as exc:
        log.error("%s: cannot read the change: %s", pr.full_name, exc)
        verdict = verdict_for_error(f"cannot read the change from GitHub ({exc})", comment=False)
        outcome = await publish_verdict(gh, pr, verdict, check_run=check_run, is_current=is_current,
                                        timings=timings, approval_key=options.approval_key)
        outcome.retryable = True
        return outcome
    timings["fetch"] = time.monotonic() - started
    if not is_current():
        return Outcome("superseded")
    if not change.before and not change.after and not change.submodules:
        verdict = verdict_for_no_change()
    else:
        note = NOTE_PR_FILES_CAP if change.is_truncated and not pr.is_merge_group else ""
        try:
            moved = [diffing.Finding("error", "unknown-source", p, SUBMODULE_MOVED)
                     for p in change.submodules]
            report = await analyse(change.before, change.after, options, notes=moved)
        except diffing.ManifestError as exc:
            verdict = verdict_for_error(f"invalid manifest: {exc.message}")
        except diffing.DiffingError as exc:
            verdict = verdict_for_error(str(exc))
        except TimeoutError:
            verdict = verdict_for_error(f"the analysis took longer than {options.timeout:g} s")
        except Exception as exc:  # noqa: BLE001 - a core bug must still leave an error status
            log.exception("%s: analysis failed", pr.full_name)
            verdict = verdict_for_error(f"internal error ({type(exc).__name__})")
        else:
            heads = {source.split(":", 1)[1]: text for source, text in change.after}
            edits = edits_for(report, heads.get, change.patches)
            verdict = verdict_for_report(report, note=note, edits=edits)
        timings["analyse"] = time.monotonic() - started
    verdict, mode = await comment_mode(gh, pr, pr.base_sha, verdict)
    return await publish_verdict(gh, pr, verdict, check_run=check_run, is_current=is_current,
                                 timings=timings, approval_key=options.approval_key, comment_mode=mode)


async def _run_rendered(gh: GitHubClient, pr: PullRequest, options: AnalysisOptions, *, check_run: bool,
                        is_current: Callable[[], bool], argocd: ArgoCDClient | None) -> Outcome:
    started = time.monotonic()
    timings: dict[str, float] = {}

    async def publish(verdict: Verdict, footer: str | None = None,
                      base: tuple[str, str] | None = None) -> Outcome:
        verdict, mode = await comment_mode(gh, pr, base[1] if base is not None else pr.base_sha, verdict)
        return await publish_verdict(gh, pr, verdict, check_run=check_run, is_current=is_current,
                                     timings=timings, footer=footer, approval_key=options.approval_key,
                                     base=base, comment_mode=mode)

    try:
        revisions = await resolve(gh, pr, waits=options.mergeable_waits)
        pull = await render_pull(gh, pr, options.render_options, tarball_max_bytes=options.tarball_max_bytes,
                                 argocd=argocd, revisions=revisions)
    except GitHubError as exc:
        log.error("%s: cannot read the change: %s", pr.full_name, exc)
        verdict = verdict_for_error(f"cannot read the change from GitHub ({exc})", comment=False)
        outcome = await publish(verdict)
        outcome.retryable = True
        return outcome
    except ArgoCDError as exc:
        log.error("%s: cannot list the Argo CD Applications: %s", pr.full_name, exc)
        verdict = verdict_for_error(f"cannot list the Argo CD Applications ({exc})")
        outcome = await publish(verdict)
        outcome.retryable = True
        return outcome
    except Exception as exc:  # noqa: BLE001 - a renderer bug must still leave an error status
        log.exception("%s: rendering failed", pr.full_name)
        verdict = verdict_for_error(f"internal error while rendering ({type(exc).__name__})")
        return await publish(verdict)
    timings["render"] = time.monotonic() - started
    if not is_current():
        return Outcome("superseded")
    verdict = await _verdict_for_rendered(pr, pull, options)
    timings["analyse"] = time.monotonic() - started
    footer = revisions.footer(pull.via) + (f" · re-run by @{pr.requested_by}" if pr.requested_by else "")
    return await publish(verdict, footer, (revisions.base_ref or pr.base_ref, revisions.base))


async def comment_mode(gh: GitHubClient, pr: PullRequest, base_sha: str,
                       verdict: Verdict) -> tuple[Verdict, str]:
    """The repository's comment mode (:mod:`.repo_config`, read at the base it was compared with)
    and the verdict, with a warning in its comment when the setting cannot be used. A merge group
    gets no comment: nothing to read."""
    if pr.is_merge_group or not base_sha:
        return verdict, ALWAYS
    config = await read_config(gh, pr.owner, pr.repo, base_sha)
    return warned(verdict, config), config.comment


async def _verdict_for_rendered(pr: PullRequest, pull: RenderedPull, options: AnalysisOptions) -> Verdict:
    rendered = pull.rendered
    if not rendered.before and not rendered.after and not rendered.notes:
        return verdict_for_no_change()
    note = notes_text(pull.revisions.all_notes if pull.revisions is not None else ())
    patches = pull.revisions.patches if pull.revisions is not None else {}
    if options.pool is not None:  # worker processes (the service): the forge-neutral verdict
        return await verdict_of(pr.full_name, rendered, note, patches, options)
    try:
        report = await analyse_rendered(rendered, options)
    except diffing.ManifestError as exc:
        return verdict_for_error(f"invalid manifest: {exc.message}")
    except diffing.DiffingError as exc:
        return verdict_for_error(str(exc))
    except TimeoutError:
        return verdict_for_error(f"the analysis took longer than {options.timeout:g} s")
    except Exception as exc:  # noqa: BLE001 - a core bug must still leave an error status
        log.exception("%s: analysis failed", pr.full_name)
        return verdict_for_error(f"internal error ({type(exc).__name__})")
    if not report.resources and not report.findings:
        return verdict_for_no_change()  # rendered, but no Ray object (nor any problem) in it
    return rendered_report_verdict(report, rendered, note, patches)


async def publish_verdict(gh: GitHubClient, pr: PullRequest, verdict: Verdict, *, check_run: bool = False,
                          is_current: Callable[[], bool] = lambda: True,
                          timings: dict[str, float] | None = None, footer: str | None = None,
                          approval_key: bytes = b"", base: tuple[str, str] | None = None,
                          comment_mode: str = ALWAYS) -> Outcome:
    """Sticky comment, then the status on the head SHA, then (App only) the check run.

    ``base``: (branch, commit) the head was compared with (default: the event's);
    ``comment_mode``: the repository's (:mod:`.repo_config`). A merge group
    gets no comment (there is no pull request to comment on). A hold a maintainer accepted for
    exactly this result (a verified approval stamp in the sticky comment, bound to this pull
    request, head, base branch and commit, and report digest) keeps the approval line and posts
    success; an approval of anything else is void, and the comment says why. A success goes up
    only when no other pull request with this head SHA holds it (:func:`gate_for_head`)."""
    timings = {} if timings is None else timings
    started = time.monotonic()
    if not is_current():
        return Outcome("superseded")
    ref, sha = base if base is not None else (pr.base_ref, pr.base_sha)
    binding = Binding(pr.number, pr.head_sha, ref, sha, verdict.digest)
    outcome = Outcome(verdict.state, verdict.description, timings=timings)
    async with commit_lock(pr):
        if not pr.is_merge_group:
            verdict = await _comment(gh, pr, verdict, outcome, footer, approval_key, binding, comment_mode)
            if outcome.comment != "stale" and is_current():  # the author's edits where GitHub applies them
                outcome.suggestions = await post_suggestions(gh, pr, verdict.edits)
        if not is_current():  # a newer head arrived while we wrote the comment: its run posts the rest
            outcome.state = "superseded"
            return outcome
        verdict = await gate_for_head(gh, pr, verdict, outcome, approval_key, binding, footer)
        await post_gate(gh, pr, verdict, outcome, check_run=check_run)
    timings["publish"] = time.monotonic() - started
    return outcome


async def _comment(gh: GitHubClient, pr: PullRequest, verdict: Verdict, outcome: Outcome,
                   footer: str | None, key: bytes, binding: Binding, mode: str = ALWAYS) -> Verdict:
    """Post the sticky comment; the verdict as accepted, when the comment carries an approval of
    exactly this result."""
    try:
        outcome.comment, approval = await _post_sticky(gh, pr, verdict, footer, key, binding, mode)
    except GitHubError as exc:
        log.error("%s: comment not posted: %s", pr.full_name, exc)
        outcome.comment, approval = "failed", None
    if approval is None or verdict.state == "success":
        return verdict
    log.info("%s: hold accepted by @%s for head %s", pr.full_name, approval.by, pr.head_sha[:7])
    verdict = approved(verdict, approval)
    outcome.state, outcome.description = verdict.state, verdict.description
    return verdict


async def gate_for_head(gh: GitHubClient, pr: PullRequest, verdict: Verdict, outcome: Outcome, key: bytes,
                        binding: Binding | None = None, footer: str | None = None) -> Verdict:
    """``verdict`` as it may go on the head SHA: :func:`app.forge.publish.gate` through the forge
    boundary (a success that another pull request with this head holds is a failure naming it, one
    that cannot be checked is an error, and a result held that way without a comment gets one
    when ``binding`` is given)."""
    change = Change(pr.full_name, pr.number, pr.head_sha, pr.base_ref, pr.updated_at)
    footer = footer_for(pr) if footer is None else footer
    return await gate(GitHubForge(gh, pr), change, verdict, outcome, key, binding, footer)


async def post_gate(gh: GitHubClient, pr: PullRequest, verdict: Verdict, outcome: Outcome, *,
                    check_run: bool) -> None:
    """The ``rayservice-impact`` status (and, with an App, check run) on the head SHA; the status
    names what it is for (:func:`.gate.status_url`)."""
    forge = GitHubForge(gh, pr, check_run=check_run)  # the forge boundary: status, check run
    try:
        await forge.set_status(verdict)
    except GitHubError as exc:
        log.error("%s: status not posted: %s", pr.full_name, exc)
        outcome.state, outcome.retryable = "failed", True
    if check_run:
        try:
            outcome.check_run = await forge.annotate(verdict)
        except GitHubError as exc:
            log.error("%s: check run not posted: %s", pr.full_name, exc)


async def post_sticky_comment(gh: GitHubClient, pr: PullRequest, verdict: Verdict, *,
                              footer: str | None = None, approval_key: bytes = b"",
                              comment_mode: str = ALWAYS) -> str:
    """Create or edit the one comment carrying the marker; never let an older run overwrite a
    newer one (the stamp's ``at`` is the PR's ``updated_at`` the run started from)."""
    binding = Binding(pr.number, pr.head_sha, pr.base_ref, pr.base_sha, verdict.digest)
    return (await _post_sticky(gh, pr, verdict, footer, approval_key, binding, comment_mode))[0]


async def _post_sticky(gh: GitHubClient, pr: PullRequest, verdict: Verdict, footer: str | None,
                       key: bytes, binding: Binding, mode: str = ALWAYS) -> tuple[str, Approval | None]:
    """(what happened to the comment, the approval it carries of exactly this result, if any):
    :func:`app.forge.publish.post_sticky` through the forge boundary (quiet modes included)."""
    change = Change(pr.full_name, pr.number, pr.head_sha, pr.base_ref, pr.updated_at)
    footer = footer_for(pr) if footer is None else footer
    return await post_sticky(GitHubForge(gh, pr), change, verdict, footer, key, binding, mode)
