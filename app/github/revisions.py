"""Which two commits a job compares: what runs now against what the merge would deploy.

A pull request's ``base.sha`` is not "what runs now": once the base branch has moved on, a diff
``base.sha..head.sha`` mixes the branch's own later changes into the pull request, reversed (a PR
that touched only ``fruit.yaml`` holds for a RayService that main changed meanwhile). So:

* **merge** (the normal case): the base branch's current tip against GitHub's test merge commit
  (``merge_commit_sha``, the commit ``refs/pull/{n}/merge`` points at: the PR's head merged into
  the base branch), i.e. exactly what merging would deploy. The changed paths come from
  ``GET compare/{tip}...{merge}``.
* **merge-base**: when GitHub reports the pull request unmergeable (``mergeable: false``), or has
  not worked mergeability out within a few seconds, the merge base against the head: the pull
  request's own change, said so in the comment.
* **merge-group**: a merge queue's group: its ``base_sha`` against its ``head_sha`` (the group's
  head already is the merge of the queued pull requests onto the branch).
* **event**: the payload's ``base.sha`` and ``head.sha`` as they are, only when GitHub does not
  show the pull request at all (``GET pulls/{n}`` 404), said so in the comment.

The status and check run always go to the pull request's head SHA (or the group's head SHA).
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from app.clients.github import GitHubClient, GitHubError, GitHubNotFound
from app.forge import footer_line

from .change import FILES_CAP, PullRequest, fetch_changed_paths

log = logging.getLogger(__name__)

COMPARE_FILES_CAP = 300   # GitHub lists at most 300 files of a comparison
# GET pulls/{n} answers ``mergeable: null`` while a background job computes it; GitHub's advice is
# to ask again after giving it time. These waits bound that (about 10 s in all).
MERGEABLE_WAITS = (0.5, 1.0, 1.5, 2.0, 2.0, 3.0)

NOTE_NO_PULL = ("GitHub did not show this pull request (`GET pulls/{n}` answered 404), so the event's "
                "base `{base}` and head `{head}` were compared as they are: changes the base branch made "
                "after `{base}`, or before it but after the branch point, can show up here.")
NOTE_UNMERGEABLE = ("GitHub reports that this pull request cannot be merged into `{ref}` as it is "
                    "(`mergeable: false`, usually a conflict): compared its merge base `{base}` with its "
                    "head instead of the merge result. Resolve the conflict to see what the merge deploys.")
NOTE_UNKNOWN = ("GitHub had not worked out whether this pull request merges after {waited:g} s "
                "(`mergeable: null`): compared its merge base `{base}` with its head. "
                "`/rayservice-impact rerun` compares with the merge result once GitHub has it.")
NOTE_MOVED = ("The pull request's head moved on to `{now}` while this ran: compared the merge base `{base}` "
              "with `{head}`, the head this result is for; the newer head gets its own result.")
NOTE_STALE_MERGE = ("GitHub's test merge `{merge}` was built on `{built}`, and `{ref}` has moved on to "
                    "`{tip}` since: compared against `{built}`, what that merge commit was built on. "
                    "`/rayservice-impact rerun` once GitHub has updated it.")
NOTE_COMPARE_CAP = ("GitHub lists at most 300 files of a comparison: the changed paths are the pull "
                    "request's files list instead.")
NOTE_PR_FILES_CAP = "GitHub lists at most 3 000 files of a pull request; files past that were not analysed."


class ChangeUnknown(GitHubError):
    """The changed paths cannot be listed completely (a merge group's tree too large for GitHub)."""


@dataclass(frozen=True, slots=True)
class Revisions:
    base: str                        # rendered as "before": what runs now
    head: str                        # rendered as "after": what the merge would deploy
    form: str                        # merge | merge-base | merge-group | event
    changed: frozenset[str]          # every path that differs (both names of a rename)
    pr_files_listed: int = 0         # the PR files list's length, when its paths are the changed ones
    notes: tuple[str, ...] = ()      # said in the comment, above the verdict
    base_ref: str = ""
    status_sha: str = ""             # the PR's (or group's) head: it gets the status
    entries: tuple[dict[str, Any], ...] | None = field(default=None, compare=False)  # merge groups
    patches: dict[str, str] = field(default_factory=dict, compare=False)  # the PR's files list: path -> patch

    @property
    def is_truncated(self) -> bool:
        return self.pr_files_listed >= FILES_CAP

    @property
    def all_notes(self) -> tuple[str, ...]:
        return ((NOTE_PR_FILES_CAP,) if self.is_truncated else ()) + self.notes

    def footer(self, via: str = "") -> str:
        """The comment's last line: which commits were compared and, when rendered, which way."""
        return footer_line(self.form, self.base, self.head, self.status_sha, self.base_ref, via)


def paths_of(entries: Iterable[dict[str, Any]]) -> frozenset[str]:
    return frozenset(str(e[k]) for e in entries for k in ("filename", "previous_filename") if e.get(k))


async def resolve(gh: GitHubClient, pr: PullRequest, *, waits: tuple[float, ...] = MERGEABLE_WAITS,
                  sleep: Callable[[float], Awaitable[None]] = asyncio.sleep) -> Revisions:
    """What ``pr`` (a pull request or a merge group) compares; GitHubError when GitHub cannot be read."""
    if pr.is_merge_group:
        return await merge_group_revisions(gh, pr)
    patches: dict[str, str] = {}
    paths, listed = await fetch_changed_paths(gh, pr, patches)
    revisions = await pull_revisions(gh, pr, frozenset(paths), listed, waits=waits, sleep=sleep)
    return dataclasses.replace(revisions, patches=patches)  # what review comments can be anchored on


async def pull_revisions(gh: GitHubClient, pr: PullRequest, paths: frozenset[str], listed: int, *,
                         waits: tuple[float, ...] = MERGEABLE_WAITS,
                         sleep: Callable[[float], Awaitable[None]] = asyncio.sleep) -> Revisions:
    """The merge form when GitHub has a current test merge for this head, else the merge-base form.

    ``paths``/``listed``: the pull request's files list (GitHub lists a pull request's files
    against the merge base, so it is the merge-base form's change, and the fallback when a
    comparison is cut at 300 files)."""
    o, r = pr.owner, pr.repo
    event = Revisions(pr.base_sha, pr.head_sha, "event", paths, listed, base_ref=pr.base_ref,
                      status_sha=pr.head_sha)
    pending = list(waits)
    waited = 0.0
    try:
        pull = await gh.get_pull(o, r, pr.number)
    except GitHubNotFound:
        log.warning("%s: GET pulls/%d is 404; comparing the event's commits", pr.full_name, pr.number)
        return _with(event, NOTE_NO_PULL.format(n=pr.number, base=pr.base_sha[:7], head=pr.head_sha[:7]))
    while True:
        ref = str((pull.get("base") or {}).get("ref") or pr.base_ref)
        now = str((pull.get("head") or {}).get("sha") or "")
        if now and now != pr.head_sha:
            return await _merge_base(gh, pr, ref, paths, listed, NOTE_MOVED, now=now[:7])
        mergeable, merge = pull.get("mergeable"), pull.get("merge_commit_sha")
        if mergeable is False:
            return await _merge_base(gh, pr, ref, paths, listed, NOTE_UNMERGEABLE)
        if mergeable is True and merge:
            tip = await gh.branch_tip(o, r, ref)
            compared = await gh.compare(o, r, tip, str(merge))
            built = str((compared.get("merge_base_commit") or {}).get("sha") or tip)
            if built == tip or not pending:
                return _merge_form(pr, ref, tip, built, str(merge), compared, paths, listed)
            # The test merge was built on an older tip: asking for the pull request again makes
            # GitHub recompute it (mergeable turns null meanwhile).
        if not pending:
            return await _merge_base(gh, pr, ref, paths, listed, NOTE_UNKNOWN, waited=round(waited))
        wait = pending.pop(0)
        waited += wait
        await sleep(wait)
        pull = await gh.get_pull(o, r, pr.number)


def _with(revisions: Revisions, *notes: str) -> Revisions:
    return Revisions(revisions.base, revisions.head, revisions.form, revisions.changed,
                     revisions.pr_files_listed, revisions.notes + notes, revisions.base_ref,
                     revisions.status_sha, revisions.entries)


def _merge_form(pr: PullRequest, ref: str, tip: str, built: str, merge: str, compared: dict[str, Any],
                paths: frozenset[str], listed: int) -> Revisions:
    notes: list[str] = []
    base = tip
    if built != tip:
        base = built
        notes.append(NOTE_STALE_MERGE.format(merge=merge[:7], built=built[:7], ref=ref, tip=tip[:7]))
    files = compared.get("files") or []
    if len(files) >= COMPARE_FILES_CAP:
        notes.append(NOTE_COMPARE_CAP)
        changed, used = paths, listed
    else:
        changed, used = paths_of(files), 0
    return Revisions(base, merge, "merge", changed, used, tuple(notes), ref, pr.head_sha)


async def _merge_base(gh: GitHubClient, pr: PullRequest, ref: str, paths: frozenset[str], listed: int,
                      note: str, **fmt: Any) -> Revisions:
    """The merge base of the base branch's tip and the head, against the head."""
    tip = pr.base_sha
    if ref:
        try:
            tip = await gh.branch_tip(pr.owner, pr.repo, ref)
        except GitHubNotFound:
            log.warning("%s: the base branch %r is gone; using the event's base", pr.full_name, ref)
    compared = await gh.compare(pr.owner, pr.repo, tip, pr.head_sha)
    base = str((compared.get("merge_base_commit") or {}).get("sha") or tip)
    text = note.format(ref=ref, base=base[:7], head=pr.head_sha[:7], **fmt)
    return Revisions(base, pr.head_sha, "merge-base", paths, listed, (text,), ref, pr.head_sha)


async def merge_group_revisions(gh: GitHubClient, pr: PullRequest) -> Revisions:
    """A merge group: its base against its head; the changed paths from the comparison, or from
    both trees when the comparison is cut at 300 files."""
    entries = await merge_group_entries(gh, pr)
    return Revisions(pr.base_sha, pr.head_sha, "merge-group", paths_of(entries), 0, (), pr.base_ref,
                     pr.head_sha, tuple(entries))


async def merge_group_entries(gh: GitHubClient, pr: PullRequest) -> list[dict[str, Any]]:
    """``diff-entry``-shaped records of every file the group changes (status, filename)."""
    compared = await gh.compare(pr.owner, pr.repo, pr.base_sha, pr.head_sha)
    files = list(compared.get("files") or [])
    if len(files) < COMPARE_FILES_CAP:
        return files
    (before, cut_b), (after, cut_a) = await asyncio.gather(gh.tree_blobs(pr.owner, pr.repo, pr.base_sha),
                                                           gh.tree_blobs(pr.owner, pr.repo, pr.head_sha))
    if cut_b or cut_a:
        raise ChangeUnknown("GET", f"/repos/{pr.owner}/{pr.repo}/git/trees", None,
                            "the comparison lists only 300 files and the tree is too large for GitHub to "
                            "list whole, so the change cannot be known")
    entries = []
    for path in sorted(before.keys() | after.keys()):
        if before.get(path) == after.get(path):
            continue
        status = "added" if path not in before else "removed" if path not in after else "modified"
        entries.append({"filename": path, "status": status})
    return entries
