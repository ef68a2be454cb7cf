"""Every hold says how to get past it, specific to its cause (issue 10: "say what to do next")."""

from __future__ import annotations

from pathlib import Path

import pytest

import diffing
from tests.diffing.helpers import doubled, one

ROOT = Path(__file__).resolve().parents[3]


def pair(name: str) -> tuple[str, str]:
    folder = ROOT / "samples" / name
    return (folder / "before.yaml").read_text(), (folder / "after.yaml").read_text()


@pytest.mark.parametrize(("sample", "first"), [
    ("gpu-image-bump", "make room for 4 nvidia.com/gpu"),
    ("strategy-none", "set `spec.upgradeStrategy.type: NewCluster`"),
    ("tolerations-only", "tolerations and schedulingGates reach only a new RayCluster"),
])
def test_each_hold_starts_with_its_own_way_out(sample: str, first: str) -> None:
    [r] = diffing.analyze(*pair(sample)).resources
    assert r.decision == "hold"
    assert r.next_steps[0].startswith(first)
    assert "/rayservice-impact approve" in r.next_steps[-1]  # the audited override, always last


def test_held_gpu_recreation_suggests_the_incremental_strategy_and_the_exact_headroom_flag() -> None:
    [r] = diffing.analyze(*pair("gpu-image-bump")).resources
    assert any("NewClusterWithIncrementalUpgrade" in s for s in r.next_steps)
    assert "`--headroom nvidia.com/gpu=4`" in r.next_steps[0]


def test_env_only_change_suggests_moving_it_to_serve_config() -> None:
    before, _ = pair("gpu-image-bump")
    worker_env = "            env:\n            - name: HUGGING_FACE_HUB_TOKEN\n"
    extra = worker_env.replace("env:\n", "env:\n            - {name: LOG, value: debug}\n")
    after = before.replace(worker_env, extra, 1)
    assert after != before
    [r] = diffing.analyze(before, after).resources
    assert r.rollout == "new-cluster" and r.decision == "hold"
    assert any("serveConfigV2" in s and "runtime_env" in s for s in r.next_steps)


def test_approved_and_ignored_resources_have_no_steps() -> None:
    for sample in ("serve-only", "replicas-autoscaling", "worker-group-appended"):
        for r in diffing.analyze(*pair(sample)).resources:
            assert r.decision != "hold" and r.next_steps == ()


def test_an_unknown_extended_resource_gets_a_way_out_in_the_policy() -> None:
    before, after = doubled("example.com/foo")
    steps = one(diffing.analyze(before, after))["nextSteps"]
    assert any("`notAccelerators: [example.com/foo]`" in s for s in steps)
    r = one(diffing.analyze(before, after, policy={"notAccelerators": ["example.com/foo"]}))
    assert r["decision"] == "approve"  # the team said it is not a scarce device
    assert r["capacity"]["extra"]["example.com/foo"] == 2  # still reported
    gaudi = one(diffing.analyze(*doubled("habana.ai/gaudi")))["nextSteps"]
    assert not any("notAccelerators" in s for s in gaudi)  # a known family: no such hint
