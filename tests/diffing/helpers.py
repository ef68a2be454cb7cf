"""What several test files under tests/diffing share: real manifests (KubeRay's samples and ours), an
integer beyond 64 bits, the CLI, and the one resource of a report.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

import diffing
from tests.builders import dump, edited, sample, set_images, worker_container

ROOT = Path(__file__).resolve().parents[2]
LLM = sample("llm-serve")  # one worker of 4 nvidia.com/gpu
RAYCLUSTER = (ROOT / "samples/raycluster-image-bump/before.yaml").read_text()  # 4 nvidia.com/gpu
TPU_JOB = (ROOT / "tests/data/kuberay-rayjob/ray-job.tpu-v6e-singlehost.yaml").read_text()  # 4 TPUs
GPU_BEFORE = (ROOT / "samples/gpu-image-bump/before.yaml").read_text()
HUGE_HEX = "0x" + "f" * 3600  # parses as an int; printing it raises ValueError (4 300-digit limit)


def one(report: diffing.Report, name: str | None = None) -> dict[str, Any]:
    resources = report.to_dict()["resources"]
    return next(r for r in resources if name is None or r["name"] == name)


def resource(before: dict | None, after: dict | None, **kwargs: object) -> dict:
    report = diffing.analyze(dump(before), dump(after), **kwargs)  # type: ignore[arg-type]
    (r,) = report.to_dict()["resources"]
    return r


def device(name: str, count: int = 2) -> Any:
    """An edit: the one worker asks for ``count`` of ``name`` instead of its nvidia.com/gpu."""
    def edit(obj: dict[str, Any]) -> None:
        res = worker_container(obj)["resources"]
        for side in ("limits", "requests"):
            res[side].pop("nvidia.com/gpu", None)
            res[side][name] = str(count)
    return edit


def doubled(name: str) -> tuple[str, str]:
    """A RayService on ``name`` devices and an image bump of it: a new-cluster rollout."""
    before = edited(LLM, device(name))
    return dump(before), dump(edited(before, lambda o: set_images(o, "rayproject/ray-llm:2.53.0")))


def renamed(text: str, suffix: str = "-v2") -> str:
    docs = [d for d in yaml.safe_load_all(text) if d]
    for d in docs:
        d["metadata"]["name"] += suffix
    return yaml.safe_dump_all(docs)


def _with(text: str, old: str, new: str) -> str:
    assert old in text, old
    return text.replace(old, new, 1)


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "app", *args], capture_output=True, text=True, cwd=ROOT,
                          timeout=120)
