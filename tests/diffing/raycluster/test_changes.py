"""The changes of a standalone RayCluster (diffing/raycluster/changes.py): a live before side's server
defaults are none.
"""

from __future__ import annotations

from tests.diffing.raycluster.cluster import BASE, ROOM, gpu, one, variant


def test_a_live_before_side_lists_no_server_defaults_as_changes() -> None:
    """Argo CD's live state carries the CRD defaults the API server filled in (``numOfHosts: 1``,
    ``priority: 0``, CRD:5336-5360): not changes of the PR."""
    live = variant(lambda o: gpu(o).update(numOfHosts=1, priority=0))
    res = one(live, BASE, before_is_live=True)
    assert (res["rollout"], res["changes"]) == ("none", [])
    res = one(live, variant(lambda o: gpu(o).update(replicas=3)), before_is_live=True, headroom=ROOM)
    assert [c["path"] for c in res["changes"]] == ["spec.workerGroupSpecs[groupName=gpu].replicas"]
