"""The author's way out of a hold as one line of their file: the line as it is, the line as the fix
writes it.

A way out with a ``fix`` (:class:`diffing.report.WayOut`: a field and the value that releases
the hold, e.g. ``spec.suspend`` false) becomes a :class:`LineEdit` when the change it undoes sits
on a line of a file the reader can edit: the change's own line in a plain manifest, or the line
``locate`` finds in a rendered root's files (an overlay's patch, a Helm values key), when that
line writes the same key. Only the value is rewritten: indentation, a list dash, quotes around
the key and a trailing comment stay as the author wrote them. Pure: the report, a ``locate`` and
a ``read`` (a file's text, or None) in; values out. A caller that knows which lines the pull
request's diff shows sets :attr:`LineEdit.suggested` (``with_suggested``) for those it offers as
a suggestion there; :func:`diffing.render.markdown.render_markdown` shows the others as a diff.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence

from diffing.hints import Any
from diffing.record import Record, replace, set_field
from diffing.render.annotations import Locate, default_locate
from diffing.report import Report, ResourceReport, WayOut
from diffing.vocab import Actor

__all__ = ["LineEdit", "edit_for", "line_edits", "rewrite_line"]

# One ``key: value`` line of block YAML: indentation and an optional list dash, the key (maybe
# quoted), the separator, the value, an optional comment.
_LINE = re.compile(r"^(?P<lead>\s*(?:-\s+)?)(?P<q>[\"']?)(?P<key>[^\"':#\s][^\"':#]*?)(?P=q)"
                   r"(?P<sep>\s*:[ \t]+)(?P<value>[^#]*?)(?P<tail>[ \t]+#.*)?$")
_PLAIN = re.compile(r"^[A-Za-z][A-Za-z0-9_.-]*$")
_RESERVED = {"true", "false", "yes", "no", "on", "off", "null", "y", "n"}


class LineEdit(Record):
    """One line of the author's file to rewrite: ``file`` and ``line`` (1-based) as the reader
    sees them, ``old`` as it is and ``new`` as the fix writes it; ``owner`` names the resource
    (kind, namespace, name, origin) and ``field`` the fix's path, so a renderer finds the way out
    it belongs to; ``suggested``: offered as a suggestion on the pull request's diff."""

    __slots__ = ("owner", "field", "file", "line", "old", "new", "suggested")

    owner: tuple[str, str, str, str]
    field: tuple[Any, ...]
    file: str
    line: int
    old: str
    new: str
    suggested: bool

    def __init__(self, owner: tuple[str, str, str, str], field: tuple[Any, ...], file: str, line: int,
                 old: str, new: str, suggested: bool = False) -> None:
        set_field(self, "owner", owner)
        set_field(self, "field", field)
        set_field(self, "file", file)
        set_field(self, "line", line)
        set_field(self, "old", old)
        set_field(self, "new", new)
        set_field(self, "suggested", suggested)

    def with_suggested(self, suggested: bool = True) -> LineEdit:
        return replace(self, suggested=suggested)


def _owner(r: ResourceReport) -> tuple[str, str, str, str]:
    return (r.kind, r.namespace, r.name, r.origin)


def _scalar(value: Any) -> str | None:
    """``value`` as a YAML scalar on one line; None for what is not a scalar."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, str):
        plain = _PLAIN.match(value) and value.lower() not in _RESERVED
        return value if plain else json.dumps(value)
    return None


def rewrite_line(line: str, key: str, value: Any) -> str | None:
    """``line`` with the value of ``key`` replaced by ``value``; None when the line does not write
    ``key`` or ``value`` is no scalar.

    >>> rewrite_line("  suspend: true  # paused", "suspend", False)
    '  suspend: false  # paused'
    """
    m = _LINE.match(line)
    shown = _scalar(value)
    if m is None or shown is None or m["key"] != key:
        return None
    return f"{m['lead']}{m['q']}{m['key']}{m['q']}{m['sep']}{shown}{m['tail'] or ''}"


def _edit(r: ResourceReport, way: WayOut, where: Locate,
          read: Callable[[str], str | None]) -> LineEdit | None:
    assert way.fix is not None
    path, value = way.fix
    key = path[-1] if path else None
    if not isinstance(key, str):
        return None
    for change in r.changes:
        if tuple(change.path) != tuple(path):
            continue
        spot = where(r, change)
        if spot is None or spot[1] is None or " (" in spot[0] or spot[0].startswith("Application "):
            continue  # no line, or a root's label: no file of the pull request to edit
        text = read(spot[0])
        lines = text.splitlines() if text is not None else []
        if not 1 <= spot[1] <= len(lines):
            continue
        old = lines[spot[1] - 1]
        new = rewrite_line(old, key, value)
        if new is not None and new != old:
            return LineEdit(_owner(r), tuple(path), spot[0], spot[1], old, new)
    return None


def line_edits(report: Report, read: Callable[[str], str | None], locate: Locate | None = None
               ) -> tuple[LineEdit, ...]:
    """Every author's way out of a hold in ``report`` that is one line of a file: ``read(file)``
    gives the file's text as the reader sees it (the pull request's head); ``locate`` as for
    :func:`diffing.render.markdown.render_markdown` (default: a plain file's own lines)."""
    where = locate or default_locate
    out = []
    for r in report.resources:
        for way in r.ways_out:
            if way.by == Actor.AUTHOR and way.fix is not None:
                edit = _edit(r, way, where, read)
                if edit is not None:
                    out.append(edit)
    return tuple(out)


def edit_for(edits: Sequence[LineEdit], r: ResourceReport, way: WayOut) -> LineEdit | None:
    """The edit of ``way`` (a way out of ``r``), if ``edits`` has one."""
    if way.fix is None:
        return None
    for e in edits:
        if e.owner == _owner(r) and e.field == tuple(way.fix[0]):
            return e
    return None
