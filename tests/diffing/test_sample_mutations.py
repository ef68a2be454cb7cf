"""Every KubeRay sample, mutated in each way the semantics doc names, predicts what KubeRay does."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

import diffing
from tests.builders import SAMPLES, dump, edited, group, rcc, sample

NAMES = sorted(p.name[len("ray-service."):-len(".yaml")] for p in SAMPLES.glob("ray-service.*.yaml"))
# Accelerators in one whole cluster of each sample, counted by hand from the manifests.
GPUS = {"stable-diffusion": {"nvidia.com/gpu": 1}, "llm-serve": {"nvidia.com/gpu": 4},
        "deepseek": {"nvidia.com/gpu": 16},  # 2 workers x 8
        "high-throughput-gemma4": {"nvidia.com/gpu": 8},  # 1 worker x 8, min/max left to the CRD defaults
        "high-throughput-llm": {"nvidia.com/gpu": 4},  # 4 workers x 1, min/max left to the CRD defaults
        "text-summarizer": {"nvidia.com/gpu": 1},
        "tpu-single-host": {"google.com/tpu": 4},
        "vllm-tpu-v6e-singlehost": {"google.com/tpu": 8}}
INCREMENTAL = {"incremental-upgrade"}
AUTOSCALING = {"incremental-upgrade"}


def bump_images(o: dict[str, Any]) -> None:
    specs = [rcc(o)["headGroupSpec"]] + rcc(o)["workerGroupSpecs"]
    for s in specs:
        for c in s["template"]["spec"]["containers"]:
            c["image"] = c["image"] + "-patched"


def serve_route(o: dict[str, Any]) -> None:
    cfg = yaml.safe_load(o["spec"]["serveConfigV2"])
    cfg["applications"][0]["route_prefix"] = "/changed"
    o["spec"]["serveConfigV2"] = yaml.safe_dump(cfg)


def serve_reformat(o: dict[str, Any]) -> None:
    o["spec"]["serveConfigV2"] = yaml.safe_dump(yaml.safe_load(o["spec"]["serveConfigV2"]), indent=4)


def toleration(o: dict[str, Any]) -> None:
    group(o)["template"]["spec"].setdefault("tolerations", []).append(
        {"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"})


def milli_cpu(o: dict[str, Any]) -> None:
    for s in [rcc(o)["headGroupSpec"]] + rcc(o)["workerGroupSpecs"]:
        for c in s["template"]["spec"]["containers"]:
            for kind in ("requests", "limits"):
                res = c.get("resources", {}).get(kind, {})
                if "cpu" in res and not str(res["cpu"]).endswith("m"):
                    res["cpu"] = f"{int(float(res['cpu']) * 1000)}m"
                if str(res.get("memory", "")).endswith("Gi"):
                    res["memory"] = f"{int(res['memory'][:-2]) * 1024}Mi"


def toggle_start_params(o: dict[str, Any]) -> None:
    head = rcc(o)["headGroupSpec"]
    if head.get("rayStartParams") == {}:
        del head["rayStartParams"]
    elif "rayStartParams" not in head:
        head["rayStartParams"] = {}
    else:
        head["rayStartParams"]["log-color"] = "true"


def append_group(o: dict[str, Any]) -> None:
    g = {"groupName": "appended", "replicas": 1, "minReplicas": 1, "maxReplicas": 1, "rayStartParams": {},
         "template": {"spec": {"containers": [{"name": "w", "image": "rayproject/ray:2.52.0",
                                               "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}]}}}
    rcc(o)["workerGroupSpecs"].append(g)


def replicas(o: dict[str, Any]) -> None:
    group(o)["replicas"] = group(o).get("replicas", 0) + 1


def recreate(name: str) -> tuple[str, str]:
    rollout = "incremental" if name in INCREMENTAL else "new-cluster"
    return rollout, "hold" if name in GPUS and rollout == "new-cluster" else "approve"


MUTATIONS = {
    "image": (bump_images, recreate),
    "serve": (serve_route, lambda n: ("serve-in-place", "approve")),
    "serve-reformat": (serve_reformat, lambda n: ("serve-in-place", "approve")),
    "toleration": (toleration, lambda n: ("not-applied", "hold")),
    "quantity-units": (milli_cpu, lambda n: ("none", "approve")),
    "raystartparams": (toggle_start_params, recreate),
    "append-group": (append_group, lambda n: ("cluster-in-place", "approve")),
    "replicas": (replicas, lambda n: ("none", "ignore-differences") if n in AUTOSCALING
                 else ("not-applied", "hold")),
    "nothing": (lambda o: None, lambda n: ("none", "approve")),
}


@pytest.mark.parametrize("mutation", sorted(MUTATIONS))
@pytest.mark.parametrize("name", NAMES)
def test_sample_mutation(name: str, mutation: str) -> None:
    edit, expect = MUTATIONS[mutation]
    before = sample(name)
    report = diffing.analyze(dump(before), dump(edited(before, edit)))
    (r,) = report.to_dict()["resources"]
    assert (r["rollout"], r["decision"]) == expect(name), (r["reasons"], r["changes"])
    accelerators = {k: v for k, v in r["capacity"]["extra"].items() if isinstance(v, int)}
    if r["rollout"] == "new-cluster":
        assert accelerators == GPUS.get(name, {})
    elif r["rollout"] not in ("incremental", "cluster-in-place"):
        assert accelerators == {}


@pytest.mark.parametrize("name", NAMES)
def test_sample_created_and_deleted(name: str) -> None:
    text = dump(sample(name))
    created = diffing.analyze("", text).to_dict()["resources"][0]
    deleted = diffing.analyze(text, "").to_dict()["resources"][0]
    assert (created["action"], created["rollout"]) == ("created", "create")
    assert {k: v for k, v in created["capacity"]["extra"].items() if isinstance(v, int)} == GPUS.get(name, {})
    assert (deleted["action"], deleted["rollout"], deleted["decision"]) == ("deleted", "delete", "approve")
