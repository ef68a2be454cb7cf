"""Kueue admission of the new cluster (kueue.x-k8s.io/v1beta1 ClusterQueue quota), worked by hand."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from diffing.placement.kueue import admission

RS = {"apiVersion": "ray.io/v1", "kind": "RayService",
      "metadata": {"name": "llm", "namespace": "ml", "labels": {"kueue.x-k8s.io/queue-name": "team-a"}}}
LQ = {"metadata": {"name": "team-a", "namespace": "ml"}, "spec": {"clusterQueue": "cq-a"}}
GPU = "nvidia.com/gpu"


def _cq(name: str, flavors: list[tuple[str, dict[str, Any]]], used: dict[str, dict[str, str]],
        cohort: str | None = None) -> dict[str, Any]:
    return {
        "metadata": {"name": name},
        "spec": {**({"cohort": cohort} if cohort else {}), "resourceGroups": [{
            "coveredResources": ["cpu", GPU],
            "flavors": [{"name": f, "resources": [{"name": r, **q} for r, q in res.items()]}
                        for f, res in flavors]}]},
        "status": {"flavorsReservation": [
            {"name": f, "resources": [{"name": r, "total": t} for r, t in res.items()]}
            for f, res in used.items()]},
    }


def test_old_cluster_holds_the_quota_the_new_one_needs() -> None:
    # cq-a: a100 flavor, 32 GPUs nominal, 24 reserved (the old cluster's 16 among them). The new
    # cluster needs 16: 32 - 24 = 8 free, no cohort to borrow from: it waits (kueue #11264).
    cq = _cq("cq-a", [("a100", {GPU: {"nominalQuota": "32"}, "cpu": {"nominalQuota": "512"}})],
             {"a100": {GPU: "24", "cpu": "200"}})
    got = admission(RS, {GPU: Fraction(16), "cpu": Fraction(100)}, [LQ], [cq])
    assert got is not None and got["admitted"] is False
    assert got["queue"] == "ml/team-a" and got["clusterQueue"] == "cq-a"
    gpu = next(r for r in got["resources"] if r["resource"] == GPU)
    assert (gpu["needs"], gpu["used"], gpu["nominal"], gpu["free"]) == ("16", "24", "32", "8")
    assert gpu["fits"] is False
    assert got["message"] == ("waits for quota in ClusterQueue cq-a: nvidia.com/gpu needs 16 in flavor a100, "
                              "8 free (24 used of 32 nominal, 0 borrowable)")


def test_cohort_lends_what_its_peer_does_not_use() -> None:
    # cq-b in the same cohort: 16 nominal, lendingLimit 12, 6 used. It keeps 4 for itself; its use
    # covers those 4 and 2 of the lendable 12: 10 to lend. cq-a's borrowingLimit 10 allows them:
    # 8 + 10 = 18 >= 16: admitted in a100.
    cq_a = _cq("cq-a", [("a100", {GPU: {"nominalQuota": "32", "borrowingLimit": "10"}})],
               {"a100": {GPU: "24"}}, cohort="ml")
    cq_b = _cq("cq-b", [("a100", {GPU: {"nominalQuota": "16", "lendingLimit": "12"}})],
               {"a100": {GPU: "6"}}, cohort="ml")
    got = admission(RS, {GPU: Fraction(16)}, [LQ], [cq_a, cq_b])
    assert got is not None and got["admitted"] is True and got["cohort"] == "ml"
    (row,) = got["resources"]
    assert (row["flavor"], row["borrowable"], row["free"]) == ("a100", "10", "18")


def test_borrowing_limit_caps_the_cohort() -> None:
    cq_a = _cq("cq-a", [("a100", {GPU: {"nominalQuota": "32", "borrowingLimit": "4"}})],
               {"a100": {GPU: "24"}}, cohort="ml")
    cq_b = _cq("cq-b", [("a100", {GPU: {"nominalQuota": "16"}})], {"a100": {GPU: "0"}}, cohort="ml")
    got = admission(RS, {GPU: Fraction(16)}, [LQ], [cq_a, cq_b])
    assert got is not None and got["admitted"] is False
    assert got["resources"][0]["borrowable"] == "4" and got["resources"][0]["free"] == "12"


def test_second_flavor_takes_it_when_the_first_is_full() -> None:
    # Flavors in order: a100 has 8 free, h100 has 16 free: the workload is admitted in h100.
    cq = _cq("cq-a", [("a100", {GPU: {"nominalQuota": "32"}}), ("h100", {GPU: {"nominalQuota": "16"}})],
             {"a100": {GPU: "24"}})
    got = admission(RS, {GPU: Fraction(16)}, [LQ], [cq])
    assert got is not None and got["admitted"] is True
    assert got["resources"][0]["flavor"] == "h100"


def test_no_label_no_kueue_and_missing_queues_say_so() -> None:
    plain = {"metadata": {"name": "x", "namespace": "ml"}}
    assert admission(plain, {GPU: Fraction(1)}, [LQ], []) is None
    missing = admission(RS, {GPU: Fraction(1)}, [], [])
    assert missing is not None and missing["admitted"] is False
    assert "LocalQueue ml/team-a" in missing["message"]
    no_cq = admission(RS, {GPU: Fraction(1)}, [LQ], [])
    assert no_cq is not None and "ClusterQueue cq-a does not exist" in no_cq["message"]


def test_resource_no_group_covers_waits() -> None:
    cq = _cq("cq-a", [("a100", {GPU: {"nominalQuota": "32"}})], {})
    got = admission(RS, {"google.com/tpu": Fraction(4)}, [LQ], [cq])
    assert got is not None and got["admitted"] is False
    assert "no resource group of the ClusterQueue covers it" in got["message"]
