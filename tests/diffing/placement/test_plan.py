"""Placement plans on cluster states users have, each worked out by hand from the scheduler's rules.

Filter order and messages: kubernetes pkg/scheduler/apis/config/v1/default_plugins.go and the
plugins' reasons (diffing/placement/filters.py); the message: framework/types.go FitError.Error,
reasons "<count> <reason>" sorted as strings.
"""

from __future__ import annotations

from typing import Any

from diffing.placement import plan_for, rollout_asks

from .helpers import GPU_TAINT, GPU_TOLERATION, cluster, node, pod, worker

A100 = {"cloud.google.com/gke-accelerator": "nvidia-tesla-a100"}
H100 = {"cloud.google.com/gke-accelerator": "nvidia-h100-80gb"}


def _gpu_node(name: str, pool: str, accel: dict[str, str], machine: str) -> dict[str, Any]:
    return node(name, pool=pool, machine=machine, cpu="94", memory="1300Gi", extra={"nvidia.com/gpu": "8"},
                labels=accel, taints=[GPU_TAINT])


def _gpu_spec(accel: dict[str, str]) -> dict[str, Any]:
    return {"nodeSelector": accel, "tolerations": [GPU_TOLERATION]}


def test_fragmented_a100_pool_totals_suffice_but_pods_do_not_fit() -> None:
    # a100 pool: 3 nodes of 8 GPUs, running pods hold 5, 6 and 3: free 3, 2, 5 = 10 GPUs, enough
    # by the totals for 2 workers x 4. Per node: only a100-2 (5 free) takes a 4-GPU pod
    # (NodeResourcesFit); then it has 1 left. The second worker fits nowhere: the 3 a100 nodes are
    # short of GPUs; the 2 h100 nodes (tainted too, tolerated) fail the nodeSelector (NodeAffinity
    # runs before NodeResourcesFit); the 2 cpu nodes carry no taint and fail the nodeSelector.
    nodes = [_gpu_node(f"a100-{i}", "a100-pool", A100, "a2-highgpu-8g") for i in range(3)]
    nodes += [_gpu_node(f"h100-{i}", "h100-pool", H100, "a3-highgpu-8g") for i in range(2)]
    nodes += [node(f"cpu-{i}", pool="cpu-pool") for i in range(2)]
    pods = [pod(f"busy-{i}", f"a100-{i}", {"nvidia.com/gpu": used}) for i, used in enumerate("563")]
    rcc = cluster({"cpu": "2", "memory": "8Gi"},
                  worker("gpu", {"nvidia.com/gpu": "4", "cpu": "16", "memory": "100Gi"}, replicas=2,
                         spec=_gpu_spec(A100)))
    plan = plan_for(rollout_asks(rcc), nodes, pods).as_dict()
    assert plan["fits"] is False
    head, gpu = plan["groups"]
    # The head (no toleration) cannot go on the tainted GPU nodes: the first cpu node takes it.
    assert head == {"group": "head", "pods": 1, "placed": 1, "pools": {"cpu-pool (n2-standard-8)": 1}}
    assert gpu["placed"] == 1 and gpu["unplaced"] == 1
    assert gpu["pools"] == {"a100-pool (a2-highgpu-8g)": 1}
    assert gpu["message"] == ("0/7 nodes are available: 3 Insufficient nvidia.com/gpu, "
                              "4 node(s) didn't match Pod's node affinity/selector.")
    # One more empty a100 node takes the last worker; no other shape passes its filters.
    assert plan["addNodes"] == [{"shape": "a100-pool (a2-highgpu-8g)", "nodes": 1, "pods": 1,
                                 "placesAll": True}]


def test_mixed_pools_untolerated_taint_and_cpu_shortage() -> None:
    # A cpu-only group without toleration: the 2 GPU nodes reject it on their taint
    # (TaintToleration: "{nvidia.com/gpu: present}"); the 2 cpu nodes of 8 cpu, 6 used on one,
    # take 4-cpu pods: cpu-1 takes 2 (8 cpu), cpu-0 none (2 free). 3 asked: 1 left over.
    nodes = [_gpu_node(f"a100-{i}", "a100-pool", A100, "a2-highgpu-8g") for i in range(2)]
    nodes += [node(f"cpu-{i}", pool="cpu-pool") for i in range(2)]
    pods = [pod("busy", "cpu-0", {"cpu": "6"})]
    rcc = cluster({"cpu": "1"}, worker("cpu", {"cpu": "4", "memory": "4Gi"}, replicas=3))
    plan = plan_for(rollout_asks(rcc, {"cpu": 3}, head=False), nodes, pods).as_dict()
    (group,) = plan["groups"]
    assert group["placed"] == 2
    assert group["message"] == ("0/4 nodes are available: 2 Insufficient cpu, "
                                "2 node(s) had untolerated taint {nvidia.com/gpu: present}.")
    assert plan["addNodes"][0] == {"shape": "cpu-pool (n2-standard-8)", "nodes": 1, "pods": 1,
                                   "placesAll": True}


