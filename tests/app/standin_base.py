"""What the forge stand-ins (tests/app/github_standin.py, tests/app/gitlab_standin.py) share: the
call log, fault injection and the recording of each answer's status. Each stand-in keeps its own
routes, authentication and answer shapes."""

from __future__ import annotations

import os
import re
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

Respond = Callable[[Any, int, "dict[str, str] | None"], Response]   # (data, status, headers) -> answer


@dataclass
class Call:
    method: str
    path: str            # under the API root (GitHub: without a GHES prefix; GitLab: under /api/v4, raw)
    query: Any           # GitHub: dict; GitLab: list of (name, value) pairs (``refs[]`` repeats)
    headers: dict[str, str]
    body: Any
    status: int = 0
    at: float = field(default_factory=time.monotonic)


@dataclass
class Fault:
    method: str
    pattern: re.Pattern[str]
    status: int
    headers: dict[str, str]
    body: Any
    times: int
    after_commit: bool = False  # do the work, then answer the fault (a 5xx after the forge wrote)


class StandInBase:
    """The call log (``calls``), the faults (``fail``) and the lock every handler runs under."""

    def __init__(self) -> None:
        self.calls: list[Call] = []
        self.faults: list[Fault] = []
        self.lock = threading.Lock()

    def add_fault(self, method: str, pattern: str, status: int, body: Any, *, times: int,
                  headers: dict[str, str] | None, after_commit: bool) -> None:
        """The next ``times`` calls matching ``method`` and the path regex answer ``status``
        (``after_commit``: the call takes effect first, as when the forge writes, then times out)."""
        self.faults.append(Fault(method, re.compile(pattern), status, headers or {}, body, times,
                                 after_commit))

    def calls_to(self, method: str, pattern: str) -> list[Call]:
        rx = re.compile(pattern)
        return [c for c in self.calls if c.method == method and rx.search(c.path)]

    def record(self, request: Request, call: Call) -> Response:
        """Log ``call``, answer it (:meth:`_answer`) and note the answer's status."""
        with self.lock:
            self.calls.append(call)
        resp = self._answer(request, call)
        call.status = resp.status_code
        return resp

    def _answer(self, request: Request, call: Call) -> Response:
        raise NotImplementedError

    def with_faults(self, call: Call, route: Callable[[], Response], respond: Respond) -> Response:
        """The first matching fault's answer, else ``route()``'s; an ``after_commit`` fault runs
        ``route()`` first and then answers the fault."""
        committed: Fault | None = None
        with self.lock:
            for fault in self.faults:
                if fault.times > 0 and fault.method == call.method and fault.pattern.search(call.path):
                    fault.times -= 1
                    if not fault.after_commit:
                        return respond(fault.body, fault.status, fault.headers)
                    committed = fault
                    break
        answer = route()
        if committed is not None:
            return respond(committed.body, committed.status, committed.headers)
        return answer


def wait_for(predicate: Callable[[], Any], timeout: float = 10.0, what: str = "condition") -> Any:
    """``predicate()``'s first true value, polled every 10 ms; AssertionError after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.01)


def settle(standin: StandInBase, quiet: float = 0.2) -> None:
    """Wait until the stand-in has seen no call for ``quiet`` seconds."""
    last = -1
    while True:
        time.sleep(quiet)
        if len(standin.calls) == last:
            return
        last = len(standin.calls)


def git_env(name: str, email: str) -> dict[str, str]:
    """The environment for a stand-in's own commits (merges it builds), authored as ``name``."""
    return {**os.environ, "GIT_AUTHOR_NAME": name, "GIT_AUTHOR_EMAIL": email,
            "GIT_COMMITTER_NAME": name, "GIT_COMMITTER_EMAIL": email}


def run_git(env: dict[str, str], path: Path, *args: str) -> str:
    """``git -C path args`` (its stripped output); CalledProcessError when it fails."""
    return subprocess.run(["git", "-C", str(path), *args], check=True, capture_output=True, text=True,
                          env=env).stdout.strip()


def git_or_none(env: dict[str, str], path: Path, *args: str) -> str | None:
    """``git -C path args`` (its stripped output), or None when it fails."""
    done = subprocess.run(["git", "-C", str(path), *args], capture_output=True, text=True, env=env)
    return done.stdout.strip() if done.returncode == 0 else None


def changed_files(repo: Path, base: str, head: str) -> list[tuple[str, str, str, str]]:
    """(status letter, old path, new path, hunks) of every file ``git diff -M base head`` lists;
    ``hunks`` is the file's unified diff from its first ``@@`` line ("" for a binary file)."""
    out = subprocess.run(["git", "-C", str(repo), "diff", "--name-status", "-z", "-M", base, head],
                         check=True, capture_output=True).stdout.decode()
    fields, files, i = out.split("\0"), [], 0
    while i < len(fields) and fields[i]:
        letter = fields[i][0]
        if letter in "RC":
            old, new, i = fields[i + 1], fields[i + 2], i + 3
        else:
            old = new = fields[i + 1]
            i += 2
        diff = subprocess.run(["git", "-C", str(repo), "diff", "--no-color", "-M", base, head, "--", old,
                               new], check=True, capture_output=True).stdout.decode(errors="replace")
        hunks = diff[("\n" + diff).index("\n@@ "):] if "\n@@ " in "\n" + diff else ""
        files.append((letter, old, new, hunks))
    return files
