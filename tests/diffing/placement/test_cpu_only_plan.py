"""A cpu-only RayService's new cluster, with the live nodes, is planned and decided like a GPU one
(docs/placement.md): the picture counts cpu, and the rollout holds only when a pod finds no node.
Without the live nodes a cpu-only rollout is not held for capacity, as before."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import diffing

from .helpers import node

SAMPLE = Path(__file__).resolve().parents[3] / "samples" / "gpu-image-bump"


def _cpu_only(text: str) -> str:
    return text.replace('                nvidia.com/gpu: "4"\n', "").replace('num-gpus: "4"', 'num-gpus: "0"')


def _analyze(nodes: list[dict[str, Any]] | None) -> diffing.ResourceReport:
    before, after = (_cpu_only((SAMPLE / n).read_text()) for n in ("before.yaml", "after.yaml"))
    assert "nvidia.com/gpu" not in after
    live = None if nodes is None else {k: diffing.LiveCluster(active_cluster="old", cluster=(nodes, []))
                                       for k in diffing.live_objects(after, "after")}
    (r,) = [r for r in diffing.analyze(before, after, live=live).resources if r.kind == "RayService"]
    return r


def test_a_cpu_only_new_cluster_that_does_not_fit_holds() -> None:
    # head 2 cpu / 4Gi, worker 32 cpu / 32Gi (+ the wait-gcs-ready init container, smaller):
    # 8-cpu nodes take the head, never the worker (its 32Gi fit a 32Gi node: only cpu is short)
    r = _analyze([node(f"n-{i}") for i in range(3)])
    assert r.rollout == "new-cluster"
    plan = r.capacity.placement
    assert plan is not None and plan["fits"] is False
    assert plan["byPool"] == {"resource": "cpu", "notPlaced": 32, "pools": [
        {"pool": "default-pool (n2-standard-8)", "nodes": 3, "allocatable": 24, "used": 0, "placed": 2,
         "free": 22}]}
    assert r.decision == "hold" and r.headline == "the new cluster's pods do not fit on the live nodes"
    assert any(x.endswith("0/3 nodes are available: 3 Insufficient cpu.") for x in r.reasons)


def test_a_cpu_only_new_cluster_that_fits_approves_and_without_nodes_nothing_changes() -> None:
    r = _analyze([node(f"n-{i}", machine="n2-standard-48", cpu="47", memory="180Gi") for i in range(2)])
    assert r.capacity.placement is not None and r.capacity.placement["fits"] is True
    assert r.decision == "approve"
    r = _analyze(None)
    assert r.capacity.placement is None and r.decision == "approve"
