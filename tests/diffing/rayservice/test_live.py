"""A running RayCluster against its RayService (diffing/rayservice/live.py): what the operator has not
applied, reported as a divergence.
"""

from __future__ import annotations

import yaml

import diffing
from tests.builders import edited, group, rcc, sample
from tests.diffing.helpers import resource


def test_live_divergence_is_reported() -> None:
    sd = sample("stable-diffusion")
    path = "spec.rayClusterConfig.workerGroupSpecs[groupName=gpu-group].template.spec.containers[0].image"
    live = {"default/stable-diffusion": diffing.LiveCluster(active_cluster="sd-x", divergence=(path,))}
    r = resource(sd, edited(sd, lambda o: group(o).__setitem__("replicas", 2)), live=live)
    assert [f["path"] for f in r["findings"] if f["code"] == "latent-divergence"] == [path]


def test_cluster_divergence_ignores_muted_fields() -> None:
    rs = sample("stable-diffusion")
    rc = {"spec": yaml.safe_load(yaml.safe_dump(rcc(rs)))}
    rc["spec"]["workerGroupSpecs"][0]["replicas"] = 7
    rc["spec"]["workerGroupSpecs"][0]["template"]["spec"].pop("tolerations")
    assert diffing.cluster_divergence(rs, rc) == ()
    rc["spec"]["rayVersion"] = "2.40.0"
    assert diffing.cluster_divergence(rs, rc) == ("spec.rayClusterConfig.rayVersion",)
