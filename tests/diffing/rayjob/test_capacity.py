"""What one run of a RayJob needs (diffing/rayjob/capacity.py): its cluster and its submitter, by
submission mode, and the holds when a known headroom does not cover it. Ids cite KubeRay as in
jobs.py.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from tests.diffing.rayjob.jobs import DATA, _codes, _head_container, _job, _one, _spec, _text


def test_create_reports_the_cluster_and_the_submitter_JOB_230_246() -> None:
    r = _one("", _text(_job()))
    assert (r.action, r.rollout, r.decision) == ("created", "create", "approve")
    assert r.capacity.extra == {"cpu": "1700m", "memory": "2504Mi"}
    assert r.capacity.headroom is None
    d = r.to_dict()
    assert d["kind"] == "RayJob" and d["capacity"]["extra"] == r.capacity.extra


@pytest.mark.parametrize(("mode", "cpu", "memory"), [
    ("K8sJobMode", "1700m", "2504Mi"),
    ("SidecarMode", "1700m", "2504Mi"),  # the submitter sits in the head pod instead (RJC:1025-1038)
    ("HTTPMode", "1200m", "2304Mi"),
    ("InteractiveMode", "1200m", "2304Mi"),
], ids=["k8s-job-JOB:215-227", "sidecar-RJC:1025-1038", "http", "interactive"])
def test_create_capacity_by_submission_mode(mode: str, cpu: str, memory: str) -> None:
    r = _one("", _text(_job(_spec(submissionMode=mode))))
    assert r.rollout == "create"
    assert r.capacity.extra == {"cpu": cpu, "memory": memory}


def test_create_with_a_submitter_template_counts_its_pod() -> None:
    template = {"spec": {"restartPolicy": "Never", "containers": [
        {"name": "s", "image": "x", "resources": {"requests": {"cpu": "2", "memory": "1Gi"}}}]}}
    r = _one("", _text(_job(_spec(submitterPodTemplate=template))))
    assert r.capacity.extra == {"cpu": "3200m", "memory": "3328Mi"}


def test_create_on_an_existing_cluster_adds_only_the_submitter_RJC_956_960() -> None:
    r = _one("", (DATA / "ray-job.use-existing-raycluster.yaml").read_text())
    assert r.rollout == "create"
    assert r.capacity.extra == {"cpu": "500m", "memory": "200Mi"}


def test_create_suspended_builds_nothing_RJC_179_181() -> None:
    r = _one("", _text(_job(_spec(suspend=True))))
    assert (r.rollout, r.decision) == ("create", "approve")
    assert r.capacity.extra == {}
    assert _codes(r) == {"created-suspended": "info"}


def test_create_holds_when_the_known_headroom_lacks_accelerators() -> None:
    text = (DATA / "ray-job.tpu-v6e-singlehost.yaml").read_text()
    r = _one("", text)
    assert r.capacity.extra["google.com/tpu"] == 4
    assert r.decision == "approve"  # no headroom known: reported, not held
    short = _one("", text, headroom={"google.com/tpu": 2})
    assert short.decision == "hold" and "headroom" in short.headline
    assert any("--headroom google.com/tpu=4" in s for s in short.next_steps)
    assert _one("", text, headroom={"google.com/tpu": 4}).decision == "approve"


def test_resume_holds_when_the_known_headroom_lacks_gpus() -> None:
    def gpu(j: dict[str, Any]) -> None:
        _head_container(j)["resources"]["limits"]["nvidia.com/gpu"] = 1
        j["spec"]["suspend"] = True
    b = _job(gpu)
    a = copy.deepcopy(b)
    a["spec"]["suspend"] = False
    r = _one(_text(b), _text(a), headroom={"nvidia.com/gpu": 0})
    assert (r.rollout, r.decision) == ("resume", "hold")
    assert r.capacity.extra["nvidia.com/gpu"] == 1
