"""The live basis hands the plan trimmed Node and Pod objects: the plan is the same as on the full ones."""

from __future__ import annotations

import copy

from app.live import trim_nodes, trim_pods
from diffing.placement import plan_for, rollout_asks
from tests.diffing.placement.helpers import GPU_TAINT, GPU_TOLERATION, cluster, node, pod, worker


def test_trimmed_objects_give_the_same_plan() -> None:
    nodes = [node(f"g{i}", extra={"nvidia.com/gpu": "8"}, taints=[GPU_TAINT], cpu="64") for i in range(3)]
    nodes.append(node("cordoned", unschedulable=True))
    nodes.append(node("down", ready="False"))
    for n in nodes:
        n["status"]["conditions"].insert(0, {"type": "MemoryPressure", "status": "False"})
        n["status"]["images"] = [{"names": ["x"] * 50, "sizeBytes": 1}]
    sidecar = {"initContainers": [{"name": "proxy", "restartPolicy": "Always", "image": "envoy",
                                   "resources": {"requests": {"cpu": "2"}}}],
               "tolerations": [GPU_TOLERATION]}
    pods = [pod(f"p{i}", f"g{i % 3}", {"nvidia.com/gpu": str(1 + i % 3), "cpu": "4"},
                spec=copy.deepcopy(sidecar)) for i in range(7)]
    pods.append(pod("waiting", None, {"nvidia.com/gpu": "4"}, phase="Pending", spec=copy.deepcopy(sidecar)))
    rcc = cluster({"cpu": "2"}, worker("gpu", {"nvidia.com/gpu": "4", "cpu": "8"}, replicas=4,
                                       spec={"tolerations": [GPU_TOLERATION]}))
    full = plan_for(rollout_asks(rcc), nodes, pods).as_dict()
    small = plan_for(rollout_asks(rcc), trim_nodes(nodes), trim_pods(pods)).as_dict()
    assert small == full and full["fits"] is False and full["queuedAhead"] == 1
    assert "images" not in trim_nodes(nodes)[0]["status"]
    assert trim_pods(pods)[0]["spec"]["initContainers"] == [{"resources": {"requests": {"cpu": "2"}},
                                                              "restartPolicy": "Always"}]
