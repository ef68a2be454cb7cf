"""A local stand-in for GitLab's REST API (v4), backed by real git repositories.

Served by a real uvicorn (tests/app/serverutil.py) under ``{prefix}/api/v4`` (a self-managed
instance may sit under a relative path). Answers have the shapes of GitLab's REST docs
(api/merge_requests.md, api/repositories.md, api/commits.md, api/notes.md, api/status_checks.md,
api/members.md, api/users.md, api/discussions.md); tests/data/gitlab/ keeps the webhook payload
examples and a diff thread (discussion.diff_note.json).

Merge request threads (``discussions``): a thread on the diff is checked against the real ``git
diff`` of the merge request's ``diff_refs`` (base_sha..head_sha): its SHAs must be those, its
``new_path`` a changed file, and its line a line of a hunk (``new_line`` alone: an added line;
``old_line`` alone: a removed one; both: an unchanged line at those numbers); anything else answers
400 as GitLab does for a position outside the diff.

Projects are named by numeric id or URL-encoded ``namespace/path``. Each project is a real git
repository; a merge request (``add_merge_request``) gets the refs GitLab keeps in the TARGET
project: ``refs/merge-requests/:iid/head`` (the source branch's head, also for a fork) and, when it
merges cleanly, ``refs/merge-requests/:iid/merge`` (a real ``git merge --no-ff`` of the head into
the target branch's tip, in a scratch worktree); ``train=True`` adds
``refs/merge-requests/:iid/train`` (the same merge, built on ``train_base``). The archive endpoint
runs ``git archive --format=tar.gz``; ``merge_base`` and ``compare`` run git.

Every call is recorded (``calls``) with its headers; a call without the right ``PRIVATE-TOKEN``
answers 401. ``fail`` injects faults (``after_commit``: the write happens, then the fault
answers, as a 5xx after GitLab stored it).
"""

from __future__ import annotations

import json
import re
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlencode

from standin_base import Call, StandInBase, changed_files, git_env, git_or_none, run_git
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

NOT_FOUND = {"message": "404 Not found"}
UNAUTHORIZED = {"message": "401 Unauthorized"}


@dataclass
class Project:
    id: int
    path: str            # namespace/path
    repo: Path
    forked_from: int | None = None


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime())


_GIT_ENV = git_env("GitLab", "noreply@gitlab.example.com")


def git(path: Path, *args: str) -> str:
    return run_git(_GIT_ENV, path, *args)


def _git_or_none(path: Path, *args: str) -> str | None:
    return git_or_none(_GIT_ENV, path, *args)


