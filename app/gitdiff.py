"""The files a git range changed, as (path, text) pairs for both sides."""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterable, Sequence

DEFAULT_PATHSPECS = ("*.yaml", "*.yml")
RAYSERVICE_HINT = re.compile(r"^\s*kind:\s*[\"']?RayService[\"']?\s*$", re.MULTILINE)


Texts = list[tuple[str, str]]


def rayservice_texts(files: Iterable[tuple[str, str, str, str]]) -> tuple[Texts, Texts]:
    """(before, after) ``(source, text)`` lists from ``(before source, before text, after source,
    after text)`` per changed file, keeping only files with a RayService on either side (a cheap
    text test: other files are never parsed, so a broken Helm template elsewhere is no error)."""
    befores: Texts = []
    afters: Texts = []
    for b_source, b, a_source, a in files:
        if not (RAYSERVICE_HINT.search(b) or RAYSERVICE_HINT.search(a)):
            continue
        if b:
            befores.append((b_source, b))
        if a:
            afters.append((a_source, a))
    return befores, afters


class GitError(Exception):
    """git failed (unknown revision, not a repository...)."""


def _git(repo: str, *args: str) -> bytes:
    try:
        proc = subprocess.run(["git", "-C", repo, *args], capture_output=True, timeout=120, check=False)
    except FileNotFoundError:
        raise GitError("git is not installed") from None
    except subprocess.TimeoutExpired:
        raise GitError(f"git {' '.join(args[:2])} timed out") from None
    if proc.returncode != 0:
        raise GitError(f"git {' '.join(args[:2])}: {proc.stderr.decode(errors='replace').strip()}")
    return proc.stdout


def _show(repo: str, rev: str, path: str) -> str:
    data = _git(repo, "show", f"{rev}:{path}")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return ""  # not a text manifest


def changed_manifests(repo: str, base: str, head: str, pathspecs: Sequence[str] | None = None
                      ) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """Before/after texts of every changed YAML file that holds a RayService on either side.

    Renames are followed (``-M``): the before side is read from the old path. Sources are
    named ``REV:path`` so errors point at the revision and file.
    """
    for rev in (base, head):
        _git(repo, "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}")
    out = _git(repo, "diff", "--name-status", "-z", "-M", base, head, "--",
               *(pathspecs or DEFAULT_PATHSPECS))
    fields = out.decode("utf-8", errors="replace").split("\0")
    files: list[tuple[str, str, str, str]] = []
    i = 0
    while i < len(fields) and fields[i]:
        status = fields[i]
        if status[0] in "RC":
            old, new = fields[i + 1], fields[i + 2]
            i += 3
        else:
            old = new = fields[i + 1]
            i += 2
        b = "" if status[0] == "A" else _show(repo, base, old)
        a = "" if status[0] == "D" else _show(repo, head, new)
        files.append((f"{base}:{old}", b, f"{head}:{new}", a))
    return rayservice_texts(files)
