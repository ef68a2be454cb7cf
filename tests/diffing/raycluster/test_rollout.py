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


def test_head_only_change_says_when_it_takes_effect_RCC_1025_1055() -> None:
    head = lambda o: spec(o)["headGroupSpec"]["template"]["spec"]["containers"][0].update(  # noqa: E731
        env=[{"name": "X", "value": "1"}])
    res = one(BASE, variant(head))
    assert res["rollout"] == "latent"
    assert "only the head pod" in res["reasons"][0]
    assert "a scale-up never rebuilds the head" in res["reasons"][0]


def test_mixed_change_notes_the_head_part() -> None:
    head = spec(BASE)["headGroupSpec"]["template"]["spec"]["containers"][0]
    both = variant(lambda o: spec(o)["headGroupSpec"]["template"]["spec"]["containers"][0].update(
        image=head["image"] + "-x"),
        lambda o: gpu(o)["template"]["spec"]["containers"][0].update(image="x:1"))
    res = one(BASE, both)
    assert res["rollout"] == "latent"
    assert any("the head's change waits for a new head pod" in r for r in res["reasons"])


def test_worker_only_change_has_no_head_note() -> None:
    res = one(BASE, variant(lambda o: gpu(o)["template"]["spec"]["containers"][0].update(image="x:1")))
    assert not any("head pod" in r for r in res["reasons"])
