"""The KubeRay versions the analysis knows (diffing/versions.py): what 1.6 does otherwise, the feature
gates' defaults per version, and an unknown version refused.
"""

from __future__ import annotations

import pytest

import diffing
from diffing.versions import rules_for
from tests.builders import edited, rcc, sample, set_images
from tests.diffing.helpers import resource


@pytest.mark.parametrize("version", ["1.6.2", "v1.6", "1.6.0"])
def test_version_16_incremental_gate_is_off(version: str) -> None:
    inc = sample("incremental-upgrade")
    r = resource(inc, edited(inc, lambda o: set_images(o, "rayproject/ray:2.52.0")), kuberay_version=version)
    assert r["rollout"] == "not-applied"
    assert any("feature gate off" in reason for reason in r["reasons"])


def test_version_16_cluster_suspend_toggle_updates_in_place() -> None:
    base = edited(sample("sample"), lambda o: rcc(o).__setitem__("suspend", True))
    after = edited(base, lambda o: rcc(o).__setitem__("suspend", False))
    assert resource(base, after, kuberay_version="1.6.2")["rollout"] == "cluster-in-place"
    assert resource(base, after, kuberay_version="1.7.0")["rollout"] == "not-applied"


def test_unknown_version_is_refused() -> None:
    with pytest.raises(diffing.UnsupportedVersionError, match="1.6.x, 1.7.x"):
        diffing.analyze("", "", kuberay_version="1.8.0")


@pytest.mark.parametrize(("minor", "gate", "expected"), [((1, 6), False, True), ((1, 7), True, True)])
def test_gate_defaults_follow_the_version(minor: tuple[int, int], gate: bool, expected: bool) -> None:
    rules = rules_for(f"{minor[0]}.{minor[1]}.0")
    assert rules.gates()["RayServiceIncrementalUpgrade"] is gate
    assert rules.gates()["RayJobDeletionPolicy"] is expected
    assert rules.gates({"RayJobDeletionPolicy": False})["RayJobDeletionPolicy"] is False
