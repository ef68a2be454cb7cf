"""Kueue and cost for a standalone RayCluster and a RayJob (docs/placement.md): the same ClusterQueue
arithmetic and price table as a RayService's, reported in ``capacity.kueue`` / ``capacity.cost``
and in the comment; Kueue is reported, not held on, for these kinds."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import diffing

RC = Path(__file__).resolve().parents[3] / "samples" / "raycluster-image-bump-recreate"
JOB = Path(__file__).resolve().parents[3] / "samples" / "rayjob-tpu-next-run" / "after.yaml"
QUEUE = "kueue.x-k8s.io/queue-name"


def _cq(resource: str, nominal: str, reserved: str) -> dict[str, Any]:
    """One flavor ``f`` covering cpu and memory (plenty) and ``resource`` (``nominal``, ``reserved``):
    Kueue admits only a workload whose every resource a resource group covers."""
    quota = {"cpu": ("1000", "0"), "memory": ("10Ti", "0"), resource: (nominal, reserved)}
    return {"metadata": {"name": "cq"}, "spec": {"resourceGroups": [{
        "coveredResources": list(quota),
        "flavors": [{"name": "f", "resources": [{"name": r, "nominalQuota": n}
                                                for r, (n, _) in quota.items()]}]}]},
        "status": {"flavorsReservation": [{"name": "f", "resources": [
            {"name": r, "total": used} for r, (_, used) in quota.items()]}]}}


def _lq(namespace: str) -> dict[str, Any]:
    return {"metadata": {"name": "team", "namespace": namespace}, "spec": {"clusterQueue": "cq"}}


def _labelled(text: str) -> str:
    return text.replace("metadata:\n", f"metadata:\n  labels:\n    {QUEUE}: team\n", 1)


def test_a_rayjob_run_is_priced_per_hour_and_queued_through_kueue() -> None:
    # The run's cluster asks 4 google.com/tpu (one v6e 2x2 worker): 4 x 2.5 = 10 per hour.
    # The ClusterQueue has 8 nominal, 6 reserved: 2 free, the run needs 4: it waits.
    after = _labelled(JOB.read_text())
    (key,) = diffing.live_objects(after, "after")
    live = {key: diffing.LiveCluster(kueue=([_lq("default")], [_cq("google.com/tpu", "8", "6")]))}
    policy = {"cost": {"prices": {"google.com/tpu": 2.5}, "currency": "USD"}}
    report = diffing.analyze("", after, live=live, policy=policy)
    r = report.to_dict()["resources"][0]
    assert r["capacity"]["cost"] == {"currency": "USD", "runPerHour": 10.0}
    q = r["capacity"]["kueue"]
    assert (q["queue"], q["admitted"]) == ("default/team", False)
    assert q["message"] == ("waits for quota in ClusterQueue cq: google.com/tpu needs 4 in flavor f, 2 free "
                            "(6 used of 8 nominal, 0 borrowable)")
    assert not any("Kueue" in reason for reason in r["reasons"])  # reported, not held on
    text = diffing.render_markdown(report)
    assert "**Cost:** 10 USD per hour while the run's cluster runs" in text
    assert "**Kueue** (default/team): waits for quota in ClusterQueue cq" in text
    from tests.test_report_schema import errors

    assert errors(report.to_dict()) == []  # runPerHour without a monthly change is documented


def test_a_raycluster_scale_up_is_priced_and_admitted() -> None:
    # 4 -> 6 L4 workers (1 nvidia.com/gpu each) adds 2 GPUs: 2 x 0.7 x 730 = 1022 more per month.
    # 8 nominal, 4 reserved: the 2 fit.
    before = _labelled((RC / "before.yaml").read_text())
    after = before.replace("replicas: 4\n    minReplicas: 4\n    maxReplicas: 4",
                           "replicas: 6\n    minReplicas: 6\n    maxReplicas: 6")
    live = {"RayCluster/ml-batch/train-l4": diffing.LiveCluster(
        kueue=([_lq("ml-batch")], [_cq("nvidia.com/gpu", "8", "4")]))}
    report = diffing.analyze(before, after, live=live, policy={"cost": {"prices": {"nvidia.com/gpu": 0.7}}})
    (r,) = report.to_dict()["resources"]
    assert r["rollout"] == "scale"
    assert r["capacity"]["cost"] == {"currency": "", "monthlyChange": 1022.0}
    assert r["capacity"]["kueue"]["admitted"] is True
    assert "**Kueue** (ml-batch/team): admitted in ClusterQueue cq" in diffing.render_markdown(report)


def test_without_a_queue_label_or_prices_nothing_is_said() -> None:
    before = (RC / "before.yaml").read_text()
    after = before.replace("replicas: 4\n    minReplicas: 4\n    maxReplicas: 4",
                           "replicas: 6\n    minReplicas: 6\n    maxReplicas: 6")
    live = {"RayCluster/ml-batch/train-l4": diffing.LiveCluster(
        kueue=([_lq("ml-batch")], [_cq("nvidia.com/gpu", "8", "4")]))}
    (r,) = diffing.analyze(before, after, live=live).to_dict()["resources"]
    assert "kueue" not in r["capacity"] and "cost" not in r["capacity"]
