"""The checked-in sample pairs still produce their (human-reviewed) expected reports."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import diffing

SAMPLES = Path(__file__).resolve().parent.parent / "samples"
PAIRS = sorted(p for p in SAMPLES.iterdir() if (p / "before.yaml").exists())


def analyze(pair: Path) -> diffing.Report:
    return diffing.analyze([("before.yaml", (pair / "before.yaml").read_text())],
                           [("after.yaml", (pair / "after.yaml").read_text())])


def test_samples_cover_the_situations_users_meet() -> None:
    assert {p.name for p in PAIRS} >= {
        "gpu-image-bump", "serve-only", "replicas-autoscaling", "worker-group-appended",
        "tolerations-only", "strategy-none", "quantity-reformat", "incremental-upgrade",
        "raycluster-image-bump", "raycluster-image-bump-recreate", "raycluster-autoscaler-fight",
        "raycluster-group-rename", "rayjob-tpu-next-run"}


@pytest.mark.parametrize("pair", PAIRS, ids=[p.name for p in PAIRS])
def test_sample_report_matches_expected_json(pair: Path) -> None:
    assert analyze(pair).to_dict() == json.loads((pair / "expected.json").read_text())


@pytest.mark.parametrize("pair", PAIRS, ids=[p.name for p in PAIRS])
def test_sample_report_matches_expected_markdown(pair: Path) -> None:
    assert diffing.render_markdown(analyze(pair)) == (pair / "expected.md").read_text()


def test_gpu_image_bump_holds_with_the_gpu_count() -> None:
    report = analyze(SAMPLES / "gpu-image-bump").to_dict()
    assert report["decision"] == "hold"
    assert report["resources"][0]["capacity"]["extra"]["nvidia.com/gpu"] == 4
    assert report["resources"][0]["capacity"]["peak"]["nvidia.com/gpu"] == 8


def test_raycluster_situations_answer_as_reviewed() -> None:
    """The four standalone RayCluster samples, by what a reviewer checks first."""
    def res(name: str) -> dict:
        (r,) = analyze(SAMPLES / name).to_dict()["resources"]
        assert r["kind"] == "RayCluster"
        return r

    bump = res("raycluster-image-bump")
    assert (bump["rollout"], bump["decision"], bump["capacity"]["extra"]) == ("latent", "hold", {})
    assert {f["code"] for f in bump["findings"]} == {"version-skew"}
    recreate = res("raycluster-image-bump-recreate")
    assert (recreate["rollout"], recreate["decision"]) == ("recreate", "hold")
    assert recreate["capacity"]["extra"] == {}
    assert recreate["capacity"]["peak"]["nvidia.com/gpu"] == 4
    fight = res("raycluster-autoscaler-fight")
    assert fight["decision"] == "ignore-differences" and fight["ignoreDifferences"][0]["kind"] == "RayCluster"
    assert fight["capacity"]["extra"]["nvidia.com/gpu"] == 2
    rename = res("raycluster-group-rename")
    assert rename["decision"] == "hold" and "orphaned-pods" in {f["code"] for f in rename["findings"]}
    gpus = (rename["capacity"]["extra"]["nvidia.com/gpu"], rename["capacity"]["peak"]["nvidia.com/gpu"])
    assert gpus == (4, 8)
