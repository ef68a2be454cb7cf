"""The repository's comment mode on GitLab (``.gitlab/rayservice-impact.yml``, else
``.github/rayservice-impact.yml``: ``comment: always | on-change | on-hold``, read at the base the
merge request is compared with), through the real service and the GitLab stand-in on real uvicorn
servers, with a real GitOps repository rendered by kubectl.

* ``on-change``: a merge request that changes no Ray object gets no note (``always`` gives it
  one); once there, the note's report is rewritten only when the verdict or a number changes,
  while its hidden stamps follow each head (so ``/rayservice-impact approve`` still works);
* ``on-hold``: no note until a run holds; the note there follows the verdict back to approve;
* a setting that cannot be used (a bad value, a file that cannot be read) notes ``always`` and
  says why; the base's setting applies, not the merge request's own; the status reports every
  run; the setting is read from the base archive already downloaded, with no call of its own.
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from gitlab_helpers import (
    PATH,
    PROJECT_ID,
    RAYSERVICE,
    TOKEN,
    g,
    gitlab_service,
    judged,
    mr_event,
    note_event,
    our_notes,
    post_hook,
    settle,
    statuses,
    wait_for,
)
from gitlab_standin import GitLabStandIn
from mode_repo import configmap_only, image_back, image_bump, push, readme, settings_repo

from app.github.comment import bound_of, is_ours, numbers_of, shown_part, state_of

pytestmark = pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")

GITLAB_CONFIG = ".gitlab/rayservice-impact.yml"
GITHUB_CONFIG = ".github/rayservice-impact.yml"
IID = 4
DEV = 2


def gitops_repo(tmp_path: Path, files: dict[str, str]) -> tuple[Path, str]:
    return settings_repo(tmp_path, files)


def serve_only(repo: Path) -> None:
    path = repo / RAYSERVICE
    path.write_text(path.read_text().replace("max_model_len: 1024", "max_model_len: 2048"))


def standin(repo: Path) -> GitLabStandIn:
    s = GitLabStandIn(token=TOKEN)
    s.add_project(PROJECT_ID, PATH, repo)
    s.members[(PROJECT_ID, DEV)] = 30
    return s


class MergeRequest:
    """One merge request of the repository, judged by the service push after push."""

    def __init__(self, url: str, s: GitLabStandIn, iid: int = IID, branch: str = "work") -> None:
        self.url, self.s, self.iid, self.branch = url, s, iid, branch
        self.hour = 9
        self.head = ""

    def run(self, head: str) -> dict[str, Any]:
        """Judge ``head`` (opened, then each push); the status it got."""
        self.hour += 1
        self.s.add_merge_request(PROJECT_ID, self.iid, source_branch=self.branch, head_sha=head,
                                 updated_at=f"2026-12-01T{self.hour:02d}:00:00.000Z")
        event = mr_event(self.iid, head, action="update" if self.head else "open", oldrev=self.head or None,
                         updated_at=f"2026-12-01 {self.hour:02d}:00:00 UTC")
        self.head = head
        return judged(self.url, self.s, event, head)

    def notes(self) -> list[str]:
        return [n["body"] for n in our_notes(self.s, self.iid) if is_ours(n["body"])]

    def edits(self) -> int:
        return len(self.s.calls_to("PUT", rf"/merge_requests/{self.iid}/notes/\d+$"))


def test_always_notes_a_merge_request_that_changes_no_ray_object(tmp_path: Path) -> None:
    repo, _ = gitops_repo(tmp_path, {})   # no setting: always
    head = push(repo, "work", configmap_only, "log level")
    s = standin(repo)
    with gitlab_service(s) as url:
        mr = MergeRequest(url, s)
        status = mr.run(head)
        [body] = mr.notes()
    assert status["status"] == "success"
    assert "1 ConfigMap not analysed" in body and "rayservice-impact: **approve**" in body


def test_on_change_is_quiet_until_a_ray_object_changes_then_rewrites_only_for_new_numbers(
        tmp_path: Path) -> None:
    repo, _ = gitops_repo(tmp_path, {GITLAB_CONFIG: "comment: on-change\n"})
    quiet = push(repo, "work", configmap_only, "log level")
    held = push(repo, "work", image_bump, "bump the LLM image")
    same = push(repo, "work", readme("# ray gitops, with a bump\n"), "docs")
    s = standin(repo)
    with gitlab_service(s) as url:
        mr = MergeRequest(url, s)
        quiet_status = mr.run(quiet)
        quiet_notes = mr.notes()
        held_status = mr.run(held)
        [first] = mr.notes()
        edits = mr.edits()
        same_status = mr.run(same)
        [second] = mr.notes()
        same_edits = mr.edits() - edits
        # a Developer accepts the hold the note shows: its stamps are for this head
        answer = post_hook(url, "Note Hook", note_event(IID, "/rayservice-impact approve the pool has room "
                                                        "until Friday", user_id=DEV, username="bob"))
        assert answer.status_code == 202, answer.text
        wait_for(lambda: len(statuses(s, same)) == 2, timeout=30, what="the approval")
        settle(s, 0.2)
        [approved] = mr.notes()
    # a merge request that changes no Ray object: the status, no note
    assert quiet_status["status"] == "success" and quiet_notes == []
    # the first hold creates the note
    assert held_status["status"] == "failed" and "rayservice-impact: **hold**" in first
    assert numbers_of(first) and state_of(first) == "failure"
    # a push with the same verdict and numbers: the report as it was, the stamps for the new head
    assert same_status["status"] == "failed" and same_edits == 1
    assert numbers_of(second) == numbers_of(first)
    report = shown_part(first).rsplit("<sub>rayservice-impact", 1)[0]
    assert shown_part(second).startswith(report)
    assert f"rendered from the repository archives · the same for head `{same[:7]}`</sub>" in second
    bound = bound_of(second)
    assert bound is not None and bound[0].head == same
    assert "Hold accepted** by @bob" in approved
    assert statuses(s, same)[-1]["status"] == "success"


def test_always_rewrites_the_report_for_the_same_numbers(tmp_path: Path) -> None:
    """The contrast to the test above: without the setting the footer names the new head."""
    repo, _ = gitops_repo(tmp_path, {})
    held = push(repo, "work", image_bump, "bump the LLM image")
    same = push(repo, "work", readme("# ray gitops, with a bump\n"), "docs")
    s = standin(repo)
    with gitlab_service(s) as url:
        mr = MergeRequest(url, s)
        mr.run(held)
        mr.run(same)
        [body] = mr.notes()
    assert "the same for head" not in body and f"of head `{same[:7]}`" in body


def test_on_hold_notes_only_once_a_run_holds_and_then_follows_the_verdict(tmp_path: Path) -> None:
    repo, _ = gitops_repo(tmp_path, {GITLAB_CONFIG: "comment: on-hold\n"})
    passing = push(repo, "work", serve_only, "a longer context")     # a Ray object changes, and passes
    held = push(repo, "work", image_bump, "bump the LLM image")
    cleared = push(repo, "work", image_back, "not yet")
    s = standin(repo)
    with gitlab_service(s) as url:
        mr = MergeRequest(url, s)
        passing_status = mr.run(passing)
        passing_notes = mr.notes()
        held_status = mr.run(held)
        held_notes = mr.notes()
        cleared_status = mr.run(cleared)
        [after] = mr.notes()
    assert passing_status["status"] == "success" and passing_notes == []
    assert held_status["status"] == "failed"
    assert len(held_notes) == 1 and "rayservice-impact: **hold**" in held_notes[0]
    # the hold cleared: the note there says so (it is not left showing a hold)
    assert cleared_status["status"] == "success"
    assert "rayservice-impact: **approve**" in after and state_of(after) == "success"
    assert f"of head `{cleared[:7]}`" in after


def test_a_bad_value_notes_always_and_says_what_is_wrong(tmp_path: Path) -> None:
    repo, _ = gitops_repo(tmp_path, {GITLAB_CONFIG: "comment: sometimes\n"})
    head = push(repo, "work", configmap_only, "log level")
    s = standin(repo)
    with gitlab_service(s) as url:
        mr = MergeRequest(url, s)
        status = mr.run(head)
        [body] = mr.notes()
    assert status["status"] == "success"
    assert ("> [!WARNING]\n> `.gitlab/rayservice-impact.yml`: `comment` must be one of always, on-change, "
            "on-hold, not `sometimes`; commenting `always`") in body


@pytest.mark.parametrize(("target", "why"), [
    ("/etc/passwd", "a symlink that leaves the repository"),        # refused when unpacked
    ("missing.yml", "No such file or directory"),                    # dangling
])
def test_a_setting_that_cannot_be_read_notes_always_and_says_why(tmp_path: Path, target: str,
                                                                 why: str) -> None:
    repo, _ = gitops_repo(tmp_path, {GITHUB_CONFIG: "comment: on-hold\n"})  # not a fallback for a file
    (repo / ".gitlab").mkdir()                                               # that is there
    os.symlink(target, repo / GITLAB_CONFIG)
    g.commit(repo, "an unreadable setting")
    head = push(repo, "work", configmap_only, "log level")
    s = standin(repo)
    with gitlab_service(s) as url:
        mr = MergeRequest(url, s)
        status = mr.run(head)
        [body] = mr.notes()
    assert status["status"] == "success"
    found = re.search(r"> \[!WARNING\]\n> (.*)", body)
    assert found is not None, body
    warning = found[1]
    assert warning.startswith("`.gitlab/rayservice-impact.yml` cannot be read at the base (")
    assert why in warning and warning.endswith("; commenting `always`")


@pytest.mark.parametrize(("files", "noted"), [
    ({GITHUB_CONFIG: "comment: on-change\n"}, False),                  # the fallback, for a mirror
    ({GITLAB_CONFIG: "comment: always\n", GITHUB_CONFIG: "comment: on-change\n"}, True),  # GitLab's first
    ({GITLAB_CONFIG: "", GITHUB_CONFIG: "comment: on-change\n"}, True),  # an empty file is the default
])
def test_gitlab_s_file_comes_first_and_github_s_is_the_fallback(tmp_path: Path, files: dict[str, str],
                                                                 noted: bool) -> None:
    repo, _ = gitops_repo(tmp_path, files)
    head = push(repo, "work", configmap_only, "log level")
    s = standin(repo)
    with gitlab_service(s) as url:
        mr = MergeRequest(url, s)
        status = mr.run(head)
        notes = mr.notes()
    assert status["status"] == "success"
    assert len(notes) == (1 if noted else 0)
    assert all("[!WARNING]" not in body for body in notes)


def test_the_setting_of_the_merge_request_itself_is_not_the_one_read(tmp_path: Path) -> None:
    """A merge request can neither silence its own note nor make one appear: the base's setting
    applies, read from the base archive the run downloads anyway (no call of its own)."""
    repo, _ = gitops_repo(tmp_path, {})
    hush = push(repo, "hush", lambda r: (g.write(r, GITLAB_CONFIG, "comment: on-hold\n"), serve_only(r)),
                "hush")
    s = standin(repo)
    with gitlab_service(s) as url:
        hushed = MergeRequest(url, s, iid=1, branch="hush")
        hushed_status = hushed.run(hush)                 # main: no setting
        hushed_calls = len(s.calls)
        g.write(repo, GITLAB_CONFIG, "comment: on-hold\n")
        g.commit(repo, "quiet")
        loud = push(repo, "loud", lambda r: ((r / GITLAB_CONFIG).unlink(), serve_only(r)), "loud")
        louder = MergeRequest(url, s, iid=2, branch="loud")
        loud_status = louder.run(loud)                   # main: on-hold
        loud_calls = len(s.calls) - hushed_calls
        hushed_notes, loud_notes = hushed.notes(), louder.notes()
    assert hushed_status["status"] == "success" and loud_status["status"] == "success"
    assert len(hushed_notes) == 1 and "rayservice-impact: **approve**" in hushed_notes[0]   # base: always
    assert loud_notes == []                                                                   # base: on-hold
    assert not [c for c in s.calls if "/repository/files/" in c.path]
    print(f"\nMEASURE calls: a run that notes={hushed_calls}, a quiet run={loud_calls}")
