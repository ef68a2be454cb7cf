"""Field paths printed in the report's dotted form (diffing/kube/paths.py)."""

from __future__ import annotations

from diffing.kube.paths import Key, format_path


def test_paths_format_keys_indexes_and_odd_names() -> None:
    assert format_path(("spec", "w", Key("groupName", "gpu"), "c", 0, "ray.io/x")) == \
        'spec.w[groupName=gpu].c[0]["ray.io/x"]'
