"""GitLab's webhook payloads (tests/data/gitlab/, shapes of GitLab's webhook docs) as the service
reads them: which merge request events are judged, the job, GitLab's two time formats, commands."""

from __future__ import annotations

import pytest
from gitlab_helpers import mr_event, note_event, payload

from app.forge import Revisions
from app.github.change import PayloadError
from app.gitlab.commands import parse_command, status_ref
from app.gitlab.mr import iso, job_from_hook, should_analyse

HEAD = "a" * 40


@pytest.mark.parametrize("value, expected", [
    ("2026-12-01 10:00:00 UTC", "2026-12-01T10:00:00Z"),       # webhooks
    ("2026-12-01T10:00:00.000Z", "2026-12-01T10:00:00Z"),      # the API
    ("2026-12-01T12:00:00+02:00", "2026-12-01T10:00:00Z"),
    ("2026-12-01 12:00:00 +0200", "2026-12-01T10:00:00Z"),
    ("yesterday", ""), (None, ""),
])
def test_iso_orders_webhook_and_api_times_alike(value: object, expected: str) -> None:
    assert iso(value) == expected


def test_merge_request_actions_judged() -> None:
    assert should_analyse(mr_event(1, HEAD, action="open")) == (True, "")
    assert should_analyse(mr_event(1, HEAD, action="reopen")) == (True, "")
    assert should_analyse(mr_event(1, HEAD, action="update", oldrev="b" * 40)) == (True, "")
    retarget = mr_event(1, HEAD, action="update")
    retarget["changes"] = {"target_branch": {"previous": "main", "current": "release"}}
    assert should_analyse(retarget)[0]
    for action in ("update", "approved", "close", "merge", "unapproved"):
        judged, why = should_analyse(mr_event(1, HEAD, action=action))
        assert not judged and why


def test_job_from_the_merge_request_hook() -> None:
    job = job_from_hook(mr_event(3, HEAD, updated_at="2026-12-01 10:00:00 UTC"))
    assert (job.owner, job.repo, job.number, job.head_sha, job.base_ref, job.updated_at) == (
        "platform", "ray-gitops", 3, HEAD, "main", "2026-12-01T10:00:00Z")
    bad = payload("merge_request.open.json")   # the example's last_commit is all zeros: no head
    bad["object_attributes"]["last_commit"]["id"] = "not-a-sha"
    with pytest.raises(PayloadError):
        job_from_hook(bad)


def test_commands_from_note_hooks() -> None:
    cmd, why = parse_command(note_event(4, "/rayservice-impact approve  room\n in the pool", user_id=2,
                                        created_at="2026-12-01 10:05:00 UTC"))
    assert cmd is not None and why == ""
    assert (cmd.verb, cmd.reason, cmd.user, cmd.user_id, cmd.job.number, cmd.created_at) == (
        "approve", "room in the pool", "bob", 2, 4, "2026-12-01T10:05:00Z")
    assert parse_command(note_event(4, "/rayservice-impact frobnicate"))[0].verb == "unknown"  # type: ignore[union-attr]
    assert parse_command(note_event(4, "/rayservice-impact rerun"))[0].verb == "rerun"  # type: ignore[union-attr]
    for text in ("please /rayservice-impact approve x", "/rayservice-impactx", "LGTM"):
        assert parse_command(note_event(4, text))[0] is None


def test_status_ref_for_own_and_fork_merge_requests() -> None:
    own = {"iid": 3, "source_branch": "bump", "source_project_id": 7, "target_project_id": 7}
    assert status_ref(own) == "bump"
    assert status_ref({"iid": 3, "source_branch": "bump", "source_project_id": 8,
                       "target_project_id": 7}) == "refs/merge-requests/3/head"


def test_footer_names_what_was_compared() -> None:
    r = Revisions("1" * 40, "2" * 40, "train", frozenset(), base_ref="main", status_sha="3" * 40)
    assert r.footer("x") == ("rayservice-impact · base `1111111` (main) → merge train commit `2222222` "
                             "of head `3333333` · x")
    m = Revisions("1" * 40, "3" * 40, "merge-base", frozenset())
    assert m.footer() == "rayservice-impact · merge base `1111111` → head `3333333`"


def test_docs_keep_the_ci_section_for_the_ci_template() -> None:
    from pathlib import Path

    text = (Path(__file__).resolve().parents[2] / "docs" / "gitlab.md").read_text()
    assert "## Without a server: GitLab CI" in text
