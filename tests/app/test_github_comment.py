"""The comment body and the gate's wording (pure)."""

from __future__ import annotations

from github_helpers import manifest

import diffing
from app.github.comment import (
    MARKER,
    MAX_BODY_BYTES,
    MAX_BODY_CHARS,
    fit,
    is_ours,
    no_change_body,
    numbers_of,
    render_body,
    shown_part,
    stamp_of,
    verdict_for_error,
    verdict_for_report,
)
from app.github.repo_config import PATH, RepoConfig, parse_config


def _hold_report() -> diffing.Report:
    return diffing.analyze([("base:a.yaml", manifest("llm.base.yaml"))],
                           [("head:a.yaml", manifest("llm.head.yaml"))])


def test_render_body_starts_with_the_marker_and_the_stamp():
    body = render_body("## verdict\n", head_sha="abc", at="2019-05-15T15:20:33Z", footer="f")
    assert body == (f"{MARKER}\n<!-- rayservice-impact:head=abc at=2019-05-15T15:20:33Z -->\n"
                    "## verdict\n\n<sub>f</sub>\n")
    assert stamp_of(body) == ("abc", "2019-05-15T15:20:33Z")
    assert is_ours(body)


def test_render_body_huge_markdown_keeps_the_verdict_under_the_limits():
    markdown = "## 🔴 rayservice-impact: **hold**\n\n" + "<details>\n\n```text\n" + "ü line\n" * 40_000
    body = render_body(markdown, head_sha="abc", footer="footer")
    assert len(body) <= MAX_BODY_CHARS
    assert len(body.encode()) <= MAX_BODY_BYTES
    assert "## 🔴 rayservice-impact: **hold**" in body.splitlines()[2]
    assert body.count("```") % 2 == 0
    assert body.count("<details>") == body.count("</details>")
    assert "truncated" in body
    assert body.endswith("<sub>footer</sub>\n")


def test_fit_leaves_short_text_alone():
    assert fit("short\ntext", 100) == "short\ntext"


def test_verdict_for_report_hold_is_failure_with_a_short_description():
    verdict = verdict_for_report(_hold_report())
    assert (verdict.state, verdict.conclusion) == ("failure", "failure")
    assert verdict.description.startswith("hold: default/ray-serve-llm")
    assert len(verdict.description) <= 140
    assert verdict.markdown is not None and "ray-serve-llm" in verdict.markdown


def test_verdict_for_report_note_comes_before_the_verdict():
    verdict = verdict_for_report(_hold_report(), note="only part of the files")
    assert verdict.markdown is not None
    assert verdict.markdown.startswith("> [!WARNING]\n> only part of the files\n")


def test_verdict_for_error_is_error_and_140_chars():
    verdict = verdict_for_error("x" * 500)
    assert (verdict.state, verdict.conclusion) == ("error", "failure")
    assert len(verdict.description) == 140
    assert verdict.description.endswith("…")


def test_no_change_body_is_ours():
    body = no_change_body("a" * 40)
    assert is_ours(body)
    assert ("No RayService, RayCluster, RayJob or RayCronJob changes in this pull request. (head `aaaaaaa`)"
            in body)


def test_is_ours_needs_the_marker_first():
    assert not is_ours(f"quoting the bot: {MARKER}")
    assert not is_ours(None)


def test_the_comment_setting_is_read_strictly_and_falls_back_to_always_with_a_reason():
    assert parse_config("comment: on-hold\n") == RepoConfig("on-hold")
    assert parse_config(b"# nothing set\n") == RepoConfig("always")
    assert parse_config("") == RepoConfig("always")
    for text, why in [
            ("comment: quiet\n", "`comment` must be one of always, on-change, on-hold, not `quiet`"),
            ("comment: on-hold\nbehavior: new\n", "may only set `comment` (found behavior, comment)"),
            ("- comment\n", "may only set `comment` (found list)"),
            ("comment: [\n", "is not valid YAML (line 2)")]:
        config = parse_config(text)
        assert config.comment == "always" and config.problem.startswith(f"`{PATH}`") and why in config.problem


def test_a_verdict_stamps_its_numbers_and_a_kept_body_shows_the_old_report():
    verdict = verdict_for_report(_hold_report())
    assert verdict.touches and verdict.numbers
    assert verdict_for_report(_hold_report(), note="a warning").numbers != verdict.numbers
    assert verdict.markdown is not None
    body = render_body(verdict.markdown, head_sha="a" * 40, footer="base → head `aaaaaaa`",
                       numbers=verdict.numbers)
    assert numbers_of(body) == verdict.numbers
    kept = render_body("ignored", head_sha="b" * 40, numbers=verdict.numbers, keep=shown_part(body))
    assert shown_part(kept).startswith(verdict.markdown.rstrip("\n"))
    assert shown_part(kept).endswith("<sub>base → head `aaaaaaa` · the same for head `bbbbbbb`</sub>\n")
    again = render_body("ignored", head_sha="c" * 40, numbers=verdict.numbers, keep=shown_part(kept))
    assert again.count("the same for head") == 1 and "`ccccccc`</sub>" in again