class GitLabStandIn(StandInBase):
    def __init__(self, prefix: str = "", *, token: str | None = None) -> None:
        super().__init__()
        self.prefix = prefix.rstrip("/")
        self.token = token
        self.bot = {"id": 9001, "username": "project_7_bot_4f2a", "name": "rayservice-impact", "bot": True,
                    "state": "active", "web_url": "https://gitlab.example.com/project_7_bot_4f2a"}
        self.projects: dict[int, Project] = {}
        self.mrs: dict[tuple[int, int], dict[str, Any]] = {}
        self.notes: dict[tuple[int, int], list[dict[str, Any]]] = {}
        self.statuses: list[dict[str, Any]] = []
        self.status_checks: dict[int, list[dict[str, Any]]] = {}   # project -> external status checks
        self.status_check_responses: list[dict[str, Any]] = []
        self.members: dict[tuple[int, int], int] = {}              # (project, user id) -> access level
        self.discussions: dict[tuple[int, int], list[dict[str, Any]]] = {}
        self._ids = 5000
        P = r"/projects/(?P<p>[^/]+)"
        MR = P + r"/merge_requests/(?P<iid>\d+)"
        self.routes = [
            ("GET", r"/user", self._user),
            ("GET", MR, self._mr),
            ("GET", P + r"/merge_requests", self._list_mrs),
            ("GET", MR + r"/diffs", self._diffs),
            ("GET", MR + r"/notes", self._list_notes),
            ("POST", MR + r"/notes", self._create_note),
            ("PUT", MR + r"/notes/(?P<id>\d+)", self._update_note),
            ("GET", MR + r"/discussions", self._list_discussions),
            ("POST", MR + r"/discussions", self._create_discussion),
            ("PUT", MR + r"/discussions/(?P<id>[0-9a-f]+)", self._resolve_discussion),
            ("POST", MR + r"/status_check_responses", self._status_check_response),
            ("GET", P + r"/external_status_checks", self._list_status_checks),
            ("GET", P + r"/repository/archive\.tar\.gz", self._archive),
            ("GET", P + r"/repository/compare", self._compare),
            ("GET", P + r"/repository/merge_base", self._merge_base),
            ("GET", P + r"/repository/commits/(?P<ref>[^/]+)", self._commit),
            ("GET", P + r"/repository/branches/(?P<branch>[^/]+)", self._branch),
            ("POST", P + r"/statuses/(?P<sha>[0-9a-f]+)", self._status),
            ("GET", P + r"/repository/commits/(?P<sha>[0-9a-f]+)/statuses", self._list_statuses),
            ("GET", P + r"/members/all/(?P<user>\d+)", self._member),
        ]
        self.app = Starlette(routes=[Route("/{rest:path}", self._dispatch, methods=["GET", "POST", "PUT"])])

    # -- set-up -------------------------------------------------------------------------------
    def add_project(self, project_id: int, path: str, repo: Path, *,
                    forked_from: int | None = None) -> Project:
        project = self.projects[project_id] = Project(project_id, path, repo, forked_from)
        return project

    def add_merge_request(self, project_id: int, iid: int, *, source_branch: str, head_sha: str,
                          target_branch: str = "main", source_project_id: int | None = None,
                          train: bool = False, train_base: str | None = None,
                          updated_at: str = "2026-12-01T10:00:00.000Z", merge_status: str | None = None
                          ) -> dict[str, Any]:
        """A merge request of ``head_sha`` into ``target_branch``, as GitLab keeps it in the target
        project (its refs made with real git; see the module docstring)."""
        repo = self.projects[project_id].repo
        tip = git(repo, "rev-parse", f"refs/heads/{target_branch}")
        git(repo, "update-ref", f"refs/merge-requests/{iid}/head", head_sha)
        merge_sha = self._merge(repo, tip, head_sha, f"refs/merge-requests/{iid}/merge")
        if merge_sha is None:
            _git_or_none(repo, "update-ref", "-d", f"refs/merge-requests/{iid}/merge")
        if train:
            built = self._merge(repo, train_base or tip, head_sha, f"refs/merge-requests/{iid}/train")
            assert built is not None, "a train entry must merge"
        base = git(repo, "merge-base", tip, head_sha)
        status = merge_status or ("can_be_merged" if merge_sha else "cannot_be_merged")
        detailed = {"can_be_merged": "mergeable", "cannot_be_merged": "broken_status",
                    "checking": "checking", "unchecked": "unchecked"}.get(status, status)
        path = self.projects[project_id].path
        mr = {"id": 100000 + iid, "iid": iid, "project_id": project_id, "title": "Bump the Ray image",
              "description": "", "state": "opened", "created_at": "2026-12-01T09:00:00.000Z",
              "updated_at": updated_at, "target_branch": target_branch, "source_branch": source_branch,
              "author": {"id": 1, "username": "alice", "name": "Alice"},
              "source_project_id": source_project_id or project_id, "target_project_id": project_id,
              "draft": False, "work_in_progress": False, "merge_when_pipeline_succeeds": False,
              "merge_status": status, "detailed_merge_status": detailed, "sha": head_sha,
              "merge_commit_sha": None, "squash_commit_sha": None,
              "web_url": f"https://gitlab.example.com/{path}/-/merge_requests/{iid}",
              "references": {"short": f"!{iid}", "full": f"{path}!{iid}"},
              "diff_refs": {"base_sha": base, "head_sha": head_sha, "start_sha": tip}}
        self.mrs[(project_id, iid)] = mr
        return mr

    @staticmethod
    def _merge(repo: Path, onto: str, head: str, ref: str) -> str | None:
        """A real ``git merge --no-ff`` of ``head`` into ``onto`` in a scratch worktree; its commit
        kept as ``ref``; None on a conflict."""
        with tempfile.TemporaryDirectory(prefix="gl-merge-") as tmp:
            work = Path(tmp) / "w"
            git(repo, "worktree", "add", "-q", "--detach", str(work), onto)
            try:
                if _git_or_none(work, "merge", "--no-ff", "--no-edit", "-q", head) is None:
                    _git_or_none(work, "merge", "--abort")
                    return None
                sha = git(work, "rev-parse", "HEAD")
                git(repo, "update-ref", ref, sha)
                return sha
            finally:
                git(repo, "worktree", "remove", "--force", str(work))

    def fail(self, method: str, pattern: str, status: int, *, times: int = 1, body: Any = None,
             headers: dict[str, str] | None = None, after_commit: bool = False) -> None:
        default = {"message": "500 Internal Server Error"} if status >= 500 else {"message": f"{status}"}
        self.add_fault(method, pattern, status, default if body is None else body, times=times,
                       headers=headers, after_commit=after_commit)

    def notes_of(self, project_id: int, iid: int) -> list[dict[str, Any]]:
        return self.notes.get((project_id, iid), [])

    def add_user_note(self, project_id: int, iid: int, body: str, user: dict[str, Any]) -> dict[str, Any]:
        self._ids += 1
        note = {"id": self._ids, "type": None, "body": body, "author": user, "created_at": _now(),
                "updated_at": _now(), "system": False, "noteable_id": 100000 + iid,
                "noteable_type": "MergeRequest", "noteable_iid": iid, "project_id": project_id,
                "resolvable": False, "confidential": False, "internal": False}
        self.notes.setdefault((project_id, iid), []).append(note)
        return note

    def threads_of(self, project_id: int, iid: int) -> list[dict[str, Any]]:
        return self.discussions.get((project_id, iid), [])

    def add_discussion(self, project_id: int, iid: int, body: str, user: dict[str, Any],
                       position: dict[str, Any] | None = None) -> dict[str, Any]:
        """A thread opened by ``user`` (a diff note when ``position`` is given), as GitLab shows it."""
        self._ids += 1
        note = {"id": self._ids, "type": "DiffNote" if position else "DiscussionNote", "body": body,
                "attachment": None, "author": user, "created_at": _now(), "updated_at": _now(),
                "system": False, "noteable_id": 100000 + iid, "noteable_type": "MergeRequest",
                "noteable_iid": iid, "project_id": project_id, "resolvable": True, "resolved": False,
                "resolved_by": None, "resolved_at": None, "confidential": False, "internal": False}
        if position is not None:
            note["commit_id"] = position.get("head_sha")
            note["position"] = {"base_sha": None, "start_sha": None, "head_sha": None, "old_path": None,
                                "new_path": None, "position_type": "text", "old_line": None,
                                "new_line": None, "line_range": None, **position}
        thread = {"id": f"{self._ids:040x}", "individual_note": False, "notes": [note]}
        self.discussions.setdefault((project_id, iid), []).append(thread)
        return thread

    # -- serving ------------------------------------------------------------------------------
    async def _dispatch(self, request: Request) -> Response:
        raw = await request.body()
        path = request.scope.get("raw_path", b"").decode() or request.url.path
        path = path.split("?", 1)[0]
        api = self.prefix + "/api/v4"
        if not path.startswith(api + "/"):
            return _json(NOT_FOUND, 404)
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            return _json({"error": "body is not JSON"}, 400)
        call = Call(request.method, path[len(api):], list(request.query_params.multi_items()),
                    dict(request.headers), body)
        return self.record(request, call)

    def _answer(self, request: Request, call: Call) -> Response:
        if self.token is not None and call.headers.get("private-token") != self.token:
            return _json(UNAUTHORIZED, 401)
        return self.with_faults(call, lambda: self._route(request, call), _json)

    def _route(self, request: Request, call: Call) -> Response:
        for method, pattern, handler in self.routes:
            m = re.fullmatch(pattern, call.path)
            if m and method == call.method:
                groups = {k: unquote(v) for k, v in m.groupdict().items()}
                if "p" in groups:
                    project = self._project(groups["p"])
                    if project is None:
                        return _json({"message": "404 Project Not Found"}, 404)
                    groups["p"] = str(project.id)
                with self.lock:
                    return handler(request, call, groups)
        return _json({"error": "404 Not Found"}, 404)

    def _project(self, ident: str) -> Project | None:
        if ident.isdigit():
            return self.projects.get(int(ident))
        return next((p for p in self.projects.values() if p.path == ident), None)

    def _page(self, request: Request, items: list[Any]) -> Response:
        per_page = min(int(request.query_params.get("per_page", 20)), 100)
        page = int(request.query_params.get("page", 1))
        last = max(1, -(-len(items) // per_page))
        base = str(request.url).split("?")[0]
        params = [(k, v) for k, v in request.query_params.multi_items() if k != "page"]
        links = []
        for rel, number in (("prev", page - 1), ("next", page + 1), ("first", 1), ("last", last)):
            if 1 <= number <= last and (rel in ("first", "last") or number != page):
                links.append(f'<{base}?{urlencode([*params, ("page", str(number))])}>; rel="{rel}"')
        headers = {"link": ", ".join(links), "x-page": str(page), "x-per-page": str(per_page),
                   "x-total": str(len(items)), "x-total-pages": str(last),
                   "x-next-page": str(page + 1) if page < last else "",
                   "x-prev-page": str(page - 1) if page > 1 else ""}
        return _json(items[(page - 1) * per_page: page * per_page], 200, headers)

    def _repo(self, g: dict[str, str]) -> Path:
        return self.projects[int(g["p"])].repo

    # -- endpoints ----------------------------------------------------------------------------
    def _user(self, request: Request, call: Call, g: dict[str, str]) -> Response:
        return _json(self.bot, 200)

    def _mr(self, request: Request, call: Call, g: dict[str, str]) -> Response:
        mr = self.mrs.get((int(g["p"]), int(g["iid"])))
        return _json(mr, 200) if mr is not None else _json(NOT_FOUND, 404)

    def _list_mrs(self, request: Request, call: Call, g: dict[str, str]) -> Response:
        q = request.query_params
        found = [mr for (p, _), mr in sorted(self.mrs.items()) if p == int(g["p"])
                 and mr["state"] == q.get("state", mr["state"])
                 and mr["target_branch"] == q.get("target_branch", mr["target_branch"])]
        return self._page(request, found)

    def _diffs(self, request: Request, call: Call, g: dict[str, str]) -> Response:
        mr = self.mrs.get((int(g["p"]), int(g["iid"])))
        if mr is None:
            return _json(NOT_FOUND, 404)
        refs = mr["diff_refs"]
        return self._page(request, _diffs(self._repo(g), refs["base_sha"], refs["head_sha"]))

    def _list_notes(self, request: Request, call: Call, g: dict[str, str]) -> Response:
        if (int(g["p"]), int(g["iid"])) not in self.mrs:
            return _json(NOT_FOUND, 404)
        return self._page(request, self.notes_of(int(g["p"]), int(g["iid"])))

    def _create_note(self, request: Request, call: Call, g: dict[str, str]) -> Response:
        body = (call.body or {}).get("body")
        if not isinstance(body, str) or not body:
            return _json({"message": "400 Bad request - Note body is missing"}, 400)
        if len(body) > 1_000_000:
            return _json({"message": {"note": ["is too long (maximum is 1000000 characters)"]}}, 400)
        note = self.add_user_note(int(g["p"]), int(g["iid"]), body, self.bot)
        return _json(note, 201)

    def _update_note(self, request: Request, call: Call, g: dict[str, str]) -> Response:
        for note in self.notes_of(int(g["p"]), int(g["iid"])):
            if note["id"] == int(g["id"]):
                if note["author"]["id"] != self.bot["id"]:
                    return _json({"message": "403 Forbidden"}, 403)
                note["body"] = (call.body or {}).get("body", note["body"])
                note["updated_at"] = _now()
                return _json(note, 200)
        return _json(NOT_FOUND, 404)

    def _list_discussions(self, request: Request, call: Call, g: dict[str, str]) -> Response:
        if (int(g["p"]), int(g["iid"])) not in self.mrs:
            return _json(NOT_FOUND, 404)
        return self._page(request, self.threads_of(int(g["p"]), int(g["iid"])))

    def _create_discussion(self, request: Request, call: Call, g: dict[str, str]) -> Response:
        mr = self.mrs.get((int(g["p"]), int(g["iid"])))
        if mr is None:
            return _json(NOT_FOUND, 404)
        body, position = (call.body or {}).get("body"), (call.body or {}).get("position")
        if not isinstance(body, str) or not body:
            return _json({"error": "body is missing"}, 400)
        if position is not None:
            why = self._bad_position(self._repo(g), mr, position)
            if why:
                return _json({"message": f"400 Bad request - Note {why}"}, 400)
        return _json(self.add_discussion(int(g["p"]), int(g["iid"]), body, self.bot, position), 201)

    @staticmethod
    def _bad_position(repo: Path, mr: dict[str, Any], position: Any) -> str:
        """Why GitLab would refuse ``position`` ("" when it is a line of the merge request's diff)."""
        if not isinstance(position, dict) or position.get("position_type") != "text":
            return "{:position=>[\"is invalid\"]}"
        refs = mr["diff_refs"]
        if any(position.get(k) != refs[k] for k in ("base_sha", "start_sha", "head_sha")):
            return "{:position=>[\"is incomplete\"]}"
        files = {new: (old, hunks) for _, old, new, hunks in changed_files(repo, refs["base_sha"],
                                                                          refs["head_sha"])}
        blank = '{:line_code=>["can\'t be blank", "must be a valid line code"]}'
        found = files.get(str(position.get("new_path")))
        if found is None or position.get("old_path") != found[0]:
            return blank
        new, old = position.get("new_line"), position.get("old_line")
        if (new, old) not in _diff_lines(found[1]):
            return blank
        return ""

    def _resolve_discussion(self, request: Request, call: Call, g: dict[str, str]) -> Response:
        """``PUT .../discussions/:id?resolved=true|false`` (the attribute is required)."""
        flag = request.query_params.get("resolved", (call.body or {}).get("resolved"))
        if str(flag).lower() not in ("true", "false"):
            return _json({"error": "resolved is missing"}, 400)
        for thread in self.threads_of(int(g["p"]), int(g["iid"])):
            if thread["id"] == g["id"]:
                done = str(flag).lower() == "true"
                for note in thread["notes"]:
                    if note.get("resolvable"):
                        note.update(resolved=done, resolved_by=self.bot if done else None,
                                    resolved_at=_now() if done else None)
                return _json(thread, 200)
        return _json(NOT_FOUND, 404)

    def _status(self, request: Request, call: Call, g: dict[str, str]) -> Response:
        body = call.body or {}
        state = body.get("state")
        if state not in ("pending", "running", "success", "failed", "canceled"):
            return _json({"message": "state does not have a valid value"}, 400)
        repo = self._repo(g)
        if _git_or_none(repo, "cat-file", "-e", f"{g['sha']}^{{commit}}") is None:
            return _json({"message": "404 Commit Not Found"}, 404)
        self._ids += 1
        status = {"id": self._ids, "sha": g["sha"], "ref": body.get("ref"), "status": state,
                  "name": body.get("name") or body.get("context") or "default",
                  "target_url": body.get("target_url"), "description": body.get("description"),
                  "created_at": _now(), "started_at": None, "finished_at": _now(), "allow_failure": False,
                  "coverage": None, "pipeline_id": 42, "author": self.bot, "project_id": int(g["p"])}
        self.statuses.append(status)
        return _json(status, 201)

    def _list_statuses(self, request: Request, call: Call, g: dict[str, str]) -> Response:
        """api/commits.md "List the statuses of a commit": filtered by ``ref`` and ``name``; without
        ``all`` only the latest per name and ref; ``order_by`` id (default) and ``sort`` asc (default)."""
        q = request.query_params
        found = [s for s in self.statuses if s["project_id"] == int(g["p"]) and s["sha"] == g["sha"]
                 and s["name"] == q.get("name", s["name"]) and s["ref"] == q.get("ref", s["ref"])]
        if q.get("all") not in ("true", "1"):
            latest: dict[tuple[str, str], dict[str, Any]] = {}
            for s in found:
                latest[(s["name"], s["ref"])] = s
            found = list(latest.values())
        found.sort(key=lambda s: int(s["id"]), reverse=q.get("sort", "asc") == "desc")
        return self._page(request, found)

    def _list_status_checks(self, request: Request, call: Call, g: dict[str, str]) -> Response:
        checks = self.status_checks.get(int(g["p"]))
        if checks is None:  # not GitLab Ultimate: the feature is not there
            return _json({"message": "403 Forbidden"}, 403)
        return self._page(request, checks)

    def _status_check_response(self, request: Request, call: Call, g: dict[str, str]) -> Response:
        body = call.body or {}
        if body.get("status") not in ("passed", "failed", "pending"):
            return _json({"message": "status does not have a valid value"}, 400)
        mr = self.mrs.get((int(g["p"]), int(g["iid"])))
        if mr is None or body.get("sha") != mr["sha"]:
            return _json({"message": "409 Conflict: the SHA is not the merge request's head"}, 409)
        self._ids += 1
        answer = {"id": self._ids, "merge_request": {"iid": mr["iid"]}, "external_status_check":
                  {"id": body.get("external_status_check_id")}, "status": body["status"], "sha": body["sha"]}
        self.status_check_responses.append(answer)
        return _json(answer, 201)

    def _member(self, request: Request, call: Call, g: dict[str, str]) -> Response:
        level = self.members.get((int(g["p"]), int(g["user"])))
        if level is None:
            return _json({"message": "404 Not found"}, 404)
        return _json({"id": int(g["user"]), "username": f"user{g['user']}", "state": "active",
                      "access_level": level, "membership_state": "active"}, 200)

    def _archive(self, request: Request, call: Call, g: dict[str, str]) -> Response:
        repo = self._repo(g)
        sha = request.query_params.get("sha", "HEAD")
        full = _git_or_none(repo, "rev-parse", "--verify", "--quiet", f"{sha}^{{commit}}")
        if full is None:
            return _json({"message": "404 File Not Found"}, 404)
        name = self.projects[int(g["p"])].path.rsplit("/", 1)[-1]
        prefix = f"{name}-{full}-{full}/"
        data = subprocess.run(["git", "-C", str(repo), "archive", "--format=tar.gz", f"--prefix={prefix}",
                               full],
                              check=True, capture_output=True).stdout
        return Response(data, 200, media_type="application/gzip",
                        headers={"content-disposition": f'attachment; filename="{prefix[:-1]}.tar.gz"'})

    def _compare(self, request: Request, call: Call, g: dict[str, str]) -> Response:
        repo, q = self._repo(g), request.query_params
        base, head = q.get("from", ""), q.get("to", "")
        b = _git_or_none(repo, "rev-parse", "--verify", "--quiet", f"{base}^{{commit}}")
        h = _git_or_none(repo, "rev-parse", "--verify", "--quiet", f"{head}^{{commit}}")
        if not b or not h:
            return _json({"message": "404 Ref Not Found"}, 404)
        if q.get("straight", "false") != "true":
            b = git(repo, "merge-base", b, h)
        commits = [_commit_json(repo, c) for c in git(repo, "rev-list", f"{b}..{h}").split()]
        return _json({"commit": _commit_json(repo, h), "commits": commits, "diffs": _diffs(repo, b, h),
                      "compare_timeout": False, "compare_same_ref": b == h,
                      "web_url": f"https://gitlab.example.com/-/compare/{b}...{h}"}, 200)

    def _merge_base(self, request: Request, call: Call, g: dict[str, str]) -> Response:
        refs = [v for k, v in request.query_params.multi_items() if k == "refs[]"]
        if len(refs) < 2:
            return _json({"message": "Provide at least 2 refs"}, 400)
        found = _git_or_none(self._repo(g), "merge-base", *refs)
        if not found:
            return _json({"message": "404 Merge Base Not Found"}, 404)
        return _json(_commit_json(self._repo(g), found), 200)

    def _commit(self, request: Request, call: Call, g: dict[str, str]) -> Response:
        repo = self._repo(g)
        sha = _git_or_none(repo, "rev-parse", "--verify", "--quiet", f"{g['ref']}^{{commit}}")
        if sha is None:
            return _json({"message": "404 Commit Not Found"}, 404)
        return _json(_commit_json(repo, sha), 200)

    def _branch(self, request: Request, call: Call, g: dict[str, str]) -> Response:
        repo = self._repo(g)
        sha = _git_or_none(repo, "rev-parse", "--verify", "--quiet", f"refs/heads/{g['branch']}")
        if sha is None:
            return _json({"message": "404 Branch Not Found"}, 404)
        return _json({"name": g["branch"], "commit": _commit_json(repo, sha), "merged": False,
                      "protected": g["branch"] == "main", "default": g["branch"] == "main",
                      "developers_can_push": False, "developers_can_merge": False, "can_push": True}, 200)


def _commit_json(repo: Path, sha: str) -> dict[str, Any]:
    parents = git(repo, "rev-list", "--parents", "-n", "1", sha).split()[1:]
    title = git(repo, "log", "-1", "--format=%s", sha)
    return {"id": sha, "short_id": sha[:8], "title": title, "message": title, "parent_ids": parents,
            "author_name": "t", "author_email": "t@example.com", "created_at": "2026-12-01T09:00:00.000Z",
            "committed_date": "2026-12-01T09:00:00.000Z"}


def _diffs(repo: Path, base: str, head: str) -> list[dict[str, Any]]:
    """GitLab's diff objects (old_path, new_path, new_file, renamed_file, deleted_file, diff)."""
    return [{"old_path": old, "new_path": new, "a_mode": "100644", "b_mode": "100644",
             "new_file": letter == "A", "renamed_file": letter == "R", "deleted_file": letter == "D",
             "generated_file": False, "diff": hunks}
            for letter, old, new, hunks in changed_files(repo, base, head)]


def _diff_lines(hunks: str) -> set[tuple[int | None, int | None]]:
    """Every (new_line, old_line) a diff note may name in ``hunks``: an added line (n, None), a
    removed one (None, o), an unchanged one (n, o)."""
    out: set[tuple[int | None, int | None]] = set()
    old = new = 0
    for text in hunks.splitlines():
        m = re.match(r"^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@", text)
        if m:
            old, new = int(m[1]), int(m[2])
        elif text.startswith("+"):
            out.add((new, None))
            new += 1
        elif text.startswith("-"):
            out.add((None, old))
            old += 1
        elif text.startswith(" "):
            out.add((new, old))
            old, new = old + 1, new + 1
    return out


def _json(data: Any, status: int, headers: dict[str, str] | None = None) -> Response:
    return Response(json.dumps(data).encode(), status, media_type="application/json",
                    headers={"ratelimit-limit": "2000", "ratelimit-remaining": "1999", **(headers or {})})
