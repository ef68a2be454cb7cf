"""The forge boundary: what the change-request flow needs from a code host, and nothing else.

A :class:`Forge` is bound to one change under review (a GitHub pull request, a GitLab merge
request) and answers:

* :meth:`Forge.revisions`: the two commits compared (what runs now: the target branch's tip;
  what the merge deploys: the host's test merge commit, else the merge base against the head,
  said so in the note), with every changed path between them;
* :meth:`Forge.archive`: a revision as gzip tar bytes, capped (:class:`ArchiveTooLarge`);
* the one sticky note: :meth:`Forge.find_sticky`, :meth:`Forge.create_note`, :meth:`Forge.update_note`;
* :meth:`Forge.set_status`: the gate on the head commit;
* :meth:`Forge.annotate`: inline findings where the host takes them from a service (GitHub:
  check-run annotations; GitLab: threads on lines of the merge request's diff, opt-in, from the
  webhook service, :mod:`app.gitlab.inline`; the CI job's route is its Code Quality report,
  docs/gitlab.md);
* :meth:`Forge.may_approve`: whether a user may accept a hold;
* :meth:`Forge.holders`: what else with the same head commit holds it (a host keeps one status per
  commit, so a success must not cover another change's hold), under :meth:`Forge.head_lock`.

Implementations: :class:`app.forge.github.GitHubForge` and :class:`app.forge.gitlab.GitLabForge`.
The forge-neutral flow, one function per step, used by both forges:

* :mod:`app.forge.render`: both archives, capped, unpacked and rendered (GitHub's tarballs too);
* :mod:`app.forge.verdict`: the rendered change's verdict (in the worker pool; GitHub's service
  path too);
* :mod:`app.forge.publish`: the sticky note with stamps, binding and approval (GitHub's comment
  too, its quiet modes included), then the status;
* :mod:`app.forge.judge`: the whole run (GitLab; GitHub keeps its own driver in
  :mod:`app.github.flow`, which adds Argo CD rendering, merge groups, suggestions and the gate
  over other pull requests with the same head).

Errors from a forge are :class:`app.clients.upstream.UpstreamError` (GitHubError, GitLabError).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any, Protocol

from app.clients.upstream import UpstreamError
from app.github.comment import Verdict

__all__ = ["ArchiveTooLarge", "Change", "Forge", "Revisions"]


class ArchiveTooLarge(UpstreamError):
    """A revision's archive is over the cap: a verdict about the change, not a transient failure."""

    def __init__(self, sha: str, limit: int) -> None:
        super().__init__(f"the archive of {sha[:12]} is larger than {limit} bytes", status=None)
        self.sha, self.limit = sha, limit


@dataclass(frozen=True, slots=True)
class Change:
    """The change under review, as the forge-neutral flow names it."""

    name: str              # for logs: "group/project!3", "owner/repo#3"
    number: int            # the pull or merge request's number (GitLab: iid)
    head_sha: str          # gets the status
    base_ref: str          # the target branch
    updated_at: str        # ISO 8601 UTC: orders results (an older run never overwrites a newer one)
    requested_by: str = ""  # who asked for this run (``/rayservice-impact rerun``)


@dataclass(frozen=True, slots=True)
class Revisions:
    base: str                        # rendered as "before": what runs now
    head: str                        # rendered as "after": what the merge would deploy
    form: str                        # merge | train | merge-base | event | merge-group
    changed: frozenset[str]          # every path that differs between them (both names of a rename)
    notes: tuple[str, ...] = ()      # said above the verdict
    base_ref: str = ""
    status_sha: str = ""             # the change's head: it gets the status
    patches: dict[str, str] = field(default_factory=dict, compare=False)  # path -> patch (suggestions)

    def footer(self, via: str = "", word: str = "merge") -> str:
        """The note's last line: which commits were compared and, when rendered, which way."""
        return footer_line(self.form, self.base, self.head, self.status_sha, self.base_ref, via, word)


def footer_line(form: str, base: str, head: str, status_sha: str, base_ref: str = "", via: str = "",
                word: str = "merge") -> str:
    """The comment's or note's last line, the same on every forge: which commits were compared
    (``form``: merge | train | merge-base | merge-group | event) and, when rendered, which way."""
    b, h, s = base[:7], head[:7], status_sha[:7]
    ref = f" ({base_ref})" if base_ref else ""
    if form in ("merge", "train"):
        what = "merge train commit" if form == "train" else word
        text = f"rayservice-impact · base `{b}`{ref} → {what} `{h}` of head `{s}`"
    elif form == "merge-base":
        text = f"rayservice-impact · merge base `{b}` → head `{h}`"
    elif form == "merge-group":
        text = f"rayservice-impact · base `{b}`{ref} → merge group `{h}`"
    else:
        text = f"rayservice-impact · base `{b}` → head `{h}`"
    return text + (f" · {via}" if via else "")


class Forge(Protocol):
    """One change on one code host (see the module docstring)."""

    host: str  # "GitHub" | "GitLab": said in messages
    noun: str  # "pull request" | "merge request"

    async def revisions(self) -> Revisions: ...

    async def archive(self, sha: str, max_bytes: int) -> bytes: ...

    async def find_sticky(self) -> dict[str, Any] | None:
        """Our note carrying the marker (``id``, ``body``, ``updated_at``), written by our identity."""
        ...

    async def create_note(self, body: str) -> None: ...

    async def update_note(self, note_id: int, body: str) -> None: ...

    async def set_status(self, verdict: Verdict) -> None: ...

    async def annotate(self, verdict: Verdict) -> bool:
        """Post ``verdict.annotations`` inline where the host takes them; False when it does not."""
        ...

    async def may_approve(self, user: str | int) -> tuple[bool, str]:
        """(allowed?, the user's role as the host names it)."""
        ...

    def head_lock(self) -> asyncio.Lock:
        """One publisher at a time per head commit in this process (:mod:`app.forge.publish`)."""
        ...

    async def holders(self, key: bytes) -> list[str]:
        """What else with this change's head commit holds it, as the host keeps one status per
        commit: ``["!7 (held)", "!8 (no result yet)"]``; [] when nothing does."""
        ...
