"""The repository's comment mode (``.github/rayservice-impact.yml``: ``comment: always | on-change |
on-hold``, read at the base the pull request is compared with), through the real service and the
GitHub stand-in on real uvicorn servers, with a real GitOps repository rendered by kubectl; and
through the Action's steps.

* ``on-change``: a pull request that changes no Ray object gets no comment (``always`` gives it
  one); once there, the comment's report is rewritten only when the verdict or a number changes,
  while its hidden stamps follow each head (so ``/rayservice-impact approve`` still works);
* ``on-hold``: no comment until a run holds; one already there follows the verdict back to approve;
* a setting that cannot be used comments ``always`` and says why; the status reports every run.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from action_runner import run_action
from github_helpers import (
    NUMBER,
    OWNER,
    REPO,
    TOKEN,
    comment_event,
    github_service,
    gitops_module,
    post_event,
    pull_event,
    settle,
    statuses_for,
    wait_for,
)
from github_standin import GitHubStandIn
from mode_repo import configmap_only, image_back, image_bump, push, readme, settings_repo
from serverutil import running_server

from app.github.comment import MARKER, bound_of, numbers_of, shown_part, state_of

pytestmark = pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")

g = gitops_module()
N = 9
CONFIG = ".github/rayservice-impact.yml"


def gitops_repo(tmp_path: Path, config: str | None) -> tuple[Path, str]:
    """The shared repository with ``config`` as its comment setting (none: no file)."""
    return settings_repo(tmp_path, {CONFIG: config} if config is not None else {})


class Pull:
    """One pull request of the repository, analysed by the service run after run."""

    def __init__(self, url: str, gh: GitHubStandIn, repo: Path, start: str, number: int = N) -> None:
        self.url, self.gh, self.repo, self.start, self.number = url, gh, repo, start, number
        self.minute = 20

    def run(self, head: str) -> dict[str, Any]:
        """Analyse ``head`` (a push); the status it got."""
        self.minute += 1
        at = f"2019-05-15T15:{self.minute:02d}:00Z"
        self.gh.add_git_merge_pull(OWNER, REPO, self.number, self.repo, base_ref="main", head_sha=head,
                                   updated_at=at)
        action = "synchronize" if self.minute > 21 else "opened"
        post_event(self.url, "pull_request", pull_event(self.number, self.start, head, updated_at=at,
                                                        action=action))
        wait_for(lambda: statuses_for(self.gh, head), timeout=60, what=f"the status of {head[:7]}")
        settle(self.gh, 0.3)
        return statuses_for(self.gh, head)[-1]

    def comments(self) -> list[str]:
        return [c["body"] for c in self.gh.comments.get((OWNER, REPO, self.number), [])
                if c["body"].startswith(MARKER)]

    def edits(self) -> int:
        return len(self.gh.calls_to("PATCH", r"/issues/comments/\d+$"))


def test_always_comments_on_a_pull_request_that_changes_no_ray_object(tmp_path: Path) -> None:
    repo, start = gitops_repo(tmp_path, None)   # no setting: always
    head = push(repo, "settings", configmap_only, "log level")
    with github_service(GitHubStandIn(token=TOKEN)) as (url, gh):
        status = Pull(url, gh, repo, start).run(head)
        [body] = Pull(url, gh, repo, start).comments()
    assert status["state"] == "success"
    assert "1 ConfigMap not analysed" in body and "rayservice-impact: **approve**" in body


def test_on_change_is_quiet_until_a_ray_object_changes_then_rewrites_only_for_new_numbers(
        tmp_path: Path) -> None:
    repo, start = gitops_repo(tmp_path, "comment: on-change\n")
    quiet = push(repo, "bump", configmap_only, "log level")
    held = push(repo, "bump", image_bump, "bump the LLM image")
    same = push(repo, "bump", readme("# ray gitops, with a bump\n"), "docs")
    standin = GitHubStandIn(token=TOKEN)
    standin.permissions["octo-maintainer"] = "maintain"
    with github_service(standin) as (url, gh):
        pull = Pull(url, gh, repo, start)
        quiet_status = pull.run(quiet)
        quiet_comments = pull.comments()
        held_status = pull.run(held)
        [first] = pull.comments()
        edits = pull.edits()
        same_status = pull.run(same)
        [second] = pull.comments()
        same_edits = pull.edits() - edits
        # the maintainer accepts the hold the comment shows: its stamps are for this head
        post_event(url, "issue_comment", comment_event(pull.number, "/rayservice-impact approve the pool has "
                                                       "room until Friday", user="octo-maintainer"))
        wait_for(lambda: len(statuses_for(gh, same)) == 2, timeout=30, what="the approval")
        settle(gh, 0.3)
        [approved] = pull.comments()
    # a pull request that changes no Ray object: the status, no comment
    assert quiet_status["state"] == "success" and quiet_comments == []
    # the first hold creates the comment
    assert held_status["state"] == "failure" and "rayservice-impact: **hold**" in first
    assert numbers_of(first) and state_of(first) == "failure"
    # a push with the same verdict and numbers: the report as it was, the stamps for the new head
    assert same_status["state"] == "failure" and same_edits == 1
    assert numbers_of(second) == numbers_of(first)
    report = shown_part(first).rsplit("<sub>rayservice-impact", 1)[0]
    assert shown_part(second).startswith(report)
    footer = f"head `{held[:7]}` · rendered from the repository tarballs · the same for head `{same[:7]}`"
    assert f"{footer}</sub>" in second
    bound = bound_of(second)
    assert bound is not None and bound[0].head == same
    assert "Hold accepted** by @octo-maintainer" in approved
    assert statuses_for(gh, same)[-1]["state"] == "success"


def test_on_hold_comments_only_once_a_run_holds_and_then_follows_the_verdict(tmp_path: Path) -> None:
    repo, start = gitops_repo(tmp_path, "comment: on-hold\n")
    passing = push(repo, "work", configmap_only, "log level")
    held = push(repo, "work", image_bump, "bump the LLM image")
    cleared = push(repo, "work", image_back, "not yet")
    with github_service(GitHubStandIn(token=TOKEN)) as (url, gh):
        pull = Pull(url, gh, repo, start)
        passing_status = pull.run(passing)
        passing_comments = pull.comments()
        held_status = pull.run(held)
        held_comments = pull.comments()
        cleared_status = pull.run(cleared)
        [after] = pull.comments()
    assert passing_status["state"] == "success" and passing_comments == []
    assert held_status["state"] == "failure"
    assert len(held_comments) == 1 and "rayservice-impact: **hold**" in held_comments[0]
    # the hold cleared: the comment there says so (it is not left showing a hold)
    assert cleared_status["state"] == "success"
    assert "rayservice-impact: **approve**" in after and state_of(after) == "success"


def test_a_setting_that_cannot_be_used_comments_always_and_says_why(tmp_path: Path) -> None:
    repo, start = gitops_repo(tmp_path, "comment: sometimes\n")
    head = push(repo, "settings", configmap_only, "log level")
    with github_service(GitHubStandIn(token=TOKEN)) as (url, gh):
        status = Pull(url, gh, repo, start).run(head)
        [body] = Pull(url, gh, repo, start).comments()
    assert status["state"] == "success"
    assert ("> [!WARNING]\n> `.github/rayservice-impact.yml`: `comment` must be one of always, on-change, "
            "on-hold, not `sometimes`; commenting `always`") in body


def test_the_setting_of_the_pull_request_itself_is_not_the_one_read(tmp_path: Path) -> None:
    """A pull request cannot silence its own comment: the base's setting applies."""
    repo, start = gitops_repo(tmp_path, None)
    head = push(repo, "sneaky", lambda r: (g.write(r, CONFIG, "comment: on-hold\n"), image_bump(r)), "hush")
    with github_service(GitHubStandIn(token=TOKEN)) as (url, gh):
        pull = Pull(url, gh, repo, start)
        pull.run(head)
        [body] = pull.comments()
        reads = [c.query["ref"] for c in gh.calls_to("GET", "/contents/.github/rayservice-impact.yml")]
    assert "rayservice-impact: **hold**" in body
    assert reads == [start]


