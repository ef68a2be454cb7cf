"""Publishing a verdict through a :class:`app.forge.Forge`: the one sticky note, then the status.

The note is :mod:`app.github.comment`'s: the hidden marker and stamps (head, the run's
``updated_at``, the analysis' own state, the :class:`~app.github.comment.Binding`: change number,
head, target branch and commit, report digest), the verified approval block when a maintainer
accepted exactly this result, or the note why an earlier approval no longer applies. It is
created once (a create that failed after the host stored it is found and edited, never doubled),
then edited in place; a note stamped by a newer run is never overwritten by an older one; a
repository's quiet comment mode (``on-change``, ``on-hold``) may leave it unwritten. The status goes
on the head commit on every run; an approval of exactly this result turns a hold into success.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from app.clients.upstream import UpstreamError
from app.github.comment import (
    Approval,
    Binding,
    Shown,
    Verdict,
    approved,
    no_change_body,
    numbers_of,
    pinned,
    render_body,
    shown_of,
    shown_part,
    stamp_of,
    verdict_for_error,
)
from app.github.gate import held_by
from app.github.repo_config import ALWAYS

from . import Change, Forge
from .options import Outcome

log = logging.getLogger(__name__)


async def publish(forge: Forge, change: Change, verdict: Verdict, *, footer: str, key: bytes,
                  base: tuple[str, str], is_current: Callable[[], bool] = lambda: True,
                  timings: dict[str, float] | None = None, mode: str = ALWAYS) -> Outcome:
    """Sticky note, then the status on the head (``base``: the branch and commit compared with;
    ``mode``: the repository's comment mode, which quiets the note only: the status is posted on
    every run, whatever the mode)."""

    timings = {} if timings is None else timings
    started = time.monotonic()
    if not is_current():
        return Outcome("superseded")
    binding = Binding(change.number, change.head_sha, base[0], base[1], verdict.digest)
    outcome = Outcome(verdict.state, verdict.description, timings=timings)
    async with forge.head_lock():  # what the gate reads of the other changes stays true until posted
        try:
            outcome.comment, approval = await post_sticky(forge, change, verdict, footer, key, binding, mode)
        except UpstreamError as exc:
            log.error("%s: note not posted: %s", change.name, exc)
            outcome.comment, approval = "failed", None
        if approval is not None and verdict.state != "success":
            log.info("%s: hold accepted by @%s for head %s", change.name, approval.by, change.head_sha[:7])
            verdict = approved(verdict, approval)
            outcome.state, outcome.description = verdict.state, verdict.description
        if not is_current():  # a newer head arrived while we wrote the note: its run posts the rest
            outcome.state = "superseded"
            return outcome
        verdict = await gate(forge, change, verdict, outcome, key, binding, footer)
        try:
            await forge.set_status(verdict)
        except UpstreamError as exc:
            log.error("%s: status not posted: %s", change.name, exc)
            outcome.state, outcome.retryable = "failed", True
    try:
        outcome.check_run = await forge.annotate(verdict)
    except UpstreamError as exc:
        log.error("%s: annotations not posted: %s", change.name, exc)
    timings["publish"] = time.monotonic() - started
    return outcome


async def gate(forge: Forge, change: Change, verdict: Verdict, outcome: Outcome, key: bytes,
               binding: Binding | None, footer: str) -> Verdict:
    """``verdict`` as it may go on the head (:meth:`Forge.holders`): a success that another change
    with this head holds is a failure naming it, and one whose others cannot be read is an error.
    A passing result held that way without a note of its own gets one (``binding``; None when the
    caller has just written the note, as an approval does), so that its own result is on record
    for the others' runs (else each would wait for the other): a note for nothing to report, the
    report itself for a pass a quiet comment mode kept to the status. Both forges' flows use it."""
    if verdict.state != "success":
        return verdict
    try:
        found = await forge.holders(key)
    except UpstreamError as exc:
        log.error("%s: cannot read the other results on %s: %s", change.name, change.head_sha[:7], exc)
        outcome.retryable = True
        gated = verdict_for_error(f"cannot check the other {forge.noun}s with this head ({exc})",
                                  comment=False)
        outcome.state, outcome.description = gated.state, gated.description
        return gated
    if found and binding is not None and outcome.comment == "quiet":  # a quiet pass: its report on record
        try:
            outcome.comment, _ = await post_sticky(forge, change, verdict, footer, key, binding)
        except UpstreamError as exc:
            log.error("%s: note not posted: %s", change.name, exc)
            outcome.comment = "failed"
    elif found and binding is not None and outcome.comment == "none":
        note = (f"This commit is also the head of {', '.join(found)}: {forge.host} keeps one "
                "`rayservice-impact` status per commit, so it shows what holds there.")
        body = no_change_body(change.head_sha, change.updated_at, bound=binding.line(), note=note)
        try:
            await forge.create_note(body)
            outcome.comment = "created"
        except UpstreamError as exc:
            log.error("%s: note not posted: %s", change.name, exc)
            outcome.comment = "failed"
    gated = held_by(verdict, found)
    outcome.state, outcome.description = gated.state, gated.description
    return gated


