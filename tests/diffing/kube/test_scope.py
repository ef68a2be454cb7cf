"""What a file deploys (diffing/kube/scope.py): the items of a ``kind: List`` are objects of their own."""

from __future__ import annotations

import yaml

import diffing
from tests.builders import sample


def test_kind_list_is_flattened() -> None:
    items = {"apiVersion": "v1", "kind": "List", "items": [sample("sample"), sample("mobilenet")]}
    assert len(diffing.analyze("", yaml.safe_dump(items)).resources) == 2