# -- the Action ------------------------------------------------------------------------------------


def _action(repo: Path, tmp_path: Path, url: str, base: str, head: str, **inputs: str) -> dict[str, Any]:
    repo_ref = {"full_name": f"{OWNER}/{REPO}"}
    event = {"action": "synchronize", "number": NUMBER,
             "pull_request": {"number": NUMBER, "head": {"sha": head, "repo": repo_ref},
                              "base": {"sha": base, "ref": "main", "repo": repo_ref}},
             "repository": repo_ref}
    return run_action(repo, tmp_path, url, "pull_request", event, base=base, head=head,
                      pull_request=str(NUMBER), github_token=TOKEN, **inputs)


def test_the_action_reads_the_setting_at_the_base_and_its_input_overrides_it(tmp_path: Path) -> None:
    repo, start = gitops_repo(tmp_path, "comment: on-hold\n")
    passing = push(repo, "docs", configmap_only, "log level")
    standin = GitHubStandIn(token=TOKEN)
    with running_server(standin.app, ready_path=None) as url:
        quiet = _action(repo, tmp_path, url, start, passing)
        quiet_comments = list(standin.comments.get((OWNER, REPO, NUMBER), []))
        loud = _action(repo, tmp_path, url, start, passing, comment="always")
    assert quiet["outputs"]["comment"] == "on-hold" and loud["outputs"]["comment"] == "always"
    assert quiet_comments == []
    assert [s["state"] for s in standin.statuses] == ["success", "success"]  # the status every run
    [comment] = standin.comments[(OWNER, REPO, NUMBER)]
    assert comment["body"].startswith(MARKER)
