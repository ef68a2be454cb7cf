"""A revision of the repository as a throw-away folder: what the renderers read, never the work tree.

Two ways in: ``git archive REV`` of a local clone (the CLI and the Action) and a GitHub
tarball (the webhook service, no clone on disk). Both go through one extractor that keeps
only regular files, folders and symlinks that stay inside the snapshot: an absolute or
escaping symlink, a device node or a path with ``..`` is left out and recorded, so a render
that needs it fails rather than reading the host.

A revision is also bounded in shape: at most ``MAX_ENTRIES`` files, folders and symlinks, none
nested more than ``MAX_DEPTH`` levels deep; past either the whole revision is refused
(:class:`TreeLimitError`, naming the path), which holds the change. Python 3.11's ``os.walk`` and
``shutil.rmtree`` recurse once per level, so an 1 100-deep folder ended the run in a RecursionError
and left the snapshot in the temp folder: here the walk (:func:`walk_files`) and the removal
(:func:`remove_tree`) keep their own stack, and the snapshot is removed whatever happens.
"""

from __future__ import annotations

import io
import os
import subprocess
import tarfile
import tempfile
import threading
from collections.abc import Callable, Collection, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import IO

DEFAULT_MAX_BYTES = 512 * 1024 * 1024  # what one snapshot may unpack to
# A large monorepo holds tens of thousands of files, a few tens of levels deep at most.
MAX_ENTRIES = 100_000
MAX_DEPTH = 256
SKIP_DIRS = frozenset({".git"})


class SnapshotError(Exception):
    """The revision could not be laid out (unknown revision, archive too large, not a tar)."""


class TreeLimitError(SnapshotError):
    """A tree nested too deep or holding too many entries; the message names where."""


@dataclass(slots=True)
class Snapshot:
    """An unpacked revision. ``refused`` maps a repository path to why it was left out."""

    root: str
    revision: str
    refused: dict[str, str] = field(default_factory=dict)

    def path(self, rel: str) -> str:
        return os.path.join(self.root, rel) if rel not in ("", ".") else self.root


def _extract(stream: IO[bytes], dest: str, *, strip_first: bool, max_bytes: int,
             max_entries: int = MAX_ENTRIES, max_depth: int = MAX_DEPTH) -> dict[str, str]:
    refused: dict[str, str] = {}
    total = 0
    entries = 0
    real_dest = os.path.realpath(dest)
    try:
        with tarfile.open(fileobj=stream, mode="r|*") as tar:
            for member in tar:
                name = member.name
                if strip_first:
                    name = name.split("/", 1)[1] if "/" in name else ""
                    if not name:
                        continue
                name = name.rstrip("/")
                entries += 1
                if entries > max_entries:
                    raise TreeLimitError(f"the revision holds more than {max_entries} files, folders and "
                                         "symlinks")
                if name.count("/") >= max_depth:
                    raise TreeLimitError(too_deep(name, max_depth))
                if member.isreg():
                    total += member.size
                    if total > max_bytes:
                        raise SnapshotError(f"the revision unpacks to more than {max_bytes} bytes")
                if not (member.isreg() or member.isdir() or member.issym()):
                    if not (member.type in (tarfile.XHDTYPE, tarfile.XGLTYPE) or member.name.endswith(
                            "pax_global_header")):
                        refused[name] = "not a regular file, folder or symlink"
                    continue
                member.name = name
                try:
                    tarfile.data_filter(member, real_dest)
                except tarfile.FilterError as exc:
                    refused[name] = _why(exc)
                    continue
                try:
                    tar.extract(member, dest, set_attrs=False, filter="fully_trusted")
                except OSError as exc:  # a name too long for this machine, no space left
                    why = exc.strerror or str(exc)
                    raise SnapshotError(f"{shorten(name)}: cannot be unpacked: {why}") from None
    except tarfile.TarError as exc:
        raise SnapshotError(f"not a readable tar archive: {exc}") from None
    # A symlink may only become escaping through another symlink: check the final targets too.
    for top, dirs, files in walk_files(dest, skip=(), max_depth=max_depth):
        for name in dirs + files:
            full = os.path.join(top, name)
            if os.path.islink(full):
                target = os.path.realpath(full)
                if target != real_dest and not target.startswith(real_dest + os.sep):
                    rel = os.path.relpath(full, dest)
                    refused[rel] = "a symlink that leaves the repository"
                    os.unlink(full)
    return refused


