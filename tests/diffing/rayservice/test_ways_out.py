"""Every hold says how to get past it, specific to its cause (issue 10: "say what to do next"),
and in the order of who can act on a pull request (issue 24): the reviewer first (accept it on
purpose, or ask for an edit), then the author's edits, then what the platform can set; a policy
setting only where it releases this very hold."""

from __future__ import annotations

from pathlib import Path

import pytest

import diffing
from diffing.vocab import ACTOR_ORDER, Actor
from tests.diffing.helpers import doubled, one

ROOT = Path(__file__).resolve().parents[3]


def pair(name: str) -> tuple[str, str]:
    folder = ROOT / "samples" / name
    return (folder / "before.yaml").read_text(), (folder / "after.yaml").read_text()


def by(r: diffing.ResourceReport, actor: str) -> list[str]:
    return [w.text for w in r.ways_out if w.by == actor]


@pytest.mark.parametrize(("sample", "author"), [
    ("gpu-image-bump", "roll out with less: `upgradeStrategy.type: NewClusterWithIncrementalUpgrade`"),
    ("strategy-none", "set `spec.upgradeStrategy.type: NewCluster`"),
    ("tolerations-only", "tolerations and schedulingGates reach only a new RayCluster"),
])
def test_each_hold_starts_with_the_reviewer_then_the_authors_edit(sample: str, author: str) -> None:
    [r] = diffing.analyze(*pair(sample)).resources
    assert r.decision == "hold"
    assert [w.by for w in r.ways_out] == sorted((w.by for w in r.ways_out), key=ACTOR_ORDER.__getitem__)
    assert r.ways_out[0].by == Actor.REVIEWER
    assert "/rayservice-impact approve <reason>" in r.next_steps[0]
    assert "ask the author for an edit below" in r.next_steps[0]
    assert by(r, Actor.AUTHOR)[0].startswith(author)
    assert r.to_dict()["nextSteps"] == list(r.next_steps)  # the JSON in the same order


def test_held_gpu_recreation_offers_room_to_the_platform_and_only_the_settings_that_release_it() -> None:
    [r] = diffing.analyze(*pair("gpu-image-bump")).resources
    platform = by(r, Actor.PLATFORM)
    assert "`--headroom nvidia.com/gpu=4`" in platform[0]
    assert any("`holdOnRecreate: never`" in s for s in platform)
    assert not any("notApplied" in s for s in r.next_steps)  # the rollout is applied: no use here
    assert not any("--headroom" in s for s in by(r, Actor.REVIEWER) + by(r, Actor.AUTHOR))


def test_a_change_not_applied_offers_its_fix_and_notapplied_warn_but_no_recreate_setting() -> None:
    [r] = diffing.analyze(*pair("strategy-none")).resources
    [fix] = [w for w in r.ways_out if w.fix is not None]
    assert (fix.by, fix.fix) == (Actor.AUTHOR, (("spec", "upgradeStrategy", "type"), "NewCluster"))
    assert any("`notApplied: warn`" in s for s in by(r, Actor.PLATFORM))
    assert not any("holdOnRecreate" in s for s in r.next_steps)
    relaxed = one(diffing.analyze(*pair("strategy-none"), policy={"notApplied": "warn"}))
    assert relaxed["decision"] == "approve"  # the setting offered does release it


def test_always_holding_recreations_is_released_only_by_the_policy() -> None:
    [r] = diffing.analyze(*pair("gpu-image-bump"), headroom={"nvidia.com/gpu": 8},
                          policy={"holdOnRecreate": "always"}).resources
    assert r.decision == "hold"
    assert by(r, Actor.PLATFORM) == [
        "stop holding cluster recreations the headroom covers (`always` holds every one) in every pull "
        "request: the policy's `holdOnRecreate: gpu-only`"]
    assert by(r, Actor.AUTHOR) == []  # an incremental rollout is a recreation too: it would still hold
    assert "ask the author" not in r.next_steps[0]


def test_a_rejected_manifest_holds_on_its_errors_so_notapplied_warn_is_not_offered() -> None:
    before, after = pair("gpu-image-bump")
    broken = after.replace("maxReplicas: 1", "maxReplicas: -1", 1)
    assert broken != after
    [r] = diffing.analyze(before, broken).resources
    assert (r.rollout, r.decision) == ("not-applied", "hold")
    assert by(r, Actor.AUTHOR)[0].startswith("fix the error findings below")
    assert not any("notApplied" in s for s in r.next_steps)


def test_env_only_change_suggests_moving_it_to_serve_config() -> None:
    before, _ = pair("gpu-image-bump")
    worker_env = "            env:\n            - name: HUGGING_FACE_HUB_TOKEN\n"
    extra = worker_env.replace("env:\n", "env:\n            - {name: LOG, value: debug}\n")
    after = before.replace(worker_env, extra, 1)
    assert after != before
    [r] = diffing.analyze(before, after).resources
    assert r.rollout == "new-cluster" and r.decision == "hold"
    assert any("serveConfigV2" in s and "runtime_env" in s for s in by(r, Actor.AUTHOR))


def test_approved_and_ignored_resources_have_no_steps() -> None:
    for sample in ("serve-only", "replicas-autoscaling", "worker-group-appended"):
        for r in diffing.analyze(*pair(sample)).resources:
            assert r.decision != "hold" and r.next_steps == () and r.ways_out == ()


def test_an_unknown_extended_resource_gets_a_way_out_in_the_policy() -> None:
    before, after = doubled("example.com/foo")
    steps = one(diffing.analyze(before, after))["nextSteps"]
    assert any("`notAccelerators: [example.com/foo]`" in s for s in steps)
    r = one(diffing.analyze(before, after, policy={"notAccelerators": ["example.com/foo"]}))
    assert r["decision"] == "approve"  # the team said it is not a scarce device
    assert r["capacity"]["extra"]["example.com/foo"] == 2  # still reported
    gaudi = one(diffing.analyze(*doubled("habana.ai/gaudi")))["nextSteps"]
    assert not any("notAccelerators" in s for s in gaudi)  # a known family: no such hint


def test_the_comment_lists_the_ways_out_by_who_can_act() -> None:
    report = diffing.analyze(*pair("gpu-image-bump"))
    text = diffing.render_markdown(report)
    section = text[text.index("**Ways out**"):text.index("**Extra capacity needed:**")]
    reviewer = section.index("- **Reviewer**: accept it on purpose with `/rayservice-impact approve")
    author = section.index("- **Author** (the hold comes from `after` line 28): roll out with less")
    platform = section.index("- **Platform (cluster and policy owners)**:\n  - make room for 4 nvidia")
    assert reviewer < author < platform
