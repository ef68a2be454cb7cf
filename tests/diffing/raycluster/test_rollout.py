"""What the RayCluster controller does about a change (diffing/raycluster/rollout.py): a delete, and a
replicas cut under autoscaling that is the autoscaler's.
"""

from __future__ import annotations

from tests.diffing.raycluster.cluster import AUTOSCALED, BASE, codes, gpu, one, variant


def test_delete() -> None:
    res = one(BASE, None)
    assert (res["rollout"], res["decision"]) == ("delete", "approve")


def test_an_autoscaled_replicas_cut_is_explained_as_the_autoscalers() -> None:
    res = one(AUTOSCALED, variant(lambda o: gpu(o).update(replicas=1), base=AUTOSCALED))
    assert res["rollout"] == "none" and "autoscaler" in " ".join(res["reasons"])
    assert "scale-in-deletes-pods" not in codes(res)
