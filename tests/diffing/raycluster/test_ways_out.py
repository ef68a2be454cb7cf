"""The ways out of a held standalone RayCluster change (diffing/raycluster/ways_out.py): the
reviewer's first, then the author's edits, then the platform's; a policy setting only for the
hold it releases."""

from __future__ import annotations

import yaml

import diffing
from diffing.vocab import Actor
from tests.diffing.raycluster.cluster import RECREATE, ROOM, SUSPENDED, one, spec, variant, worker_pod


def test_removing_suspend_is_a_warning_whose_way_out_is_an_explicit_false() -> None:
    res = one(SUSPENDED, variant(lambda o: spec(o).pop("suspend"), base=SUSPENDED))
    (f,) = [f for f in res["findings"] if f["code"] == "suspend-field-removed"]
    assert f["severity"] == "warning"
    reviewer, author, setting = res["nextSteps"]
    assert reviewer.startswith("accept it on purpose with `/rayservice-impact approve <reason>`")
    assert reviewer.endswith("or ask the author for an edit below")
    assert author == "write `spec.suspend: false` instead of deleting the line"
    assert setting.endswith("the policy's `notApplied: warn`")  # it holds as not applied: this releases it
    assert one(SUSPENDED, variant(lambda o: spec(o).pop("suspend"), base=SUSPENDED),
               policy={"notApplied": "warn"})["decision"] == "approve"


def test_a_recreate_hold_asks_to_confirm_the_downtime_and_offers_only_its_own_setting() -> None:
    after = variant(lambda o: worker_pod(o)["containers"][0].update(image="rayproject/ray:2.53.0"),
                    base=RECREATE)
    res = one(RECREATE, after, headroom=ROOM)
    assert (res["rollout"], res["decision"]) == ("recreate", "hold")
    steps = res["nextSteps"]
    assert steps[0].startswith("confirm the downtime is planned")
    assert "/rayservice-impact approve <reason>" in steps[0]
    assert any("`raycluster.holdOnRecreate: false`" in s for s in steps)
    assert not any("notApplied" in s or "holdOnRecreate: never" in s for s in steps)


def test_a_suspend_hold_names_the_authors_edit_after_the_reviewers_confirmation() -> None:
    res = one(variant(), SUSPENDED)
    assert (res["rollout"], res["decision"]) == ("suspend", "hold")
    assert res["nextSteps"][0].startswith("confirm the outage is intended")
    assert res["nextSteps"][1] == "keep it running: leave `spec.suspend` false"
    assert len(res["nextSteps"]) == 2, res["nextSteps"]  # no policy setting releases a suspend


def test_ways_out_carry_who_can_take_them() -> None:
    report = diffing.analyze(yaml.safe_dump(variant()), yaml.safe_dump(SUSPENDED))
    [r] = report.resources
    assert [w.by for w in r.ways_out] == [Actor.REVIEWER, Actor.AUTHOR]
