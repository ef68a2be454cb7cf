"""``POST /webhooks/argocd``: an Argo CD sync, as a deployed change to follow; ``GET /v1/rollouts``.

Argo CD's notifications controller posts what the template in ``argocd-notifications-cm`` says
(docs/rollout.md has the template): the Application's name and namespace, the revision, the
operation's phase and the source's ``repoURL``. The shared secret travels in the
``X-RayService-Impact-Secret`` header and is compared in constant time before the body is read
as JSON.

On a sync that is ``Running`` (or ``Succeeded``), the Application's ray.io objects are analysed
as the PreSync hook analyses them (``GET applications/{app}/managed-resources``: live state
against target state, :mod:`app.hooks.argocd`), and the objects the operator acts on are followed
under the key ``argocd:NAMESPACE/APP@REVISION``. The report goes to GitHub when ``repoURL`` is a
GitHub repository and the service has GitHub credentials (a check run on the revision, and the
sticky comment of the pull request that commit merged), else to the logs and the metrics only.
Once the sync has succeeded the live state already is the target, so the ``Running`` notification
is the one that starts a watch; a ``Succeeded`` one for the same revision is a redelivery.

``GET /v1/rollouts`` lists the watches this replica has seen, ``GET /v1/rollouts/{key}`` the
newest observations of one, as JSON (the analysis API's tokens apply).
"""

from __future__ import annotations

import asyncio
import hmac
import json
import logging
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import APIRouter, Request, Response
from fastapi.responses import JSONResponse

import diffing
from app.deps import AuthorizedDep
from app.managed import ManagedResourcesError, texts_from_managed_resources
from app.rollout.model import Observation, Watch
from app.rollout.present import conclusion_of
from app.rollout.report import RolloutReporter

from ..clients.argocd import ArgoCDClient
from ..clients.upstream import UpstreamError
from ..live import live_basis_for_texts
from .common import read_limited
from .github import live_enabled

log = logging.getLogger(__name__)

