"""What the RayCluster controller does about a change (diffing/raycluster/rollout.py): a delete, and a
replicas cut under autoscaling that is the autoscaler's.
"""

from __future__ import annotations

import pytest

from tests.diffing.raycluster.cluster import AUTOSCALED, BASE, codes, gpu, one, spec, variant


def test_delete() -> None:
    res = one(BASE, None)
    assert (res["rollout"], res["decision"]) == ("delete", "approve")


def test_an_autoscaled_replicas_cut_is_explained_as_the_autoscalers() -> None:
    res = one(AUTOSCALED, variant(lambda o: gpu(o).update(replicas=1), base=AUTOSCALED))
    assert res["rollout"] == "none" and "autoscaler" in " ".join(res["reasons"])
    assert "scale-in-deletes-pods" not in codes(res)


# A new RayCluster that KubeRay refuses, or that another controller manages, builds nothing here
# (RCC:158-161, 165-177; each was a disagreement with KubeRay's reconciler in conformance/).
def test_created_cluster_failing_validation_is_never_built() -> None:
    res = one(None, variant(lambda o: gpu(o).update(minReplicas=5)))
    assert (res["rollout"], res["decision"]) == ("not-applied", "hold")
    assert "validation fails" in res["reasons"][0] and res["capacity"]["extra"] == {}


def test_created_cluster_rejected_by_the_api_server_stores_nothing() -> None:
    res = one(None, variant(lambda o: spec(o).update(upgradeStrategy={"type": "Sometimes"})))
    assert res["rollout"] == "not-applied" and "schema-violation" in codes(res)
    assert res["capacity"]["extra"] == {}


@pytest.mark.parametrize("created", [True, False], ids=["created", "deleted"])
def test_cluster_managed_elsewhere_is_neither_built_nor_torn_down(created: bool) -> None:
    kueue = variant(lambda o: spec(o).update(managedBy="kueue.x-k8s.io/multikueue"))
    res = one(None, kueue) if created else one(kueue, None)
    assert res["rollout"] == "none" and "managedBy" in res["reasons"][0]
    assert res["capacity"]["extra"] == {}
