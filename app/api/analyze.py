"""POST /v1/analyze and POST /v1/argocd/managed-resources."""

from __future__ import annotations

import hashlib
import logging
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query, Request, Response
from pydantic import BaseModel, ValidationError

from .. import jsonio
from ..deps import AuthorizedDep, Service, live_for
from ..errors import (
    InvalidRequest,
    MalformedJSON,
    UnsupportedMediaType,
    describe_validation,
    internal_error_body,
)
from ..live import cluster_fleet_for_texts, live_basis_for_texts
from ..managed import (
    ManagedResourcesError,
    check_managed_body,
    operator_files_from_managed_resources,
    texts_from_managed_resources,
)
from ..schemas import (
    REPORT_RESPONSES,
    AnalyzeRequest,
    ManagedResourcesRequest,
    ReportResponse,
    request_body,
)
from ..workers import encode_json

router = APIRouter(tags=["analysis"])
log = logging.getLogger("rayservice_impact")

Format = Annotated[Literal["json", "markdown"], Query(description="`markdown` answers text/markdown")]
Version = Annotated[str | None, Query(description="operator version whose rules apply (default: the "
                                      "server's RAYSERVICE_IMPACT_KUBERAY_VERSION)")]


def _is_json(content_type: str | None) -> bool:
    media = (content_type or "").split(";", 1)[0].strip().lower()
    return media == "application/json" or (media.startswith("application/") and media.endswith("+json"))


async def read_json(request: Request) -> tuple[bytes, Any]:
    """The raw body and its parsed JSON; 415 / 413 (while reading) / 400."""
    if not _is_json(request.headers.get("content-type")):
        raise UnsupportedMediaType("send the body as application/json")
    raw = await request.body()
    try:
        return raw, jsonio.loads(raw)
    except jsonio.JSONInputError as exc:
        raise MalformedJSON(str(exc)) from None


def validate(model: type[BaseModel], value: Any) -> Any:
    try:
        return model.model_validate(value)
    except ValidationError as exc:
        errors = exc.errors(include_url=False, include_input=False)
        raise InvalidRequest(describe_validation(errors)) from None


def _check_text(name: str, text: str) -> None:
    # JSON may carry "\ud800"; no YAML text (and no Kubernetes object) can hold a lone surrogate.
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        where = f"a lone surrogate at character {exc.start}"
        raise InvalidRequest(f"{name}: not valid Unicode ({where})") from None


async def answer(request: Request, service: Service, key: bytes | None, job: dict[str, Any]) -> Response:
    """Run a job through the cache (unless ``key`` is None) and the pool, record it, and answer."""
    state = request.scope.setdefault("state", {})
    result = service.cache.get(key) if key is not None else None
    state["cache"] = result is not None
    if result is None:
        service.metrics.in_flight.set(service.pool.in_flight + 1)
        try:
            result = await service.pool.run(job, service.settings.analysis_timeout_seconds)
        except Exception as exc:
            service.metrics.rejected.labels(getattr(exc, "code", "error")).inc()
            raise
        finally:
            service.metrics.in_flight.set(service.pool.in_flight)
        if key is not None:
            service.cache.put(key, result)
    else:
        service.metrics.cache_hits.inc()
    if result["status"] >= 500:  # a core bug: the worker sent its traceback; the answer gets the id
        request_id = state.get("request_id", "-")
        log.error("analysis failed unexpectedly: %s", result.get("exception", "?"),
                  extra={"request_id": request_id})
        state["error_code"] = "internal-error"
        return Response(encode_json(internal_error_body(request_id)), status_code=500,
                        media_type="application/json")
    if "decision" in result:
        state["decision"] = result["decision"]
        service.metrics.observe_analysis(result["decision"], result["rollouts"], result["accelerators"],
                                         None if state["cache"] else result["seconds"])
    else:
        state["error_code"] = result["error"]
    return Response(result["body"], status_code=result["status"], media_type=result["media_type"])


def _trimmed(body: ManagedResourcesRequest) -> dict[str, Any]:
    """Only the fields the conversion reads: flat strings, cheap to pickle whatever else was sent."""
    fields = ("group", "kind", "namespace", "name", "liveState", "targetState")
    return {"items": [{k: getattr(item, k) for k in fields if getattr(item, k) is not None}
                      for item in body.items or ()]}


def _check_depth(name: str, value: Any, limit: int = 64) -> None:
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > limit:
            raise InvalidRequest(f"{name}: nested deeper than {limit} levels")
        if isinstance(item, dict):
            stack.extend((v, depth + 1) for v in item.values())
        elif isinstance(item, list):
            stack.extend((v, depth + 1) for v in item)


