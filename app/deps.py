"""What routes depend on: the service's shared state, built once by ``create_app``."""

from __future__ import annotations

import hmac
from dataclasses import dataclass, field
from typing import Annotated, Any

from fastapi import Depends, Request

from .errors import ApiError
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
    api_tokens: tuple[bytes, ...] = field(default=())  # bearer tokens of the analysis API


class Unauthorized(ApiError):
    status, code = 401, "unauthorized"


# Dependencies are coroutines: FastAPI runs a plain function in a worker thread, a hand-off per
# request that cost more than the lookup itself.
async def get_service(request: Request) -> Service:
    return request.app.state.service  # type: ignore[no-any-return]


async def authorize(request: Request) -> Service:
    """The analysis API's bearer-token check (``RAYSERVICE_IMPACT_API_TOKENS_FILE``).

    With tokens configured, a request without a matching ``Authorization: Bearer`` is 401. With
    none configured the API stays open for manifests but never answers from the cluster: the
    live basis (free GPUs, live RayServices and RayClusters) is only for authenticated callers.
    """
    service: Service = request.app.state.service
    if not service.api_tokens:
        return service
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    given = token.strip().encode("utf-8", "replace")
    if scheme.lower() != "bearer" or not any(hmac.compare_digest(given, t) for t in service.api_tokens):
        raise Unauthorized("send 'Authorization: Bearer <token>' with one of the service's API tokens")
    return service


def live_for(service: Service) -> bool:
    """Whether an analysis request may use the live basis (authenticated API only)."""
    return service.live_enabled and bool(service.api_tokens)


ServiceDep = Annotated[Service, Depends(get_service)]
AuthorizedDep = Annotated[Service, Depends(authorize)]
