"""``POST /webhooks/github``: signed events in, analysis in the background.

``pull_request`` events are analysed (what the merge would change), ``merge_group``
``checks_requested`` events too (a merge queue's group: status on its head SHA, no comment), and
``issue_comment`` commands on pull requests (``/rayservice-impact approve <reason>`` and
``/rayservice-impact rerun``, :mod:`app.github.commands`) are carried out, and a ``push`` to a
repository's default branch (a merged pull request) is analysed and followed as it rolls out
(:mod:`app.github.push`, :mod:`app.rollout.report`; docs/rollout.md) when rollout reporting is on.

The signature (``X-Hub-Signature-256``, HMAC-SHA256 of the raw body) is checked before
anything else; nothing is parsed, logged or called for a request that fails it. Accepted
events are answered 202 at once and handed to :class:`app.github.dispatch.Dispatcher`.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
from fastapi import APIRouter, FastAPI, Request, Response
from fastapi.responses import JSONResponse

from app.clients.argocd import ArgoCDClient
from app.clients.github import AppAuth, GitHubClient, GitHubError, RetryPolicy, static_token
from app.github.change import PayloadError, PullRequest
from app.github.commands import Command, parse_command, run_command
from app.github.comment import verdict_for_error
from app.github.dispatch import Dispatcher, Lru
from app.github.flow import AnalysisOptions, Outcome, publish_verdict, run_pull_request
from app.github.push import Push, analyse_push, merged_pulls, targets_of, why_not_followed
from app.github.repo_config import ALWAYS, read_config
from app.github.rollout import GitHubRolloutSink
from app.live import kubernetes_configured
from app.rollout.model import Watch
from app.rollout.report import LogSink, RolloutReporter, Sink
from app.workers import job_deadline, with_deadline

from .common import accepted, error, json_object, read_limited


def live_enabled(settings: Any) -> bool:
    """The live basis is used when the service can reach Kubernetes and it is not switched off."""
    return getattr(settings, "live_basis", "off") == "auto" and kubernetes_configured()

log = logging.getLogger(__name__)


def argocd_renderer(settings: Any) -> ArgoCDClient | None:
    """The Argo CD client that renders pull requests, when rendering is on and both
    RAYSERVICE_IMPACT_ARGOCD_SERVER and _ARGOCD_TOKEN are set; else None (tarballs)."""
    server, token = getattr(settings, "argocd_server", None), getattr(settings, "argocd_token", None)
    if getattr(settings, "render", "none") == "none" or not server or token is None:
        return None
    secret = token.get_secret_value()
    if not secret:
        return None
    verify: bool | str = str(settings.argocd_ca_file) if settings.argocd_ca_file else True
    if settings.argocd_insecure:
        verify = False
    log.info("github: pull requests are rendered by Argo CD at %s", server)
    return ArgoCDClient(server, secret, timeout=float(settings.argocd_timeout_seconds),
                        retries=int(settings.argocd_retries), verify=verify)


ROLLOUT_OFF = ("rollout reporting is not configured (the rollout watch has no Kubernetes access; "
               "docs/rollout.md)")
ANALYSED_ACTIONS = frozenset({"opened", "synchronize", "reopened", "ready_for_review"})


def signature_for(secret: bytes, body: bytes) -> str:
    return "sha256=" + hmac.new(secret, body, hashlib.sha256).hexdigest()


def is_valid_signature(secret: bytes, body: bytes, header: str | None) -> bool:
    if not header:
        return False
    return hmac.compare_digest(signature_for(secret, body).encode(), header.strip().encode())


def should_analyse(event: str, payload: dict[str, Any]) -> tuple[bool, str]:
    """(analyse?, why not) for one delivery."""
    action = payload.get("action")
    if event == "merge_group":
        # GitHub sends merge_group with action checks_requested when a merge queue builds a group
        # whose required checks must report on merge_group.head_sha.
        if action == "checks_requested":
            return True, ""
        return False, f"merge_group action {action!r} is not analysed"
    if event != "pull_request":
        return False, f"event {event!r} is not analysed"
    if action in ANALYSED_ACTIONS:
        return True, ""
    if action == "edited" and isinstance(payload.get("changes"), dict) and "base" in payload["changes"]:
        return True, ""
    return False, f"pull_request action {action!r} is not analysed"


# Tuning knobs, overridable as RAYSERVICE_IMPACT_<NAME> once Settings declares them.
TUNING = {"analysis_timeout_seconds": 10.0, "github_workers": 4, "github_max_pending": 1000,
          "github_retry_budget_seconds": 120.0, "github_write_interval_seconds": 1.0,
          "kubernetes_timeout_seconds": 10.0}


def _tuning(settings: Any, name: str) -> Any:
    value = getattr(settings, name, None)
    return TUNING[name] if value is None else value


class GitHubService:
    """Credentials, the shared HTTP client and the dispatcher of one server."""

    def __init__(self, settings: Any, *, transport: httpx.AsyncBaseTransport | None = None,
                 pool: Any = None, reporter: RolloutReporter | None = None) -> None:
        self.settings = settings
        self.reporter = reporter  # None: rollout reporting is not configured
        self.secret = settings.github_webhook_secret.get_secret_value().encode()
        # GitHub caps webhook payloads at 25 MB (docs: webhook events and payloads).
        self.max_body = max(int(getattr(settings, "max_body_bytes", 5 * 1024 * 1024)), 25 * 1024 * 1024)
        self.options = AnalysisOptions(
            kuberay_version=settings.kuberay_version, policy=settings.load_policy(),
            timeout=float(_tuning(settings, "analysis_timeout_seconds")), live_enabled=live_enabled(settings),
            kubernetes_timeout=float(_tuning(settings, "kubernetes_timeout_seconds")),
            render=str(getattr(settings, "render", "none")),
            render_options=settings.render_options(),
            tarball_max_bytes=int(settings.render_tarball_max_bytes), pool=pool,
            approval_key=hashlib.sha256(b"rayservice-impact approvals\n" + self.secret).digest())
        self.retry = RetryPolicy(budget=float(_tuning(settings, "github_retry_budget_seconds")),
                                 write_interval=float(_tuning(settings, "github_write_interval_seconds")))
        self.app_auth: AppAuth | None = None
        if settings.github_app_id and settings.github_app_private_key_file:
            self.app_auth = AppAuth.from_file(settings.github_app_id, settings.github_app_private_key_file)
        self.token = settings.github_token.get_secret_value() if settings.github_token else None
        if self.app_auth is None and self.token is None:
            log.warning("github: no RAYSERVICE_IMPACT_GITHUB_TOKEN or App credentials; "
                        "pull requests will be analysed but nothing can be posted")
        self.transport = transport
        self.gh: GitHubClient | None = None
        self.argocd: ArgoCDClient | None = None
        # Every pull-request job runs under one overall deadline, then ends in an error status.
        self.job_deadline = job_deadline(settings)
        self.dispatcher = Dispatcher(with_deadline(self._run, self.job_deadline, self._timed_out),
                                     workers=int(_tuning(settings, "github_workers")),
                                     max_pending=int(_tuning(settings, "github_max_pending")))
        self._comments_seen: Lru = Lru(10_000)  # comment ids whose command was taken (redeliveries)
        self._token_login = ""                   # the token's user (GET /user), asked once

    @asynccontextmanager
    async def lifespan(self, app: FastAPI) -> AsyncIterator[None]:
        async with httpx.AsyncClient(transport=self.transport, timeout=httpx.Timeout(30.0),
                                     follow_redirects=True) as http:
            self.gh = GitHubClient(http, self.settings.github_api_url, None, retry=self.retry)
            self.argocd = argocd_renderer(self.settings)
            await self.dispatcher.start()
            try:
                yield
            finally:
                await self.dispatcher.stop()
                self.gh = None
                if self.argocd is not None:
                    self.argocd.close()
                    self.argocd = None

    async def _run(self, pr: PullRequest, is_current: Any) -> Outcome:
        assert self.gh is not None
        try:
            gh = await self._client_for(pr)
        except GitHubError as exc:
            log.error("github %s: cannot authenticate as the App installation: %s", pr.full_name, exc)
            return Outcome("failed", retryable=True)
        return await run_pull_request(gh, pr, self.options, check_run=self.app_auth is not None,
                                      is_current=is_current, argocd=self.argocd)

    async def _timed_out(self, pr: PullRequest, is_current: Any) -> Outcome:
        """The error verdict of a job past its deadline, published as every verdict is (comment,
        status, check run); not for a head a newer push superseded meanwhile. The job itself was
        cancelled at its next await; a render already running in its thread ends within its own
        per-render limits."""
        message = f"analysis timed out after {self.job_deadline:g} s"
        log.error("github %s head %s: %s", pr.full_name, pr.head_sha[:7], message)
        if not is_current():
            return Outcome("superseded")
        try:
            gh = await self._client_for(pr)
        except GitHubError as exc:
            log.error("github %s: cannot authenticate as the App installation: %s", pr.full_name, exc)
            return Outcome("failed", retryable=True)
        return await publish_verdict(gh, pr, verdict_for_error(message), check_run=self.app_auth is not None,
                                     is_current=is_current, approval_key=self.options.approval_key)

    async def _run_command(self, cmd: Command) -> Outcome:
        try:
            gh = await self._client_for(cmd.pr)
        except GitHubError as exc:
            log.error("github %s: cannot authenticate as the App installation: %s", cmd.pr.full_name, exc)
            return Outcome("failed", retryable=True)
        return await run_command(gh, cmd, key=self.options.approval_key, check_run=self.app_auth is not None,
                                 submit=lambda pr: self.dispatcher.submit(pr, force=True))

    def _command(self, payload: dict[str, Any], delivery: str) -> Response:
        cmd, why = parse_command(payload)
        if cmd is None:
            return JSONResponse({"status": "ignored", "reason": why}, status_code=202)
        if cmd.comment_id in self._comments_seen:
            return JSONResponse({"status": "duplicate", "delivery": delivery[:64]}, status_code=202)
        label = f"comment {cmd.comment_id}: {cmd.verb} by @{cmd.user}"
        result = self.dispatcher.submit_command(cmd.pr.key, label, lambda: self._run_command(cmd))
        log.info("github delivery %s: issue_comment %s on %s -> %s", delivery[:64], cmd.verb,
                 cmd.pr.full_name, result)
        if result != "busy":
            self._comments_seen.put(cmd.comment_id, True)
        return accepted(result, delivery, "pull requests")

    # -- rollout reporting (issue 22) ----------------------------------------------------------
    @property
    def can_write(self) -> bool:
        """Whether the service has GitHub credentials to write with."""
        return self.app_auth is not None or self.token is not None

    def rollout_sink(self, watch: Watch) -> Sink:
        """Where a watch reports: GitHub when its sink names a repository, else the logs."""
        if "github" in watch.sink and self.gh is not None:
            return GitHubRolloutSink(watch, self.repo_client, check_run=self.app_auth is not None)
        return LogSink()

    async def repo_client(self, owner: str, repo: str) -> GitHubClient:
        return await self._client_for(PullRequest(owner, repo, 0, "", ""))

    def _push(self, payload: dict[str, Any], delivery: str) -> Response:
        if self.reporter is None:
            return JSONResponse({"status": "ignored", "reason": ROLLOUT_OFF}, status_code=202)
        try:
            push = Push.from_payload(payload)
        except PayloadError as exc:
            return error(400, "invalid-payload", str(exc))
        why = why_not_followed(payload, push)
        if why:
            return JSONResponse({"status": "ignored", "reason": why}, status_code=202)
        label = f"push {push.after[:12]} to {push.branch}"
        result = self.dispatcher.submit_command((push.owner.lower(), push.repo.lower(), f"push:{push.after}"),
                                                label, lambda: self._run_push(push))
        log.info("github delivery %s: push %s/%s %s..%s -> %s", delivery[:64], push.owner, push.repo,
                 push.before[:7], push.after[:7], result)
        return accepted(result, delivery, "jobs")

    async def _run_push(self, push: Push) -> Outcome:
        """Analyse the pushed change and start following it (nothing when no ray.io object moves)."""
        assert self.reporter is not None
        try:
            gh = await self._client_for(push.as_pull())
            pulls = await merged_pulls(gh, push)
            report = await analyse_push(gh, push, self.options, self.argocd)
            config = await read_config(gh, push.owner, push.repo, push.after)
        except GitHubError as exc:
            log.error("github %s/%s push %s: cannot read the change: %s", push.owner, push.repo,
                      push.after[:7], exc)
            return Outcome("failed", retryable=True)
        except Exception as exc:  # noqa: BLE001 - a render or analysis failure: nothing to follow
            log.error("github %s/%s push %s: cannot analyse it (%s: %s); not followed", push.owner, push.repo,
                      push.after[:7], type(exc).__name__, exc)
            return Outcome("failed")
        targets = targets_of(report) if report is not None else ()
        if not targets:
            log.info("github %s/%s push %s: no RayService, RayCluster or RayJob to follow", push.owner,
                     push.repo, push.after[:7])
            return Outcome("nothing-to-follow")
        minutes = config.rollout_deadline_minutes or float(self.settings.rollout_deadline_minutes)
        watch = Watch(push.key, targets, self.reporter.clock(), minutes * 60.0,
                      {"github": {"owner": push.owner, "repo": push.repo, "sha": push.after,
                                  "pr": list(pulls), "create_comment": config.comment == ALWAYS}})
        result = await self.reporter.start(watch)
        log.info("github %s/%s push %s: %d objects, pull requests %s: %s", push.owner, push.repo,
                 push.after[:7], len(targets), list(pulls) or "none", result)
        return Outcome(result)

    async def _client_for(self, pr: PullRequest) -> GitHubClient:
        """A client with this pull request's credentials, knowing who they write as (only the
        comments that identity wrote are ours: :mod:`app.github.own`)."""
        assert self.gh is not None
        gh = self.gh
        if self.app_auth is not None:
            auth = self.app_auth
            installation = pr.installation_id or await auth.installation_id(gh, pr.owner, pr.repo)
            return gh.with_token(auth.installation_token(gh, installation),
                                 login=lambda: auth.bot_login(gh, installation))
        return gh.with_token(static_token(self.token) if self.token else None, login=self._own_token_login)

    async def _own_token_login(self) -> str:
        """The token's user (``GET /user``): never a guess, so a failure leaves nothing ours."""
        if not self._token_login:
            assert self.gh is not None
            self._token_login = await self.gh.with_token(
                static_token(self.token) if self.token else None).authenticated_login()
        return self._token_login

    async def handle(self, request: Request) -> Response:
        body = await read_limited(request, self.max_body)
        if body is None:
            return error(413, "body-too-large", f"the body is over {self.max_body} bytes")
        if not is_valid_signature(self.secret, body, request.headers.get("x-hub-signature-256")):
            return error(401, "invalid-signature", "missing or wrong X-Hub-Signature-256")
        event = request.headers.get("x-github-event", "")
        delivery = request.headers.get("x-github-delivery", "")
        if event == "ping":
            return JSONResponse({"status": "pong"}, status_code=200)
        if not event:
            return error(400, "missing-event", "no X-GitHub-Event header")
        payload = json_object(body)
        if isinstance(payload, JSONResponse):
            return payload
        if event == "issue_comment":
            return self._command(payload, delivery)
        if event == "push":
            return self._push(payload, delivery)
        analyse, why = should_analyse(event, payload)
        if not analyse:
            if event == "pull_request" and payload.get("action") == "closed":
                try:
                    self.dispatcher.forget(PullRequest.from_payload(payload))
                except PayloadError:
                    pass
            return JSONResponse({"status": "ignored", "reason": why}, status_code=202)
        try:
            if event == "merge_group":
                pr = PullRequest.from_merge_group(payload)
            else:
                pr = PullRequest.from_payload(payload)
        except PayloadError as exc:
            return error(400, "invalid-payload", str(exc))
        result = self.dispatcher.submit(pr)
        log.info("github delivery %s: %s %s %s head %s -> %s", delivery[:64], event, payload.get("action"),
                 pr.full_name, pr.head_sha[:7], result)
        return accepted(result, delivery, "pull requests")


