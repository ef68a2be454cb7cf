"""A revision of the repository as a throw-away folder: what the renderers read, never the work tree.

Two ways in: ``git archive REV`` of a local clone (the CLI and the Action) and a GitHub
tarball (the webhook service, no clone on disk). Both go through one extractor that keeps
only regular files, folders and symlinks that stay inside the snapshot: an absolute or
escaping symlink, a device node or a path with ``..`` is left out and recorded, so a render
that needs it fails rather than reading the host.
"""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import tarfile
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import IO

DEFAULT_MAX_BYTES = 512 * 1024 * 1024  # what one snapshot may unpack to


class SnapshotError(Exception):
    """The revision could not be laid out (unknown revision, archive too large, not a tar)."""


@dataclass(slots=True)
class Snapshot:
    """An unpacked revision. ``refused`` maps a repository path to why it was left out."""

    root: str
    revision: str
    refused: dict[str, str] = field(default_factory=dict)

    def path(self, rel: str) -> str:
        return os.path.join(self.root, rel) if rel not in ("", ".") else self.root


def _extract(stream: IO[bytes], dest: str, *, strip_first: bool, max_bytes: int) -> dict[str, str]:
    refused: dict[str, str] = {}
    total = 0
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
                tar.extract(member, dest, set_attrs=False, filter="fully_trusted")
    except tarfile.TarError as exc:
        raise SnapshotError(f"not a readable tar archive: {exc}") from None
    # A symlink may only become escaping through another symlink: check the final targets too.
    for top, dirs, files in os.walk(dest):
        for name in dirs + files:
            full = os.path.join(top, name)
            if os.path.islink(full):
                target = os.path.realpath(full)
                if target != real_dest and not target.startswith(real_dest + os.sep):
                    rel = os.path.relpath(full, dest)
                    refused[rel] = "a symlink that leaves the repository"
                    os.unlink(full)
    return refused


def _why(exc: tarfile.FilterError) -> str:
    if isinstance(exc, (tarfile.AbsoluteLinkError, tarfile.LinkOutsideDestinationError)):
        return "a symlink that leaves the repository"
    if isinstance(exc, (tarfile.AbsolutePathError, tarfile.OutsideDestinationError)):
        return "a path outside the repository"
    return str(exc)


@contextmanager
def git_snapshot(repo: str, revision: str, *, max_bytes: int = DEFAULT_MAX_BYTES,
                 timeout: float = 300.0) -> Iterator[Snapshot]:
    """``git archive`` of ``revision`` unpacked into a temp folder, removed on exit."""
    dest = tempfile.mkdtemp(prefix="rsi-snap-")
    try:
        try:
            proc = subprocess.Popen(["git", "-C", repo, "archive", "--format=tar", revision],
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE)
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
        try:
            assert proc.stdout is not None
            refused = _extract(proc.stdout, dest, strip_first=False, max_bytes=max_bytes)
        finally:
            timer.cancel()
            if proc.poll() is None:
                proc.kill()
            proc.wait()
            reader.join(timeout=5)
        if proc.returncode != 0:
            message = err.decode("utf-8", errors="replace").strip()
            raise SnapshotError(f"git archive {revision}: {message or f'exit code {proc.returncode}'}")
        yield Snapshot(dest, revision, refused)
    finally:
        shutil.rmtree(dest, ignore_errors=True)


@contextmanager
def tarball_snapshot(data: bytes, revision: str, *, max_bytes: int = DEFAULT_MAX_BYTES
                     ) -> Iterator[Snapshot]:
    """A GitHub ``tarball`` answer (gzip, one top-level folder) unpacked, removed on exit."""
    dest = tempfile.mkdtemp(prefix="rsi-snap-")
    try:
        refused = _extract(io.BytesIO(data), dest, strip_first=True, max_bytes=max_bytes)
        yield Snapshot(dest, revision, refused)
    finally:
        shutil.rmtree(dest, ignore_errors=True)
