"""The typing names the core's annotations use, without importing :mod:`typing` at run time.

Every module of the core has ``from __future__ import annotations``: its annotations are strings
that nothing evaluates, so ``Any`` is only ever read by mypy. ``import typing`` alone is about a
twentieth of a command-line run on small files (issue 24, bench/bench_cli_start.py), and nothing
else on that path imports it. Type checkers read the real names (``TYPE_CHECKING`` is true for
them); at run time they are placeholders that no code may use as values.
"""

TYPE_CHECKING = False

if TYPE_CHECKING:
    from typing import Any as Any
    from typing import ClassVar as ClassVar
else:
    Any = ClassVar = object

__all__ = ["TYPE_CHECKING", "Any", "ClassVar"]
