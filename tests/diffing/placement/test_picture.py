"""The plan per node pool (``byPool``) and its picture in the comment: a table of each pool's
resource held now, taken by the rollout's pods, free after, and a mermaid chart of one stacked bar
per pool plus a bar for what fits nowhere. Numbers worked out by hand from the nodes and pods."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import diffing
from diffing.placement import plan_for, rollout_asks
from diffing.render.markdown import _placement, _pool_chart

from .helpers import GPU_TAINT, GPU_TOLERATION, cluster, node, pod, worker

A100 = {"cloud.google.com/gke-accelerator": "nvidia-tesla-a100"}
SAMPLE = Path(__file__).resolve().parents[3] / "samples" / "gpu-image-bump"


def _gpu_node(name: str, pool: str, machine: str, accel: dict[str, str] | None = None) -> dict[str, Any]:
    return node(name, pool=pool, machine=machine, cpu="94", memory="1300Gi", extra={"nvidia.com/gpu": "8"},
                labels=accel, taints=[GPU_TAINT])


def _fragmented() -> dict[str, Any]:
    # a100 pool: 3 nodes of 8 GPUs holding 5, 6, 3 (free 3, 2, 5); 2 workers of 4 GPUs: one on a100-2,
    # one fits nowhere (test_plan.py). The h100 pool fails the workers' nodeSelector: not in the
    # picture. The cpu pool has no GPU: not in it either.
    nodes = [_gpu_node(f"a100-{i}", "a100-pool", "a2-highgpu-8g", A100) for i in range(3)]
    nodes += [_gpu_node("h100-0", "h100-pool", "a3-highgpu-8g", {"cloud.google.com/gke-accelerator": "h100"})]
    nodes += [node(f"cpu-{i}", pool="cpu-pool") for i in range(2)]
    pods = [pod(f"busy-{i}", f"a100-{i}", {"nvidia.com/gpu": used}) for i, used in enumerate("563")]
    rcc = cluster({"cpu": "2", "memory": "8Gi"},
                  worker("gpu", {"nvidia.com/gpu": "4", "cpu": "16", "memory": "100Gi"}, replicas=2,
                         spec={"nodeSelector": A100, "tolerations": [GPU_TOLERATION]}))
    return plan_for(rollout_asks(rcc), nodes, pods).as_dict()


def test_by_pool_counts_the_accelerator_per_pool_and_what_fits_nowhere() -> None:
    plan = _fragmented()
    assert plan["byPool"] == {
        "resource": "nvidia.com/gpu",
        # 24 in all, 5 + 6 + 3 = 14 held, one worker's 4 placed, 24 - 14 - 4 = 6 free after
        "pools": [{"pool": "a100-pool (a2-highgpu-8g)", "nodes": 3, "allocatable": 24, "used": 14,
                   "placed": 4, "free": 6}],
        "notPlaced": 4}


def test_a_cpu_only_rollout_is_pictured_in_cores_on_the_pools_it_may_use() -> None:
    # Workers of 3 cpu without toleration: the tainted GPU pool is not theirs (TaintToleration).
    # cpu-pool: 2 nodes of 8 cpu, 2.5 held on cpu-0; head 1 cpu and 2 x 3 cpu workers go on cpu-0
    # (1 + 3 = 4 of its 5.5 free), then cpu-1 takes the second worker (cpu-0 has 1.5 left).
    nodes = [_gpu_node("a100-0", "a100-pool", "a2-highgpu-8g", A100)]
    nodes += [node(f"cpu-{i}", pool="cpu-pool") for i in range(2)]
    pods = [pod("busy", "cpu-0", {"cpu": "2500m"}), pod("gpu-busy", "a100-0", {"cpu": "10"})]
    rcc = cluster({"cpu": "1", "memory": "1Gi"}, worker("cpu", {"cpu": "3", "memory": "4Gi"}, replicas=2))
    plan = plan_for(rollout_asks(rcc), nodes, pods).as_dict()
    assert plan["fits"] is True
    assert plan["byPool"] == {
        "resource": "cpu",
        "pools": [{"pool": "cpu-pool (n2-standard-8)", "nodes": 2, "allocatable": 16, "used": 2.5,
                   "placed": 7, "free": 6.5}],
        "notPlaced": 0}


def test_the_comment_tables_and_charts_the_plan_per_pool() -> None:
    plan = _fragmented()
    lines = _placement(plan)
    head = "| node pool | nvidia.com/gpu in use | the rollout's pods | free after | of |"
    table = lines[lines.index(head):]
    assert table[2] == "| `a100-pool (a2-highgpu-8g)` <sub>(3 node(s))</sub> | 14 | 4 | 6 | 24 |"
    assert table[3] == "| **does not fit** | | 4 | | |"
    assert not any(line.startswith("|") for line in _placement(plan, compact=True))
    chart = "\n".join(_pool_chart(plan))
    # drawn over one another: what fits nowhere first (its 0 is covered), then the longest
    # first: total, held + placed, held
    assert 'x-axis ["a100-pool (a2-highgpu-8g)", "does not fit"]' in chart
    assert re.findall(r"  bar \[(.*)\]", chart) == ["0, 4", "24, 0", "18, 0", "14, 0"]
    assert '"plotColorPalette": "#cf222e, #8c959f, #2da44e, #54aeff"' in chart
    assert 'y-axis "nvidia.com/gpu" 0 --> 25' in chart and "xychart-beta horizontal" in chart
    assert "Red: what the pods that fit nowhere ask." in chart


def test_memory_is_pictured_in_gib() -> None:
    plan = {"byPool": {"resource": "memory", "notPlaced": 0, "pools": [
        {"pool": "p", "nodes": 1, "allocatable": 32 * 2 ** 30, "used": 8 * 2 ** 30, "placed": 2 ** 29,
         "free": 23.5 * 2 ** 30}]}}
    chart = "\n".join(_pool_chart(plan))
    assert re.findall(r"  bar \[(.*)\]", chart) == ["32", "8.5", "8"] and "Red" not in chart
    assert '"plotColorPalette": "#8c959f, #2da44e, #54aeff"' in chart
    assert 'y-axis "memory (GiB)" 0 --> 33' in chart


def _report(nodes: list[dict[str, Any]], pods: list[dict[str, Any]]) -> diffing.Report:
    before, after = (SAMPLE / "before.yaml").read_text(), (SAMPLE / "after.yaml").read_text()
    live = {k: diffing.LiveCluster(active_cluster="old", cluster=(nodes, pods))
            for k in diffing.live_objects(after, "after")}
    return diffing.analyze(before, after, live=live)


def test_a_report_with_a_plan_carries_the_picture_and_one_without_does_not() -> None:
    nodes = [node("cpu-0", pool="cpu-pool"),
             node("h100-0", pool="h100-pool", machine="a3-highgpu-8g", cpu="206", memory="1800Gi",
                  extra={"nvidia.com/gpu": "8"})]
    report = _report(nodes, [pod("busy", "h100-0", {"nvidia.com/gpu": "2"})])
    plan = report.resources[0].capacity.placement
    assert plan is not None and plan["byPool"]["pools"] == [
        {"pool": "h100-pool (a3-highgpu-8g)", "nodes": 1, "allocatable": 8, "used": 2, "placed": 4,
         "free": 2}]
    text = diffing.render_markdown(report)
    assert "<summary>Placement per node pool</summary>" in text
    assert "| `h100-pool (a3-highgpu-8g)` <sub>(1 node(s))</sub> | 2 | 4 | 2 | 8 |" in text
    plain = diffing.render_markdown(diffing.analyze((SAMPLE / "before.yaml").read_text(),
                                                    (SAMPLE / "after.yaml").read_text()))
    assert "Placement" not in plain and "node pool" not in plain
