"""Which two commits a merge request compares: what runs now against what the merge deploys.

Everything is read from the TARGET project (a fork's merge request too: GitLab keeps
``refs/merge-requests/:iid/head`` and ``.../merge`` in the target project, docs
user/project/merge_requests/merge_request_troubleshooting.md "Check out merge requests locally
through the head ref" and api/merge_requests.md "merge_ref_path"), never from the fork:

* **train**: when the merge request is in a merge train and ``refs/merge-requests/:iid/train``
  exists with the head as its second parent: its first parent (what the train built it on: the
  target tip, or the car ahead) against the train commit. The train ref's name and shape are a
  GUESS from GitLab's merge train pipelines (ci/pipelines/merge_trains.md: the train pipeline runs
  on the merged result of the changes ahead and this one); without it the merge ref is used.
* **merge** (the normal case): ``merge_status`` ``can_be_merged`` and
  ``refs/merge-requests/:iid/merge`` (read with
  ``GET repository/commits/refs%2Fmerge-requests%2F:iid%2Fmerge``) has the head as its second
  parent: its first parent (the target tip it was built on) against it.
  When the target branch moved on since, the note says so (GitLab rebuilds the ref on its next
  mergeability check).
* **merge-base**: conflicts (``cannot_be_merged``), no merge ref, or ``merge_status`` still
  ``unchecked``/``checking`` after a few short waits: the merge base of the target tip and the
  head (``GET repository/merge_base``) against the head, and the note says why.

The changed paths are ``GET repository/compare?straight=true`` between the two.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from app.clients.gitlab import GitLabClient, GitLabError, GitLabNotFound
from app.forge import Revisions

log = logging.getLogger(__name__)

# GitLab's default "maximum diff files" limit (administration/diff_limits.md): a comparison past it
# is cut, so the change cannot be known whole.
COMPARE_FILES_CAP = 1000
MERGEABLE_WAITS = (0.5, 1.0, 2.0, 3.0)  # re-reading the merge request while merge_status is being checked
CHECKING = frozenset({"unchecked", "checking", "cannot_be_merged_recheck"})

NOTE_CONFLICT = ("GitLab reports that this merge request cannot be merged into `{ref}` as it is "
                 "(`merge_status: cannot_be_merged`, usually a conflict): compared its merge base `{base}` "
                 "with its head instead of the merge result. Resolve the conflict to see what the merge "
                 "deploys.")
NOTE_UNKNOWN = ("GitLab had not finished checking whether this merge request merges (`merge_status: "
                "{status}`): compared its merge base `{base}` with its head. `/rayservice-impact rerun` "
                "compares with the merge result once GitLab has it.")
NOTE_NO_MERGE_REF = ("GitLab has no merge result for head `{head}` (`refs/merge-requests/{iid}/merge` is "
                     "missing or built for another head): compared the merge base `{base}` with the head.")
NOTE_MOVED = ("The merge request's head moved on to `{now}` while this ran: compared the merge base "
              "`{base}` with `{head}`, the head this result is for; the newer head gets its own result.")
NOTE_STALE_MERGE = ("GitLab's merge result `{merge}` was built on `{built}`, and `{ref}` has moved on to "
                    "`{tip}` since: compared against `{built}`, what that merge was built on. "
                    "`/rayservice-impact rerun` once GitLab has rebuilt it.")
NOTE_TRAIN = ("This merge request is in a merge train: compared the train's merge result `{merge}` with "
              "`{built}`, what the train built it on (the target branch, or the merge requests ahead).")


async def commit_or_none(gl: GitLabClient, project: str, ref: str) -> dict[str, Any] | None:
    try:
        return await gl.commit(project, ref)
    except GitLabNotFound:
        return None


async def changed_paths(gl: GitLabClient, project: str, base: str, head: str) -> frozenset[str]:
    data = await gl.compare(project, base, head, straight=True)
    if data.get("compare_timeout"):
        raise GitLabError("GET", "/repository/compare", 200, "GitLab timed out comparing the revisions")
    diffs = data.get("diffs") or []
    if len(diffs) >= COMPARE_FILES_CAP:
        raise GitLabError("GET", "/repository/compare", 200,
                          f"the comparison lists {len(diffs)} files, GitLab's cap: the change cannot be "
                          "known whole")
    return frozenset(str(d[k]) for d in diffs for k in ("old_path", "new_path") if d.get(k))


async def resolve(gl: GitLabClient, project: str, iid: int, head: str, *,
                  waits: tuple[float, ...] = MERGEABLE_WAITS,
                  sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
                  mr: dict[str, Any] | None = None) -> Revisions:
    """What merge request ``iid`` of ``project`` (the target project) compares for ``head``
    (``mr``: its ``GET merge_requests/:iid`` when just read)."""
    mr = mr if mr is not None else await gl.merge_request(project, iid)
    pending = list(waits)
    while True:
        ref = str(mr.get("target_branch") or "")
        now = str(mr.get("sha") or "")
        if head and now and now != head:
            return await _merge_base(gl, project, iid, ref, head, NOTE_MOVED, now=now[:7])
        head = head or now
        train = await commit_or_none(gl, project, f"refs/merge-requests/{iid}/train")
        if train is not None and _merges(train, head):
            built = str(train["parent_ids"][0])
            return Revisions(built, str(train["id"]), "train",
                             await changed_paths(gl, project, built, str(train["id"])),
                             (NOTE_TRAIN.format(merge=str(train["id"])[:7], built=built[:7]),), ref, head)
        status = str(mr.get("merge_status") or "")
        if status == "can_be_merged":
            merge = await commit_or_none(gl, project, f"refs/merge-requests/{iid}/merge")
            if merge is None or not _merges(merge, head):
                return await _merge_base(gl, project, iid, ref, head, NOTE_NO_MERGE_REF)
            return await _merge_form(gl, project, ref, head, merge)
        if status not in CHECKING or not pending:
            note = NOTE_CONFLICT if status == "cannot_be_merged" else NOTE_UNKNOWN
            return await _merge_base(gl, project, iid, ref, head, note, status=status or "unknown")
        await sleep(pending.pop(0))
        mr = await gl.merge_request(project, iid)


def _merges(commit: dict[str, Any], head: str) -> bool:
    parents = [str(p) for p in commit.get("parent_ids") or []]
    return len(parents) == 2 and parents[1] == head


async def _merge_form(gl: GitLabClient, project: str, ref: str, head: str,
                      merge: dict[str, Any]) -> Revisions:
    built, merge_sha = str(merge["parent_ids"][0]), str(merge["id"])
    tip = str((await gl.branch(project, ref))["commit"]["id"])
    notes = () if built == tip else (NOTE_STALE_MERGE.format(merge=merge_sha[:7], built=built[:7], ref=ref,
                                                             tip=tip[:7]),)
    return Revisions(built, merge_sha, "merge", await changed_paths(gl, project, built, merge_sha), notes,
                     ref, head)


async def _merge_base(gl: GitLabClient, project: str, iid: int, ref: str, head: str, note: str,
                      **fmt: Any) -> Revisions:
    tip = str((await gl.branch(project, ref))["commit"]["id"])
    base = await gl.merge_base(project, tip, head)
    text = note.format(ref=ref, base=base[:7], head=head[:7], iid=iid, **fmt)
    changed = await changed_paths(gl, project, base, head)
    return Revisions(base, head, "merge-base", changed, (text,), ref, head)
