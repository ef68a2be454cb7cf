"""A standalone RayCluster's rollout placed on the live nodes (docs/placement.md): a scale-up's new
pods, a Recreate's rebuilt cluster on the nodes its old pods leave, a resume's whole cluster. With
the live nodes the plan decides the capacity hold (only pods that find no node hold); without
them the headroom totals decide, as before."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import diffing

from .helpers import GPU_TAINT, node, pod

SAMPLE = Path(__file__).resolve().parents[3] / "samples" / "raycluster-image-bump-recreate"
L4 = {"cloud.google.com/gke-accelerator": "nvidia-l4"}
NS, NAME = "ml-batch", "train-l4"


def _l4_nodes(count: int) -> list[dict[str, Any]]:
    # GKE g2-standard-12: 1 L4, 11 allocatable cpu, 44Gi; the GPU taint GKE puts on GPU pools
    return [node(f"l4-{i}", pool="l4-pool", machine="g2-standard-12", cpu="11", memory="44Gi",
                 extra={"nvidia.com/gpu": "1"}, labels=L4, taints=[GPU_TAINT]) for i in range(count)]


def _cluster_pods(workers: int) -> list[dict[str, Any]]:
    """The running cluster: its head on cpu-0, one worker per L4 node, all labelled ray.io/cluster."""
    labels = {"ray.io/cluster": NAME}
    out = [pod("train-l4-head", "cpu-0", {"cpu": "4", "memory": "16Gi"}, namespace=NS, labels=labels)]
    out += [pod(f"train-l4-l4-worker-{i}", f"l4-{i}", {"cpu": "8", "memory": "32Gi", "nvidia.com/gpu": "1"},
                namespace=NS, labels=labels) for i in range(workers)]
    return out


def _report(before: str, after: str, nodes: list[dict[str, Any]], pods: list[dict[str, Any]],
            **options: Any) -> diffing.ResourceReport:
    live = {f"RayCluster/{NS}/{NAME}": diffing.LiveCluster(cluster=(nodes, pods))}
    (r,) = diffing.analyze(before, after, live=live, **options).resources
    return r


def _texts() -> tuple[str, str]:
    return (SAMPLE / "before.yaml").read_text(), (SAMPLE / "after.yaml").read_text()


def _scaled(text: str, replicas: int) -> str:
    return text.replace("replicas: 4\n    minReplicas: 4\n    maxReplicas: 4",
                        f"replicas: {replicas}\n    minReplicas: {replicas}\n    maxReplicas: {replicas}")


def test_recreate_places_the_rebuilt_cluster_where_the_old_pods_were() -> None:
    # 4 L4 nodes, each held by a worker of the old cluster: Recreate deletes them first, so the 4
    # new workers find the same 4 nodes free; the head goes on a cpu node (no toleration).
    before, after = _texts()
    nodes = [node("cpu-0", pool="cpu-pool"), *_l4_nodes(4)]
    r = _report(before, after, nodes, _cluster_pods(4))
    assert r.rollout == "recreate"
    plan = r.capacity.placement
    assert plan is not None and plan["fits"] is True
    assert [(g["group"], g["placed"], g["pools"]) for g in plan["groups"]] == [
        ("head", 1, {"cpu-pool (n2-standard-8)": 1}), ("l4", 4, {"l4-pool (g2-standard-12)": 4})]
    assert not any("cannot be placed" in reason for reason in r.reasons)


def test_recreate_holds_when_another_pod_took_a_freed_node() -> None:
    # another team's pod holds l4-3's GPU: the old cluster had 3 workers there, the new one wants
    # 4; the 4th worker finds every L4 node's GPU taken (and on the 3 nodes the new workers took,
    # 3 cpu and 12Gi are left of 11 and 44Gi: NodeResourcesFit names each resource short).
    before, after = _texts()
    nodes = [node("cpu-0", pool="cpu-pool"), *_l4_nodes(4)]
    pods = [*_cluster_pods(3), pod("other", "l4-3", {"nvidia.com/gpu": "1"}, namespace="other-team")]
    r = _report(before, after, nodes, pods)
    assert r.decision == "hold"
    assert ("1 of 4 new pod(s) of worker group l4 cannot be placed on the live nodes (they stay Pending): "
            "0/5 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, "
            "3 Insufficient cpu, 3 Insufficient memory, 4 Insufficient nvidia.com/gpu. "
            "(1 more node(s) like l4-pool (g2-standard-12) would take them)"
            ) in r.reasons
    assert any("lower the new replica counts" in w.text for w in r.ways_out)


def test_a_scale_up_places_only_the_new_pods() -> None:
    # 4 workers run on l4-0..3; replicas 4 -> 6 adds 2: l4-4 takes one, nothing else is free
    before, after = _texts()
    after = _scaled(before, 6)
    nodes = [node("cpu-0", pool="cpu-pool"), *_l4_nodes(5)]
    r = _report(before, after, nodes, _cluster_pods(4))
    assert r.rollout == "scale"
    plan = r.capacity.placement
    assert plan is not None and plan["pods"] == 2
    assert [(g["group"], g["pods"], g["placed"]) for g in plan["groups"]] == [("l4", 2, 1)]
    assert r.decision == "hold" and r.headline == "the new pods do not fit on the live nodes"
    fits = _report(before, after, [*nodes, *_l4_nodes(6)[5:]], _cluster_pods(4))
    assert fits.capacity.placement is not None and fits.capacity.placement["fits"] is True
    assert fits.decision == "approve"


def test_without_the_live_nodes_the_totals_decide() -> None:
    before, _ = _texts()
    (r,) = diffing.analyze(before, _scaled(before, 6), headroom={"nvidia.com/gpu": 2}).resources
    assert r.capacity.placement is None and r.decision == "approve"
    (r,) = diffing.analyze(before, _scaled(before, 6), headroom={"nvidia.com/gpu": 1}).resources
    assert r.capacity.placement is None and r.decision == "hold"
