"""A local stand-in for GitHub's REST API: the contract's endpoints with GitHub's response shapes.

Served by a real uvicorn (tests/app/serverutil.py). It keeps pull request files, file contents
by (sha, path), issue comments, statuses and check runs; paginates with ``Link`` headers like
GitHub (``per_page`` up to 100); answers faults on demand (``fail``: 5xx, rate limits, 404s);
mints App installation tokens after checking the JWT; and records every call.

Pull requests of a real git repository (``add_git_merge_pull``) are served as GitHub serves
them: ``GET pulls/{n}`` with ``mergeable`` (null for the first ``mergeable_after`` reads, as while
GitHub computes it) and ``merge_commit_sha`` (a real test merge commit of the base branch's tip
and the head, made with ``git merge-tree`` and kept as ``refs/pull/{n}/merge``; none on a
conflict), ``GET git/ref/heads/{branch}``, ``GET compare/{base}...{head}`` (merge base, at most
300 files), ``GET git/trees/{sha}?recursive=1``. ``GET collaborators/{user}/permission`` answers
from ``permissions`` (role names; "read" for anyone else).

Who a call is made as, as GitHub tells it: an App installation token writes as the App's bot
``{app_slug}[bot]`` (``GET /app/installations/{id}`` with the App's JWT gives ``app_slug``; ``GET /user``
is 403 "Resource not accessible by integration"); the static token is ``token_login``'s personal
token (``GET /user`` answers that user) or, when ``token_login`` is None, a workflow's
``GITHUB_TOKEN`` (``github-actions[bot]``, ``GET /user`` 403). Comments and statuses are authored by
the caller. ``GET commits/{ref}/statuses`` lists a commit's statuses, newest first.

A files list's ``patch`` is the file's real unified diff without its headers (``@@`` hunks with 3
lines of context, as GitHub shows it); ``drop_patch`` leaves it out, as GitHub does for a diff too
large to show. Reviews (``POST pulls/{n}/reviews``) are checked as GitHub checks them: ``event``
one of APPROVE, REQUEST_CHANGES, COMMENT (a COMMENT needs a body), ``commit_id`` a commit of the
pull request when given, and each comment's ``path`` a file of the diff and its ``line`` a line
the diff shows on its ``side`` (else 422 and nothing is stored); ``GET pulls/{n}/comments`` lists
the stored review comments.

Tarballs (``GET /repos/{o}/{r}/tarball/{ref}``) answer 302 to a codeload path on the same host
(``/_codeload/{o}/{r}/legacy.tar.gz/{sha}?token=...``, like GHES), which serves a real
``git archive --format=tar.gz --prefix={o}-{r}-{sha7}/`` of a repository registered with
``add_git_pull``, or else a tarball of the ``contents`` known at that SHA.
"""

from __future__ import annotations

import base64
import difflib
import gzip
import io
import json
import re
import secrets
import subprocess
import tarfile
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import jwt
from standin_base import Call, StandInBase, changed_files, git_env, git_or_none, run_git
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

NOT_FOUND = {"message": "Not Found",
             "documentation_url": "https://docs.github.com/rest", "status": "404"}


INTEGRATION = {"message": "Resource not accessible by integration",
               "documentation_url": "https://docs.github.com/rest/users/users#get-the-authenticated-user",
               "status": "403"}


