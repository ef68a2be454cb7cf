"""The RayJob the RayJob tests edit, and how they read its report.

The tests follow docs/semantics/rayjob.md §7 end to end through ``diffing.analyze``. Each case of the
§7 table that a manifest diff can decide names the KubeRay v1.7.0 source it follows in its id (RJC =
ray-operator/controllers/ray/rayjob_controller.go, VAL = .../utils/validation.go, RJCRD =
config/crd/bases/ray.io_rayjobs.yaml, JOB = .../common/job.go). The RayJob samples under
``tests/data/kuberay-rayjob`` are KubeRay's files at v1.7.0, unchanged.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

import diffing
from diffing.report import ResourceReport

DATA = Path(__file__).resolve().parents[2] / "data" / "kuberay-rayjob"
Edit = Callable[[dict[str, Any]], None]


def _sample() -> dict[str, Any]:
    text = (DATA / "ray-job.sample.yaml").read_text()
    return next(d for d in yaml.safe_load_all(text) if isinstance(d, dict) and d.get("kind") == "RayJob")


BASE = _sample()  # ray-job.sample.yaml: K8sJobMode, one head (1 CPU, 2Gi) and one worker (200m CPU)


def _job(edit: Callable[[dict[str, Any]], None] | None = None) -> dict[str, Any]:
    job = copy.deepcopy(BASE)
    job["spec"]["shutdownAfterJobFinishes"] = True
    if edit is not None:
        edit(job)
    return job


def _text(*objs: dict[str, Any]) -> str:
    return "---\n".join(yaml.safe_dump(o, sort_keys=False) for o in objs)


def _one(before: str, after: str, **kw: Any) -> ResourceReport:
    report = diffing.analyze(before, after, **kw)
    jobs = [r for r in report.resources if r.kind == "RayJob"]
    assert len(jobs) == 1
    return jobs[0]


def _update(edit: Callable[[dict[str, Any]], None], before: Callable[[dict[str, Any]], None] | None = None,
            **kw: Any) -> ResourceReport:
    b = _job(before)
    a = copy.deepcopy(b)
    edit(a)
    return _one(_text(b), _text(a), **kw)


def _codes(r: ResourceReport) -> dict[str, str]:
    return {f.code: f.severity for f in r.findings}


def _spec(**values: Any) -> Callable[[dict[str, Any]], None]:
    return lambda job: job["spec"].update(values)


def _rcs(edit: Callable[[dict[str, Any]], None]) -> Callable[[dict[str, Any]], None]:
    return lambda job: edit(job["spec"]["rayClusterSpec"])


def _head_container(job: dict[str, Any]) -> dict[str, Any]:
    return job["spec"]["rayClusterSpec"]["headGroupSpec"]["template"]["spec"]["containers"][0]
