"""Which commits a merge request compares (app.gitlab.revisions) against the stand-in's real git
refs: GitLab still checking mergeability, a merge ref built on an older target tip, a merge ref
for another head."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import httpx
from gitlab_helpers import PATH, PROJECT_ID, TOKEN, branch, bump, gitops_repo
from gitlab_standin import GitLabStandIn, git
from serverutil import running_server

from app.clients.gitlab import GitLabClient
from app.forge import Revisions
from app.gitlab.revisions import resolve


def resolved(s: GitLabStandIn, iid: int, head: str) -> tuple[Revisions, list[float]]:
    slept: list[float] = []

    async def sleep(seconds: float) -> None:
        slept.append(seconds)

    with running_server(s.app, ready_path=None) as url:
        async def go() -> Revisions:
            async with httpx.AsyncClient() as http:
                return await resolve(GitLabClient(http, url, TOKEN), PATH, iid, head, sleep=sleep)
        return asyncio.run(go()), slept


def setup(tmp_path: Path, **kwargs: Any) -> tuple[Path, str, str, GitLabStandIn]:
    repo, start = gitops_repo(tmp_path)
    head = branch(repo, "bump", start, bump)
    s = GitLabStandIn(token=TOKEN)
    s.add_project(PROJECT_ID, PATH, repo)
    s.add_merge_request(PROJECT_ID, 1, source_branch="bump", head_sha=head, **kwargs)
    return repo, start, head, s


def test_still_checking_waits_then_compares_the_merge_base(tmp_path: Path) -> None:
    repo, start, head, s = setup(tmp_path, merge_status="checking")
    r, slept = resolved(s, 1, head)
    assert (r.form, r.base, r.head) == ("merge-base", start, head)
    assert "merge_status: checking" in r.notes[0] and slept == [0.5, 1.0, 2.0, 3.0]
    assert len(s.calls_to("GET", r"/merge_requests/1$")) == 5
    assert r.changed == {"overlays/prod/kustomization.yaml"}


def test_checking_then_mergeable_uses_the_merge_ref(tmp_path: Path) -> None:
    repo, start, head, s = setup(tmp_path, merge_status="checking")
    mr = s.mrs[(PROJECT_ID, 1)]

    original = s._mr

    def flip(request: Any, call: Any, g: dict[str, str]) -> Any:
        if len(s.calls_to("GET", r"/merge_requests/1$")) >= 2:
            mr["merge_status"] = "can_be_merged"
        return original(request, call, g)

    s.routes = [(m, p, flip if h == original else h) for m, p, h in s.routes]
    r, slept = resolved(s, 1, head)
    merge = git(repo, "rev-parse", "refs/merge-requests/1/merge")
    assert (r.form, r.base, r.head, r.notes) == ("merge", start, merge, ())
    assert slept == [0.5]


def test_merge_ref_built_on_an_older_tip_is_compared_with_what_it_was_built_on(tmp_path: Path) -> None:
    repo, start, head, s = setup(tmp_path)
    (repo / "README.md").write_text("# main moved\n")
    git(repo, "commit", "-qam", "main moves on")
    tip = git(repo, "rev-parse", "HEAD")
    r, _ = resolved(s, 1, head)
    assert r.form == "merge" and r.base == start and r.base != tip
    assert "has moved on to" in r.notes[0] and tip[:7] in r.notes[0]


def test_merge_ref_of_another_head_is_not_used(tmp_path: Path) -> None:
    repo, start, head, s = setup(tmp_path)
    other = branch(repo, "other", start, lambda r: (r / "README.md").write_text("# other\n"))
    git(repo, "update-ref", "refs/merge-requests/1/merge", git(repo, "rev-parse", "refs/heads/main"))
    s.mrs[(PROJECT_ID, 1)]["sha"] = head
    r, _ = resolved(s, 1, head)
    assert r.form == "merge-base" and "refs/merge-requests/1/merge" in r.notes[0]
    r2, _ = resolved(s, 1, other)   # the event's head is not the merge request's any more
    assert r2.form == "merge-base" and r2.head == other and "moved on to" in r2.notes[0]
