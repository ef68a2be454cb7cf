"""Tiny helpers to build before/after manifests from the real KubeRay samples."""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "samples" / "kuberay-v1.7.0"


def sample_text(name: str) -> str:
    return (SAMPLES / f"ray-service.{name}.yaml").read_text()


def sample(name: str) -> dict[str, Any]:
    """The first RayService document of a sample, as a dict."""
    for doc in yaml.safe_load_all(sample_text(name)):
        if isinstance(doc, dict) and doc.get("kind") == "RayService":
            return doc
    raise LookupError(name)


def dump(obj: dict[str, Any] | None) -> str:
    return "" if obj is None else yaml.safe_dump(obj, sort_keys=False)


def edited(obj: dict[str, Any], *edits: Callable[[dict[str, Any]], Any]) -> dict[str, Any]:
    out = copy.deepcopy(obj)
    for edit in edits:
        edit(out)
    return out


def rcc(obj: dict[str, Any]) -> dict[str, Any]:
    return obj["spec"]["rayClusterConfig"]


def group(obj: dict[str, Any], i: int = 0) -> dict[str, Any]:
    return rcc(obj)["workerGroupSpecs"][i]


def head_container(obj: dict[str, Any]) -> dict[str, Any]:
    return rcc(obj)["headGroupSpec"]["template"]["spec"]["containers"][0]


def worker_container(obj: dict[str, Any], i: int = 0) -> dict[str, Any]:
    return group(obj, i)["template"]["spec"]["containers"][0]


def set_images(obj: dict[str, Any], image: str) -> None:
    head_container(obj)["image"] = image
    for g in rcc(obj)["workerGroupSpecs"]:
        for c in g["template"]["spec"]["containers"]:
            c["image"] = image
