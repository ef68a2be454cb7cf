"""An async GitHub REST client: the endpoints of the contract's GitHub flow, retries, App auth.

Errors (``UpstreamError`` family via :class:`app.clients.rest.ForgeError`)::

    GitHubError                 any answer we cannot use (status, method, path; never a token)
    ├── GitHubNotFound          404 that outlived the brief eventual-consistency retry
    ├── GitHubRetryExhausted    5xx / rate limits / transport errors past the retry budget
    └── TarballTooLarge         a revision's tarball is over the download cap

Retries (one policy for every call): 5xx and transport errors back off exponentially;
403/429 rate limits wait for ``Retry-After`` or ``x-ratelimit-reset`` (a secondary limit
without either waits ``secondary_wait``); a 404 on a call marked ``retry_404`` (data that
may not be replicated yet right after a webhook) is retried a few times. All waits come out
of one total budget per call; a wait that does not fit ends the call at once.
"""

from __future__ import annotations

import asyncio
import email.utils
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import jwt

from .rest import BackoffPolicy, ForgeError, discard, post_once, read_capped

log = logging.getLogger(__name__)

RAW = "application/vnd.github.raw+json"
JSON = "application/vnd.github+json"
API_VERSION = "2022-11-28"
USER_AGENT = "rayservice-impact"
STATUS_CONTEXT = "rayservice-impact"
MAX_REDIRECTS = 3  # api.github.com -> codeload.github.com is one
ACTIONS_BOT = "github-actions[bot]"  # who writes with a GitHub Actions workflow's GITHUB_TOKEN


class GitHubError(ForgeError):
    """GitHub answered something we cannot use."""

    service = "github"
    host = "GitHub"


class GitHubUncertain(GitHubError):
    """A write whose outcome is unknown (5xx, no answer): it may have been done."""


class GitHubNotFound(GitHubError):
    """404: the object does not exist (or is not visible to these credentials)."""


class GitHubRetryExhausted(GitHubError):
    """The retry budget ran out on 5xx answers, rate limits or transport errors."""


class TarballTooLarge(GitHubError):
    """A revision's tarball is larger than the cap (``RAYSERVICE_IMPACT_RENDER_TARBALL_MAX_BYTES``):
    a verdict about the change (it cannot be rendered here), not a transient failure."""

    def __init__(self, path: str, limit: int) -> None:
        super().__init__("GET", path, None, f"the tarball is larger than {limit} bytes "
                                            "(RAYSERVICE_IMPACT_RENDER_TARBALL_MAX_BYTES)")
        self.limit = limit


@dataclass(frozen=True, slots=True)
class RetryPolicy(BackoffPolicy):
    """:class:`BackoffPolicy` (budget 120 s, 8 attempts, 0.5 s doubling to 30 s) and GitHub's waits."""

    secondary_wait: float = 60.0   # GitHub: "wait at least one minute" without a hint
    not_found_waits: tuple[float, ...] = (0.5, 1.0, 2.0)
    write_interval: float = 1.0    # GitHub: at least 1 s between mutating requests


# -- authentication ---------------------------------------------------------------------------

TokenSource = Callable[[bool], Awaitable[str]]   # (refresh) -> "Bearer ..." header value
LoginSource = Callable[[], Awaitable[str]]       # () -> the login the client's comments are authored by


def static_token(token: str) -> TokenSource:
    async def source(refresh: bool) -> str:
        return f"Bearer {token}"
    return source


def create_app_jwt(app_id: str, private_key_pem: str | bytes, now: float | None = None) -> str:
    """An RS256 JWT for the App: issued 60 s in the past (clock drift), expiring 9 min from now."""
    issued = int(now if now is not None else time.time())
    claims = {"iat": issued - 60, "exp": issued + 540, "iss": str(app_id)}
    return jwt.encode(claims, private_key_pem, algorithm="RS256")


