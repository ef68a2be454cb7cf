"""GET /healthz (process up), /readyz (ready to analyse) and /metrics."""

from __future__ import annotations

from fastapi import APIRouter, Response

from ..deps import ServiceDep
from ..errors import ServiceUnavailable
from ..metrics import CONTENT_TYPE_LATEST
from ..schemas import ERROR_RESPONSES, HealthResponse, ReadyResponse

router = APIRouter(tags=["operations"])


@router.get("/healthz", response_model=HealthResponse)
async def healthz() -> HealthResponse:
    """Liveness: the process answers HTTP."""
    return HealthResponse(status="ok")


@router.get("/readyz", response_model=ReadyResponse, responses={503: ERROR_RESPONSES[503]})
async def readyz(service: ServiceDep) -> ReadyResponse:
    """Readiness: the analysis workers are up, have run a warm-up analysis, and a slot is free."""
    pool = service.pool
    if not pool.is_ready:
        raise ServiceUnavailable("the analysis pool is not ready", code="not-ready", retry_after=1)
    if pool.in_flight >= pool.capacity:  # a load balancer should send new work elsewhere
        raise ServiceUnavailable(f"all {pool.capacity} analysis slots are busy", code="saturated",
                                 retry_after=1)
    return ReadyResponse(status="ready", workers=pool.workers, inFlight=pool.in_flight,
                         capacity=pool.capacity)


@router.get("/metrics", response_class=Response,
            responses={200: {"content": {CONTENT_TYPE_LATEST.split(";")[0]: {"schema": {"type": "string"}}},
                             "description": "Prometheus text format"}})
async def metrics(service: ServiceDep) -> Response:
    """Prometheus metrics in the text exposition format."""
    return Response(service.metrics.render(), media_type=CONTENT_TYPE_LATEST)