def _digest(*parts: bytes) -> bytes:
    h = hashlib.blake2b(digest_size=20)
    for part in parts:
        h.update(len(part).to_bytes(8, "little"))
        h.update(part)
    return h.digest()


def _job(service: Service, fmt: str, version: str | None, **fields: Any) -> dict[str, Any]:
    return {"kuberay_version": version or service.settings.kuberay_version, "headroom": None,
            "policy": service.policy, "sources": ("before", "after"),
            "max_bytes": service.settings.max_body_bytes, "format": fmt, **fields}


@router.post("/v1/analyze", response_model=ReportResponse, responses=REPORT_RESPONSES,
             openapi_extra=request_body(AnalyzeRequest))
async def analyze(request: Request, service: AuthorizedDep, format: Format = "json") -> Response:
    """Analyse a change from `before` to `after` (YAML texts) and answer the report."""
    raw, value = await read_json(request)
    key = _digest(b"analyze", format.encode(), raw)
    if service.cache.get(key) is None:
        body: AnalyzeRequest = validate(AnalyzeRequest, value)
        _check_text("before", body.before)
        _check_text("after", body.after)
        _check_depth("policy", body.policy)
        job = _job(service, format, body.kuberayVersion, before=body.before, after=body.after,
                   headroom=body.headroom, policy=body.policy if body.policy is not None else service.policy)
        live = await _live(service, job, body.after)
        if live:
            job["live"], key = live, None  # the cluster changes under us: never cached
        if await _cluster(service, job, body.before, body.after):
            key = None
    else:
        job = {}
    return await answer(request, service, key, job)


async def _live(service: Service, job: dict[str, Any], after: Any) -> dict[str, Any] | None:
    return await live_basis_for_texts(
        after, enabled=live_for(service), kuberay_version=job["kuberay_version"],
        headroom=job["headroom"], timeout=service.settings.kubernetes_timeout_seconds,
        budget=service.settings.analysis_timeout_seconds)


async def _cluster(service: Service, job: dict[str, Any], before: Any, after: Any,
                   files: list[tuple[str, str | None, str | None]] | None = None) -> bool:
    """The cluster's ray.io objects into ``job`` when the change moves the KubeRay operator and
    the live basis is on (docs/operator-upgrade.md); whether the cluster was asked."""
    fleet, unread = await cluster_fleet_for_texts(
        before, after, files=files, enabled=live_for(service),
        timeout=service.settings.kubernetes_timeout_seconds,
        budget=service.settings.analysis_timeout_seconds)
    if fleet is None and not unread:
        return False
    job["cluster"], job["cluster_unread"] = fleet, unread
    return True


@router.post("/v1/argocd/managed-resources", response_model=ReportResponse, responses=REPORT_RESPONSES,
             openapi_extra=request_body(ManagedResourcesRequest))
async def argocd_managed_resources(request: Request, service: AuthorizedDep, format: Format = "json",
                                   kuberayVersion: Version = None) -> Response:
    """Analyse an Argo CD managed-resources answer: each item's live state -> its target state.

    A body that is not one (no ``items`` key, Argo CD's error answer, an item with neither
    state) is a 422 naming what is wrong and where, never "no resources, approve"; only an
    explicit ``{"items": []}`` is an application without resources.
    """
    raw, value = await read_json(request)
    key = _digest(b"argocd", format.encode(), (kuberayVersion or "").encode(), raw)
    if service.cache.get(key) is None:
        managed: ManagedResourcesRequest = validate(ManagedResourcesRequest, value)
        check_managed_body(value, require_items=True)
        job = _job(service, format, kuberayVersion, managed=_trimmed(managed), sources=("live", "target"),
                   before_is_live=True)
        try:
            job["operator_files"] = operator_files_from_managed_resources(value)
        except ManagedResourcesError:
            job["operator_files"] = []  # the worker's conversion answers the 4xx naming the item
        if live_for(service):
            try:  # convert here once; the worker then analyses the texts
                job["before"], job["after"] = texts_from_managed_resources(job.pop("managed"))
            except ManagedResourcesError:
                job["managed"] = _trimmed(managed)  # the worker converts again and answers the 4xx
            else:
                live = await _live(service, job, job["after"])
                if live:
                    job["live"], key = live, None
                if await _cluster(service, job, job["before"], job["after"], job["operator_files"]):
                    key = None
    else:
        job = {}
    return await answer(request, service, key, job)
