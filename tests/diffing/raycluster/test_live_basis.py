"""A standalone RayCluster with a live basis: what the pods say (docs/semantics/raycluster.md §10), for
the rows of §9 a manifest diff cannot decide (23, 38, 40).
"""

from __future__ import annotations

from typing import Any

from diffing.live import LiveCluster
from tests.diffing.raycluster.cluster import (
    AUTOSCALED,
    BASE,
    RECREATE,
    ROOM,
    _hash,
    codes,
    gpu,
    one,
    spec,
    variant,
    worker_pod,
)


def _live(**kw: Any) -> dict[str, LiveCluster]:
    return {"RayCluster/ml/llm": LiveCluster(**kw)}


def test_23_switch_to_recreate_fires_when_the_head_was_built_from_an_older_spec() -> None:
    older = variant(lambda o: worker_pod(o)["containers"][0].update(env=[{"name": "OLD", "value": "1"}]))
    switch = variant(lambda o: spec(o).update(upgradeStrategy={"type": "Recreate"}))
    pending = one(BASE, switch, live=_live(head_hash=_hash(older), head_kuberay_version="v1.7.0"))
    assert pending["rollout"] == "recreate" and "recreate-downtime" in codes(pending)
    current = one(BASE, switch, live=_live(head_hash=_hash(BASE), head_kuberay_version="v1.7.0"))
    assert current["rollout"] == "none" and "recreate-switch" not in codes(current)


def test_38_a_head_built_by_another_operator_version_absorbs_the_change() -> None:
    edit = variant(lambda o: worker_pod(o)["containers"][0].update(env=[{"name": "X", "value": "1"}]),
                   base=RECREATE)
    res = one(RECREATE, edit, live=_live(head_hash=_hash(RECREATE), head_kuberay_version="v1.6.2"))
    assert res["rollout"] == "latent"
    assert any("absorbed" in r for r in res["reasons"])


def test_live_orphans_of_an_earlier_removal_are_reported() -> None:
    res = one(BASE, variant(lambda o: gpu(o).update(replicas=3)), headroom=ROOM,
              live=_live(group_pods={"gpu": 2, "old-gpu": 3}, worker_replicas={"gpu": 2}))
    assert "orphaned-pods" in codes(res) and res["decision"] == "hold"
    assert res["capacity"]["basis"] == "live"


def test_live_pod_count_drives_the_scale_out() -> None:
    # The autoscaler has the group at 4 pods; Git asks 3 with autoscaling off: one pod is deleted.
    res = one(BASE, variant(lambda o: gpu(o).update(replicas=3)), live=_live(group_pods={"gpu": 4}))
    assert res["rollout"] == "scale" and res["capacity"]["extra"] == {}


def test_40_any_edit_resets_the_autoscalers_replicas_to_git() -> None:
    before = variant(lambda o: gpu(o).update(replicas=1), base=AUTOSCALED)
    after = variant(lambda o: worker_pod(o)["containers"][0].update(env=[{"name": "X", "value": "1"}]),
                    base=before)
    res = one(before, after, live=_live(worker_replicas={"gpu": 4}, group_pods={"gpu": 4}))
    fight = [f for f in res["findings"] if f["code"] == "autoscaler-fight"]
    assert fight and "minReplicas" in fight[0]["message"]