def shorten(path: str, limit: int = 160) -> str:
    """A path fit for a message: a deep one keeps its start and its end."""
    return path if len(path) <= limit else f"{path[:limit // 2]}…{path[-(limit // 2):]}"


def too_deep(path: str, max_depth: int) -> str:
    return f"{shorten(path)}: nested more than {max_depth} levels deep (the limit)"


def walk_files(top: str, *, skip: Collection[str] = SKIP_DIRS, max_depth: int = MAX_DEPTH
               ) -> Iterator[tuple[str, list[str], list[str]]]:
    """``os.walk(top)`` without recursion: (folder, its folders, its files) top-down, names sorted.

    As with ``os.walk``, the caller may prune the folder list in place to skip folders; symlinks
    to folders are listed with the folders but never entered; a folder that cannot be read is
    skipped. Folders named in ``skip`` (``.git``) are left out. A folder more than ``max_depth``
    levels below ``top`` raises :class:`TreeLimitError` naming it (relative to ``top``), where
    ``os.walk`` would exhaust Python's recursion limit near 1 000 levels.
    """
    stack: list[tuple[str, int]] = [(top, 0)]
    while stack:
        folder, depth = stack.pop()
        try:
            with os.scandir(folder) as listing:
                entries = list(listing)
        except OSError:
            continue
        dirs: list[str] = []
        files: list[str] = []
        for entry in entries:
            try:
                is_dir = entry.is_dir()
            except OSError:
                is_dir = False
            if not is_dir:
                files.append(entry.name)
            elif entry.name not in skip:
                dirs.append(entry.name)
        dirs.sort()
        files.sort()
        yield folder, dirs, files
        for name in reversed(dirs):  # pushed in reverse: popped, and so walked, in order
            path = os.path.join(folder, name)
            if os.path.islink(path):
                continue
            if depth + 1 > max_depth:
                raise TreeLimitError(too_deep(os.path.relpath(path, top), max_depth))
            stack.append((path, depth + 1))


def check_tree(top: str, *, max_entries: int = MAX_ENTRIES, max_depth: int = MAX_DEPTH) -> None:
    """Refuse a folder tree (not a snapshot: a folder given on the command line) deeper than
    ``max_depth`` or holding more than ``max_entries`` files and folders, with
    :class:`TreeLimitError`."""
    count = 0
    for _, dirs, files in walk_files(top, max_depth=max_depth):
        count += len(dirs) + len(files)
        if count > max_entries:
            raise TreeLimitError(f"{top} holds more than {max_entries} files and folders")


def remove_tree(top: str) -> None:
    """``shutil.rmtree(top, ignore_errors=True)`` with its own stack instead of recursion.

    Every folder is opened relative to its parent's descriptor and nothing is followed, so neither
    a symlink nor a path longer than the system allows (a deep tree of long names) stops it; it
    keeps one descriptor open per level of the folder being emptied. Errors are ignored: what
    cannot be removed stays, as with ``ignore_errors``.
    """
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
    # ("enter", parent descriptor, name): empty that folder; ("leave", ...): remove it, now empty.
    stack: list[tuple[bool, int | None, str, int | None]] = [(True, None, top, None)]
    try:
        while stack:
            enter, parent, name, fd = stack.pop()
            if not enter:
                assert fd is not None
                os.close(fd)
                _ignore(os.rmdir, name, dir_fd=parent)
                continue
            try:
                fd = os.open(name, flags, dir_fd=parent)
            except OSError:  # gone, not a folder, or a symlink: unlink what is there
                _ignore(os.unlink, name, dir_fd=parent)
                continue
            stack.append((False, parent, name, fd))
            for entry in _entries(fd):
                if entry.is_dir(follow_symlinks=False):
                    stack.append((True, fd, entry.name, None))
                else:
                    _ignore(os.unlink, entry.name, dir_fd=fd)
    finally:
        for enter, _, _, fd in stack:  # only after an unexpected error: no descriptor leaks
            if not enter and fd is not None:
                os.close(fd)