def build_router(settings: Any, **kwargs: Any) -> APIRouter | None:
    """The /webhooks/github router, or None when RAYSERVICE_IMPACT_GITHUB_WEBHOOK_SECRET is unset
    (the contract: no unsigned webhooks, ever). ``transport`` may be passed for tests; ``pool``
    is the service's analysis pool, where the pull requests' analyses then run."""
    secret = getattr(settings, "github_webhook_secret", None)
    if secret is None or not secret.get_secret_value():
        log.info("github: RAYSERVICE_IMPACT_GITHUB_WEBHOOK_SECRET is unset; /webhooks/github is disabled")
        return None
    reporter = kwargs.get("reporter")
    service = GitHubService(settings, transport=kwargs.get("transport"), pool=kwargs.get("pool"),
                            reporter=reporter)
    if reporter is not None:
        reporter.sink_factory = service.rollout_sink
    router = APIRouter(lifespan=service.lifespan)

    @router.post("/webhooks/github", include_in_schema=True, status_code=202, tags=["github"])
    async def github_webhook(request: Request) -> Response:
        """GitHub webhook: signed pull_request and merge_group events are analysed in the background;
        issue_comment commands (/rayservice-impact approve, rerun) are carried out."""
        return await service.handle(request)

    router.service = service  # type: ignore[attr-defined]
    return router
