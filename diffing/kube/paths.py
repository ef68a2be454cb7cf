"""Field paths: tuples of segments, printed in the contract's dotted form.

A segment is a mapping key (``str``), a list index (``int``) or a keyed list item
(:class:`Key`, printed ``[groupName=gpu]``). Keys that contain dots or brackets are quoted:
``metadata.annotations["ray.io/ft-enabled"]``.
"""

from __future__ import annotations

import re

from diffing.record import Record, set_field


class Key(Record):
    """A list item identified by ``field=value`` rather than by position."""

    __slots__ = ("field", "value")

    field: str
    value: str

    def __init__(self, field: str, value: str) -> None:
        set_field(self, "field", field)
        set_field(self, "value", value)

    def __str__(self) -> str:
        return f"[{self.field}={self.value}]"


Segment = str | int | Key
Path = tuple[Segment, ...]

_PLAIN = re.compile(r"^[A-Za-z0-9_\-]+$")


def format_path(path: Path) -> str:
    out: list[str] = []
    for seg in path:
        if isinstance(seg, Key):
            out.append(str(seg))
        elif isinstance(seg, int):
            out.append(f"[{seg}]")
        elif _PLAIN.match(seg):
            out.append(("." if out else "") + seg)
        else:
            out.append('["' + seg.replace("\\", "\\\\").replace('"', '\\"') + '"]')
    return "".join(out)


def schema_path(path: Path) -> tuple[str, ...]:
    """The path with list positions dropped: what a schema or rule table is keyed by."""
    return tuple("[]" if isinstance(seg, (int, Key)) else seg for seg in path)

