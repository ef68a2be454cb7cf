"""A RayJob run with a live basis: its cluster's pods and the submitter placed on the live nodes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import diffing

from .helpers import node, pod

SAMPLE = Path(__file__).resolve().parents[3] / "samples" / "rayjob-tpu-next-run" / "after.yaml"
TPU = {"cloud.google.com/gke-tpu-accelerator": "tpu-v6e-slice", "cloud.google.com/gke-tpu-topology": "2x2"}


def _run(nodes: list[dict[str, Any]], pods: list[dict[str, Any]]) -> dict[str, Any]:
    after = SAMPLE.read_text()
    (key,) = diffing.live_objects(after, "after")
    live = {key: diffing.LiveCluster(cluster=(nodes, pods))}
    return diffing.analyze("", after, live=live).to_dict()["resources"][0]


def test_rayjob_run_waits_for_a_busy_tpu_slice() -> None:
    # One v6e 2x2 host, its 4 chips held by another job; a cpu node without the TPU labels. The
    # job's worker (4 chips, nodeSelector on the slice) finds neither: Insufficient google.com/tpu
    # on the TPU node (NodeResourcesFit), the selector on the cpu node (NodeAffinity).
    nodes = [node("tpu-0", pool="v6e-pool", machine="ct6e-standard-4t", cpu="180", memory="700Gi",
                  extra={"google.com/tpu": "4"}, labels=TPU),
             node("cpu-0", pool="cpu-pool", cpu="32", memory="128Gi")]
    r = _run(nodes, [pod("other", "tpu-0", {"google.com/tpu": "4"})])
    assert r["rollout"] == "create"
    plan = r["capacity"]["placement"]
    groups = {g["group"]: g for g in plan["groups"]}
    # The run's cluster (head, tpu-group) and the K8sJobMode submitter pod.
    assert list(groups) == ["head", "tpu-group", "submitter"]
    assert groups["head"]["placed"] == 1 and groups["submitter"]["placed"] == 1
    assert groups["tpu-group"]["message"] == ("0/2 nodes are available: 1 Insufficient google.com/tpu, "
                                 "1 node(s) didn't match Pod's node affinity/selector.")
    assert r["decision"] == "hold"
    assert any("cannot be placed on the live nodes" in reason for reason in r["reasons"])


def test_rayjob_run_fits_on_a_free_slice() -> None:
    nodes = [node("tpu-0", pool="v6e-pool", machine="ct6e-standard-4t", cpu="180", memory="700Gi",
                  extra={"google.com/tpu": "4"}, labels=TPU),
             node("cpu-0", pool="cpu-pool", cpu="32", memory="128Gi")]
    r = _run(nodes, [])
    assert r["capacity"]["placement"]["fits"] is True
    assert r["capacity"]["placement"]["groups"][1]["pools"] == {"v6e-pool (ct6e-standard-4t)": 1}
    assert not any("cannot be placed" in reason for reason in r["reasons"])