class AppAuth:
    """GitHub App credentials: JWT -> installation tokens, cached until shortly before expiry
    (``clock`` drives the cache only)."""

    REFRESH_MARGIN = 300.0  # seconds before ``expires_at`` a token is renewed

    def __init__(self, app_id: str, private_key_pem: str | bytes, *,
                 clock: Callable[[], float] = time.time) -> None:
        self.app_id, self._key, self._clock = app_id, private_key_pem, clock
        self._tokens: dict[int, tuple[str, float]] = {}
        self._installations: dict[str, int] = {}
        self._bot_login = ""
        self._lock = asyncio.Lock()

    @classmethod
    def from_file(cls, app_id: str, key_file: Path | str) -> AppAuth:
        return cls(app_id, Path(key_file).read_bytes())

    def app_token(self) -> TokenSource:
        async def source(refresh: bool) -> str:
            return f"Bearer {create_app_jwt(self.app_id, self._key)}"  # GitHub checks it against real time
        return source

    async def installation_id(self, gh: GitHubClient, owner: str, repo: str) -> int:
        key = f"{owner}/{repo}".lower()
        if key not in self._installations:
            app = gh.with_token(self.app_token())
            data = (await app.request("GET", f"/repos/{_q(owner)}/{_q(repo)}/installation")).json()
            self._installations[key] = int(data["id"])
        return self._installations[key]

    async def bot_login(self, gh: GitHubClient, installation_id: int) -> str:
        """The login of the App's bot user, ``<app-slug>[bot]``: who its installation tokens write
        as (``GET /app/installations/{id}``'s ``app_slug``, asked once)."""
        if not self._bot_login:
            app = gh.with_token(self.app_token())
            data = (await app.request("GET", f"/app/installations/{installation_id}")).json()
            slug = str(data.get("app_slug") or "")
            if not slug:
                raise GitHubError("GET", f"/app/installations/{installation_id}", 200, "no app_slug")
            self._bot_login = f"{slug}[bot]"
        return self._bot_login

    def installation_token(self, gh: GitHubClient, installation_id: int) -> TokenSource:
        async def source(refresh: bool) -> str:
            async with self._lock:
                cached = self._tokens.get(installation_id)
                if refresh or cached is None or cached[1] - self._clock() < self.REFRESH_MARGIN:
                    app = gh.with_token(self.app_token())
                    resp = await app.request("POST", f"/app/installations/{installation_id}/access_tokens")
                    data = resp.json()
                    cached = (data["token"], _parse_time(data.get("expires_at"), self._clock() + 3600))
                    self._tokens[installation_id] = cached
                return f"Bearer {cached[0]}"
        return source


def _parse_time(value: Any, default: float) -> float:
    if not isinstance(value, str):
        return default
    try:
        return email.utils.parsedate_to_datetime(value).timestamp()
    except (TypeError, ValueError):
        pass
    from datetime import datetime

    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return default


def _q(segment: str) -> str:
    return quote(segment, safe="")


# -- the client -------------------------------------------------------------------------------

