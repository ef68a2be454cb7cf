"""The author's edit as a suggestion on the pull request's diff: through the real service and the
GitHub stand-in on real uvicorn servers (a PR that suspends a RayService holds; the way out,
``spec.suspend`` false, is one line of the PR's file, on its diff), and the client's two calls
against the stand-in, which refuses what GitHub refuses."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import httpx
import pytest
from github_helpers import (
    BASE_SHA,
    HEAD2_SHA,
    HEAD_SHA,
    MANIFEST,
    NUMBER,
    OWNER,
    REPO,
    SERVICE_LOGIN,
    TOKEN,
    github_service,
    gitops_module,
    manifest,
    payload,
    payload_bytes,
    post_event,
    pull_event,
    settle,
    statuses_for,
    wait_for,
)
from github_standin import GitHubStandIn
from serverutil import running_server

from app.clients.github import GitHubClient, GitHubError, RetryPolicy, static_token
from app.github.change import PullRequest
from app.github.suggestions import head_lines, key_of, mark_suggested, post_suggestions, suggestion_body
from diffing.render.edits import LineEdit

KEY = (OWNER, REPO, NUMBER)
BASE = manifest("sample.base.yaml")
SUSPENDED = BASE.replace("spec:\n  # serveConfigV2", "spec:\n  suspend: true\n  # serveConfigV2", 1)
LINE = SUSPENDED.splitlines().index("  suspend: true") + 1
SUGGESTION = "```suggestion\n  suspend: false\n```"


def _suspending_pull(gh: GitHubStandIn, head: str = HEAD_SHA, text: str = SUSPENDED) -> None:
    gh.add_pull(OWNER, REPO, NUMBER, BASE_SHA, head, {MANIFEST: (BASE, text)})


def _run(url: str, gh: GitHubStandIn, head: str = HEAD_SHA, **changes: str) -> None:
    name = "pull_request.synchronize.json" if changes else "pull_request.opened.repo-webhook.json"
    body = payload(name, head=head, **changes) if changes else payload_bytes(name)
    post_event(url, "pull_request", body)
    wait_for(lambda: statuses_for(gh, head), what=f"the status of {head[:7]}")
    settle(gh)


@pytest.mark.parametrize(("render", "executor"),
                         [("auto", "thread"), ("none", "thread"), ("auto", "process")])
def test_a_hold_whose_way_out_is_a_line_of_the_diff_gets_one_suggestion(render, executor):
    with github_service(render=render, analysis_executor=executor, analysis_workers=1) as (url, gh):
        _suspending_pull(gh)
        _run(url, gh)
    [review] = gh.reviews
    [sent] = gh.calls_to("POST", r"/pulls/2/reviews$")
    assert (sent.body["event"], review["commit_id"], review["user"]["login"], review["state"]) == (
        "COMMENT", HEAD_SHA, SERVICE_LOGIN, "COMMENTED")
    [comment] = gh.review_comments[KEY]
    assert (comment["path"], comment["line"], comment["side"], comment["commit_id"]) == (
        MANIFEST, LINE, "RIGHT", HEAD_SHA)
    assert SUGGESTION in comment["body"] and "`spec.suspend`" in comment["body"]
    assert comment["diff_hunk"].endswith("\n+  suspend: true")
    [sticky] = gh.comments[KEY]
    assert (f"Suggested on `{MANIFEST}` line {LINE} in this pull request's diff: apply it from the review "
            "comment there.") in sticky["body"]
    assert "```yaml\n  spec:\n    suspend: false" not in sticky["body"]
    assert [s["state"] for s in gh.statuses] == ["failure"]


def test_a_new_head_that_leaves_the_line_alone_does_not_repeat_the_suggestion():
    later = SUSPENDED.replace("price: 3", "price: 4", 1)
    with github_service() as (url, gh):
        _suspending_pull(gh)
        _run(url, gh)
        _suspending_pull(gh, HEAD2_SHA, later)
        _run(url, gh, HEAD2_SHA, updated_at="2019-05-15T15:21:00Z")
    assert [s["state"] for s in gh.statuses] == ["failure", "failure"]
    assert len(gh.reviews) == 1 and len(gh.review_comments[KEY]) == 1
    assert len(gh.calls_to("GET", r"/pulls/2/comments$")) == 2


def test_a_line_the_diff_does_not_show_is_a_diff_in_the_comment_instead():
    with github_service() as (url, gh):
        _suspending_pull(gh)
        gh.drop_patch(OWNER, REPO, NUMBER, MANIFEST)   # GitHub's answer for a diff too large to show
        _run(url, gh)
    assert gh.reviews == [] and gh.calls_to("POST", r"/reviews$") == []
    [sticky] = gh.comments[KEY]
    assert (f"  In `{MANIFEST}` line {LINE}:\n\n  ```diff\n  -  suspend: true\n  +  suspend: false\n  ```"
            in sticky["body"])


def test_an_approved_change_posts_no_review():
    with github_service() as (url, gh):
        gh.add_pull(OWNER, REPO, NUMBER, BASE_SHA, HEAD_SHA,
                    {MANIFEST: (BASE, manifest("sample.head.yaml"))})
        _run(url, gh)
    assert [s["state"] for s in gh.statuses] == ["success"]
    assert gh.reviews == [] and gh.calls_to("GET", r"/pulls/2/comments$") == []


# -- the client and the stand-in, as GitHub answers --------------------------------------------

def _edit(line: int = LINE, old: str = "  suspend: true", suggested: bool = True) -> LineEdit:
    return LineEdit(("RayService", "default", "rayservice-sample", f"{HEAD_SHA[:7]}:{MANIFEST}"),
                    ("spec", "suspend"), MANIFEST, line, old, "  suspend: false", suggested)


async def _with_client(gh: GitHubStandIn, work):  # type: ignore[no-untyped-def]
    with running_server(gh.app, ready_path=None) as base:
        async with httpx.AsyncClient() as http:
            client = GitHubClient(http, base, static_token(TOKEN),
                                  retry=RetryPolicy(budget=2, write_interval=0))
            return await work(client)


def test_the_same_suggestion_for_the_same_head_is_posted_once():
    gh = GitHubStandIn(token=TOKEN, token_login=SERVICE_LOGIN)
    _suspending_pull(gh)
    pr = PullRequest(OWNER, REPO, NUMBER, BASE_SHA, HEAD_SHA)

    async def twice(client: GitHubClient) -> list[str]:
        return [await post_suggestions(client, pr, [_edit()]) for _ in range(2)]

    assert asyncio.run(_with_client(gh, twice)) == ["posted 1", "unchanged"]
    assert len(gh.review_comments[KEY]) == 1


def test_github_refuses_a_review_on_a_line_outside_the_diff_and_stores_nothing():
    gh = GitHubStandIn(token=TOKEN, token_login=SERVICE_LOGIN)
    _suspending_pull(gh)
    far = len(SUSPENDED.splitlines())   # the file's last line: no hunk reaches it

    async def review(client: GitHubClient) -> None:
        await client.create_review(OWNER, REPO, NUMBER, HEAD_SHA, "edits",
                                   [{"path": MANIFEST, "line": far, "side": "RIGHT", "body": "x"}])

    with pytest.raises(GitHubError, match="HTTP 422: Unprocessable Entity") as caught:
        asyncio.run(_with_client(gh, review))
    assert caught.value.status == 422
    assert gh.calls_to("POST", r"/reviews$")[0].status == 422
    assert gh.reviews == [] and KEY not in gh.review_comments
    # post_suggestions reports it and leaves the rest of the run alone
    pr = PullRequest(OWNER, REPO, NUMBER, BASE_SHA, HEAD_SHA)
    outside = [_edit(far, SUSPENDED.splitlines()[-1])]
    assert asyncio.run(_with_client(gh, lambda c: post_suggestions(c, pr, outside))) == "failed"


@pytest.mark.parametrize(("comment", "error"), [
    ({"path": "nope.yaml", "line": 1, "body": "x"}, "Path could not be resolved"),
    ({"path": MANIFEST, "line": 1, "side": "LEFT", "body": "x"}, "Line could not be resolved"),
])
def test_the_stand_in_checks_paths_and_sides_like_github(comment, error):
    gh = GitHubStandIn(token=TOKEN, token_login=SERVICE_LOGIN)
    _suspending_pull(gh)
    auth = {"Authorization": f"Bearer {TOKEN}"}
    with running_server(gh.app, ready_path=None) as base:
        reviews = f"{base}/repos/{OWNER}/{REPO}/pulls/{NUMBER}/reviews"
        resp = httpx.post(reviews, headers=auth, json={"commit_id": HEAD_SHA, "event": "COMMENT", "body": "b",
                                                       "comments": [comment]})
        blank = httpx.post(reviews, headers=auth, json={"event": "COMMENT", "body": ""})
    assert (resp.status_code, resp.json()["errors"]) == (422, [error])
    assert blank.status_code == 422 and gh.reviews == []


# -- pure parts ----------------------------------------------------------------------------------

def test_head_lines_are_the_added_and_context_lines_of_each_hunk():
    patch = "@@ -1,3 +1,4 @@\n a\n-b\n+B\n+c\n d\n@@ -10 +11 @@\n-x\n+y\n\\ No newline at end of file"
    assert head_lines(patch) == {1: "a", 2: "B", 3: "c", 4: "d", 11: "y"}


def test_an_edit_is_suggested_only_where_the_diff_shows_its_line_as_it_is():
    patch = "@@ -8,3 +8,4 @@\n metadata:\n   name: x\n spec:\n+  suspend: true"  # line 11 is added
    edits = [_edit(11, suggested=False), _edit(12, suggested=False), _edit(11, "  suspend: yes", False)]
    assert [e.suggested for e in mark_suggested(edits, {MANIFEST: patch})] == [True, False, False]
    assert [e.suggested for e in mark_suggested(edits, {})] == [False, False, False]


def test_the_suggestion_body_carries_its_key_and_a_fence_longer_than_the_line():
    edit = LineEdit(("RayService", "d", "n", "o"), ("spec", "x"), "f.yaml", 3, "  x: 1", "  x: '```'")
    body = suggestion_body(edit)
    assert body.startswith(f"<!-- rayservice-impact:suggestion {key_of(edit)} -->\n")
    assert "````suggestion\n  x: '```'\n````\n" in body


# -- a rendered root: the edit goes in the overlay's file ---------------------------------------

@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")
def test_an_overlay_that_suspends_gets_the_suggestion_on_its_own_patch_line(tmp_path: Path) -> None:
    g = gitops_module()
    repo = g.make_repo(tmp_path)
    start = g.git(repo, "rev-parse", "HEAD")
    g.git(repo, "checkout", "-q", "-b", "pause")
    g.edit_yaml(repo, "overlays/prod/serve-patch.yaml", lambda d: d["spec"].update(suspend=True))
    head = g.commit(repo, "pause prod")
    g.git(repo, "checkout", "-q", "main")
    with github_service(GitHubStandIn(token=TOKEN)) as (url, gh):
        gh.add_git_merge_pull(OWNER, REPO, 9, repo, base_ref="main", head_sha=head)
        post_event(url, "pull_request", pull_event(9, start, head))
        wait_for(lambda: statuses_for(gh, head), timeout=60, what="the status")
        settle(gh, 0.3)
    assert [s["state"] for s in gh.statuses] == ["failure"]
    [comment] = gh.review_comments[(OWNER, REPO, 9)]
    patch = "overlays/prod/serve-patch.yaml"
    line = g.git(repo, "show", f"{head}:{patch}").splitlines().index("  suspend: true") + 1
    assert (comment["path"], comment["line"], comment["commit_id"]) == (patch, line, head)
    assert SUGGESTION in comment["body"]
    [sticky] = gh.comments[(OWNER, REPO, 9)]
    assert f"Suggested on `{patch}` line {line}" in sticky["body"]