def wanted(mode: str, verdict: Verdict) -> bool:
    """Whether a run creates the comment (none is there yet) in the repository's comment mode:
    ``always`` for every result with a report; ``on-change`` when the change reaches a Ray object
    or does not pass; ``on-hold`` when it does not pass (a hold, or an analysis that failed)."""
    if mode == "on-hold":
        return verdict.state != "success"
    if mode == "on-change":
        return verdict.touches or verdict.state != "success"
    return True


async def post_sticky(forge: Forge, change: Change, verdict: Verdict, footer: str, key: bytes,
                      binding: Binding, mode: str = ALWAYS) -> tuple[str, Approval | None]:
    """(what happened to the note: created | updated | unchanged | stale | quiet | none, the
    approval of exactly this result it carries, if any).

    In a quiet ``mode`` (the repository's setting, :mod:`app.github.repo_config`; GitLab's service
    reads it through :mod:`app.forge.settings`) no note is created unless :func:`wanted`, and one
    whose stamped numbers (:func:`app.github.comment.numbers_digest`) equal this result's keeps its
    report as it is: only the hidden stamps (head, base, report) follow, so an approval binds to
    this head, and the footer says the report holds for it."""
    existing = await forge.find_sticky()
    shown = shown_of(existing, key) if existing is not None else None
    approval, void = carried(shown, binding, verdict)
    since = shown.since if shown is not None and shown.binding == binding else ""
    if verdict.markdown is None:
        if existing is None or verdict.state != "success":  # could not read the change: leave the last
            return "none", None                              # result standing
        body = no_change_body(change.head_sha, change.updated_at, bound=binding.line(since))
        approval = None
    else:
        if existing is None and not wanted(mode, verdict):
            return "quiet", None
        previous = str(existing.get("body") or "") if existing is not None else ""
        keep = shown_part(previous) if (mode != ALWAYS and verdict.numbers
                                        and numbers_of(previous) == verdict.numbers) else ""
        body = render_body(verdict.markdown, head_sha=change.head_sha, at=change.updated_at, footer=footer,
                           state=verdict.state, approval=approval.block(key) if approval else void,
                           bound=binding.line(since), numbers=verdict.numbers, keep=keep)
    if existing is None:
        await forge.create_note(body)
        return "created", None
    stamp = stamp_of(str(existing.get("body") or ""))
    if stamp and change.updated_at and stamp[1] > change.updated_at:
        log.info("%s: the %s holds a newer result (%s); not overwritten", change.name,
                 "comment" if forge.host == "GitHub" else "note", stamp[1])
        return "stale", None
    if pinned(str(existing.get("body") or ""), since) == body:
        return "unchanged", approval
    await forge.update_note(int(existing["id"]), body)
    return "updated", approval


def carried(shown: Shown | None, binding: Binding, verdict: Verdict) -> tuple[Approval | None, str]:
    """(the approval that applies to this result, else the note on why an earlier one does not)."""
    if shown is None or shown.approval is None:
        return None, ""
    if shown.approval.binding == binding:
        return shown.approval, ""
    if verdict.state == "success":
        return None, ""
    return None, shown.approval.void_block(binding.change_from(shown.approval.binding))
