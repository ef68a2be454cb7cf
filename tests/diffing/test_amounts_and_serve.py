"""Readable amounts (issue 9, point 9) and Serve placement warnings (point 10).

Quantities are shown in the unit family the manifest used and rounded for people; the JSON
keeps exact canonical quantities (``20G`` stays ``20G`` instead of ``19531250Ki``). A Serve
deployment whose replicas ``max_replicas_per_node`` and the cluster's node count can never
place, or whose GPU demand is above what ``maxReplicas`` can ever supply, is a warning.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import pytest
import yaml

import diffing
from diffing.kube import resources as cap
from tests.builders import dump, edited, group, head_container, rcc, sample, worker_container

NRS = "no-ray-serve-replica"  # head num-cpus 0; 2 workers (1..5), BaseService max_replicas_per_node 1
SD = "stable-diffusion"  # 1 GPU worker, maxReplicas 10

HUMAN = [
    ("memory", "20G", "20G"), ("memory", "19531250Ki", "18.6Gi"), ("memory", "1536870912", "1.5G"),
    ("memory", "45568Mi", "44.5Gi"), ("memory", "136Gi", "136Gi"), ("memory", "12816Gi", "12.5Ti"),
    ("memory", "512Mi", "512Mi"), ("memory", "1500M", "1.5G"), ("memory", "100", "100"),
    ("ephemeral-storage", "107374182400", "107G"), ("cpu", "11500m", "11.5"), ("cpu", "3204", "3204"),
    ("nvidia.com/gpu", 16, "16"),
]


@pytest.mark.parametrize(("name", "value", "text"), HUMAN)
def test_human_keeps_the_family_and_rounds(name: str, value: Any, text: str) -> None:
    assert cap.human(name, value) == text


SUMS = [
    ("all-decimal", ["20G", "20G"], [], {"memory": "20G"}),
    ("all-binary", ["2Gi", "2Gi"], [], {"memory": "2Gi"}),
    ("decimal-sum-stays-decimal", ["1500M", "1500M"], ["500M"], {"memory": "2G"}),
    ("binary-sum-stays-binary", ["1536Mi", "1536Mi"], ["512Mi"], {"memory": "2Gi"}),
    ("mixed-exact-bytes", ["1G", "1G"], ["512Mi"], {"memory": "1536870912"}),
]


@pytest.mark.parametrize(("id_", "head_mem", "worker_mem", "json"), SUMS, ids=[s[0] for s in SUMS])
def test_sums_are_exact_in_the_family_written(id_: str, head_mem: list[str], worker_mem: list[str],
                                              json: dict[str, str]) -> None:
    head = {"resources": {"requests": {"memory": head_mem[0]}, "limits": {"memory": head_mem[-1]}}}
    workers = [{"groupName": f"g{i}", "replicas": 1, "template": {"spec": {"containers": [
        {"resources": {"limits": {"memory": m}}}]}}} for i, m in enumerate(worker_mem)]
    shape = cap.cluster_shape({"headGroupSpec": {"template": {"spec": {"containers": [head]}}},
                               "workerGroupSpecs": workers}, init_injection=False)
    assert cap.render_amounts(shape.total(), units=shape.units) == json
    assert Fraction(cap.Quantity.parse(json["memory"]).value) == shape.total()["memory"]


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


def serve_deployment(**fields: Any):  # type: ignore[no-untyped-def]
    def edit(o: dict[str, Any]) -> None:
        cfg = yaml.safe_load(o["spec"]["serveConfigV2"])
        deployments = cfg["applications"][0].setdefault("deployments", [{"name": "Model"}])
        deployments[0].update(fields)
        o["spec"]["serveConfigV2"] = yaml.safe_dump(cfg, sort_keys=False)
    return edit


def autoscaling(o: dict[str, Any]) -> None:
    rcc(o)["enableInTreeAutoscaling"] = True


PLACEMENT = [
    # (id, base, before edits, after edits, expected warning codes)
    ("replicas-fit-two-workers", NRS, [], [serve_deployment(num_replicas=2)], set()),
    ("replicas-beyond-workers-times-per-node", NRS, [], [serve_deployment(num_replicas=3)],
     {"serve-replicas-unplaceable"}),
    ("per-node-raised-makes-room", NRS, [], [serve_deployment(num_replicas=3, max_replicas_per_node=2)],
        set()),
    ("autoscaling-grows-to-max-replicas", NRS, [autoscaling], [serve_deployment(num_replicas=5)], set()),
    ("autoscaling-cannot-exceed-max-replicas", NRS, [autoscaling], [serve_deployment(num_replicas=6)],
     {"serve-replicas-unplaceable"}),
    ("serve-autoscaling-max-counts", NRS, [], [serve_deployment(
        num_replicas="auto", autoscaling_config={"min_replicas": 1, "max_replicas": 4})],
     {"serve-replicas-unplaceable"}),
    ("head-with-cpus-is-a-node-too", NRS, [lambda o: rcc(o)["headGroupSpec"]["rayStartParams"].__setitem__(
        "num-cpus", "1")], [serve_deployment(num_replicas=3)], set()),
    ("gpu-demand-over-max-replicas", SD, [], [serve_deployment(num_replicas=12,
        ray_actor_options={"num_gpus": 1})],
     {"serve-gpu-demand-exceeds-supply"}),
    ("gpu-demand-and-per-node", SD, [lambda o: group(o).__setitem__("maxReplicas", 2)],
     [serve_deployment(num_replicas=4, max_replicas_per_node=1, ray_actor_options={"num_gpus": 1})],
     {"serve-gpu-demand-exceeds-supply", "serve-replicas-unplaceable"}),
    ("gpu-demand-within-max-replicas", SD, [], [serve_deployment(num_replicas=8,
        ray_actor_options={"num_gpus": 1})],
     set()),
]
SERVE_WARNINGS = {"serve-replicas-unplaceable", "serve-gpu-demand-exceeds-supply"}


@pytest.mark.parametrize(("id_", "base", "before", "after", "codes"), PLACEMENT,
    ids=[p[0] for p in PLACEMENT])
def test_serve_placement_warnings(id_: str, base: str, before: list[Any], after: list[Any],
    codes: set[str]) -> None:
    b = edited(sample(base), *before)
    (r,) = diffing.analyze(dump(b), dump(edited(b, *after))).to_dict()["resources"]
    found = [f for f in r["findings"] if f["code"] in SERVE_WARNINGS]
    assert {f["code"] for f in found} == codes, found
    assert all(f["severity"] == "warning" for f in found)


def test_unplaceable_message_says_why() -> None:
    b = sample(NRS)
    (r,) = diffing.analyze(dump(b), dump(edited(b, serve_deployment(num_replicas=3)))).to_dict()["resources"]
    (f,) = [f for f in r["findings"] if f["code"] == "serve-replicas-unplaceable"]
    assert f["path"] == "spec.serveConfigV2.applications[name=simple_app].deployments[name=BaseService]"
    assert "up to 3 replicas" in f["message"] and "max_replicas_per_node 1" in f["message"]
    assert "2 Ray node(s)" in f["message"] and "autoscaling is off" in f["message"]
