"""The author's way out as one line of their file (diffing.render.edits), and how the Markdown
shows it: a diff of the line, or a pointer to the suggestion on the pull request's diff."""

from __future__ import annotations

import pytest

import diffing
from diffing.render.edits import LineEdit, edit_for, line_edits, rewrite_line
from tests.diffing.helpers import ROOT

BASE = (ROOT / "tests/data/github/manifests/sample.base.yaml").read_text()
SUSPENDED = BASE.replace("spec:\n  # serveConfigV2", "spec:\n  suspend: true  # paused\n  # serveConfigV2", 1)
LINE = SUSPENDED.splitlines().index("  suspend: true  # paused") + 1
FILE = "k8s/rayservice.yaml"


def _report(head: str = SUSPENDED, origin: str = f"head:{FILE}") -> diffing.Report:
    return diffing.analyze([(f"base:{FILE}", BASE)], [(origin, head)])


@pytest.mark.parametrize(("line", "key", "value", "want"), [
    ("  suspend: true", "suspend", False, "  suspend: false"),
    ("  suspend: true  # paused", "suspend", False, "  suspend: false  # paused"),
    ("    type: None", "type", "NewCluster", "    type: NewCluster"),
    ('  - "type": None', "type", "NewCluster", '  - "type": NewCluster'),
    ("  replicas: 2", "replicas", 3, "  replicas: 3"),
    ("  tag: x", "tag", "2.53.0:py", '  tag: "2.53.0:py"'),
    ("  mode: x", "mode", "off", '  mode: "off"'),
    ("  suspend: true", "other", False, None),
    ("  suspend: true", "suspend", {"a": 1}, None),
    ("  spec:", "spec", 1, None),
])
def test_rewrite_line_replaces_only_the_value_of_its_key(line, key, value, want):
    assert rewrite_line(line, key, value) == want


def test_a_suspend_hold_in_a_plain_file_is_one_line_edit():
    report = _report()
    edits = line_edits(report, {FILE: SUSPENDED}.get)
    [r] = report.resources
    owner = ("RayService", "default", "rayservice-sample", f"head:{FILE}")
    assert edits == (LineEdit(owner, ("spec", "suspend"), FILE, LINE, "  suspend: true  # paused",
                              "  suspend: false  # paused"),)
    author = next(w for w in r.ways_out if w.fix is not None)
    assert edit_for(edits, r, author) == edits[0]
    assert edit_for(edits, r, r.ways_out[0]) is None        # the reviewer's: no edit
    assert edits[0].with_suggested().suggested and not edits[0].suggested


def test_no_edit_without_the_file_its_line_or_a_line_that_writes_the_key():
    report = _report()
    assert line_edits(report, lambda path: None) == ()
    assert line_edits(report, {FILE: "short: file\n"}.get) == ()
    assert line_edits(report, {FILE: SUSPENDED.replace("suspend: true", "other: true")}.get) == ()
    assert line_edits(report, {FILE: SUSPENDED.replace("suspend: true", "suspend: false")}.get) == ()
    labelled = lambda r, item: ("overlays/prod (kustomize)", 3)  # noqa: E731 - a root's label
    assert line_edits(report, {FILE: SUSPENDED}.get, labelled) == ()
    assert line_edits(report, {FILE: SUSPENDED}.get, lambda r, item: (FILE, None)) == ()


def test_the_markdown_shows_the_edit_as_a_diff_or_points_at_the_suggestion():
    report = _report()
    [edit] = line_edits(report, {FILE: SUSPENDED}.get)
    plain = diffing.render_markdown(report)
    assert "  ```yaml\n  spec:\n    suspend: false\n  ```" in plain
    shown = diffing.render_markdown(report, edits=(edit,))
    assert (f"  In `{FILE}` line {LINE}:\n\n  ```diff\n  -  suspend: true  # paused\n"
            "  +  suspend: false  # paused\n  ```") in shown
    assert "```yaml" not in shown
    pointed = diffing.render_markdown(report, edits=(edit.with_suggested(),))
    assert (f"  Suggested on `{FILE}` line {LINE} in this pull request's diff: apply it from the review "
            "comment there.") in pointed
    assert "```diff" not in pointed


def test_a_raycluster_suspend_is_the_same_one_line_edit() -> None:
    before = (ROOT / "samples/raycluster-image-bump/before.yaml").read_text()
    after = before.replace("\nspec:\n", "\nspec:\n  suspend: true\n", 1)
    report = diffing.analyze([("base:c.yaml", before)], [("head:c.yaml", after)])
    [edit] = line_edits(report, {"c.yaml": after}.get)
    line = after.splitlines().index("  suspend: true") + 1
    assert (edit.owner[0], edit.file, edit.line, edit.old, edit.new) == (
        "RayCluster", "c.yaml", line, "  suspend: true", "  suspend: false")


def test_a_change_under_upgrade_strategy_none_gets_the_strategy_line_rewritten() -> None:
    bumped = (ROOT / "tests/data/github/manifests/sample.head.yaml").read_text()
    strategy = "spec:\n  upgradeStrategy:\n    type: None\n  # serveConfigV2"
    after = bumped.replace("spec:\n  # serveConfigV2", strategy, 1)
    report = diffing.analyze([(f"base:{FILE}", BASE)], [(f"head:{FILE}", after)])
    [edit] = line_edits(report, {FILE: after}.get)
    assert (edit.field, edit.line, edit.old, edit.new) == (
        ("spec", "upgradeStrategy", "type"), after.splitlines().index("    type: None") + 1, "    type: None",
        "    type: NewCluster")