def test_prefer_no_schedule_taint_does_not_filter() -> None:
    nodes = [node("n", taints=[{"key": "spot", "value": "true", "effect": "PreferNoSchedule"}])]
    plan = plan_for(rollout_asks(cluster({"cpu": "1"}), head=True), nodes, []).as_dict()
    assert plan["fits"] is True


def test_mig_slices_are_their_own_resource() -> None:
    # Two MIG nodes of 7 x 1g.10gb, 6 held on one: 1 + 7 = 8 free; a full-GPU node has none.
    # 9 single-slice pods: 8 placed, the 9th finds every node short of the MIG resource.
    mig = {"nvidia.com/mig.config": "all-1g.10gb"}
    nodes = [node(f"mig-{i}", pool="mig-pool", machine="a2-highgpu-1g", labels=mig,
                  extra={"nvidia.com/mig-1g.10gb": "7"}) for i in range(2)]
    nodes.append(node("full", pool="gpu-pool", machine="a2-highgpu-1g", extra={"nvidia.com/gpu": "1"}))
    pods = [pod("busy", "mig-0", {"nvidia.com/mig-1g.10gb": "6"})]
    rcc = cluster({"cpu": "1"}, worker("mig", {"nvidia.com/mig-1g.10gb": "1", "cpu": "500m"}, replicas=9))
    plan = plan_for(rollout_asks(rcc, head=False), nodes, pods).as_dict()
    (group,) = plan["groups"]
    assert (group["placed"], group["unplaced"]) == (8, 1)
    assert group["pools"] == {"mig-pool (a2-highgpu-1g)": 8}
    assert group["message"] == "0/3 nodes are available: 3 Insufficient nvidia.com/mig-1g.10gb."


def _tpu_node(name: str, pool: str) -> dict[str, Any]:
    return node(name, pool=pool, machine="ct5p-hightpu-4t", cpu="200", memory="400Gi",
                extra={"google.com/tpu": "4"},
                labels={"cloud.google.com/gke-tpu-topology": "2x2x4",
                        "cloud.google.com/gke-tpu-accelerator": "tpu-v5p-slice"},
                taints=[{"key": "google.com/tpu", "value": "present", "effect": "NoSchedule"}])


TPU_SPEC = {"nodeSelector": {"cloud.google.com/gke-tpu-topology": "2x2x4",
                             "cloud.google.com/gke-tpu-accelerator": "tpu-v5p-slice"},
            "tolerations": [{"key": "google.com/tpu", "operator": "Exists", "effect": "NoSchedule"}]}


def test_tpu_multi_host_replica_needs_one_slice() -> None:
    # Two 4-host v5p slices (one node pool each). slice-a has 2 hosts busy, slice-b 1: 5 free hosts,
    # enough by the totals for one replica of 4 hosts, but no slice has 4 free: nothing is placed.
    nodes = [_tpu_node(f"{s}-{i}", f"slice-{s}") for s in "ab" for i in range(4)]
    pods = [pod("a0", "a-0", {"google.com/tpu": "4"}), pod("a1", "a-1", {"google.com/tpu": "4"}),
            pod("b0", "b-0", {"google.com/tpu": "4"})]
    rcc = cluster({"cpu": "1"}, worker("tpu", {"google.com/tpu": "4", "cpu": "8"}, replicas=1, hosts=4,
                                       spec=TPU_SPEC))
    plan = plan_for(rollout_asks(rcc, head=False), nodes, pods).as_dict()
    (group,) = plan["groups"]
    assert (group["placed"], group["unplaced"]) == (0, 4)
    assert group["message"].startswith("0/8 nodes are available: 3 Insufficient google.com/tpu.")
    assert "one cloud.google.com/gke-nodepool" in group["message"]
    # A new slice of that shape: 4 nodes.
    assert plan["addNodes"][0]["nodes"] == 4 and plan["addNodes"][0]["placesAll"] is True


def test_tpu_replicas_each_take_a_whole_free_slice() -> None:
    # slice-a fully free, slice-b fully free: 2 replicas of 4 hosts, one per slice.
    nodes = [_tpu_node(f"{s}-{i}", f"slice-{s}") for s in "ab" for i in range(4)]
    rcc = cluster({"cpu": "1"}, worker("tpu", {"google.com/tpu": "4"}, replicas=2, hosts=4, spec=TPU_SPEC))
    plan = plan_for(rollout_asks(rcc, head=False), nodes, []).as_dict()
    assert plan["fits"] is True
    assert plan["groups"][0]["pools"] == {"slice-a (ct5p-hightpu-4t)": 4, "slice-b (ct5p-hightpu-4t)": 4}


