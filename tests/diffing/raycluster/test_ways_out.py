"""The ways out of a held standalone RayCluster change (diffing/raycluster/ways_out.py)."""

from __future__ import annotations

from tests.diffing.raycluster.cluster import SUSPENDED, one, spec, variant


def test_removing_suspend_is_a_warning_whose_way_out_is_an_explicit_false() -> None:
    res = one(SUSPENDED, variant(lambda o: spec(o).pop("suspend"), base=SUSPENDED))
    (f,) = [f for f in res["findings"] if f["code"] == "suspend-field-removed"]
    assert f["severity"] == "warning"
    assert res["nextSteps"] == ["write spec.suspend: false instead of deleting the line"]
