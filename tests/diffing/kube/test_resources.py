"""Pod resources the way the scheduler counts them (diffing/kube/resources.py): pods and clusters,
accelerators by name, the incremental surge, and amounts people read.

Quantities are shown in the unit family the manifest used and rounded for people (issue 9, point 9);
the JSON keeps exact canonical quantities (``20G`` stays ``20G`` instead of ``19531250Ki``).
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import pytest

from diffing.kube import resources as cap


def test_capacity_pod_counts_limit_only_init_and_sidecar() -> None:
    spec = {"containers": [{"resources": {"requests": {"cpu": "1"},
                                          "limits": {"cpu": "2", "nvidia.com/gpu": 1}}},
                           {"resources": {"requests": {"cpu": "500m", "memory": "1Gi"}}}],
            "initContainers": [{"resources": {"requests": {"cpu": "4"}}}]}
    assert cap.pod_resources(spec) == {"cpu": Fraction(4), "nvidia.com/gpu": Fraction(1),
                                       "memory": Fraction(2**30)}
    shape = cap.cluster_shape({"enableInTreeAutoscaling": True, "headGroupSpec": {"template": {"spec": {
        "containers": [{"resources": {"requests": {"cpu": "1"}}}]}}}, "workerGroupSpecs": [
        {"groupName": "g", "replicas": 9, "minReplicas": 1, "maxReplicas": 3, "numOfHosts": 2,
         "template": {"spec": {"containers": [{"resources": {"limits": {"google.com/tpu": "4"}}}]}}}]})
    assert shape.head == {"cpu": Fraction(3, 2), "memory": Fraction(512 * 2**20)}
    assert (shape.groups[0].replicas, shape.groups[0].pods) == (3, 6)
    assert cap.render_amounts(shape.total()) == {"google.com/tpu": 24, "cpu": "2700m", "memory": "2Gi"}


@pytest.mark.parametrize(("name", "accelerator"), [("nvidia.com/gpu", True), ("amd.com/gpu", True),
                                                   ("nvidia.com/mig-1g.5gb", True), ("google.com/tpu", True),
                                                   ("aws.amazon.com/neuroncore", True), ("cpu", False),
                                                   # every extended resource counts (green means safe)
                                                   ("gpu.intel.com/i915", True)])
def test_capacity_accelerator_names(name: str, accelerator: bool) -> None:
    assert cap.is_accelerator(name) is accelerator


@pytest.mark.parametrize("name", ["cpu", "memory", "ephemeral-storage", "storage", "hugepages-2Mi",
                                  "requests.example.com/foo", "kubernetes.io/batteries",
                                  "example.kubernetes.io/thing"])
def test_native_resources_never_count_as_accelerators(name: str) -> None:
    assert not cap.is_accelerator(name)


def test_capacity_incremental_surge_share() -> None:
    g = cap.GroupSize("g", replicas=4, hosts=1, min_replicas=1, max_replicas=10, per_pod={})
    assert [cap.surge_replicas(g, 4, m) for m in (0, 10, 50, 100)] == [1, 1, 2, 4]


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
