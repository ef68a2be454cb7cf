"""An in-place update that adds pods (an appended worker group, more replicas) holds when, with a
live basis, the placement plan cannot take them (docs/placement.md, "Decision"); it approves when
they fit, and without a live basis nothing changes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

import diffing

from .helpers import node, pod

SAMPLE = Path(__file__).resolve().parents[3] / "samples" / "gpu-image-bump"


def _texts(gpus: str = "4", replicas: int = 2) -> tuple[str, str]:
    before = (SAMPLE / "before.yaml").read_text()
    docs = list(yaml.safe_load_all(before))
    service = next(d for d in docs if d and d.get("kind") == "RayService")
    groups = service["spec"]["rayClusterConfig"]["workerGroupSpecs"]
    extra = {"groupName": "more-gpu", "replicas": replicas, "minReplicas": replicas, "maxReplicas": replicas,
             "rayStartParams": {}, "template": {"spec": {"containers": [{
                 "name": "ray-worker", "image": groups[0]["template"]["spec"]["containers"][0]["image"],
                 "resources": {"requests": {"cpu": "8", "memory": "32Gi", "nvidia.com/gpu": gpus},
                               "limits": {"cpu": "8", "memory": "32Gi", "nvidia.com/gpu": gpus}}}]}}}
    groups.append(extra)
    return before, yaml.safe_dump_all(docs, sort_keys=False)


def _nodes(free_gpus: list[int]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    nodes = [node(f"gpu-{i}", pool="gpu-pool", machine="a2-highgpu-8g", cpu="94", memory="1300Gi",
                  extra={"nvidia.com/gpu": "8"}) for i in range(len(free_gpus))]
    pods = [pod(f"busy-{i}", f"gpu-{i}", {"nvidia.com/gpu": str(8 - free)})
            for i, free in enumerate(free_gpus) if free < 8]
    return nodes, pods


def _analyze(before: str, after: str, cluster: Any, **options: Any) -> diffing.ResourceReport:
    live = {k: diffing.LiveCluster(active_cluster="old", cluster=cluster)
            for k in diffing.live_objects(after, "after")}
    report = diffing.analyze(before, after, live=live, **options)
    (r,) = [r for r in report.resources if r.kind == "RayService"]
    return r


def test_an_appended_group_that_does_not_fit_holds() -> None:
    # 2 new pods of 4 GPUs; the nodes have 3 and 5 free: only gpu-1 takes one
    before, after = _texts()
    r = _analyze(before, after, _nodes([3, 5]))
    assert r.rollout == "cluster-in-place"
    plan = r.capacity.placement
    assert plan is not None and plan["fits"] is False
    assert r.decision == "hold"
    assert any(reason.startswith("1 of 2 pod(s) the update adds to worker group more-gpu cannot be placed "
                                 "on the live nodes, they would stay Pending: 0/2 nodes are available: "
                                 "2 Insufficient nvidia.com/gpu.") for reason in r.reasons)
    assert "(1 more node(s) like gpu-pool (a2-highgpu-8g) would take them)" in " ".join(r.reasons)
    texts = [w.text for w in r.ways_out]
    assert any("lower the appended group's `replicas`" in t for t in texts)
    assert any("`holdOnRecreate: never`" in t for t in texts)


def test_an_appended_group_that_fits_approves() -> None:
    before, after = _texts()
    r = _analyze(before, after, _nodes([8, 5]))
    assert r.capacity.placement is not None and r.capacity.placement["fits"] is True
    assert r.decision == "approve" and r.ways_out == ()


def test_hold_on_recreate_never_releases_it_and_always_adds_nothing() -> None:
    before, after = _texts()
    for setting, decision in (("never", "approve"), ("always", "hold")):
        policy = {"holdOnRecreate": setting}
        r = _analyze(before, after, _nodes([3, 5]), policy=policy)
        assert r.decision == decision
    fits = _analyze(before, after, _nodes([8, 8]), policy={"holdOnRecreate": "always"})
    assert fits.decision == "approve"  # nothing is recreated: `always` does not hold an in-place update


def test_without_a_live_basis_nothing_changes() -> None:
    before, after = _texts(gpus="8", replicas=10)
    report = diffing.analyze(before, after)
    (r,) = [r for r in report.resources if r.kind == "RayService"]
    assert r.rollout == "cluster-in-place" and r.capacity.placement is None and r.decision == "approve"
