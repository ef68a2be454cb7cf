"""An async GitLab REST (v4) client: the endpoints the merge request flow needs, with retries.

Errors (``UpstreamError`` family via :class:`app.clients.rest.ForgeError`)::

    GitLabError                 any answer we cannot use (method, path, status; never the token)
    ├── GitLabNotFound          404 (the object does not exist or the token may not see it)
    ├── GitLabUncertain         a write whose outcome is unknown (5xx or no answer after sending)
    ├── GitLabRetryExhausted    5xx / 429 / transport errors past the retry budget
    └── ArchiveTooLarge         a revision's archive is over the download cap

Authentication is the ``PRIVATE-TOKEN`` header, which personal, project and group access tokens
all use (GitLab docs: api/rest/authentication.md, "Personal/project/group access tokens").
The API lives under ``{base_url}/api/v4`` (base URL ``https://gitlab.com`` or a self-managed
instance, which may sit under a relative path). A project is named by its numeric id or its
URL-encoded ``namespace/path`` (docs: api/rest/_index.md, "Namespaced paths").

Retries: 5xx and transport errors back off exponentially; 429 waits for ``Retry-After`` or
``RateLimit-Reset`` (docs: user/gitlab_com/index.md#rate-limits-on-gitlabcom, the
``RateLimit-*`` headers). All waits come out of one budget per call. Lists follow ``Link:
rel="next"`` (keyset and offset pagination both send it; docs: api/rest/_index.md#pagination),
else ``X-Next-Page``.
"""

from __future__ import annotations

import asyncio
import json as jsonlib
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import httpx

from .rest import BackoffPolicy, ForgeError, discard, post_once, read_capped

log = logging.getLogger(__name__)

STATUS_NAME = "rayservice-impact"
MAX_JSON_BYTES = 32 * 1024 * 1024  # one JSON answer (a page of diffs can be large)
USER_AGENT = "rayservice-impact"
# GitLab's commit status states (docs: api/commits.md#set-the-pipeline-status-of-a-commit).
STATES = frozenset({"pending", "running", "success", "failed", "canceled"})


class GitLabError(ForgeError):
    """GitLab answered something we cannot use."""

    service = "gitlab"
    host = "GitLab"


class GitLabNotFound(GitLabError):
    """404."""


class GitLabUncertain(GitLabError):
    """A write whose outcome is unknown (5xx, no answer): it may have been done."""


class GitLabRetryExhausted(GitLabError):
    """The retry budget ran out."""


class ArchiveTooLarge(GitLabError):
    def __init__(self, path: str, limit: int) -> None:
        super().__init__("GET", path, None, f"the archive is larger than {limit} bytes "
                                            "(RAYSERVICE_IMPACT_RENDER_TARBALL_MAX_BYTES)")
        self.limit = limit


@dataclass(frozen=True, slots=True)
class RetryPolicy(BackoffPolicy):
    """:class:`BackoffPolicy` with 6 attempts, and the wait for a 429 without a hint."""

    max_attempts: int = 6
    rate_limit_wait: float = 60.0  # a 429 without a hint


def project_id(project: int | str) -> str:
    """A path segment for ``:id``: the number as it is, a ``namespace/path`` URL-encoded."""
    text = str(project)
    return text if text.isdigit() else quote(text, safe="")


def _at(project: int | str) -> str:
    return f"/projects/{project_id(project)}"


