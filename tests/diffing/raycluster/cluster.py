"""The standalone RayCluster the RayCluster tests edit, how they read its report, and its Recreate hash."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import yaml

import diffing
from diffing.engine import Engine, recreate_hash
from diffing.policy import Policy
from diffing.versions import rules_for

BASE: dict[str, Any] = yaml.safe_load("""
apiVersion: ray.io/v1
kind: RayCluster
metadata: {name: llm, namespace: ml}
spec:
  rayVersion: "2.52.0"
  headGroupSpec:
    rayStartParams: {}
    template:
      spec:
        containers:
        - name: ray-head
          image: rayproject/ray:2.52.0
          resources: {limits: {cpu: "2", memory: 8Gi}}
  workerGroupSpecs:
  - groupName: gpu
    replicas: 2
    minReplicas: 1
    maxReplicas: 4
    rayStartParams: {}
    template:
      spec:
        containers:
        - name: ray-worker
          image: rayproject/ray:2.52.0
          resources: {limits: {cpu: "4", memory: 16Gi, nvidia.com/gpu: 1}}
""")

Edit = Callable[[dict[str, Any]], Any]


def spec(o: dict[str, Any]) -> dict[str, Any]:
    return o["spec"]


def gpu(o: dict[str, Any]) -> dict[str, Any]:
    return o["spec"]["workerGroupSpecs"][0]


def worker_pod(o: dict[str, Any]) -> dict[str, Any]:
    return gpu(o)["template"]["spec"]


def variant(*edits: Edit, base: dict[str, Any] = BASE) -> dict[str, Any]:
    out = copy.deepcopy(base)
    for edit in edits:
        edit(out)
    return out


AUTOSCALED = variant(lambda o: spec(o).update(enableInTreeAutoscaling=True))
RECREATE = variant(lambda o: spec(o).update(upgradeStrategy={"type": "Recreate"}))
SUSPENDED = variant(lambda o: spec(o).update(suspend=True))
ROOM = {"nvidia.com/gpu": 8}


def analyse(before: dict[str, Any] | None, after: dict[str, Any] | None, **kw: Any) -> dict[str, Any]:
    report = diffing.analyze(yaml.safe_dump(before) if before else "", yaml.safe_dump(after) if after else "",
                             **kw).to_dict()
    return report


def one(before: dict[str, Any] | None, after: dict[str, Any] | None, **kw: Any) -> dict[str, Any]:
    (res,) = analyse(before, after, **kw)["resources"]
    assert res["kind"] == "RayCluster"
    return res


def codes(res: dict[str, Any]) -> set[str]:
    return {f["code"] for f in res["findings"]}


def categories(res: dict[str, Any]) -> dict[str, str]:
    return {c["path"]: c["category"] for c in res["changes"]}


ENGINE = Engine(rules_for("1.7.0"), Policy())


def _hash(o: dict[str, Any]) -> str:
    return recreate_hash(ENGINE, o["spec"])
