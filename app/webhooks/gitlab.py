"""``POST /webhooks/gitlab``: GitLab webhook events in, judgements in the background.

The secret token (``X-Gitlab-Token``, the webhook's "Secret token"; GitLab sends it as it is,
user/project/integrations/webhooks.md "Validate payloads by using a secret token") is compared in
constant time before anything is parsed, logged or called: 401 otherwise. Then, by
``X-Gitlab-Event``:

* ``Merge Request Hook``: ``open``, ``reopen`` and an ``update`` that moved the source branch
  (``object_attributes.oldrev``) or changed the target branch are judged; ``close``/``merge``
  drop a queued run; other actions are answered 202 and nothing is called;
* ``Note Hook`` on a merge request: ``/rayservice-impact approve <reason>`` and ``rerun``
  (:mod:`app.gitlab.commands`);
* ``Push Hook`` to a branch: the open merge requests that target it are judged again (what runs
  now moved);
* anything else: 202, nothing called.

A redelivery (the same ``X-Gitlab-Event-UUID``, or ``Idempotency-Key`` which GitLab keeps across
retries of one event; webhooks.md "Delivery headers") runs once; a newer head supersedes an
older run (:class:`app.github.dispatch.Dispatcher`). Accepted events are answered 202 at once.
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

from app.clients.gitlab import GitLabClient, GitLabError, RetryPolicy
from app.forge.options import AnalysisOptions, Outcome
from app.github.change import PayloadError, PullRequest
from app.github.dispatch import Dispatcher, Lru
from app.gitlab.commands import Command, parse_command, run_command, status_ref
from app.gitlab.flow import run_merge_request
from app.gitlab.mr import job_from_api, job_from_hook, should_analyse, split_path
from app.workers import job_deadline, with_deadline

from .common import accepted, error, json_object, read_limited
from .github import live_enabled

log = logging.getLogger(__name__)

MERGE_REQUEST, NOTE, PUSH = "Merge Request Hook", "Note Hook", "Push Hook"


def is_valid_token(secret: bytes, header: str | None) -> bool:
    return bool(header) and hmac.compare_digest(secret, (header or "").encode())


class GitLabService:
    """Credentials, the shared HTTP client and the dispatcher of one server."""

    def __init__(self, settings: Any, *, transport: httpx.AsyncBaseTransport | None = None,
                 pool: Any = None) -> None:
        self.settings = settings
        self.secret = settings.gitlab_webhook_secret.get_secret_value().encode()
        self.max_body = int(getattr(settings, "max_body_bytes", 5 * 1024 * 1024))
        token = settings.gitlab_token.get_secret_value() if settings.gitlab_token else ""
        self.token = token or None
        if self.token is None:
            log.warning("gitlab: no RAYSERVICE_IMPACT_GITLAB_TOKEN; merge requests cannot be read or written")
        self.approve_level = int(settings.gitlab_approve_level)
        self.inline = str(settings.gitlab_inline)
        self.options = AnalysisOptions(
            kuberay_version=settings.kuberay_version, policy=settings.load_policy(),
            timeout=float(settings.analysis_timeout_seconds), live_enabled=live_enabled(settings),
            kubernetes_timeout=float(settings.kubernetes_timeout_seconds), render="auto",
            render_options=settings.render_options(),
            tarball_max_bytes=int(settings.render_tarball_max_bytes), pool=pool,
            approval_key=hashlib.sha256(b"rayservice-impact approvals\n" + self.secret).digest())
        self.retry = RetryPolicy(budget=float(settings.github_retry_budget_seconds))
        self.transport = transport
        self.gl: GitLabClient | None = None
        self.checks: dict[str, int | None] = {}   # project -> its rayservice-impact external status check
        self.job_deadline = job_deadline(settings)
        self.dispatcher = Dispatcher(with_deadline(self._run, self.job_deadline, self._timed_out),
                                     workers=int(settings.github_workers),
                                     max_pending=int(settings.github_max_pending))
        self._deliveries: Lru = Lru(10_000)   # event UUIDs / idempotency keys already taken
        self._notes_seen: Lru = Lru(10_000)

    @asynccontextmanager
    async def lifespan(self, app: FastAPI) -> AsyncIterator[None]:
        async with httpx.AsyncClient(transport=self.transport, timeout=httpx.Timeout(30.0)) as http:
            self.gl = GitLabClient(http, self.settings.gitlab_url, self.token, retry=self.retry)
            await self.dispatcher.start()
            try:
                yield
            finally:
                await self.dispatcher.stop()
                self.gl = None

    async def _run(self, job: PullRequest, is_current: Any) -> Outcome:
        assert self.gl is not None
        return await run_merge_request(self.gl, job, self.options, approve_level=self.approve_level,
                                       checks=self.checks, inline=self.inline, is_current=is_current)

    async def _timed_out(self, job: PullRequest, is_current: Any) -> Outcome:
        """A job past its deadline: a failed status saying so (no verdict was reached)."""
        message = f"analysis timed out after {self.job_deadline:g} s"
        log.error("gitlab %s/%s!%d head %s: %s", job.owner, job.repo, job.number, job.head_sha[:7], message)
        if not is_current() or self.gl is None or not job.head_sha:
            return Outcome("superseded" if not is_current() else "failed")
        project = f"{job.owner}/{job.repo}"
        try:
            mr = await self.gl.merge_request(project, job.number)
            await self.gl.set_status(project, job.head_sha, "failed", f"could not analyse: {message}",
                                     target_url=str(mr.get("web_url") or ""), ref=status_ref(mr))
        except GitLabError as exc:
            log.error("gitlab: status not posted: %s", exc)
        return Outcome("error", message)

    async def _run_command(self, cmd: Command) -> Outcome:
        assert self.gl is not None
        return await run_command(self.gl, cmd, key=self.options.approval_key,
                                 approve_level=self.approve_level, checks=self.checks,
                                 submit=lambda job: self.dispatcher.submit(job, force=True))

    async def _run_push(self, project: str, branch: str, after: str, repo_url: str) -> Outcome:
        assert self.gl is not None
        try:
            mrs = [mr async for mr in self.gl.merge_requests(project, target_branch=branch)]
        except GitLabError as exc:
            log.error("gitlab %s: cannot list the merge requests into %s: %s", project, branch, exc)
            return Outcome("failed", retryable=True)
        results = [self.dispatcher.submit(job_from_api(project, mr, base_sha=after, repo_url=repo_url))
                   for mr in mrs if mr.get("sha")]
        log.info("gitlab %s: push to %s: %d open merge request(s) judged again", project, branch,
                 len(results))
        return Outcome("queued", f"{len(results)} merge requests")

    # -- the route --------------------------------------------------------------------------------
    async def handle(self, request: Request) -> Response:
        body = await read_limited(request, self.max_body)
        if body is None:
            return error(413, "body-too-large", f"the body is over {self.max_body} bytes")
        if not is_valid_token(self.secret, request.headers.get("x-gitlab-token")):
            return error(401, "invalid-token", "missing or wrong X-Gitlab-Token")
        event = request.headers.get("x-gitlab-event", "")
        if not event:
            return error(400, "missing-event", "no X-Gitlab-Event header")
        payload = json_object(body)
        if isinstance(payload, JSONResponse):
            return payload
        delivery = request.headers.get("idempotency-key") or request.headers.get("x-gitlab-event-uuid") or ""
        delivery = delivery[:128]
        if delivery and delivery in self._deliveries:
            return JSONResponse({"status": "duplicate", "delivery": delivery[:64]}, status_code=202)
        if event == MERGE_REQUEST:
            answer = self._merge_request(payload, delivery)
        elif event == NOTE:
            answer = self._note(payload, delivery)
        elif event == PUSH:
            answer = self._push(payload, delivery)
        else:
            return JSONResponse({"status": "ignored", "reason": f"event {event[:64]!r} is not handled"},
                                status_code=202)
        if answer.status_code == 202 and delivery:
            self._deliveries.put(delivery, True)
        return answer

    def _merge_request(self, payload: dict[str, Any], delivery: str) -> Response:
        judge, why = should_analyse(payload)
        try:
            job = job_from_hook(payload)
        except PayloadError as exc:
            return error(400, "invalid-payload", str(exc))
        if not judge:
            if (payload.get("object_attributes") or {}).get("action") in ("close", "merge"):
                self.dispatcher.forget(job)
            return JSONResponse({"status": "ignored", "reason": why}, status_code=202)
        result = self.dispatcher.submit(job)
        log.info("gitlab delivery %s: merge request %s/%s!%d head %s -> %s", delivery[:64], job.owner,
                 job.repo, job.number, job.head_sha[:7], result)
        return accepted(result, delivery, "merge requests")

    def _note(self, payload: dict[str, Any], delivery: str) -> Response:
        cmd, why = parse_command(payload)
        if cmd is None:
            return JSONResponse({"status": "ignored", "reason": why}, status_code=202)
        if cmd.note_id in self._notes_seen:
            return JSONResponse({"status": "duplicate", "delivery": delivery[:64]}, status_code=202)
        label = f"note {cmd.note_id}: {cmd.verb} by @{cmd.user}"
        result = self.dispatcher.submit_command(cmd.job.key, label, lambda: self._run_command(cmd))
        if result != "busy":
            self._notes_seen.put(cmd.note_id, True)
        return accepted(result, delivery, "merge requests")

    def _push(self, payload: dict[str, Any], delivery: str) -> Response:
        ref, after = str(payload.get("ref") or ""), str(payload.get("after") or "")
        project = payload.get("project") if isinstance(payload.get("project"), dict) else {}
        path = str((project or {}).get("path_with_namespace") or "")
        if not ref.startswith("refs/heads/") or not path:
            return JSONResponse({"status": "ignored", "reason": "not a push to a branch"}, status_code=202)
        if set(after) == {"0"}:
            return JSONResponse({"status": "ignored", "reason": "a deleted branch"}, status_code=202)
        try:
            owner, name = split_path(path)
        except PayloadError as exc:
            return error(400, "invalid-payload", str(exc))
        branch = ref.removeprefix("refs/heads/")
        repo_url = str((project or {}).get("git_http_url") or "")
        key = (owner.lower(), name.lower(), f"push:{branch}:{after}")
        result = self.dispatcher.submit_command(key, f"push {after[:12]} to {branch}",
                                                lambda: self._run_push(path, branch, after, repo_url))
        return accepted(result, delivery, "jobs")


def build_router(settings: Any, **kwargs: Any) -> APIRouter | None:
    """The /webhooks/gitlab router, or None when RAYSERVICE_IMPACT_GITLAB_WEBHOOK_SECRET is unset (no
    webhook without a secret, ever)."""
    secret = getattr(settings, "gitlab_webhook_secret", None)
    if secret is None or not secret.get_secret_value():
        return None
    service = GitLabService(settings, transport=kwargs.get("transport"), pool=kwargs.get("pool"))
    router = APIRouter(lifespan=service.lifespan)

    @router.post("/webhooks/gitlab", include_in_schema=True, status_code=202, tags=["gitlab"])
    async def gitlab_webhook(request: Request) -> Response:
        """GitLab webhook: merge request, note and push events with the secret token."""
        return await service.handle(request)

    router.service = service  # type: ignore[attr-defined]
    return router


__all__ = ["GitLabService", "build_router"]
