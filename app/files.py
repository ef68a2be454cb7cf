"""Reading user files (manifests, policy, CRD) with errors that name the file."""

from __future__ import annotations

import os
import stat
import sys

from diffing.errors import ManifestError, PolicyError
from diffing.hints import Any
from diffing.kube.loading import load_value
from diffing.kube.scope import decode

MAX_FILE_BYTES = 32 * 1024 * 1024


class InputFileError(Exception):
    """A file that cannot be read; the message names it."""


def read_text(path: str) -> str:
    """A manifest file's text; ``-`` is standard input and ``/dev/null`` an empty text."""
    try:
        if path == "-":
            data = sys.stdin.buffer.read(MAX_FILE_BYTES + 1)
        elif path == os.devnull:
            data = b""
        else:
            # Regular files only: a FIFO or a device would block or never end (use '-' to pipe).
            # O_NONBLOCK keeps the open itself from waiting for a FIFO's writer.
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
            with os.fdopen(fd, "rb") as fh:
                if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
                    raise InputFileError(f"{path}: not a regular file (pipe it to '-' instead)")
                data = fh.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        raise InputFileError(f"{path}: cannot read: {exc.strerror or exc}") from None
    if len(data) > MAX_FILE_BYTES:
        raise InputFileError(f"{path}: larger than {MAX_FILE_BYTES} bytes")
    try:
        return decode(data)  # byte-order marks as kubectl reads them: UTF-16 is a manifest too
    except ManifestError as exc:
        raise InputFileError(f"{path}: {exc.reason}") from None


def read_policy(path: str, *, variable: str = "--policy") -> dict[str, Any] | None:
    text = read_text(path)
    try:
        value = load_value(text, source=path)
    except ManifestError as exc:
        raise InputFileError(f"{variable}: {exc.message}") from None
    if value is None:
        return None
    if not isinstance(value, dict):
        raise InputFileError(f"{variable}: {path}: the policy must be a YAML mapping")
    try:
        from diffing.policy import Policy

        Policy.from_mapping(value)
    except PolicyError as exc:
        raise InputFileError(f"{variable}: {path}: {exc}") from None
    return value