def test_cordon_not_ready_and_topology_spread() -> None:
    # n1 (zone a) is cordoned: NodeUnschedulable. n2 (zone b) is NotReady: the lifecycle controller's
    # not-ready taint. n3 (zone a) has room for 3 pods, n4 (zone b) for 1. One matching pod already
    # runs in zone a. maxSkew 1 on zone, DoNotSchedule; domains a and b (taints ignored).
    # pod 1: n3 would make a=2 vs b=0 (skew 2) -> n4, b=1. pod 2: n3, a=2. pod 3: n3 would make
    # a=3 vs 1 (skew 2), n4 is out of cpu: unplaced.
    spread = {"topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone",
                                             "whenUnsatisfiable": "DoNotSchedule",
                                             "labelSelector": {"matchLabels": {"ray.io/group": "w"}}}]}
    zone = "topology.kubernetes.io/zone"
    nodes = [node("n1", cpu="8", labels={zone: "a"}, unschedulable=True),
             node("n2", cpu="8", labels={zone: "b"}, ready="False"),
             node("n3", cpu="6", labels={zone: "a"}),
             node("n4", cpu="2", labels={zone: "b"})]
    pods = [pod("old", "n3", {"cpu": "0"}, labels={"ray.io/group": "w"})]
    rcc = cluster({"cpu": "1"}, worker("w", {"cpu": "2"}, replicas=3, spec=spread))
    plan = plan_for(rollout_asks(rcc, head=False, init_injection=False, namespace="default"), nodes,
                    pods).as_dict()
    (group,) = plan["groups"]
    assert (group["placed"], group["unplaced"]) == (2, 1)
    assert group["message"] == (
        "0/4 nodes are available: 1 Insufficient cpu, 1 node(s) didn't match pod topology spread "
        "constraints, 1 node(s) had untolerated taint {node.kubernetes.io/not-ready: }, "
        "1 node(s) were unschedulable.")


def test_pending_pods_queue_ahead() -> None:
    # One node with 8 GPUs, 4 held; a Pending pod (no node yet) wants 4: it goes first, and the
    # rollout's 4-GPU pod finds the node full.
    nodes = [node("g", extra={"nvidia.com/gpu": "8"}, cpu="32")]
    pods = [pod("run", "g", {"nvidia.com/gpu": "4"}),
            pod("wait", None, {"nvidia.com/gpu": "4"}, phase="Pending"),
            pod("done", "g", {"nvidia.com/gpu": "4"}, phase="Succeeded")]  # finished: holds nothing
    rcc = cluster({"cpu": "1"}, worker("gpu", {"nvidia.com/gpu": "4"}, replicas=1))
    plan = plan_for(rollout_asks(rcc, head=False), nodes, pods).as_dict()
    assert plan["queuedAhead"] == 1 and plan["fits"] is False
    assert plan["groups"][0]["message"] == "0/1 nodes are available: 1 Insufficient nvidia.com/gpu."


def test_pod_count_limit() -> None:
    nodes = [node("small", pods=2)]
    pods = [pod("a", "small", {"cpu": "100m"}), pod("b", "small", {"cpu": "100m"})]
    plan = plan_for(rollout_asks(cluster({"cpu": "1"})), nodes, pods).as_dict()
    assert plan["groups"][0]["message"] == "0/1 nodes are available: 1 Too many pods."


def test_required_node_affinity_terms_are_ored() -> None:
    affinity = {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [
            {"matchExpressions": [{"key": "cloud.google.com/gke-accelerator", "operator": "In",
                                   "values": ["nvidia-h100-80gb"]}]},
            {"matchExpressions": [{"key": "cloud.google.com/gke-accelerator", "operator": "In",
                                   "values": ["nvidia-tesla-a100"]}]}]}}},
        "tolerations": [GPU_TOLERATION]}
    nodes = [_gpu_node("h", "h100-pool", H100, "a3-highgpu-8g"), node("c")]
    rcc = cluster({"cpu": "1"}, worker("gpu", {"nvidia.com/gpu": "8"}, replicas=2, spec=affinity))
    plan = plan_for(rollout_asks(rcc, head=False), nodes, []).as_dict()
    (group,) = plan["groups"]
    assert group["placed"] == 1
    assert group["message"] == ("0/2 nodes are available: 1 Insufficient nvidia.com/gpu, "
                                "1 node(s) didn't match Pod's node affinity/selector.")


def test_everything_fits_gives_no_additions() -> None:
    nodes = [_gpu_node(f"a100-{i}", "a100-pool", A100, "a2-highgpu-8g") for i in range(2)] + [node("c")]
    rcc = cluster({"cpu": "2"}, worker("gpu", {"nvidia.com/gpu": "8"}, replicas=2, spec=_gpu_spec(A100)))
    plan = plan_for(rollout_asks(rcc), nodes, []).as_dict()
    assert plan["fits"] is True and "addNodes" not in plan
    assert plan["pods"] == 3 and plan["nodes"] == 3
