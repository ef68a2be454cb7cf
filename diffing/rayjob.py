"""Standalone RayJob changes (raycluster-semantics.md §7): placeholder until the rules land."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import Any

from .engine import Engine
from .manifests import Duplicate, Manifest
from .report import APPROVE, Capacity, ResourceReport


def analyze_job(engine: Engine, key: tuple[str, str], before: Manifest | None, after: Manifest | None, *,
                headroom: Mapping[str, Fraction] | None, argo_apps: list[Any],
                duplicates: Sequence[Duplicate] = ()) -> ResourceReport:
    main = after or before
    assert main is not None
    return ResourceReport(api_version=main.api_version, namespace=key[0], name=key[1], action="updated",
                          rollout="none", decision=APPROVE, reasons=(), changes=(),
                          capacity=Capacity("manifest", {}, {}, None), findings=(), kind="RayJob",
                          source=main.where(), origin=main.source)
