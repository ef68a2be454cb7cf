"""The FastAPI app factory and the ``serve`` entry point (uvicorn).

Nothing is built at import time: ``create_app(settings)`` makes the app, its metrics
registry and its analysis pool; the pool starts (and warms up) in the lifespan, in the
background, so /healthz answers at once and /readyz turns 200 when analyses can run.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import sys
from collections.abc import AsyncIterator, Mapping
from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi
from fastapi.responses import JSONResponse

from diffing.kinds import NAMES_TEXT

from .api import analyze, health
from .deps import Service
from .errors import error_body, install_error_handlers
from .live import kubernetes_configured
from .metrics import Metrics
from .middleware import BodyLimitMiddleware, ObserveMiddleware
from .output import EXIT_OK, EXIT_USAGE
from .rollout.report import LogSink, RolloutReporter
from .rollout.wiring import PartsFactory, rollout_parts
from .schemas import AnalyzeRequest, ManagedResourcesRequest, component_schemas
from .settings import Settings, SettingsError, load_settings
from .workers import AnalysisPool, ResultCache

GITHUB_MAX_PAYLOAD = 25 * 1024 * 1024  # GitHub caps webhook payloads at 25 MB

log = logging.getLogger("rayservice_impact")


def create_app(settings: Settings, *, rollout: PartsFactory | None = None,
               reporter_options: Mapping[str, Any] | None = None) -> FastAPI:
    """The service for ``settings``; raises SettingsError for an unreadable policy file.

    ``rollout``: builds the rollout watch's Store and Follower (default: the Kubernetes side,
    :func:`app.rollout.wiring.rollout_parts`); ``reporter_options``: keyword arguments of
    :class:`app.rollout.report.RolloutReporter` (tests: clock, holder, intervals)."""
    service = Service(
        settings=settings,
        policy=_load_policy(settings),
        pool=AnalysisPool(settings.analysis_workers, settings.analysis_queue, settings.analysis_executor),
        cache=ResultCache(settings.analysis_cache_entries, settings.analysis_cache_bytes),
        metrics=Metrics(),
        live_enabled=settings.live_basis == "auto" and kubernetes_configured(),
        api_tokens=settings.load_api_tokens(),
    )
    if service.live_enabled and not service.api_tokens:
        log.warning("the analysis API has no tokens (RAYSERVICE_IMPACT_API_TOKENS_FILE): it answers from "
                    "the manifests only; the live basis serves the GitHub webhook alone")

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        warm_up = asyncio.create_task(_start_pool(service.pool))
        try:
            yield
        finally:
            warm_up.cancel()
            service.pool.close()

    app = FastAPI(title="rayservice-impact", version=_version(), lifespan=lifespan,
                  summary=f"Predicts what the KubeRay operator does with a {NAMES_TEXT} change.",
                  docs_url=None, redoc_url=None)
    _offline_docs(app)
    app.state.service = service
    install_error_handlers(app)
    app.include_router(analyze.router)
    app.include_router(health.router)
    from .webhooks.argocd import build_router as build_rollout_router
    from .webhooks.github import build_router

    reporter = _reporter(settings, service.metrics, rollout, reporter_options)
    app.state.rollout = reporter
    webhook = build_router(settings, pool=service.pool, reporter=reporter)
    if webhook is not None:
        app.include_router(webhook)  # FastAPI >= 0.115 merges the router's lifespan into the app's
    else:
        app.add_api_route("/webhooks/github", _webhook_not_configured, methods=["POST"],
                          include_in_schema=False)
    from .webhooks.gitlab import build_router as build_gitlab_router

    gitlab = build_gitlab_router(settings, pool=service.pool)
    if gitlab is not None:  # mounted only with RAYSERVICE_IMPACT_GITLAB_WEBHOOK_SECRET
        app.include_router(gitlab)
    # Included after the GitHub router: the reporter starts after (and stops before) its client.
    app.include_router(build_rollout_router(settings, reporter, getattr(webhook, "service", None)))
    # GitHub sends webhook payloads of up to 25 MB; the analysis API keeps the configured limit.
    app.add_middleware(BodyLimitMiddleware, max_bytes=settings.max_body_bytes,
                       per_path={"/webhooks/github": max(settings.max_body_bytes, GITHUB_MAX_PAYLOAD)},
                       body_timeout=settings.body_timeout_seconds)
    app.add_middleware(ObserveMiddleware, metrics=service.metrics)  # outermost: sees the 413s too
    app.openapi = lambda: _openapi(app)  # type: ignore[method-assign]
    return app


def _reporter(settings: Settings, metrics: Metrics, factory: PartsFactory | None,
              options: Mapping[str, Any] | None) -> RolloutReporter | None:
    """The rollout reporter when the rollout watch has a Store and a Follower, else None (off)."""
    parts = rollout_parts(settings, factory)
    if parts is None:
        return None
    store, follower = parts
    kwargs: dict[str, Any] = {"metrics": metrics, "write_interval": settings.rollout_write_interval_seconds}
    max_watches = getattr(settings, "rollout_max_watches", None)  # the Kubernetes side's setting
    if isinstance(max_watches, int) and max_watches > 0:
        kwargs["max_watches"] = max_watches
    kwargs.update(options or {})
    log.info("rollout reporting is on: deployed changes are followed (docs/rollout.md)")
    return RolloutReporter(store, follower, lambda watch: LogSink(), **kwargs)


async def _webhook_not_configured() -> JSONResponse:
    """Without a secret the route accepts nothing (no unsigned webhook, ever), and says why, so a
    platform engineer who set up the GitHub webhook first sees what is missing, not a bare 404."""
    return JSONResponse(error_body("not-configured", "the GitHub webhook is not configured on this server: "
                                   "set RAYSERVICE_IMPACT_GITHUB_WEBHOOK_SECRET to the webhook's secret "
                                   "(deploy/base reads it from the key github-webhook-secret of the Secret "
                                   "rayservice-impact) and restart the service"),
                        status_code=503)


def _offline_docs(app: FastAPI) -> None:
    """``/docs`` with Swagger UI's own files from the ``swagger-ui-bundle-v2`` package, never a
    CDN: the service often runs in clusters without internet access."""
    from fastapi.openapi.docs import get_swagger_ui_html
    from fastapi.responses import HTMLResponse
    from fastapi.staticfiles import StaticFiles

    try:
        from swagger_ui_bundle import swagger_ui_path
    except ImportError:  # without the package there is no UI (the API and /openapi.json still work)
        return
    app.mount("/docs/assets", StaticFiles(directory=swagger_ui_path), name="swagger-ui")

    @app.get("/docs", include_in_schema=False)
    async def docs() -> HTMLResponse:
        return get_swagger_ui_html(openapi_url="/openapi.json", title="rayservice-impact API",
                                   swagger_js_url="/docs/assets/swagger-ui-bundle.js",
                                   swagger_css_url="/docs/assets/swagger-ui.css",
                                   swagger_favicon_url="/docs/assets/favicon-32x32.png")


def _load_policy(settings: Settings) -> dict[str, Any] | None:
    """The default policy, checked now so a bad file stops the start, not every request."""
    import diffing

    from .files import InputFileError

    try:
        policy = settings.load_policy()
        diffing.Policy.from_mapping(policy)
    except (InputFileError, diffing.PolicyError) as exc:
        raise SettingsError(f"RAYSERVICE_IMPACT_POLICY_FILE: {exc}") from None
    return policy


async def _start_pool(pool: AnalysisPool) -> None:
    """Start the pool; retry while it fails (readiness stays false meanwhile)."""
    delay = 0.5
    while True:
        try:
            await pool.start()
            # Everything imported and built so far lives as long as the process: move it out
            # of the collector's generations, so a full collection under load walks only what
            # requests create (it cut the cached-answer p99 in bench runs; see bench/README.md).
            gc.collect()
            gc.freeze()
            return
        except Exception:
            log.exception("the analysis pool failed to start; retrying in %.1f s", delay)
            pool.close()
            await asyncio.sleep(delay)
            delay = min(delay * 2, 30.0)


def _openapi(app: FastAPI) -> dict[str, Any]:
    if app.openapi_schema is None:
        schema = get_openapi(title=app.title, version=app.version, summary=app.summary, routes=app.routes)
        schema.setdefault("components", {}).setdefault("schemas", {}).update(
            component_schemas(AnalyzeRequest, ManagedResourcesRequest))
        app.openapi_schema = schema
    return app.openapi_schema


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("rayservice-impact")
    except PackageNotFoundError:
        return "0"


def run(host: str = "127.0.0.1", port: int = 8080) -> int:
    """``rayservice-impact serve``: validate settings, then serve until interrupted."""
    import uvicorn

    from .logs import configure_logging

    try:
        settings = load_settings()
        app = create_app(settings)
    except SettingsError as exc:
        print(f"rayservice-impact: {exc}", file=sys.stderr)
        return EXIT_USAGE
    configure_logging(settings.log_level)
    from .httpserver import protocol_with

    uvicorn.run(app, host=host, port=port, log_config=None, access_log=False, server_header=False,
                http=protocol_with(settings.header_timeout_seconds))
    return EXIT_OK
