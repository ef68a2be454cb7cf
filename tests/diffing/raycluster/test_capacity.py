"""The capacity a standalone RayCluster's rollout needs (diffing/raycluster/capacity.py): any extended
resource counts like a GPU.
"""

from __future__ import annotations

import copy

import yaml

import diffing
from tests.diffing.helpers import RAYCLUSTER, one


def test_a_standalone_raycluster_scale_up_of_gaudi_holds() -> None:
    obj = yaml.safe_load(RAYCLUSTER)
    for group in obj["spec"]["workerGroupSpecs"]:
        for c in group["template"]["spec"]["containers"]:
            for side in ("limits", "requests"):
                c["resources"].get(side, {}).pop("nvidia.com/gpu", None)
            c["resources"].setdefault("limits", {})["habana.ai/gaudi"] = 1
    more = copy.deepcopy(obj)
    group = more["spec"]["workerGroupSpecs"][0]
    group["replicas"] += 2
    group["maxReplicas"] += 2
    r = one(diffing.analyze(yaml.safe_dump(obj), yaml.safe_dump(more)))
    assert (r["rollout"], r["decision"], r["capacity"]["extra"]["habana.ai/gaudi"]) == ("scale", "hold", 2)
    assert any("(Habana Gaudi accelerator)" in x for x in r["reasons"])