def _entries(fd: int) -> list[os.DirEntry[str]]:
    try:
        with os.scandir(fd) as listing:
            return list(listing)
    except OSError:
        return []


def _ignore(call: Callable[..., object], name: str, *, dir_fd: int | None) -> None:
    try:
        call(name, dir_fd=dir_fd)
    except OSError:
        pass


def _why(exc: tarfile.FilterError) -> str:
    if isinstance(exc, (tarfile.AbsoluteLinkError, tarfile.LinkOutsideDestinationError)):
        return "a symlink that leaves the repository"
    if isinstance(exc, (tarfile.AbsolutePathError, tarfile.OutsideDestinationError)):
        return "a path outside the repository"
    return str(exc)


@contextmanager
def git_snapshot(repo: str, revision: str, *, max_bytes: int = DEFAULT_MAX_BYTES,
                 timeout: float = 300.0, max_entries: int = MAX_ENTRIES) -> Iterator[Snapshot]:
    """``git archive`` of ``revision`` unpacked into a temp folder, removed on exit."""
    dest = tempfile.mkdtemp(prefix="rsi-snap-")
    try:
        try:
            proc = subprocess.Popen(["git", "-C", repo, "archive", "--format=tar", revision],
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=git_env())
        except FileNotFoundError:
            raise SnapshotError("git is not installed") from None
        err = bytearray()

        def drain() -> None:
            assert proc.stderr is not None
            err.extend(proc.stderr.read())

        reader = threading.Thread(target=drain, daemon=True)
        reader.start()
        timer = threading.Timer(timeout, proc.kill)
        timer.start()
        read_all = False
        try:
            assert proc.stdout is not None
            refused = _extract(proc.stdout, dest, strip_first=False, max_bytes=max_bytes,
                               max_entries=max_entries)
            # tarfile stops at the end-of-archive blocks, while git may still be writing the
            # record's zero padding: read it (bounded) so git exits on its own, rather than being
            # killed and the revision refused for an "exit code -9" (seen under load).
            proc.stdout.read(1 << 20)
            read_all = True
        finally:
            timer.cancel()
            try:  # git ends on its own once its output is read; after an error it is killed
                proc.wait(timeout=5 if read_all else 0)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            reader.join(timeout=5)
        if proc.returncode != 0:
            message = err.decode("utf-8", errors="replace").strip()
            raise SnapshotError(f"git archive {revision}: {message or f'exit code {proc.returncode}'}")
        yield Snapshot(dest, revision, refused)
    finally:
        remove_tree(dest)


def git_env(environ: dict[str, str] | None = None) -> dict[str, str]:
    """``git archive``'s environment: PATH, where git finds its configuration (``safe.directory``
    included: HOME, ``GIT_CONFIG*``) and the locale. Nothing else of ours (``GITHUB_TOKEN``,
    ``RAYSERVICE_IMPACT_*``, cloud credentials) reaches it."""
    environ = dict(os.environ) if environ is None else environ
    keep = ("PATH", "HOME", "USER", "LOGNAME", "LANG", "LANGUAGE", "TZ", "TMPDIR", "XDG_CONFIG_HOME",
            "GIT_CEILING_DIRECTORIES")
    return {k: v for k, v in environ.items() if k in keep or k.startswith(("LC_", "GIT_CONFIG"))}


@contextmanager
def tarball_snapshot(data: bytes, revision: str, *, max_bytes: int = DEFAULT_MAX_BYTES,
                     max_entries: int = MAX_ENTRIES) -> Iterator[Snapshot]:
    """A GitHub ``tarball`` answer (gzip, one top-level folder) unpacked, removed on exit."""
    dest = tempfile.mkdtemp(prefix="rsi-snap-")
    try:
        refused = _extract(io.BytesIO(data), dest, strip_first=True, max_bytes=max_bytes,
                           max_entries=max_entries)
        yield Snapshot(dest, revision, refused)
    finally:
        remove_tree(dest)