class GitHubClient:
    """Calls GitHub's REST API under ``base_url`` (``https://api.github.com`` or GHES
    ``https://HOST/api/v3``) on a shared ``httpx.AsyncClient``."""

    def __init__(self, http: httpx.AsyncClient, base_url: str, token: TokenSource | None, *,
                 retry: RetryPolicy | None = None, sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
                 clock: Callable[[], float] = time.time, login: LoginSource | None = None,
                 _writes: _WriteGate | None = None) -> None:
        self.http, self.base_url, self.token = http, base_url.rstrip("/"), token
        self.retry = retry or RetryPolicy()
        self._sleep, self._clock = sleep, clock
        self._login, self._own_login = login, ""
        self._writes = _writes or _WriteGate(self.retry.write_interval, sleep, clock)

    def with_token(self, token: TokenSource | None, *, login: LoginSource | None = None) -> GitHubClient:
        """The same connection and write pacing with other credentials; ``login``: who they write as."""
        return GitHubClient(self.http, self.base_url, token, retry=self.retry, sleep=self._sleep,
                            clock=self._clock, login=login, _writes=self._writes)

    async def own_login(self) -> str:
        """The login this client's comments are authored by: the ``login`` source it was given (the
        service: its App's bot, or its token's user), else ``GET /user``'s, asked once. A token that
        ``GET /user`` refuses with a plain 403 is an integration's (a GitHub Actions ``GITHUB_TOKEN``):
        ``github-actions[bot]``."""
        if self._login is not None:
            return await self._login()
        if not self._own_login:
            try:
                self._own_login = await self.authenticated_login()
            except GitHubError as exc:
                if exc.status != 403 or isinstance(exc, GitHubRetryExhausted):
                    raise
                self._own_login = ACTIONS_BOT
        return self._own_login

    async def authenticated_login(self) -> str:
        """``GET /user``: the login of the token's user."""
        login = str((await self.request("GET", "/user")).json().get("login") or "")
        if not login:
            raise GitHubError("GET", "/user", 200, "no login")
        return login

    # -- transport with retries -----------------------------------------------------------------
    async def request(self, method: str, path: str, *, params: dict[str, Any] | None = None,
                      json: Any = None, accept: str = JSON, retry_404: bool = False, stream: bool = False,
                      follow_redirects: bool | None = None, auth: bool = True,
                      idempotent: bool = True) -> httpx.Response:
        """One call with the retry policy. ``stream``: the answer's body is not read (the caller
        reads and closes it); ``follow_redirects``: None = the shared client's setting; ``auth``:
        False for a URL of another host (a redirect target carries its own credentials);
        ``idempotent`` False: a 5xx or a lost answer is not retried blindly but raised as
        :class:`GitHubUncertain` (the write may have happened; the caller checks)."""
        url = path if path.startswith(("http://", "https://")) else self.base_url + path
        shown = httpx.URL(url).path  # never the query: a redirect URL may carry a token there
        spent, attempt, refreshed = 0.0, 0, False
        not_found_waits = list(self.retry.not_found_waits) if retry_404 else []
        follow = self.http.follow_redirects if follow_redirects is None else follow_redirects
        while True:
            attempt += 1
            headers = {"Accept": accept, "X-GitHub-Api-Version": API_VERSION, "User-Agent": USER_AGENT}
            if self.token is not None and auth:
                headers["Authorization"] = await self.token(refreshed)
            if method != "GET":
                await self._writes.wait()
            try:
                req = self.http.build_request(method, url, params=params, json=json, headers=headers)
                resp = await self.http.send(req, stream=stream, follow_redirects=follow)
            except httpx.TransportError as exc:
                if not idempotent:
                    raise GitHubUncertain(method, shown, None, type(exc).__name__) from None
                wait, why, resp = self._backoff(attempt), type(exc).__name__, None
            else:
                if resp.status_code < 400:
                    return resp
                if stream:  # the error's body is small; read it for the message, free the connection
                    await discard(resp)
                if resp.status_code == 401 and self.token is not None and auth and not refreshed:
                    refreshed = True  # an expired installation token: mint a new one once
                    continue
                if resp.status_code >= 500 and not idempotent:
                    raise GitHubUncertain(method, shown, resp.status_code, _message(resp))
                if resp.status_code == 404 and not_found_waits:
                    wait, why = not_found_waits.pop(0), "404 (not replicated yet?)"
                else:
                    wait, why = self._wait_for(resp, attempt)
                if wait is None:
                    cls = GitHubNotFound if resp.status_code == 404 else GitHubError
                    raise cls(method, shown, resp.status_code, _message(resp))
            if self.retry.exhausted(attempt, spent, wait):
                raise GitHubRetryExhausted(method, shown, resp.status_code if resp is not None else None,
                                           f"gave up after {attempt} attempts ({why})")
            log.warning("github %s %s: %s; retrying in %.1fs", method, shown, why, wait)
            spent += wait
            await self._sleep(wait)

    def _backoff(self, attempt: int) -> float:
        return self.retry.backoff_wait(attempt)

    def _wait_for(self, resp: httpx.Response, attempt: int) -> tuple[float | None, str]:
        """How long to wait before retrying ``resp`` (None: do not retry)."""
        status, h = resp.status_code, resp.headers
        if status >= 500:
            return self._backoff(attempt), f"HTTP {status}"
        if status not in (403, 429):
            return None, ""
        if "retry-after" in h:
            try:
                return max(0.0, float(h["retry-after"])), f"rate limited (retry-after {h['retry-after']})"
            except ValueError:
                reset = _parse_time(h["retry-after"], self._clock() + self.retry.secondary_wait)
                return max(0.0, reset - self._clock()), "rate limited (retry-after date)"
        if h.get("x-ratelimit-remaining") == "0" and "x-ratelimit-reset" in h:
            try:
                return max(0.0, float(h["x-ratelimit-reset"]) - self._clock()) + 1.0, "primary rate limit"
            except ValueError:
                pass
        if status == 429 or "rate limit" in _message(resp).lower():
            return max(self.retry.secondary_wait, self._backoff(attempt)), "secondary rate limit"
        return None, ""  # a plain 403: missing permission, do not hammer

    async def paginate(self, path: str, params: dict[str, Any] | None = None, *,
                       retry_404: bool = False) -> AsyncIterator[Any]:
        """Every item of a list endpoint, following ``Link: <...>; rel="next"``."""
        url: str | None = path
        query: dict[str, Any] | None = {"per_page": 100, **(params or {})}
        while url:
            resp = await self.request("GET", url, params=query, retry_404=retry_404)
            for item in resp.json():
                yield item
            url, query = resp.links.get("next", {}).get("url"), None

    # -- endpoints ------------------------------------------------------------------------------
    def pull_files(self, owner: str, repo: str, number: int) -> AsyncIterator[dict[str, Any]]:
        return self.paginate(f"/repos/{_q(owner)}/{_q(repo)}/pulls/{number}/files", retry_404=True)

    async def file_bytes(self, owner: str, repo: str, path: str, ref: str, *,
                         retry_404: bool = True) -> bytes:
        """A file's raw bytes at ``ref``: the caller decodes them (a manifest may be UTF-16).
        ``retry_404=False`` for a file that may well not exist."""
        resp = await self.request("GET", f"/repos/{_q(owner)}/{_q(repo)}/contents/{quote(path, safe='/')}",
                                  params={"ref": ref}, accept=RAW, retry_404=retry_404)
        return resp.content

    async def tarball(self, owner: str, repo: str, ref: str, max_bytes: int) -> bytes:
        """The gzip tarball of ``ref`` (GitHub answers 302 to codeload), read up to ``max_bytes``.

        Redirects are followed here, not by the shared client, so each hop is checked: only to
        an https URL, or to this API's own origin (a GHES ``/_codeload`` or a local stand-in).
        The token goes only to this API's origin; codeload's URL carries its own credentials.
        Over the cap: :class:`TarballTooLarge`, whether announced by Content-Length or not.
        """
        path = f"/repos/{_q(owner)}/{_q(repo)}/tarball/{quote(ref, safe='/')}"
        url, auth = path, True
        for _ in range(MAX_REDIRECTS + 1):
            resp = await self.request("GET", url, retry_404=True, stream=True, follow_redirects=False,
                                      auth=auth)
            try:
                if 300 <= resp.status_code < 400:
                    url, auth = self._redirect_target(resp, path)
                    continue
                return await read_capped(resp, path, max_bytes, TarballTooLarge, GitHubError)
            finally:
                await resp.aclose()
        raise GitHubError("GET", path, None, f"more than {MAX_REDIRECTS} redirects")

    def _redirect_target(self, resp: httpx.Response, path: str) -> tuple[str, bool]:
        """(absolute URL, send the token?) of a redirect, or GitHubError when it is not allowed."""
        location = resp.headers.get("location")
        if not location:
            raise GitHubError("GET", path, resp.status_code, "a redirect without a Location")
        target = resp.request.url.join(location)
        base = httpx.URL(self.base_url)
        same_origin = (target.scheme, target.host, target.port) == (base.scheme, base.host, base.port)
        if target.scheme != "https" and not same_origin:
            raise GitHubError("GET", path, resp.status_code,
                              f"redirect to {target.scheme}://{target.host} refused: only https, or "
                              "this API's own host")
        return str(target), same_origin

    async def get_pull(self, owner: str, repo: str, number: int) -> dict[str, Any]:
        """``GET pulls/{n}``: its ``mergeable`` (null while GitHub computes it), ``merge_commit_sha``
        (the test merge commit, ``refs/pull/{n}/merge``), ``head``/``base`` refs and SHAs."""
        return (await self.request("GET", f"/repos/{_q(owner)}/{_q(repo)}/pulls/{number}")).json()

    async def branch_tip(self, owner: str, repo: str, branch: str) -> str:
        """The SHA a branch points at now (``GET git/ref/heads/{branch}``)."""
        path = f"/repos/{_q(owner)}/{_q(repo)}/git/ref/heads/{quote(branch, safe='/')}"
        data = (await self.request("GET", path, retry_404=True)).json()
        return str(data["object"]["sha"])

    async def compare(self, owner: str, repo: str, base: str, head: str) -> dict[str, Any]:
        """``GET compare/{base}...{head}``: ``merge_base_commit``, ``status``, ``ahead_by``/``behind_by``
        and ``files`` (GitHub lists at most 300 files of a comparison, on its first page)."""
        basehead = f"{quote(base, safe='/')}...{quote(head, safe='/')}"
        return (await self.request("GET", f"/repos/{_q(owner)}/{_q(repo)}/compare/{basehead}",
                                   retry_404=True)).json()

    async def tree_blobs(self, owner: str, repo: str, sha: str) -> tuple[dict[str, str], bool]:
        """({path: blob SHA} of every file at ``sha``, truncated?) from ``GET git/trees/{sha}?recursive=1``
        (GitHub truncates a recursive tree past 100 000 entries or 7 MB and says so)."""
        data = (await self.request("GET", f"/repos/{_q(owner)}/{_q(repo)}/git/trees/{quote(sha, safe='')}",
                                   params={"recursive": "1"}, retry_404=True)).json()
        blobs = {str(e["path"]): str(e.get("sha", "")) for e in data.get("tree", [])
                 if e.get("type") in ("blob", "commit")}
        return blobs, bool(data.get("truncated"))

    async def collaborator_permission(self, owner: str, repo: str, user: str) -> dict[str, Any]:
        """``GET collaborators/{user}/permission``: ``permission`` is the legacy base role (admin,
        write, read, none: GitHub maps maintain to write and triage to read), ``role_name`` the
        full role name."""
        path = f"/repos/{_q(owner)}/{_q(repo)}/collaborators/{_q(user)}/permission"
        return (await self.request("GET", path)).json()

    def issue_comments(self, owner: str, repo: str, number: int) -> AsyncIterator[dict[str, Any]]:
        return self.paginate(f"/repos/{_q(owner)}/{_q(repo)}/issues/{number}/comments")

    def commit_statuses(self, owner: str, repo: str, ref: str) -> AsyncIterator[dict[str, Any]]:
        """``GET commits/{ref}/statuses``: every status of the commit, newest first (each with its
        ``context``, ``state``, ``description`` and ``target_url``)."""
        return self.paginate(f"/repos/{_q(owner)}/{_q(repo)}/commits/{quote(ref, safe='')}/statuses")

    async def create_comment(self, owner: str, repo: str, number: int, body: str, *,
                             find: Callable[[], Awaitable[dict[str, Any] | None]] | None = None
                             ) -> dict[str, Any]:
        """POST a comment. A POST is not idempotent: after a 5xx or a lost answer GitHub may have
        stored it, so before trying again ``find()`` looks for it (the sticky comment's marker)
        and, when there, that comment is edited instead: never two comments."""
        path = f"/repos/{_q(owner)}/{_q(repo)}/issues/{number}/comments"

        async def post() -> dict[str, Any]:
            return (await self.request("POST", path, json={"body": body}, idempotent=False)).json()

        async def edit(found: dict[str, Any]) -> dict[str, Any]:
            return await self.update_comment(owner, repo, int(found["id"]), body)

        return await post_once(post, find, edit, uncertain=GitHubUncertain, policy=self.retry,
                               sleep=self._sleep, log=log, label=f"github POST {path}", noun="comment")

    def review_comments(self, owner: str, repo: str, number: int) -> AsyncIterator[dict[str, Any]]:
        """``GET pulls/{n}/comments``: the review comments on the pull request's diff, each with its
        ``path``, ``line`` (null once a later push changed that line), ``side``, ``commit_id``,
        ``user`` and ``body``."""
        return self.paginate(f"/repos/{_q(owner)}/{_q(repo)}/pulls/{number}/comments")

    async def create_review(self, owner: str, repo: str, number: int, commit_id: str, body: str,
                            comments: Sequence[dict[str, Any]]) -> dict[str, Any]:
        """``POST pulls/{n}/reviews`` with ``event: COMMENT``: one review on ``commit_id`` holding
        ``comments`` (each ``path``, ``line``, ``side``, ``body``). GitHub refuses the whole review
        (422) when a comment's line is not on the diff. Not idempotent: a 5xx or a lost answer is
        :class:`GitHubUncertain` (the caller looks before posting again)."""
        payload = {"commit_id": commit_id, "body": body, "event": "COMMENT", "comments": list(comments)}
        return (await self.request("POST", f"/repos/{_q(owner)}/{_q(repo)}/pulls/{number}/reviews",
                                   json=payload, idempotent=False)).json()

    async def update_comment(self, owner: str, repo: str, comment_id: int, body: str) -> dict[str, Any]:
        path = f"/repos/{_q(owner)}/{_q(repo)}/issues/comments/{comment_id}"
        return (await self.request("PATCH", path, json={"body": body})).json()

    async def create_status(self, owner: str, repo: str, sha: str, state: str, description: str,
                            target_url: str | None = None) -> dict[str, Any]:
        body: dict[str, Any] = {"state": state, "context": STATUS_CONTEXT, "description": description[:140]}
        if target_url:
            body["target_url"] = target_url
        return (await self.request("POST", f"/repos/{_q(owner)}/{_q(repo)}/statuses/{sha}", json=body)).json()

    async def create_check_run(self, owner: str, repo: str, sha: str, conclusion: str, title: str,
                               summary: str, annotations: Sequence[dict[str, Any]] = ()) -> dict[str, Any]:
        """One check run; annotations go 50 per request (the Checks API's limit): the first 50 with
        the run, the rest by updating it."""
        output: dict[str, Any] = {"title": title[:255], "summary": summary[:65000]}
        annotations = [{k: v for k, v in a.items() if k in CHECK_ANNOTATION_KEYS} for a in annotations]
        batches = [annotations[i:i + ANNOTATION_BATCH] for i in range(0, len(annotations), ANNOTATION_BATCH)]
        body = {"name": STATUS_CONTEXT, "head_sha": sha, "status": "completed", "conclusion": conclusion,
                "output": {**output, "annotations": batches[0]} if batches else output}
        run = (await self.request("POST", f"/repos/{_q(owner)}/{_q(repo)}/check-runs", json=body)).json()
        for batch in batches[1:]:
            path = f"/repos/{_q(owner)}/{_q(repo)}/check-runs/{int(run['id'])}"
            await self.request("PATCH", path, json={"output": {**output, "annotations": batch}})
        return run

    async def put_check_run(self, owner: str, repo: str, sha: str, name: str, status: str,
                            conclusion: str | None, title: str, summary: str, *,
                            run_id: int | None = None) -> dict[str, Any]:
        """Create (``run_id`` None) or update a check run named ``name`` on ``sha``: ``status``
        ``in_progress`` without a conclusion, or ``completed`` with one (the Checks API refuses a
        conclusion on a run that is not completed)."""
        body: dict[str, Any] = {"name": name, "status": status,
                                "output": {"title": title[:255], "summary": summary[:65000]}}
        if status == "completed" and conclusion:
            body["conclusion"] = conclusion
        base = f"/repos/{_q(owner)}/{_q(repo)}/check-runs"
        if run_id is None:
            return (await self.request("POST", base, json={**body, "head_sha": sha})).json()
        return (await self.request("PATCH", f"{base}/{int(run_id)}", json=body)).json()

    async def find_check_run(self, owner: str, repo: str, sha: str, name: str) -> dict[str, Any] | None:
        """``GET commits/{sha}/check-runs?check_name=``: the newest run named ``name``, if any."""
        path = f"/repos/{_q(owner)}/{_q(repo)}/commits/{quote(sha, safe='')}/check-runs"
        data = (await self.request("GET", path, params={"check_name": name, "filter": "latest"})).json()
        runs = [r for r in (data.get("check_runs") or []) if isinstance(r, dict) and r.get("name") == name]
        return runs[0] if runs else None

    async def commit_pulls(self, owner: str, repo: str, sha: str) -> list[dict[str, Any]]:
        """``GET commits/{sha}/pulls``: the pull requests the commit belongs to (for a merge
        commit on the base branch: the one it merged)."""
        path = f"/repos/{_q(owner)}/{_q(repo)}/commits/{quote(sha, safe='')}/pulls"
        data = (await self.request("GET", path, retry_404=True)).json()
        return [p for p in data if isinstance(p, dict)] if isinstance(data, list) else []


ANNOTATION_BATCH = 50
# The fields of a check-run annotation (docs: rest/checks/runs, "output.annotations"): anything
# else a verdict carries (its fingerprint, for GitLab's threads) stays here.
CHECK_ANNOTATION_KEYS = frozenset({"path", "start_line", "end_line", "start_column", "end_column",
                                   "annotation_level", "message", "title", "raw_details"})


class _WriteGate:
    """Spaces mutating requests ``interval`` seconds apart (GitHub's secondary-limit advice)."""

    def __init__(self, interval: float, sleep: Callable[[float], Awaitable[None]],
                 clock: Callable[[], float]) -> None:
        self.interval, self._sleep, self._clock = interval, sleep, clock
        self._next = 0.0
        self._lock = asyncio.Lock()

    async def wait(self) -> None:
        if self.interval <= 0:
            return
        async with self._lock:
            delay = self._next - self._clock()
            if delay > 0:
                await self._sleep(delay)
            self._next = self._clock() + self.interval


def _message(resp: httpx.Response) -> str:
    try:
        data = resp.json()
    except ValueError:
        return resp.text[:200]
    return str(data.get("message", ""))[:200] if isinstance(data, dict) else ""