class GitLabClient:
    """Calls ``{base_url}/api/v4`` on a shared ``httpx.AsyncClient`` with ``PRIVATE-TOKEN``."""

    def __init__(self, http: httpx.AsyncClient, base_url: str, token: str | None, *,
                 retry: RetryPolicy | None = None, sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
                 clock: Callable[[], float] = time.time) -> None:
        self.http, self.token = http, token
        self.api = base_url.rstrip("/") + "/api/v4"
        self.retry = retry or RetryPolicy()
        self._sleep, self._clock = sleep, clock
        self._user: dict[str, Any] | None = None

    # -- transport ------------------------------------------------------------------------------
    async def request(self, method: str, path: str, *, params: Any = None, json: Any = None,
                      stream: bool = False, idempotent: bool = True) -> httpx.Response:
        """One call with the retry policy; ``path`` is under ``/api/v4`` (or a full URL of it, from
        a ``Link`` header). ``idempotent`` False: a 5xx or lost answer raises GitLabUncertain."""
        url = path if path.startswith(("http://", "https://")) else self.api + path
        if not url.startswith(self.api):
            raise GitLabError(method, httpx.URL(url).path, None, "a link outside this API refused")
        shown = httpx.URL(url).path
        spent, attempt = 0.0, 0
        while True:
            attempt += 1
            headers = {"User-Agent": USER_AGENT, "Accept": "application/json"}
            if self.token:
                headers["PRIVATE-TOKEN"] = self.token
            try:
                req = self.http.build_request(method, url, params=params, json=json, headers=headers)
                resp = await self.http.send(req, stream=stream, follow_redirects=False)
            except httpx.TransportError as exc:
                if not idempotent:
                    raise GitLabUncertain(method, shown, None, type(exc).__name__) from None
                wait, why, status = self._backoff(attempt), type(exc).__name__, None
            else:
                if resp.status_code < 400:
                    return resp
                if stream:
                    await discard(resp)
                status = resp.status_code
                if status >= 500 and not idempotent:
                    raise GitLabUncertain(method, shown, status, _message(resp))
                found = self._wait_for(resp, attempt)
                if found is None:
                    cls = GitLabNotFound if status == 404 else GitLabError
                    raise cls(method, shown, status, _message(resp))
                wait, why = found
            if self.retry.exhausted(attempt, spent, wait):
                raise GitLabRetryExhausted(method, shown, status, f"gave up after {attempt} attempts ({why})")
            log.warning("gitlab %s %s: %s; retrying in %.1fs", method, shown, why, wait)
            spent += wait
            await self._sleep(wait)

    def _backoff(self, attempt: int) -> float:
        return self.retry.backoff_wait(attempt)

    def _wait_for(self, resp: httpx.Response, attempt: int) -> tuple[float, str] | None:
        status, h = resp.status_code, resp.headers
        if status >= 500:
            return self._backoff(attempt), f"HTTP {status}"
        if status != 429:
            return None
        if h.get("retry-after", "").strip().isdigit():
            return float(h["retry-after"]), f"rate limited (retry-after {h['retry-after']})"
        reset = h.get("ratelimit-reset", "").strip()
        if reset.isdigit():  # a Unix time
            return max(0.0, float(reset) - self._clock()) + 1.0, "rate limited (RateLimit-Reset)"
        return max(self.retry.rate_limit_wait, self._backoff(attempt)), "rate limited"

    async def get_json(self, path: str, params: Any = None) -> Any:
        resp = await self.request("GET", path, params=params, stream=True)
        try:
            data = await read_capped(resp, httpx.URL(str(resp.request.url)).path, MAX_JSON_BYTES, _too_long,
                                     GitLabError)
        finally:
            await resp.aclose()
        try:
            return jsonlib.loads(data)
        except ValueError:
            raise GitLabError("GET", path, resp.status_code, "the answer is not JSON") from None

    async def paginate(self, path: str, params: dict[str, Any] | None = None) -> AsyncIterator[Any]:
        """Every item of a list endpoint, following ``Link: rel="next"``, else ``X-Next-Page``."""
        query: dict[str, Any] | None = {"per_page": 100, **(params or {})}
        url: str | None = path
        while url:
            resp = await self.request("GET", url, params=query)
            items = resp.json()
            if not isinstance(items, list):
                raise GitLabError("GET", path, resp.status_code, "expected a list")
            for item in items:
                yield item
            link = resp.links.get("next", {}).get("url")
            if link:
                url, query = link, None
            elif resp.headers.get("x-next-page", "").strip().isdigit():
                query = {**(query or {"per_page": 100, **(params or {})}),
                         "page": int(resp.headers["x-next-page"])}
            else:
                url = None

    # -- endpoints (docs: api/merge_requests.md, api/repositories.md, api/commits.md, api/notes.md,
    #    api/status_checks.md, api/members.md, api/users.md, api/discussions.md) ---------------------
    async def user(self) -> dict[str, Any]:
        """``GET /user``: the token's own user (a project or group token's is its bot user)."""
        if self._user is None:
            self._user = dict(await self.get_json("/user"))
        return self._user

    async def merge_request(self, project: int | str, iid: int) -> dict[str, Any]:
        return dict(await self.get_json(f"{_at(project)}/merge_requests/{int(iid)}"))

    def merge_requests(self, project: int | str, *, target_branch: str,
                       state: str = "opened") -> AsyncIterator[dict[str, Any]]:
        return self.paginate(f"{_at(project)}/merge_requests",
                             {"state": state, "target_branch": target_branch})

    def merge_request_diffs(self, project: int | str, iid: int) -> AsyncIterator[dict[str, Any]]:
        """``GET .../merge_requests/:iid/diffs`` (GitLab 15.7+; paginated)."""
        return self.paginate(f"{_at(project)}/merge_requests/{int(iid)}/diffs")

    async def commit(self, project: int | str, ref: str) -> dict[str, Any]:
        """``GET repository/commits/:sha``; a ref is URL-encoded (``refs%2Fmerge-requests%2F1%2Fmerge``)."""
        return dict(await self.get_json(f"{_at(project)}/repository/commits/{quote(ref, safe='')}"))

    async def branch(self, project: int | str, name: str) -> dict[str, Any]:
        return dict(await self.get_json(f"{_at(project)}/repository/branches/{quote(name, safe='')}"))

    async def merge_base(self, project: int | str, *refs: str) -> str:
        data = await self.get_json(f"{_at(project)}/repository/merge_base",
                                   [("refs[]", r) for r in refs])
        return str(data["id"])

    async def compare(self, project: int | str, base: str, head: str, *,
                      straight: bool = True) -> dict[str, Any]:
        """``GET repository/compare``: ``straight=true`` is ``base..head`` (a direct diff), false
        ``base...head`` (from the merge base)."""
        return dict(await self.get_json(f"{_at(project)}/repository/compare",
                                        {"from": base, "to": head,
                                         "straight": "true" if straight else "false"}))

    async def archive(self, project: int | str, sha: str, max_bytes: int) -> bytes:
        """``GET repository/archive.tar.gz?sha=``, read up to ``max_bytes`` (else ArchiveTooLarge)."""
        path = f"{_at(project)}/repository/archive.tar.gz"
        resp = await self.request("GET", path, params={"sha": sha}, stream=True)
        try:
            return await read_capped(resp, path, max_bytes, ArchiveTooLarge, GitLabError)
        finally:
            await resp.aclose()

    def notes(self, project: int | str, iid: int) -> AsyncIterator[dict[str, Any]]:
        return self.paginate(f"{_at(project)}/merge_requests/{int(iid)}/notes",
                             {"sort": "asc", "order_by": "created_at"})

    async def create_note(self, project: int | str, iid: int, body: str, *,
                          find: Callable[[], Awaitable[dict[str, Any] | None]] | None = None
                          ) -> dict[str, Any]:
        """POST a note. Not idempotent: after a 5xx or a lost answer ``find()`` looks for it first
        and edits it when it was stored, so there are never two."""
        path = f"{_at(project)}/merge_requests/{int(iid)}/notes"

        async def post() -> dict[str, Any]:
            return dict((await self.request("POST", path, json={"body": body}, idempotent=False)).json())

        async def edit(found: dict[str, Any]) -> dict[str, Any]:
            return await self.update_note(project, iid, int(found["id"]), body)

        return await post_once(post, find, edit, uncertain=GitLabUncertain, policy=self.retry,
                               sleep=self._sleep, log=log, label=f"gitlab POST {path}", noun="note")

    async def update_note(self, project: int | str, iid: int, note_id: int, body: str) -> dict[str, Any]:
        path = f"{_at(project)}/merge_requests/{int(iid)}/notes/{int(note_id)}"
        return dict((await self.request("PUT", path, json={"body": body})).json())

    # -- merge request threads (docs: api/discussions.md, "Merge requests") ------------------------
    def discussions(self, project: int | str, iid: int) -> AsyncIterator[dict[str, Any]]:
        """``GET .../merge_requests/:iid/discussions`` (paginated): every thread, its ``notes``
        (the first one opens it; a diff note has ``type: DiffNote`` and a ``position``)."""
        return self.paginate(f"{_at(project)}/merge_requests/{int(iid)}/discussions")

    async def create_discussion(self, project: int | str, iid: int, body: str,
                                position: dict[str, Any] | None = None, *,
                                find: Callable[[], Awaitable[dict[str, Any] | None]] | None = None
                                ) -> dict[str, Any]:
        """``POST .../merge_requests/:iid/discussions``: a new thread, on a diff line when
        ``position`` is given (``position_type: text``, the three SHAs of the merge request's
        ``diff_refs``, ``new_path``/``new_line``, ``old_path``/``old_line``). GitLab answers 400
        for a position that is not a line of the diff (a :class:`GitLabError`, never retried).
        Not idempotent: after a 5xx or a lost answer ``find()`` looks for the thread first, so
        there are never two (:func:`app.clients.rest.post_once`)."""
        path = f"{_at(project)}/merge_requests/{int(iid)}/discussions"
        payload: dict[str, Any] = {"body": body}
        if position is not None:
            payload["position"] = position

        async def post() -> dict[str, Any]:
            return dict((await self.request("POST", path, json=payload, idempotent=False)).json())

        async def stored(found: dict[str, Any]) -> dict[str, Any]:
            return found

        return await post_once(post, find, stored, uncertain=GitLabUncertain, policy=self.retry,
                               sleep=self._sleep, log=log, label=f"gitlab POST {path}", noun="thread",
                               kept="keeping")

    async def resolve_discussion(self, project: int | str, iid: int, discussion_id: str,
                                 resolved: bool = True) -> dict[str, Any]:
        """``PUT .../discussions/:discussion_id?resolved=true|false``: resolve or reopen a thread
        (the same call twice gives the same thread: idempotent)."""
        path = f"{_at(project)}/merge_requests/{int(iid)}/discussions/{quote(str(discussion_id), safe='')}"
        answer = await self.request("PUT", path, params={"resolved": "true" if resolved else "false"})
        return dict(answer.json())

    async def set_status(self, project: int | str, sha: str, state: str, description: str, *,
                         target_url: str = "", ref: str = "") -> dict[str, Any]:
        """``POST statuses/:sha`` named ``rayservice-impact``."""
        if state not in STATES:
            raise ValueError(f"not a GitLab commit status state: {state!r}")
        body: dict[str, Any] = {"state": state, "name": STATUS_NAME, "description": description[:255]}
        if target_url:
            body["target_url"] = target_url
        if ref:
            body["ref"] = ref
        path = f"{_at(project)}/statuses/{quote(sha, safe='')}"
        return dict((await self.request("POST", path, json=body)).json())

    def commit_statuses(self, project: int | str, sha: str) -> AsyncIterator[dict[str, Any]]:
        """``GET repository/commits/:sha/statuses`` named ``rayservice-impact``, every one (``all``:
        not only the latest per name and ref), newest first (api/commits.md "List the statuses of a
        commit": ``all``, ``order_by=id``, ``sort=desc``)."""
        return self.paginate(f"{_at(project)}/repository/commits/{quote(sha, safe='')}/statuses",
                             {"name": STATUS_NAME, "all": "true", "order_by": "id", "sort": "desc"})

    async def external_status_checks(self, project: int | str) -> list[dict[str, Any]]:
        """``GET external_status_checks`` (GitLab Ultimate; 403/404 elsewhere)."""
        return [c async for c in self.paginate(f"{_at(project)}/external_status_checks")]

    async def status_check_response(self, project: int | str, iid: int, sha: str, check_id: int,
                                    status: str) -> dict[str, Any]:
        path = f"{_at(project)}/merge_requests/{int(iid)}/status_check_responses"
        body = {"sha": sha, "external_status_check_id": int(check_id), "status": status}
        return dict((await self.request("POST", path, json=body)).json())

    async def access_level(self, project: int | str, user_id: int) -> int:
        """The user's access level in the project, inherited ones included (0: not a member)."""
        try:
            data = await self.get_json(f"{_at(project)}/members/all/{int(user_id)}")
        except GitLabNotFound:
            return 0
        return int(data.get("access_level") or 0)


def _too_long(path: str, limit: int) -> GitLabError:
    return GitLabError("GET", path, None, f"the answer is larger than {limit} bytes")


def _message(resp: httpx.Response) -> str:
    try:
        data = resp.json()
    except ValueError:
        return resp.text[:200]
    if isinstance(data, dict):
        return str(data.get("message") or data.get("error") or "")[:200]
    return ""
