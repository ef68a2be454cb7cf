"""The typed structural diff (diffing/kube/diff.py): list items matched by their key, reorders, and
differences the normalisation removes marked no-op.
"""

from __future__ import annotations

from diffing.kube.diff import Differ
from diffing.kube.paths import format_path
from tests.diffing.kube.schema_nodes import CONTAINER, CONTAINER_SCH, GO, RCC_SCH, SCHEMAS


def test_differ_matches_by_key_and_reports_reorders() -> None:
    differ = Differ(SCHEMAS, GO)
    before = {"workerGroupSpecs": [{"groupName": "a", "rayStartParams": {}}, {"groupName": "b"}]}
    after = {"workerGroupSpecs": [{"groupName": "b"}, {"groupName": "a", "rayStartParams": {"x": "1"}}]}
    got = [(format_path(d.path), d.kind, d.noop) for d in differ.diff(before, after, ("rcc",), RCC_SCH,
                                                                       GO.root)]
    assert got == [("rcc.workerGroupSpecs", "reordered", False),
                   ("rcc.workerGroupSpecs[groupName=a].rayStartParams.x", "added", False)]


def test_differ_marks_normalised_away_differences_noop() -> None:
    differ = Differ(SCHEMAS, GO)
    d = differ.diff({"name": "c", "resources": {"limits": {"cpu": "2"}}},
                    {"name": "c", "resources": {"limits": {"cpu": "2000m"}}, "env": []},
                    (), CONTAINER_SCH, CONTAINER)
    assert [(format_path(x.path), x.noop) for x in d] == [("resources.limits.cpu", True), ("env", True)]
