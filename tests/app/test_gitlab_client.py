"""The GitLab client against the GitLab stand-in on a real uvicorn: auth header, retries,
pagination, size caps, errors without the token; and the stand-in's git-backed answers."""

from __future__ import annotations

import asyncio
import gzip
import io
import tarfile
from pathlib import Path
from typing import Any

import httpx
import pytest
from gitlab_standin import GitLabStandIn, git
from serverutil import running_server

from app.clients.gitlab import (
    ArchiveTooLarge,
    GitLabClient,
    GitLabError,
    GitLabNotFound,
    GitLabRetryExhausted,
    GitLabUncertain,
    RetryPolicy,
    project_id,
)

TOKEN = "glpat-standin0123456789abcdef"
PATH = "platform/ray-gitops"


def make_repo(tmp_path: Path) -> tuple[Path, str, str]:
    repo = tmp_path / "r"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "a.yaml").write_text("a: 1\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "one")
    base = git(repo, "rev-parse", "HEAD")
    git(repo, "checkout", "-q", "-b", "feature")
    (repo / "a.yaml").write_text("a: 2\n")
    (repo / "b.yaml").write_text("b: 1\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "two")
    head = git(repo, "rev-parse", "HEAD")
    git(repo, "checkout", "-q", "main")
    return repo, base, head


def run(standin: GitLabStandIn, body: Any, prefix: str = "", token: str | None = TOKEN,
        retry: RetryPolicy | None = None) -> Any:
    slept: list[float] = []

    async def sleep(s: float) -> None:
        slept.append(s)

    with running_server(standin.app, ready_path=None) as url:
        async def go() -> Any:
            async with httpx.AsyncClient() as http:
                gl = GitLabClient(http, url + prefix, token, retry=retry, sleep=sleep)
                return await body(gl), slept
        return asyncio.run(go())


@pytest.fixture
def standin(tmp_path: Path) -> tuple[GitLabStandIn, str, str]:
    repo, base, head = make_repo(tmp_path)
    s = GitLabStandIn("/gitlab", token=TOKEN)
    s.add_project(7, PATH, repo)
    s.add_merge_request(7, 1, source_branch="feature", head_sha=head)
    return s, base, head


def test_project_id_numbers_stay_paths_are_encoded() -> None:
    assert project_id(7) == "7"
    assert project_id("platform/ray-gitops") == "platform%2Fray-gitops"


def test_client_sends_private_token_under_a_relative_path(standin: Any) -> None:
    s, base, head = standin
    mr, _ = run(s, lambda gl: gl.merge_request(PATH, 1), prefix="/gitlab")
    assert mr["sha"] == head and mr["diff_refs"]["base_sha"] == base
    assert s.calls[-1].headers["private-token"] == TOKEN
    assert s.calls[-1].path == "/projects/platform%2Fray-gitops/merge_requests/1"


def test_client_bad_token_is_an_error_without_the_token(standin: Any) -> None:
    s, _, _ = standin

    async def body(gl: GitLabClient) -> str:
        with pytest.raises(GitLabError) as info:
            await gl.merge_request(7, 1)
        return str(info.value)

    text, _ = run(s, body, prefix="/gitlab", token="glpat-wrong-secret-value")
    assert "401" in text and "glpat" not in text


def test_client_retries_5xx_then_succeeds(standin: Any) -> None:
    s, _, head = standin
    s.fail("GET", r"/merge_requests/1$", 502, times=2)
    (mr, slept) = run(s, lambda gl: gl.merge_request(7, 1), prefix="/gitlab")
    assert mr["sha"] == head and slept == [0.5, 1.0]


def test_client_honours_retry_after_and_ratelimit_reset(standin: Any) -> None:
    s, _, _ = standin
    s.fail("GET", r"/user$", 429, headers={"Retry-After": "7"})
    (user, slept) = run(s, lambda gl: gl.user(), prefix="/gitlab")
    assert user["username"].startswith("project_") and slept == [7.0]


def test_client_gives_up_past_the_budget(standin: Any) -> None:
    s, _, _ = standin
    s.fail("GET", r"/user$", 503, times=20)

    async def body(gl: GitLabClient) -> None:
        with pytest.raises(GitLabRetryExhausted):
            await gl.user()

    run(s, body, prefix="/gitlab", retry=RetryPolicy(max_attempts=3))
    assert len(s.calls_to("GET", "/user$")) == 3


def test_client_5xx_on_a_note_is_uncertain_and_found(standin: Any) -> None:
    s, _, _ = standin
    s.fail("POST", r"/notes$", 500, after_commit=True)

    async def find() -> Any:
        return s.notes_of(7, 1)[0] if s.notes_of(7, 1) else None

    run(s, lambda gl: gl.create_note(7, 1, "<!-- rayservice-impact -->\nhi", find=find), prefix="/gitlab")
    assert len(s.notes_of(7, 1)) == 1 and len(s.calls_to("PUT", "/notes/")) == 1

    async def body(gl: GitLabClient) -> None:
        s.fail("POST", r"/notes$", 500)
        with pytest.raises(GitLabUncertain):
            await gl.request("POST", "/projects/7/merge_requests/1/notes", json={"body": "x"},
                             idempotent=False)

    run(s, body, prefix="/gitlab")


def test_client_paginates_notes(standin: Any) -> None:
    s, _, _ = standin
    for i in range(130):
        s.add_user_note(7, 1, f"note {i}", {"id": 2, "username": "bob"})
    notes, _ = run(s, lambda gl: _collect(gl.notes(7, 1)), prefix="/gitlab")
    assert [n["body"] for n in notes] == [f"note {i}" for i in range(130)]
    assert len(s.calls_to("GET", "/notes$")) == 2


async def _collect(it: Any) -> list[Any]:
    return [x async for x in it]


def test_client_archive_is_a_real_git_archive_and_capped(standin: Any) -> None:
    s, _, head = standin
    data, _ = run(s, lambda gl: gl.archive(7, head, 10_000_000), prefix="/gitlab")
    with tarfile.open(fileobj=io.BytesIO(gzip.decompress(data))) as tar:
        names = sorted(n.split("/", 1)[1] for n in tar.getnames() if "/" in n)
    assert names == ["a.yaml", "b.yaml"]

    async def body(gl: GitLabClient) -> None:
        with pytest.raises(ArchiveTooLarge):
            await gl.archive(7, head, 100)

    run(s, body, prefix="/gitlab")


def test_client_compare_merge_base_commit_and_members(standin: Any) -> None:
    s, base, head = standin
    s.members[(7, 2)] = 30

    async def body(gl: GitLabClient) -> Any:
        cmp = await gl.compare(7, base, head)
        merge = await gl.commit(PATH, "refs/merge-requests/1/merge")
        return (sorted(d["new_path"] for d in cmp["diffs"]), await gl.merge_base(7, "main", head), merge,
                await gl.access_level(7, 2), await gl.access_level(7, 3))

    (paths, mb, merge, dev, none), _ = run(s, body, prefix="/gitlab")
    assert paths == ["a.yaml", "b.yaml"] and mb == base and merge["parent_ids"] == [base, head]
    assert (dev, none) == (30, 0)


def test_client_not_found_and_bad_state(standin: Any) -> None:
    s, _, head = standin

    async def body(gl: GitLabClient) -> None:
        with pytest.raises(GitLabNotFound):
            await gl.merge_request(7, 99)
        with pytest.raises(ValueError):
            await gl.set_status(7, head, "error", "x")
        status = await gl.set_status(7, head, "failed", "held", ref="feature")
        assert status["name"] == "rayservice-impact" and status["status"] == "failed"

    run(s, body, prefix="/gitlab")
