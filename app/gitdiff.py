"""The files a git range changed, as (path, text) pairs for both sides."""

from __future__ import annotations

import subprocess
from collections.abc import Iterable, Sequence

from diffing.kube.scope import RAY_GROUP, decode, may_hold

# What kubectl, kustomize and Argo CD read as manifest files.
DEFAULT_PATHSPECS = ("*.yaml", "*.yml", "*.json")


Texts = list[tuple[str, str]]

SUBMODULE_MOVED = ("the change moves this submodule: Argo CD deploys the submodule's content, which is "
                   "not in this repository, so what it deploys is unknown")


def kuberay_texts(files: Iterable[tuple[str, bytes, str, bytes]]) -> tuple[Texts, Texts]:
    """(before, after) ``(source, text)`` lists from ``(before source, before bytes, after source,
    after bytes)`` per changed file, keeping the files that may hold a KubeRay object on either
    side. The test is exact (:func:`diffing.kube.scope.may_hold`), never a pattern on the ``kind:``
    line: the core then parses what is kept, so the parsed kinds decide. A kept file that cannot
    be decoded is an input error naming it, never an empty (deleted) side."""
    befores: Texts = []
    afters: Texts = []
    for b_source, b, a_source, a in files:
        if not (may_hold(b, RAY_GROUP) or may_hold(a, RAY_GROUP)):
            continue
        if b:
            befores.append((b_source, decode(b, b_source)))
        if a:
            afters.append((a_source, decode(a, a_source)))
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


def resolve_range(repo: str, base: str, head: str | None = None) -> tuple[str, str]:
    """(base, head) to compare, from the ``git`` command's arguments, as ``git diff`` reads them:

    * ``BASE HEAD`` and ``BASE..HEAD``: the two revisions as they are;
    * ``BASE...HEAD`` (one argument): the merge base of BASE and HEAD (``git merge-base``) against
      HEAD, i.e. what HEAD changed since it branched off, whatever BASE did since.

    An empty side of a range is ``HEAD``, as for git. Git refuses ``..`` inside ref names, so the
    dots can only be the range's."""
    if head is not None:
        if ".." in base:
            raise GitError(f"{base!r} is a range already: give BASE HEAD, or one BASE..HEAD / BASE...HEAD")
        return base, head
    if "..." in base:
        left, _, right = base.partition("...")
        left, right = left or "HEAD", right or "HEAD"
        for rev in (left, right):
            _verify(repo, rev)
        try:
            merge_base = _git(repo, "merge-base", left, right).decode().strip()
        except GitError:
            raise GitError(f"{left} and {right} have no merge base in {repo}{_shallow_note(repo)}") from None
        return merge_base, right
    if ".." in base:
        left, _, right = base.partition("..")
        return left or "HEAD", right or "HEAD"
    raise GitError(f"one revision {base!r}: give BASE HEAD, BASE..HEAD or BASE...HEAD")


def _verify(repo: str, rev: str) -> None:
    try:
        _git(repo, "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}")
    except GitError:
        raise GitError(f"unknown revision {rev!r} in {repo}{_shallow_note(repo)}") from None


SHALLOW = ("; this is a shallow clone, which lacks the commits to compare: fetch the whole history, "
           "with `fetch-depth: 0` on actions/checkout (or `git fetch --unshallow` here)")


def _shallow_note(repo: str) -> str:
    """Why a revision or merge base may be missing: a shallow clone (actions/checkout's default
    depth of 1) has only the last commits."""
    try:
        shallow = _git(repo, "rev-parse", "--is-shallow-repository").decode().strip() == "true"
    except GitError:
        return ""
    return SHALLOW if shallow else ""


def _show(repo: str, rev: str, path: str) -> bytes:
    return _git(repo, "show", f"{rev}:{path}")


def _name_status(repo: str, base: str, head: str, pathspecs: Sequence[str]) -> list[tuple[str, str, str]]:
    """(status letter, old path, new path) of every file changed from ``base`` to ``head``."""
    for rev in (base, head):
        _verify(repo, rev)
    out = _git(repo, "diff", "--name-status", "-z", "-M", base, head, "--", *pathspecs)
    fields = out.decode("utf-8", errors="surrogateescape").split("\0")
    entries: list[tuple[str, str, str]] = []
    i = 0
    while i < len(fields) and fields[i]:
        status = fields[i]
        if status[0] in "RC":
            old, new = fields[i + 1], fields[i + 2]
            i += 3
        else:
            old = new = fields[i + 1]
            i += 2
        entries.append((status[0], old, new))
    return entries


def changed_paths(repo: str, base: str, head: str, pathspecs: Sequence[str] | None = None) -> set[str]:
    """Every path the range touched (both names of a rename); all files unless ``pathspecs``."""
    return {p for _, old, new in _name_status(repo, base, head, pathspecs or ()) for p in (old, new)}


def remote_url(repo: str) -> str | None:
    """The ``origin`` remote's URL, to tell this repository's Argo CD Applications from others'."""
    try:
        return _git(repo, "remote", "get-url", "origin").decode("utf-8", errors="replace").strip() or None
    except GitError:
        return None


def changed_manifests(repo: str, base: str, head: str, pathspecs: Sequence[str] | None = None
                      ) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """Before/after texts of every changed YAML file that holds a RayService, RayCluster or RayJob
    on either side (``--render none``: files as they are).

    Renames are followed (``-M``): the before side is read from the old path. Sources are
    named ``REV:path`` so errors point at the revision and file.
    """
    files: list[tuple[str, bytes, str, bytes]] = []
    for status, old, new in _name_status(repo, base, head, pathspecs or DEFAULT_PATHSPECS):
        b = b"" if status == "A" else _show(repo, base, old)
        a = b"" if status == "D" else _show(repo, head, new)
        files.append((f"{base}:{old}", b, f"{head}:{new}", a))
    return kuberay_texts(files)


def changed_submodules(repo: str, base: str, head: str) -> list[str]:
    """Paths of the submodules (gitlinks, mode 160000) the range adds, moves or removes."""
    out = _git(repo, "diff", "--raw", "-z", "--no-renames", base, head)
    fields = out.decode("utf-8", errors="surrogateescape").split("\0")
    paths = []
    for meta, path in zip(fields[0::2], fields[1::2], strict=False):
        modes = meta.lstrip(":").split(" ")[:2]
        if "160000" in modes:
            paths.append(path)
    return paths
