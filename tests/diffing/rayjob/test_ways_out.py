"""The ways out of a held RayJob change (diffing/rayjob/ways_out.py), by who can take them, and
only those that can release the hold: no RayService policy setting for a RayJob's suspend."""

from __future__ import annotations

from diffing.vocab import ACTOR_ORDER, Actor
from tests.diffing.rayjob.jobs import _job, _one, _spec, _text, _update

POLICY_WORDS = ("holdOnRecreate", "notApplied", "thresholds", "--headroom", "holdOnErrors")


def test_a_suspend_hold_asks_the_reviewer_to_confirm_and_offers_no_policy_setting() -> None:
    r = _update(_spec(suspend=True))
    assert (r.rollout, r.decision) == ("suspend", "hold")
    assert [w.by for w in r.ways_out] == [Actor.REVIEWER, Actor.AUTHOR]
    assert r.next_steps[0].startswith("confirm the job may lose its work")
    assert "/rayservice-impact approve <reason>" in r.next_steps[0]
    assert r.ways_out[1].fix == (("spec", "suspend"), False)
    assert not any(word in step for step in r.next_steps for word in POLICY_WORDS), r.next_steps


def test_suspend_without_shutdown_asks_the_author_for_shutdown_and_offers_no_notapplied_warn() -> None:
    r = _update(_spec(suspend=True, shutdownAfterJobFinishes=False))
    assert (r.rollout, r.decision) == ("not-applied", "hold")
    authors = [w for w in r.ways_out if w.by == Actor.AUTHOR]
    assert authors[0].text.startswith("fix the error findings below")
    assert (("spec", "shutdownAfterJobFinishes"), True) in [w.fix for w in authors]
    assert any("delete and recreate the RayJob" in w.text for w in authors)
    # its error findings hold it whatever notApplied says: that setting would not release it
    assert not any(word in step for step in r.next_steps for word in POLICY_WORDS), r.next_steps
    assert _update(_spec(suspend=True, shutdownAfterJobFinishes=False),
                   policy={"notApplied": "warn"}).decision == "hold"


def test_a_run_beyond_the_known_headroom_offers_room_to_the_platform_last() -> None:
    def tpus(job: dict) -> None:
        worker = job["spec"]["rayClusterSpec"]["workerGroupSpecs"][0]["template"]["spec"]["containers"][0]
        worker["resources"] = {"limits": {"google.com/tpu": "4"}, "requests": {"google.com/tpu": "4"}}

    r = _one("", _text(_job(tpus)), headroom={"google.com/tpu": 2})
    assert (r.rollout, r.decision) == ("create", "hold")
    assert [w.by for w in r.ways_out] == sorted((w.by for w in r.ways_out), key=ACTOR_ORDER.__getitem__)
    assert r.ways_out[0].by == Actor.REVIEWER and "ask the author" not in r.next_steps[0]
    assert [w.by for w in r.ways_out][-1] == Actor.PLATFORM
    assert "`--headroom google.com/tpu=4`" in r.next_steps[-1]
