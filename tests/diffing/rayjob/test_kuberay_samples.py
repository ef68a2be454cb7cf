"""KubeRay's own RayJob samples give no error finding: the ones vendored under tests/data/kuberay-rayjob
(KubeRay's files at v1.7.0, unchanged) and, when its source mirror is here, all of v1.7.0's.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

import diffing
from tests.diffing.rayjob.jobs import DATA

VENDORED = sorted(DATA.glob("*.yaml"))
MIRROR = Path("/work/.mirror/ray-project+kuberay/repo")


def _errors(text: str) -> list[tuple[str, str, str]]:
    out = []
    for before, rollout in (("", "create"), (text, "none")):
        for r in diffing.analyze(before, text).resources:
            if r.kind != "RayJob":
                continue
            assert r.rollout == rollout, (r.name, r.rollout, r.reasons)
            out += [(r.name, f.code, f.path) for f in r.findings if f.severity == "error"]
    return out


def test_vendored_samples_are_kuberays_rayjobs() -> None:
    assert 4 <= len(VENDORED) <= 6
    assert all("kind: RayJob" in p.read_text() for p in VENDORED)


@pytest.mark.parametrize("path", VENDORED, ids=[p.name for p in VENDORED])
def test_vendored_rayjob_sample_has_no_error_finding(path: Path) -> None:
    assert _errors(path.read_text()) == []


def _upstream() -> list[str]:
    if not MIRROR.exists():
        return []
    names = subprocess.run(["git", "--git-dir", str(MIRROR), "ls-tree", "-r", "--name-only", "v1.7.0",
                            "ray-operator/config/samples/"],
                           capture_output=True, text=True, check=True).stdout
    return [p for p in names.split() if p.endswith((".yaml", ".yml")) and "kind: RayJob" in _show(p)]


def _show(path: str) -> str:
    return subprocess.run(["git", "--git-dir", str(MIRROR), "show", f"v1.7.0:{path}"], capture_output=True,
                          text=True, check=True).stdout


UPSTREAM = _upstream()


@pytest.mark.skipif(not UPSTREAM, reason="KubeRay's source mirror is not on this machine")
@pytest.mark.parametrize("path", UPSTREAM,
                         ids=[p.removeprefix("ray-operator/config/samples/") for p in UPSTREAM])
def test_every_kuberay_rayjob_sample_has_no_error_finding(path: str) -> None:
    text = _show(path)
    assert _errors(text) == []
    vendored = DATA / path.rsplit("/", 1)[-1]
    if vendored.exists():
        assert vendored.read_text() == text
