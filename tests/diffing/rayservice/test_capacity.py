"""The extra capacity a RayService rollout needs (diffing/rayservice/capacity.py) and the holds on it:
amounts as the manifest wrote them, any extended resource counted like a GPU, the live basis.
"""

from __future__ import annotations

from typing import Any

import pytest

import diffing
from tests.builders import dump, edited, head_container, rcc, sample, set_images, worker_container
from tests.diffing.helpers import doubled, one, resource

NRS = "no-ray-serve-replica"  # head num-cpus 0; 2 workers (1..5), BaseService max_replicas_per_node 1


def decimal_memory(o: dict[str, Any]) -> None:
    head_container(o)["resources"] = {"requests": {"cpu": "1", "memory": "20G"},
                                      "limits": {"cpu": "1", "memory": "20G"}}
    worker_container(o)["resources"] = {"requests": {"cpu": "500m", "memory": "1G"},
                                        "limits": {"cpu": "1", "memory": "1G"}}


def test_report_shows_decimal_memory_as_written() -> None:
    obj = edited(sample(NRS), decimal_memory)
    report = diffing.analyze("", dump(obj))
    extra = report.to_dict()["resources"][0]["capacity"]["extra"]
    assert extra == {"cpu": "2", "memory": "22G"}  # 20G + 2 x 1G, exact
    text = diffing.render_markdown(report)
    assert "22G" in text and "Ki" not in text


def test_threshold_message_uses_readable_amounts() -> None:
    before = edited(sample(NRS), decimal_memory)
    after = edited(before, lambda o: head_container(o).__setitem__("image", "rayproject/ray:2.53.0"))
    report = diffing.analyze(dump(before), dump(after), policy={"thresholds": {"memory": "1G"}},
                             headroom={"memory": "10G"})
    reasons = " ".join(report.resources[0].reasons)
    assert "needs 22G extra memory" in reasons and "covers 10G" in reasons


# -- accelerators by name: every extended resource (a device plugin's) counts like a GPU ------

DEVICES = ["habana.ai/gaudi", "gpu.intel.com/i915", "nvidia.com/gpu.shared", "nvidia.com/mig-1g.5gb",
           "amd.com/gpu", "aws.amazon.com/neuroncore", "google.com/tpu", "example.com/foo"]


@pytest.mark.parametrize("name", DEVICES)
def test_doubling_any_extended_resource_holds_without_headroom(name: str) -> None:
    before, after = doubled(name)
    report = diffing.analyze(before, after)
    r = one(report)
    assert (r["rollout"], r["decision"]) == ("new-cluster", "hold")
    assert r["capacity"]["extra"][name] == 2  # an integer, like nvidia.com/gpu
    assert f"needs 2 extra {name}" in report.summary
    assert diffing.analyze(before, after, headroom={name: 2}).decision == "approve"
    assert diffing.analyze(before, after, headroom={name: 1}).decision == "hold"


@pytest.mark.parametrize(("name", "family"), [
    ("habana.ai/gaudi", "(Habana Gaudi accelerator)"), ("gpu.intel.com/i915", "(Intel GPU)"),
    ("nvidia.com/gpu.shared", "(NVIDIA GPU shared by time-slicing or MPS)"),
    ("aws.amazon.com/neuroncore", ""), ("nvidia.com/mig-1g.5gb", ""),
    ("example.com/foo",
     "(an extended resource, counted as an accelerator; policy notAccelerators excludes it)"),
])
def test_hold_reasons_name_the_family(name: str, family: str) -> None:
    r = one(diffing.analyze(*doubled(name)))
    reason = next(x for x in r["reasons"] if x.startswith("the rollout needs"))
    named = f"{name} {family}" if family else name
    assert reason.startswith(f"the rollout needs 2 extra {named} while the old cluster still runs; no "
                             "headroom is known")


def test_live_basis_sizes_the_new_cluster_from_autoscaled_replicas() -> None:
    sd = edited(sample("stable-diffusion"), lambda o: rcc(o).__setitem__("enableInTreeAutoscaling", True))
    bumped = edited(sd, lambda o: set_images(o, "rayproject/ray-ml:2.47.0-gpu"))
    live = {"default/stable-diffusion": diffing.LiveCluster(active_cluster="sd-abcde",
                                                            worker_replicas={"gpu-group": 6},
                                                            headroom={"nvidia.com/gpu": 4})}
    r = resource(sd, bumped, live=live)
    assert r["capacity"]["basis"] == "live"
    assert r["capacity"]["extra"]["nvidia.com/gpu"] == 6
    assert r["capacity"]["peak"]["nvidia.com/gpu"] == 12
    assert r["capacity"]["headroom"] == {"nvidia.com/gpu": 4}
    assert r["decision"] == "hold"
    live_ok = {"default/stable-diffusion": diffing.LiveCluster(active_cluster="sd-abcde",
                                                               worker_replicas={"gpu-group": 6},
                                                               headroom={"nvidia.com/gpu": 6})}
    assert resource(sd, bumped, live=live_ok)["decision"] == "approve"
