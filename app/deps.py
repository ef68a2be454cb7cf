"""What routes depend on: the service's shared state, built once by ``create_app``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import Depends, Request

from .metrics import Metrics
from .settings import Settings
from .workers import AnalysisPool, ResultCache


@dataclass(slots=True)
class Service:
    settings: Settings
    policy: dict[str, Any] | None
    pool: AnalysisPool
    cache: ResultCache
    metrics: Metrics
    live_enabled: bool = False  # the live basis: in-cluster or a kubeconfig, and not switched off


def get_service(request: Request) -> Service:
    return request.app.state.service  # type: ignore[no-any-return]


ServiceDep = Annotated[Service, Depends(get_service)]