SECRET_HEADER = "x-rayservice-impact-secret"
MAX_BODY = 64 * 1024           # a notification is a few hundred bytes
FOLLOWED_PHASES = ("Running", "Succeeded")
NAME = re.compile(r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$")   # a Kubernetes object name
REVISION = re.compile(r"^[A-Za-z0-9._/-]{1,255}$")
GITHUB_REPO = re.compile(r"^(?:https?://|git@)(?P<host>[^/:]+)[/:](?P<owner>[^/]+)/(?P<repo>[^/]+?)(?:\.git)?/?$")
MAX_ANALYSES = 4
WAIT_SECONDS = 30.0  # ?wait=1 (the PreSync hook): how long the answer waits for the analysis


def _error(status: int, code: str, message: str) -> JSONResponse:
    return JSONResponse({"error": {"code": code, "message": message}}, status_code=status)


def parse_notification(body: bytes) -> tuple[dict[str, str] | None, str]:
    """(the notification's fields, "") or (None, what is wrong with it)."""
    try:
        data = json.loads(body)
    except ValueError as exc:
        return None, f"the body is not JSON ({exc.msg} at line {exc.lineno} column {exc.colno})"
    if not isinstance(data, dict):
        return None, "the body is not a JSON object"
    out: dict[str, str] = {}
    for field, required in (("app", True), ("namespace", False), ("revision", True), ("phase", True),
                            ("repoURL", False)):
        value = data.get(field)
        if value is None or value == "":
            if required:
                return None, f"'{field}' is missing (see the template in docs/rollout.md)"
            out[field] = ""
            continue
        if not isinstance(value, str):
            return None, f"'{field}' must be a string"
        out[field] = value.strip()
    if not NAME.match(out["app"]) or (out["namespace"] and not NAME.match(out["namespace"])):
        return None, "'app' and 'namespace' must be Kubernetes object names"
    if not REVISION.match(out["revision"]):
        return None, "'revision' must be a commit SHA, tag or branch name"
    return out, ""


def github_repo_of(repo_url: str, api_url: str) -> tuple[str, str] | None:
    """(owner, repo) when ``repo_url`` is on the GitHub the service talks to."""
    m = GITHUB_REPO.match(repo_url or "")
    if m is None:
        return None
    host = m["host"].lower()
    api_host = re.sub(r"^https?://", "", api_url).split("/")[0].lower()
    if host not in ("github.com", "www.github.com") and host != api_host and f"api.{host}" != api_host:
        return None
    return m["owner"], m["repo"]


def argocd_client(settings: Any) -> ArgoCDClient | None:
    """The Argo CD API client when RAYSERVICE_IMPACT_ARGOCD_SERVER and _ARGOCD_TOKEN are set."""
    server, token = getattr(settings, "argocd_server", None), getattr(settings, "argocd_token", None)
    secret = token.get_secret_value() if token is not None else ""
    if not server or not secret:
        return None
    verify: bool | str = str(settings.argocd_ca_file) if settings.argocd_ca_file else True
    if settings.argocd_insecure:
        verify = False
    return ArgoCDClient(server, secret, timeout=float(settings.argocd_timeout_seconds),
                        retries=int(settings.argocd_retries), verify=verify)


def observation_json(o: Observation) -> dict[str, Any]:
    t = o.target
    return {"kind": t.kind, "namespace": t.namespace, "name": t.name, "phase": o.phase.value,
            "summary": o.summary,
            "predicted": {"rollout": t.predicted_rollout, "extra": dict(t.predicted_extra)},
            "observed": {"rollout": o.observed_rollout, "extra": dict(o.observed_extra)},
            "pendingPods": o.pending_pods, "reasons": list(o.reasons), "serveApps": dict(o.serve_apps),
            "since": o.since, "updated": o.updated}


def watch_json(watch: Watch, observations: tuple[Observation, ...], *, full: bool) -> dict[str, Any]:
    status, conclusion = conclusion_of(observations) if observations else ("waiting", None)
    out: dict[str, Any] = {"key": watch.key, "started": watch.started,
                           "deadlineSeconds": watch.deadline_seconds, "status": status,
                           "conclusion": conclusion,
                           "targets": [t.key for t in watch.targets]}
    if full:
        out["observations"] = [observation_json(o) for o in observations]
    return out


class ArgoCDWebhook:
    def __init__(self, settings: Any, reporter: RolloutReporter | None, github: Any = None) -> None:
        secret = getattr(settings, "argocd_webhook_secret", None)
        self.secret = secret.get_secret_value().encode() if secret is not None else b""
        self.settings, self.reporter, self.github = settings, reporter, github
        self.argocd = argocd_client(settings)
        self._gate = asyncio.Semaphore(MAX_ANALYSES)
        self._tasks: set[asyncio.Task[None]] = set()
        self.outcomes: dict[str, str] = {}   # key -> what happened (tests, logs)

    async def handle(self, request: Request) -> Response:
        if not self.secret:
            return _error(503, "not-configured", "the Argo CD webhook is not configured on this server: set "
                          "RAYSERVICE_IMPACT_ARGOCD_WEBHOOK_SECRET and send it in the "
                          "X-RayService-Impact-Secret header (docs/rollout.md)")
        given = request.headers.get(SECRET_HEADER, "").encode()
        if not hmac.compare_digest(given, self.secret):
            return _error(401, "invalid-secret", "missing or wrong X-RayService-Impact-Secret header")
        body = await read_limited(request, MAX_BODY)
        if body is None:
            return _error(413, "body-too-large", f"the body is over {MAX_BODY} bytes")
        note, problem = parse_notification(body)
        if note is None:
            return _error(400, "invalid-notification", problem)
        if note["phase"] not in FOLLOWED_PHASES:
            why = f"sync phase {note['phase']!r} is not followed"
            return JSONResponse({"status": "ignored", "reason": why}, status_code=202)
        if self.reporter is None:
            return JSONResponse({"status": "ignored", "reason": "rollout reporting is not configured (the "
                                 "rollout watch has no Kubernetes access; docs/rollout.md)"}, status_code=202)
        if self.argocd is None:
            return JSONResponse({"status": "ignored", "reason": "the Argo CD API is not configured "
                                 "(RAYSERVICE_IMPACT_ARGOCD_SERVER and _ARGOCD_TOKEN): the application "
                                 "cannot be analysed"}, status_code=202)
        key = f"argocd:{note['namespace'] or 'argocd'}/{note['app']}@{note['revision']}"
        task = asyncio.create_task(self._start(key, note))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        log.info("argocd: %s sync %s -> accepted", key, note["phase"])
        if request.query_params.get("wait") in ("1", "true"):
            # The PreSync hook waits: the live state must be read before the sync applies.
            try:
                await asyncio.wait_for(asyncio.shield(task), WAIT_SECONDS)
            except TimeoutError:
                return JSONResponse({"status": "accepted", "key": key}, status_code=202)
            return JSONResponse({"status": self.outcomes.get(key, "failed"), "key": key}, status_code=200)
        return JSONResponse({"status": "accepted", "key": key}, status_code=202)

    async def _start(self, key: str, note: dict[str, str]) -> None:
        assert self.reporter is not None and self.argocd is not None
        async with self._gate:
            try:
                outcome = await self._analyse_and_start(key, note)
            except Exception as exc:  # noqa: BLE001 - logged; the notification cannot be answered any more
                log.error("argocd %s: not followed (%s: %s)", key, type(exc).__name__, exc)
                outcome = "failed"
        self.outcomes[key] = outcome

    async def _analyse_and_start(self, key: str, note: dict[str, str]) -> str:
        assert self.reporter is not None and self.argocd is not None
        from app.github.push import targets_of

        try:
            body = await asyncio.to_thread(self.argocd.managed_resources, note["app"],
                                           app_namespace=note["namespace"] or None)
            before, after = texts_from_managed_resources(body)
        except (UpstreamError, ManagedResourcesError) as exc:
            log.error("argocd %s: cannot read the managed resources: %s", key, exc)
            return "failed"
        options = self.github.options if self.github is not None else None
        # The live basis, as the PreSync hook and the pull request used it: the prediction the
        # rollout is measured against must be the one they gave (replicas the autoscaler runs).
        live = await live_basis_for_texts(
            after, enabled=live_enabled(self.settings), kuberay_version=self.settings.kuberay_version,
            headroom=None, timeout=self.settings.kubernetes_timeout_seconds,
            budget=self.settings.analysis_timeout_seconds)
        report = await asyncio.to_thread(
            diffing.analyze, before, after, kuberay_version=self.settings.kuberay_version,
            policy=options.policy if options is not None else self.settings.load_policy(),
            sources=("live", "target"), before_is_live=True, live=live)
        targets = targets_of(report)
        if not targets:
            log.info("argocd %s: no RayService, RayCluster or RayJob to follow", key)
            return "nothing-to-follow"
        sink: dict[str, Any] = {"argocd": {"app": note["app"], "namespace": note["namespace"],
                                           "revision": note["revision"]}}
        repo = github_repo_of(note["repoURL"], str(getattr(self.settings, "github_api_url", "")))
        if repo is not None and self.github is not None and self.github.can_write \
                and re.fullmatch(r"[0-9a-f]{40}", note["revision"]):
            pulls: tuple[int, ...] = ()
            try:
                from app.github.push import Push, merged_pulls

                gh = await self.github.repo_client(*repo)
                pulls = await merged_pulls(gh, Push(repo[0], repo[1], "", "", note["revision"]))
            except Exception as exc:  # noqa: BLE001 - the check run is still written
                log.warning("argocd %s: the pull requests of %s are not known (%s)", key,
                            note["revision"][:7], exc)
            sink["github"] = {"owner": repo[0], "repo": repo[1], "sha": note["revision"], "pr": list(pulls)}
        minutes = float(self.settings.rollout_deadline_minutes)
        watch = Watch(key, targets, self.reporter.clock(), minutes * 60.0, sink)
        return await self.reporter.start(watch)

    async def close(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        if self.argocd is not None:
            self.argocd.close()


def build_router(settings: Any, reporter: RolloutReporter | None, github: Any = None) -> APIRouter:
    """``POST /webhooks/argocd`` and ``GET /v1/rollouts[/{key}]``; the reporter's lifespan with them."""
    hook = ArgoCDWebhook(settings, reporter, github)

    @asynccontextmanager
    async def lifespan(app: Any) -> AsyncIterator[None]:
        try:
            if reporter is None:
                yield
            else:
                async with reporter.lifespan(app):
                    yield
        finally:
            await hook.close()

    router = APIRouter(lifespan=lifespan)
    shown = reporter is not None  # in /openapi.json only when rollout reporting is on

    @router.post("/webhooks/argocd", status_code=202, tags=["rollout"], include_in_schema=shown)
    async def argocd_webhook(request: Request) -> Response:
        """Argo CD notification of a sync: the application's ray.io objects are followed as they roll out."""
        return await hook.handle(request)

    @router.get("/v1/rollouts", tags=["rollout"], include_in_schema=shown)
    async def list_rollouts(service: AuthorizedDep) -> JSONResponse:
        """The deployed changes this replica follows or followed, newest last."""
        if reporter is None:
            return _error(503, "not-configured", "rollout reporting is not configured (docs/rollout.md)")
        items = [watch_json(w, obs, full=False) for w, obs in reporter.latest.values()]
        return JSONResponse({"rollouts": items})

    @router.get("/v1/rollouts/{key:path}", tags=["rollout"], include_in_schema=shown)
    async def get_rollout(key: str, service: AuthorizedDep) -> JSONResponse:
        """One followed change: its newest observations."""
        if reporter is None:
            return _error(503, "not-configured", "rollout reporting is not configured (docs/rollout.md)")
        found = reporter.latest.get(key)
        if found is None:
            return _error(404, "not-found", f"no rollout {key[:300]!r} is known to this replica")
        return JSONResponse(watch_json(found[0], found[1], full=True))

    router.hook = hook  # type: ignore[attr-defined]
    return router
