"""One strict JSON reader for everything that comes from outside (request bodies, Argo CD states).

Python's ``json`` is lenient where JSON is not: it detects UTF-16/32 in bytes, accepts ``NaN``
and ``Infinity``, and fails with a plain ``ValueError`` (not a ``JSONDecodeError``) on an integer
longer than the interpreter's 4 300-digit conversion limit. Each of those became a 500 or a
silently accepted body. Here every one is a :class:`JSONInputError` that says what and where.
"""

from __future__ import annotations

import json
from typing import Any

MAX_INT_DIGITS = 1000  # far more than any Kubernetes integer (int64 has 19 digits)


class JSONInputError(ValueError):
    """Input that is not strict UTF-8 JSON; the message says what and where."""


def _constant(name: str) -> Any:
    raise JSONInputError(f"{name} is not JSON")


def _int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_INT_DIGITS:
        raise JSONInputError(f"a number with {len(text.lstrip('-'))} digits (at most {MAX_INT_DIGITS})")
    return int(text)


def loads(data: bytes | str, what: str = "the body") -> Any:
    """Parse ``data`` as strict JSON (UTF-8 when bytes); raise :class:`JSONInputError`."""
    if isinstance(data, (bytes, bytearray)):
        try:
            data = bytes(data).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise JSONInputError(f"{what} is not UTF-8 (byte {exc.start})") from None
    try:
        return json.loads(data, parse_constant=_constant, parse_int=_int)
    except JSONInputError as exc:
        raise JSONInputError(f"{what}: {exc}") from None
    except json.JSONDecodeError as exc:
        where = f"line {exc.lineno} column {exc.colno}"
        raise JSONInputError(f"{what} is not JSON: {exc.msg} at {where}") from None
    except RecursionError:
        raise JSONInputError(f"{what} is nested too deeply to read") from None
    except ValueError as exc:  # e.g. a float literal Python cannot hold
        raise JSONInputError(f"{what} is not JSON this service can read: {exc}") from None