class GitHubStandIn(StandInBase):
    def __init__(self, prefix: str = "", *, token: str | None = None, token_login: str | None = None) -> None:
        super().__init__()
        self.prefix = prefix.rstrip("/")
        self.token = token                       # required bearer token (None: anything goes)
        self.token_login = token_login           # the token's user (None: a workflow's GITHUB_TOKEN)
        self.app_slug = "rayservice-impact"      # the App's bot is f"{app_slug}[bot]"
        self.app_public_key: bytes | None = None  # set: JWTs are verified, installation tokens minted
        self.app_id = ""
        self.installations: dict[str, int] = {}
        self.issued_tokens: list[str] = []
        self.files: dict[tuple[str, str, int], list[dict[str, Any]]] = {}
        self.contents: dict[tuple[str, str], str] = {}         # (sha, path) -> text
        self.comments: dict[tuple[str, str, int], list[dict[str, Any]]] = {}
        self.statuses: list[dict[str, Any]] = []
        self.check_runs: list[dict[str, Any]] = []
        self.git_repos: dict[tuple[str, str], Path] = {}      # (owner, repo) -> a local git repository
        self.redirect_tarballs = True                          # False: the tarball itself, no 302
        self.chunked_tarballs = False                          # True: no Content-Length
        self._codeload_tokens: set[str] = set()
        self.pulls: dict[tuple[str, str, int], dict[str, Any]] = {}   # GET pulls/{n} answers
        self.mergeable_after: dict[tuple[str, str, int], int] = {}    # reads answered mergeable: null
        self.permissions: dict[str, str] = {}                         # login -> role name
        self.review_comments: dict[tuple[str, str, int], list[dict[str, Any]]] = {}
        self.reviews: list[dict[str, Any]] = []
        self.heads: dict[tuple[str, str, int], str] = {}              # the pull request's head SHA
        self.merged_by: dict[tuple[str, str, str], list[int]] = {}    # (o, r, commit) -> pulls it merged
        self._ids = 1000
        self.routes = [
            ("GET", r"/repos/(?P<o>[^/]+)/(?P<r>[^/]+)/pulls/(?P<n>\d+)/files", self._files),
            ("GET", r"/repos/(?P<o>[^/]+)/(?P<r>[^/]+)/contents/(?P<path>.+)", self._content),
            ("GET", r"/repos/(?P<o>[^/]+)/(?P<r>[^/]+)/issues/(?P<n>\d+)/comments", self._list_comments),
            ("POST", r"/repos/(?P<o>[^/]+)/(?P<r>[^/]+)/issues/(?P<n>\d+)/comments", self._create_comment),
            ("PATCH", r"/repos/(?P<o>[^/]+)/(?P<r>[^/]+)/issues/comments/(?P<id>\d+)", self._update_comment),
            ("POST", r"/repos/(?P<o>[^/]+)/(?P<r>[^/]+)/statuses/(?P<sha>[0-9a-f]+)", self._status),
            ("POST", r"/repos/(?P<o>[^/]+)/(?P<r>[^/]+)/check-runs", self._check_run),
            ("PATCH", r"/repos/(?P<o>[^/]+)/(?P<r>[^/]+)/check-runs/(?P<id>\d+)", self._update_check_run),
            ("GET", r"/repos/(?P<o>[^/]+)/(?P<r>[^/]+)/installation", self._installation),
            ("POST", r"/app/installations/(?P<id>\d+)/access_tokens", self._access_token),
            ("GET", r"/repos/(?P<o>[^/]+)/(?P<r>[^/]+)/tarball/(?P<ref>.+)", self._tarball),
            ("GET", r"/repos/(?P<o>[^/]+)/(?P<r>[^/]+)/pulls/(?P<n>\d+)", self._pull),
            ("GET", r"/repos/(?P<o>[^/]+)/(?P<r>[^/]+)/pulls/(?P<n>\d+)/comments",
             self._list_review_comments),
            ("POST", r"/repos/(?P<o>[^/]+)/(?P<r>[^/]+)/pulls/(?P<n>\d+)/reviews", self._create_review),
            ("GET", r"/repos/(?P<o>[^/]+)/(?P<r>[^/]+)/git/ref/heads/(?P<ref>.+)", self._branch_ref),
            ("GET", r"/repos/(?P<o>[^/]+)/(?P<r>[^/]+)/compare/(?P<base>.+?)\.\.\.(?P<head>.+)",
             self._compare),
            ("GET", r"/repos/(?P<o>[^/]+)/(?P<r>[^/]+)/git/trees/(?P<sha>[^/]+)", self._tree),
            ("GET", r"/repos/(?P<o>[^/]+)/(?P<r>[^/]+)/collaborators/(?P<user>[^/]+)/permission",
             self._permission),
            ("GET", r"/repos/(?P<o>[^/]+)/(?P<r>[^/]+)/commits/(?P<ref>[^/]+)/statuses", self._list_statuses),
            ("GET", r"/repos/(?P<o>[^/]+)/(?P<r>[^/]+)/commits/(?P<ref>[^/]+)/pulls", self._commit_pulls),
            ("GET", r"/repos/(?P<o>[^/]+)/(?P<r>[^/]+)/commits/(?P<ref>[^/]+)/check-runs",
             self._list_check_runs),
            ("GET", r"/user", self._user),
            ("GET", r"/app/installations/(?P<id>\d+)", self._app_installation),
            ("GET", r"/_codeload/(?P<o>[^/]+)/(?P<r>[^/]+)/legacy\.tar\.gz/(?P<ref>.+)", self._codeload),
        ]
        self.app = Starlette(routes=[Route("/{rest:path}", self._dispatch,
                                           methods=["GET", "POST", "PATCH", "PUT", "DELETE"])])

    # -- set-up -------------------------------------------------------------------------------
    def add_pull(self, owner: str, repo: str, number: int, base_sha: str, head_sha: str,
                 files: dict[str, tuple[str | None, str | None]], *, extra: list[dict[str, Any]] = (),
                 renames: dict[str, str] | None = None) -> None:
        """``files``: path -> (base text, head text); None = absent on that side."""
        entries = []
        for path, (before, after) in files.items():
            old = (renames or {}).get(path, path)
            if before is not None:
                self.contents[(base_sha, old)] = before
            if after is not None:
                self.contents[(head_sha, path)] = after
            status = "added" if before is None else "removed" if after is None else (
                "renamed" if old != path else "modified")
            entry = {"sha": "0" * 40, "filename": path, "status": status, "additions": 1, "deletions": 1,
                     "changes": 2, "blob_url": f"https://github.com/{owner}/{repo}/blob/{head_sha}/{path}",
                     "raw_url": f"https://github.com/{owner}/{repo}/raw/{head_sha}/{path}",
                     "contents_url": f"https://api.github.com/repos/{owner}/{repo}/contents/{path}?ref={head_sha}",
                     "patch": _patch(before or "", after or "")}
            if old != path:
                entry["previous_filename"] = old
            entries.append(entry)
        self.files[(owner, repo, number)] = entries + list(extra)
        self.heads[(owner, repo, number)] = head_sha

    def add_git_pull(self, owner: str, repo: str, number: int, base_sha: str, head_sha: str,
                     path: Path) -> None:
        """A pull request of a real git repository: its files list from ``git diff -M`` (as
        GitHub lists them: every file, renames with ``previous_filename``), its tarballs from
        ``git archive``."""
        self.git_repos[(owner, repo)] = path
        self.files[(owner, repo, number)] = _diff_entries(path, base_sha, head_sha)
        self.heads[(owner, repo, number)] = head_sha

    def add_git_merge_pull(self, owner: str, repo: str, number: int, path: Path, *, base_ref: str,
                           head_sha: str, head_ref: str = "feature", head_repo: str | None = None,
                           mergeable_after: int = 0, updated_at: str = "2019-05-15T15:20:33Z"
                           ) -> dict[str, Any]:
        """A pull request of a real git repository from ``head_sha`` into branch ``base_ref``, as
        GitHub holds it: its files list against the merge base, its test merge commit (none when
        it conflicts), ``mergeable``; ``head_repo`` another repository's full name for a fork."""
        self.git_repos[(owner, repo)] = path
        tip = _git(path, "rev-parse", f"refs/heads/{base_ref}")
        merge_base = _git(path, "merge-base", tip, head_sha)
        self.files[(owner, repo, number)] = _diff_entries(path, merge_base, head_sha)
        self.heads[(owner, repo, number)] = head_sha
        merged = subprocess.run(["git", "-C", str(path), "merge-tree", "--write-tree", "--no-messages", tip,
                                 head_sha], capture_output=True, text=True)
        merge_sha = None
        if merged.returncode == 0:
            tree = merged.stdout.split()[0]
            merge_sha = _git(path, "commit-tree", tree, "-p", tip, "-p", head_sha, "-m",
                             f"Merge {head_sha} into {tip}")
            _git(path, "update-ref", f"refs/pull/{number}/merge", merge_sha)
        _git(path, "update-ref", f"refs/pull/{number}/head", head_sha)
        full = f"{owner}/{repo}"
        head_full = head_repo or full
        pull = {"url": f"https://api.github.com/repos/{full}/pulls/{number}", "id": 1000 + number,
                "html_url": f"https://github.com/{full}/pull/{number}", "number": number, "state": "open",
                "locked": False, "title": "Update the fruit",
                "user": {"login": "Codertocat", "type": "User"}, "draft": False, "merged": False,
                "created_at": "2019-05-15T15:20:33Z", "updated_at": updated_at,
                "head": {"label": f"{head_full.split('/')[0]}:{head_ref}", "ref": head_ref, "sha": head_sha,
                         "repo": {"full_name": head_full, "name": head_full.split("/")[1],
                                  "owner": {"login": head_full.split("/")[0]}, "fork": head_full != full}},
                "base": {"label": f"{owner}:{base_ref}", "ref": base_ref, "sha": tip,
                         "repo": {"full_name": full, "name": repo, "owner": {"login": owner}, "fork": False}},
                "mergeable": merge_sha is not None, "rebaseable": merge_sha is not None,
                "mergeable_state": "clean" if merge_sha else "dirty", "merge_commit_sha": merge_sha,
                "comments": 0, "commits": 1, "additions": 1, "deletions": 1,
                "changed_files": len(self.files[(owner, repo, number)])}
        self.pulls[(owner, repo, number)] = pull
        self.mergeable_after[(owner, repo, number)] = mergeable_after
        return pull

    def drop_patch(self, owner: str, repo: str, number: int, path: str) -> None:
        """GitHub's files list without ``path``'s patch (a diff too large to show)."""
        for entry in self.files[(owner, repo, number)]:
            if entry["filename"] == path:
                entry.pop("patch", None)

    def fail(self, method: str, pattern: str, status: int, *, times: int = 1,
             headers: dict[str, str] | None = None, body: Any = None, after_commit: bool = False) -> None:
        """The next ``times`` calls matching ``method`` and the path regex answer ``status``
        (``after_commit``: the call takes effect first, as when GitHub writes, then times out)."""
        default = {"message": "Server Error"} if status >= 500 else NOT_FOUND if status == 404 else {
            "message": "You have exceeded a secondary rate limit. Please wait a few minutes before you try "
                       "again.", "documentation_url": "https://docs.github.com/rest/overview/rate-limits"}
        self.add_fault(method, pattern, status, default if body is None else body, times=times,
                       headers=headers, after_commit=after_commit)

    # -- serving ------------------------------------------------------------------------------
    async def _dispatch(self, request: Request) -> Response:
        raw = await request.body()
        path = request.url.path
        body = json.loads(raw) if raw else None
        call = Call(request.method, path[len(self.prefix):] if path.startswith(self.prefix) else path,
                    dict(request.query_params), dict(request.headers), body)
        return self.record(request, call)

    def _answer(self, request: Request, call: Call) -> Response:
        codeload = request.url.path.startswith("/_codeload/")  # outside the API prefix, as on GHES
        if self.prefix and not request.url.path.startswith(self.prefix + "/") and not codeload:
            return _json(NOT_FOUND, 404)
        return self.with_faults(call, lambda: self._route(request, call), _json)

    def _route(self, request: Request, call: Call) -> Response:
        for method, pattern, handler in self.routes:
            m = re.fullmatch(pattern, call.path)
            if m and method == call.method:
                is_app_call = call.path.startswith("/app/") or call.path.endswith("/installation")
                own_token = call.path.startswith("/_codeload/")  # its URL carries the credentials
                if not is_app_call and not own_token and not self._authorised(call):
                    return _json({"message": "Bad credentials"}, 401)
                with self.lock:
                    return handler(request, call, m.groupdict())
        return _json(NOT_FOUND, 404)

    def _authorised(self, call: Call) -> bool:
        auth = call.headers.get("authorization", "")
        if self.app_public_key is not None:
            return auth.removeprefix("Bearer ").removeprefix("token ") in self.issued_tokens
        return self.token is None or auth in (f"Bearer {self.token}", f"token {self.token}")

    def _page(self, request: Request, items: list[Any]) -> Response:
        per_page = min(int(request.query_params.get("per_page", 30)), 100)
        page = int(request.query_params.get("page", 1))
        last = max(1, -(-len(items) // per_page))
        links = []
        base = str(request.url).split("?")[0]
        params = {k: v for k, v in request.query_params.items() if k != "page"}
        for rel, number in (("prev", page - 1), ("next", page + 1), ("last", last), ("first", 1)):
            if 1 <= number <= last and number != page:
                links.append(f'<{base}?{urlencode({**params, "page": number})}>; rel="{rel}"')
        headers = {"link": ", ".join(links)} if links else {}
        return _json(items[(page - 1) * per_page: page * per_page], 200, headers)

    def _files(self, request: Request, call: Call, g: dict[str, str]) -> Response:
        entries = self.files.get((g["o"], g["r"], int(g["n"])))
        if entries is None:
            return _json(NOT_FOUND, 404)
        return self._page(request, entries[:3000])

    def _content(self, request: Request, call: Call, g: dict[str, str]) -> Response:
        from urllib.parse import unquote

        ref, path = request.query_params.get("ref", ""), unquote(g["path"])
        text = self.contents.get((ref, path))
        raw = text.encode() if text is not None else None
        repo = self.git_repos.get((g["o"], g["r"]))
        if raw is None and repo is not None:  # a git repository's bytes as they are (UTF-16 too)
            shown = subprocess.run(["git", "-C", str(repo), "show", f"{ref}:{path}"], capture_output=True)
            raw = shown.stdout if shown.returncode == 0 else None
        if raw is None:
            return _json(NOT_FOUND, 404)
        if request.headers.get("accept", "").startswith("application/vnd.github.raw"):
            return Response(raw, 200, media_type="application/vnd.github.raw", headers=_rate_headers())
        data = base64.b64encode(raw).decode()
        return _json({"type": "file", "encoding": "base64", "content": data, "path": g["path"]}, 200)

    def _list_comments(self, request: Request, call: Call, g: dict[str, str]) -> Response:
        return self._page(request, self.comments.get((g["o"], g["r"], int(g["n"])), []))

    def _create_comment(self, request: Request, call: Call, g: dict[str, str]) -> Response:
        if len(call.body["body"]) > 65536:
            return _json({"message": "Validation Failed", "errors": [
                {"resource": "IssueComment", "code": "unprocessable", "field": "data",
                 "message": "Body is too long (maximum is 65536 characters)"}]}, 422)
        self._ids += 1
        now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        comment = {"id": self._ids, "node_id": f"IC_{self._ids}", "body": call.body["body"],
                   "url": f"https://api.github.com/repos/{g['o']}/{g['r']}/issues/comments/{self._ids}",
                   "html_url": f"https://github.com/{g['o']}/{g['r']}/pull/{g['n']}#issuecomment-{self._ids}",
                   "user": self._caller(call), "created_at": now, "updated_at": now,
                   "author_association": "NONE", "performed_via_github_app": self._via_app(call)}
        self.comments.setdefault((g["o"], g["r"], int(g["n"])), []).append(comment)
        return _json(comment, 201)

    def _list_review_comments(self, request: Request, call: Call, g: dict[str, str]) -> Response:
        return self._page(request, self.review_comments.get((g["o"], g["r"], int(g["n"])), []))

    def _create_review(self, request: Request, call: Call, g: dict[str, str]) -> Response:
        key = (g["o"], g["r"], int(g["n"]))
        entries = self.files.get(key)
        if entries is None:
            return _json(NOT_FOUND, 404)
        body = call.body if isinstance(call.body, dict) else {}
        event = body.get("event")
        if event not in (None, "APPROVE", "REQUEST_CHANGES", "COMMENT"):
            return _unprocessable(f"event must be one of APPROVE, REQUEST_CHANGES, COMMENT, not {event!r}")
        if event in ("REQUEST_CHANGES", "COMMENT") and not str(body.get("body") or "").strip():
            return _unprocessable("Review body can't be blank when using REQUEST_CHANGES or COMMENT")
        head = self.heads.get(key, "")
        commit = str(body.get("commit_id") or head)
        if commit != head:
            return _unprocessable(f"No commit found for SHA: {commit}")
        patches = {e["filename"]: e.get("patch") for e in entries}
        comments = body.get("comments") or []
        for c in comments:
            if c.get("path") not in patches:
                return _unprocessable("Path could not be resolved")
            side = c.get("side", "RIGHT")
            shown = _diff_side(patches[c["path"]] or "", side)
            if not isinstance(c.get("line"), int) or c["line"] not in shown:
                return _unprocessable("Line could not be resolved")
        self._ids += 1
        review_id = self._ids
        now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        user = self._caller(call)
        pull_url = f"https://api.github.com/repos/{g['o']}/{g['r']}/pulls/{g['n']}"
        for c in comments:
            self._ids += 1
            side = c.get("side", "RIGHT")
            self.review_comments.setdefault(key, []).append({
                "id": self._ids, "node_id": f"PRRC_{self._ids}", "pull_request_review_id": review_id,
                "url": f"https://api.github.com/repos/{g['o']}/{g['r']}/pulls/comments/{self._ids}",
                "diff_hunk": _hunk_to(patches[c["path"]] or "", c["line"], side), "path": c["path"],
                "commit_id": commit, "original_commit_id": commit, "user": user, "body": c["body"],
                "created_at": now, "updated_at": now,
                "html_url": f"https://github.com/{g['o']}/{g['r']}/pull/{g['n']}#discussion_r{self._ids}",
                "pull_request_url": pull_url, "author_association": "NONE", "start_line": None,
                "original_start_line": None, "start_side": None, "line": c["line"],
                "original_line": c["line"], "side": side, "subject_type": "line",
                "performed_via_github_app": self._via_app(call)})
        review = {"id": review_id, "node_id": f"PRR_{review_id}", "user": user,
                  "body": body.get("body") or "",
                  "state": {"APPROVE": "APPROVED", "REQUEST_CHANGES": "CHANGES_REQUESTED",
                            "COMMENT": "COMMENTED"}.get(str(event), "PENDING"),
                  "html_url": f"https://github.com/{g['o']}/{g['r']}/pull/{g['n']}#pullrequestreview-{review_id}",
                  "pull_request_url": pull_url, "submitted_at": now if event else None, "commit_id": commit,
                  "author_association": "NONE"}
        self.reviews.append({**review, "comments": comments})
        return _json(review, 200)

    def _update_comment(self, request: Request, call: Call, g: dict[str, str]) -> Response:
        for comments in self.comments.values():
            for comment in comments:
                if comment["id"] == int(g["id"]):
                    comment["body"] = call.body["body"]
                    comment["updated_at"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
                    return _json(comment, 200)
        return _json(NOT_FOUND, 404)

    def _status(self, request: Request, call: Call, g: dict[str, str]) -> Response:
        body = call.body or {}
        if body.get("state") not in ("error", "failure", "pending", "success"):
            return _json({"message": "Validation Failed"}, 422)
        if len(body.get("description") or "") > 140:
            return _json({"message": "Validation Failed", "errors": [
                {"message": "description is too long (maximum is 140 characters)"}]}, 422)
        self._ids += 1
        now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        status = {"id": self._ids, "state": body["state"], "description": body.get("description"),
                  "context": body.get("context", "default"), "target_url": body.get("target_url"),
                  "sha": g["sha"], "repo": f"{g['o']}/{g['r']}", "created_at": now, "updated_at": now,
                  "creator": self._caller(call)}
        self.statuses.append(status)
        return _json(status, 201)

    def _list_statuses(self, request: Request, call: Call, g: dict[str, str]) -> Response:
        repo = f"{g['o']}/{g['r']}"
        mine = [{k: v for k, v in s.items() if k not in ("sha", "repo")} for s in reversed(self.statuses)
                if s["sha"] == g["ref"] and s["repo"] == repo]
        return self._page(request, mine)

    # -- who a call is made as -------------------------------------------------------------------
    def _caller(self, call: Call) -> dict[str, Any]:
        token = call.headers.get("authorization", "").removeprefix("Bearer ").removeprefix("token ")
        if token in self.issued_tokens:
            return {"login": f"{self.app_slug}[bot]", "id": 31337, "type": "Bot"}
        if self.token_login is not None:
            return {"login": self.token_login, "id": 583231, "type": "User"}
        return {"login": "github-actions[bot]", "id": 41898282, "type": "Bot"}

    def _via_app(self, call: Call) -> dict[str, Any] | None:
        token = call.headers.get("authorization", "").removeprefix("Bearer ").removeprefix("token ")
        return {"id": int(self.app_id or 0), "slug": self.app_slug} if token in self.issued_tokens else None

    def _user(self, request: Request, call: Call, g: dict[str, str]) -> Response:
        user = self._caller(call)
        if user["type"] == "Bot":  # an installation's token, or a workflow's GITHUB_TOKEN
            return _json(INTEGRATION, 403)
        return _json({**user, "node_id": "MDQ6VXNlcjU4MzIzMQ==", "site_admin": False}, 200)

    def _app_installation(self, request: Request, call: Call, g: dict[str, str]) -> Response:
        if self._verify_jwt(call) is None:
            return _json({"message": "A JSON web token could not be decoded"}, 401)
        return _json({"id": int(g["id"]), "app_id": int(self.app_id), "app_slug": self.app_slug,
                      "target_type": "Organization", "repository_selection": "selected",
                      "permissions": {"checks": "write", "issues": "write", "pull_requests": "write",
                                      "statuses": "write", "metadata": "read"}}, 200)

    def _check_run(self, request: Request, call: Call, g: dict[str, str]) -> Response:
        if self.app_public_key is None:
            return _json({"message": "You must authenticate via a GitHub App."}, 403)
        if len((call.body.get("output") or {}).get("annotations") or []) > 50:
            # GitHub: "The Checks API limits the number of annotations to a maximum of 50 per API request."
            return _json({"message": "Validation Failed"}, 422)
        status, conclusion = call.body.get("status") or "queued", call.body.get("conclusion")
        if conclusion:
            status = "completed"
        elif status == "completed":
            return _json({"message": "Validation Failed"}, 422)
        self._ids += 1
        run = {"id": self._ids, "head_sha": call.body["head_sha"], "name": call.body["name"],
               "status": status, "conclusion": conclusion,
               "output": call.body.get("output"), "repo": f"{g['o']}/{g['r']}",
               "history": [(status, conclusion)]}
        self.check_runs.append(run)
        return _json(run, 201)

    def _update_check_run(self, request: Request, call: Call, g: dict[str, str]) -> Response:
        if self.app_public_key is None:
            return _json({"message": "You must authenticate via a GitHub App."}, 403)
        run = next((r for r in self.check_runs if r["id"] == int(g["id"])), None)
        output = call.body.get("output") or {}
        if run is None or len(output.get("annotations") or []) > 50:
            return _json({"message": "Validation Failed"}, 422)
        kept = (run.get("output") or {}).get("annotations") or []
        run["output"] = {**output, "annotations": kept + list(output.get("annotations") or [])}
        # GitHub: a conclusion sets the status to completed; a completed run needs a conclusion.
        if call.body.get("conclusion"):
            run["status"], run["conclusion"] = "completed", call.body["conclusion"]
        elif call.body.get("status"):
            if call.body["status"] == "completed" and not run.get("conclusion"):
                return _json({"message": "Validation Failed"}, 422)
            run["status"] = call.body["status"]
        run.setdefault("history", []).append((run["status"], run.get("conclusion")))
        return _json(run, 200)

    def _list_check_runs(self, request: Request, call: Call, g: dict[str, str]) -> Response:
        """``GET commits/{ref}/check-runs``: newest first, ``check_name`` filtering by name."""
        repo = f"{g['o']}/{g['r']}"
        name = request.query_params.get("check_name")
        runs = [r for r in reversed(self.check_runs) if r["head_sha"] == g["ref"] and r["repo"] == repo
                and (name is None or r["name"] == name)]
        return _json({"total_count": len(runs), "check_runs": runs}, 200)

    def _commit_pulls(self, request: Request, call: Call, g: dict[str, str]) -> Response:
        """``GET commits/{sha}/pulls``: the pull requests ``merged_by`` records for the commit (the
        ``pulls`` answers when known, else a minimal merged pull object)."""
        out = []
        for number in self.merged_by.get((g["o"], g["r"], g["ref"]), []):
            pull = self.pulls.get((g["o"], g["r"], number)) or {"number": number}
            out.append({**pull, "number": number, "state": "closed", "merged_at": "2019-05-15T15:20:33Z",
                        "merge_commit_sha": g["ref"]})
        return _json(out, 200)

    def _verify_jwt(self, call: Call) -> dict[str, Any] | None:
        token = call.headers.get("authorization", "").removeprefix("Bearer ")
        if self.app_public_key is None:
            return None
        try:
            return jwt.decode(token, self.app_public_key, algorithms=["RS256"], issuer=self.app_id)
        except jwt.PyJWTError:
            return None

    def _installation(self, request: Request, call: Call, g: dict[str, str]) -> Response:
        if self._verify_jwt(call) is None:
            return _json({"message": "A JSON web token could not be decoded"}, 401)
        installation = self.installations.get(f"{g['o']}/{g['r']}")
        return _json({"id": installation, "app_id": self.app_id} if installation else NOT_FOUND,
                     200 if installation else 404)

    def _access_token(self, request: Request, call: Call, g: dict[str, str]) -> Response:
        if self._verify_jwt(call) is None:
            return _json({"message": "A JSON web token could not be decoded"}, 401)
        token = f"ghs_standin{len(self.issued_tokens)}_{g['id']}"
        self.issued_tokens.append(token)
        expires = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 3600))
        return _json({"token": token, "expires_at": expires, "permissions": {"checks": "write"},
                      "repository_selection": "all"}, 201)


    # -- pull requests, refs, comparisons, trees, permissions -------------------------------------
    def _pull(self, request: Request, call: Call, g: dict[str, str]) -> Response:
        key = (g["o"], g["r"], int(g["n"]))
        pull = self.pulls.get(key)
        if pull is None:
            return _json(NOT_FOUND, 404)
        if self.mergeable_after.get(key, 0) > 0:  # GitHub is still computing it
            self.mergeable_after[key] -= 1
            return _json({**pull, "mergeable": None, "rebaseable": None, "mergeable_state": "unknown"}, 200)
        return _json(pull, 200)

    def _branch_ref(self, request: Request, call: Call, g: dict[str, str]) -> Response:
        path = self.git_repos.get((g["o"], g["r"]))
        ref = f"refs/heads/{g['ref']}"
        sha = _git_or_none(path, "rev-parse", "--verify", "--quiet", ref) if path else None
        if sha is None:
            return _json(NOT_FOUND, 404)
        return _json({"ref": f"refs/heads/{g['ref']}", "node_id": "REF_x",
                      "url": f"https://api.github.com/repos/{g['o']}/{g['r']}/git/refs/heads/{g['ref']}",
                      "object": {"sha": sha, "type": "commit",
                                 "url": f"https://api.github.com/repos/{g['o']}/{g['r']}/git/commits/{sha}"}},
                     200)

    def _compare(self, request: Request, call: Call, g: dict[str, str]) -> Response:
        path = self.git_repos.get((g["o"], g["r"]))
        if path is None:
            return _json(NOT_FOUND, 404)
        base, head = (self._resolve(g["o"], g["r"], g[k]) for k in ("base", "head"))
        if base is None or head is None:
            return _json(NOT_FOUND, 404)
        merge_base = _git(path, "merge-base", base, head)
        ahead = int(_git(path, "rev-list", "--count", f"{base}..{head}"))
        behind = int(_git(path, "rev-list", "--count", f"{head}..{base}"))
        status = ("identical" if not ahead and not behind else "ahead" if not behind
                  else "behind" if not ahead else "diverged")
        commits = [{"sha": sha} for sha in _git(path, "rev-list", "--reverse", f"{base}..{head}").split()]
        return _json({"status": status, "ahead_by": ahead, "behind_by": behind, "total_commits": ahead,
                      "base_commit": {"sha": base}, "merge_base_commit": {"sha": merge_base},
                      "commits": commits[:250], "files": _diff_entries(path, merge_base, head)[:300]}, 200)

    def _tree(self, request: Request, call: Call, g: dict[str, str]) -> Response:
        path = self.git_repos.get((g["o"], g["r"]))
        sha = self._resolve(g["o"], g["r"], g["sha"]) if path else None
        if path is None or sha is None:
            return _json(NOT_FOUND, 404)
        out = subprocess.run(["git", "-C", str(path), "ls-tree", "-r", "-z", "--full-tree", sha],
                             check=True, capture_output=True).stdout.decode()
        tree = []
        for line in filter(None, out.split("\0")):
            meta, name = line.split("\t", 1)
            mode, kind, blob = meta.split()
            tree.append({"path": name, "mode": mode, "type": kind, "sha": blob})
        return _json({"sha": sha, "tree": tree, "truncated": False}, 200)

    def _permission(self, request: Request, call: Call, g: dict[str, str]) -> Response:
        role = self.permissions.get(g["user"], "read")
        legacy = {"maintain": "write", "triage": "read"}.get(role, role)  # as GitHub maps them
        return _json({"permission": legacy, "role_name": role,
                      "user": {"login": g["user"], "type": "User", "permissions": {
                          "admin": role == "admin", "maintain": role in ("admin", "maintain"),
                          "push": legacy in ("admin", "write"), "triage": role != "none",
                          "pull": role != "none"}}}, 200)

    # -- tarballs -------------------------------------------------------------------------------
    def _tarball(self, request: Request, call: Call, g: dict[str, str]) -> Response:
        sha = self._resolve(g["o"], g["r"], g["ref"])
        if sha is None:
            return _json(NOT_FOUND, 404)
        if not self.redirect_tarballs:
            return self._archive_response(g["o"], g["r"], sha)
        token = secrets.token_hex(8)
        self._codeload_tokens.add(token)
        origin = f"{request.url.scheme}://{request.url.netloc}"
        location = f"{origin}/_codeload/{g['o']}/{g['r']}/legacy.tar.gz/{sha}?token={token}"
        return Response(b"", 302, headers={**_rate_headers(), "location": location})

    def _codeload(self, request: Request, call: Call, g: dict[str, str]) -> Response:
        if request.query_params.get("token") not in self._codeload_tokens:
            return Response(b"404: Not Found", 404, media_type="text/plain")
        sha = self._resolve(g["o"], g["r"], g["ref"])
        if sha is None:
            return Response(b"404: Not Found", 404, media_type="text/plain")
        return self._archive_response(g["o"], g["r"], sha)

    def _resolve(self, owner: str, repo: str, ref: str) -> str | None:
        path = self.git_repos.get((owner, repo))
        if path is not None:
            done = subprocess.run(["git", "-C", str(path), "rev-parse", "--verify", "--quiet",
                                   f"{ref}^{{commit}}"], capture_output=True, text=True)
            return done.stdout.strip() if done.returncode == 0 else None
        return ref if any(sha == ref for sha, _ in self.contents) else None

    def _archive_response(self, owner: str, repo: str, sha: str) -> Response:
        data = self._archive(owner, repo, sha)
        headers = {"content-disposition": f"attachment; filename={owner}-{repo}-{sha[:7]}.tar.gz"}
        if self.chunked_tarballs:
            chunks = [data[i:i + 512] for i in range(0, len(data), 512)]

            async def body() -> Any:
                for chunk in chunks:
                    yield chunk

            return StreamingResponse(body(), 200, media_type="application/x-gzip", headers=headers)
        return Response(data, 200, media_type="application/x-gzip", headers=headers)

    def _archive(self, owner: str, repo: str, sha: str) -> bytes:
        prefix = f"{owner}-{repo}-{sha[:7]}/"
        path = self.git_repos.get((owner, repo))
        if path is not None:
            return subprocess.run(["git", "-C", str(path), "archive", "--format=tar.gz", f"--prefix={prefix}",
                                   sha], check=True, capture_output=True).stdout
        raw = io.BytesIO()
        with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
            for (at, name), text in sorted(self.contents.items()):
                if at == sha:
                    blob = text.encode()
                    info = tarfile.TarInfo(prefix + name)
                    info.size, info.mode, info.mtime = len(blob), 0o644, 0
                    tar.addfile(info, io.BytesIO(blob))
        return gzip.compress(raw.getvalue(), mtime=0)


_GIT_ENV = git_env("GitHub", "noreply@github.com")


def _git(path: Path, *args: str) -> str:
    return run_git(_GIT_ENV, path, *args)


def _git_or_none(path: Path, *args: str) -> str | None:
    return git_or_none(_GIT_ENV, path, *args)


def _diff_entries(path: Path, base: str, head: str) -> list[dict[str, Any]]:
    """``diff-entry`` records of ``git diff -M base head``, as GitHub lists a change's files."""
    entries = []
    for letter, old, new, hunks in changed_files(path, base, head):
        status = {"A": "added", "D": "removed", "R": "renamed", "C": "copied"}.get(letter, "modified")
        entry: dict[str, Any] = {"sha": "0" * 40, "filename": new, "status": status, "additions": 1,
                                 "deletions": 1, "changes": 2}
        if hunks:  # a binary file has no hunks, and GitHub no patch
            entry["patch"] = hunks.rstrip("\n")
        if letter in "RC":
            entry["previous_filename"] = old
        entries.append(entry)
    return entries


def _patch(before: str, after: str) -> str:
    """A file's patch as GitHub's files list gives it: the unified diff's hunks, no file headers."""
    lines = list(difflib.unified_diff(before.splitlines(), after.splitlines(), lineterm="", n=3))
    return "\n".join(lines[2:])


def _diff_side(patch: str, side: str) -> list[int]:
    """The line numbers a diff shows on ``side`` (RIGHT: the head's added and context lines; LEFT:
    the base's removed and context lines), in the patch's order."""
    shown: list[int] = []
    old = new = 0
    for raw in patch.split("\n"):
        m = re.match(r"^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@", raw)
        if m:
            old, new = int(m.group(1)), int(m.group(2))
            continue
        kind = raw[:1]
        if kind in ("+", " ") and side == "RIGHT":
            shown.append(new)
        if kind in ("-", " ") and side == "LEFT":
            shown.append(old)
        old += kind in ("-", " ")
        new += kind in ("+", " ")
    return shown


def _hunk_to(patch: str, line: int, side: str) -> str:
    """A review comment's ``diff_hunk``: its hunk's header and lines up to the commented one."""
    out: list[str] = []
    for raw in patch.split("\n"):
        out = [raw] if raw.startswith("@@") else [*out, raw]
        shown = _diff_side("\n".join(out), side)
        if shown and shown[-1] == line and raw[:1] in ("+", " ", "-"):
            break
    return "\n".join(out)


def _unprocessable(error: str) -> Response:
    return _json({"message": "Unprocessable Entity", "errors": [error],
                  "documentation_url": "https://docs.github.com/rest/pulls/reviews#create-a-review-for-a-pull-request",
                  "status": "422"}, 422)


def _rate_headers() -> dict[str, str]:
    return {"x-ratelimit-limit": "5000", "x-ratelimit-remaining": "4999", "x-ratelimit-used": "1",
            "x-ratelimit-reset": str(int(time.time()) + 3600), "x-ratelimit-resource": "core",
            "x-github-api-version-selected": "2022-11-28"}


def _json(data: Any, status: int, headers: dict[str, str] | None = None) -> Response:
    return Response(json.dumps(data).encode(), status, media_type="application/json; charset=utf-8",
                    headers={**_rate_headers(), **(headers or {})})
