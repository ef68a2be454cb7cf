"""Where a rendered change was made: the pull request's file and line, for annotations.

A RayService rendered from ``overlays/prod (kustomize)`` has no lines of its own; what a
reviewer wants marked is the line of the PR that changed it, e.g. ``newTag: 2.53.0`` in the
overlay's kustomization.yaml. Among the changed files the root reads, the first line holding
the new value (or its last ``:``/``/`` part, an image tag) wins; else the field's own name
(``maxReplicas``); else the first changed file, without a line.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from diffing import ResourceReport
from diffing.render.annotations import Locate

from .render.pipeline import RenderedChange


def _needles(item: Any) -> list[str]:
    out: list[str] = []
    after = getattr(item, "after", None)
    if isinstance(after, (str, int, float)) and not isinstance(after, bool) and str(after):
        text = str(after)
        out.append(text)
        for sep in (":", "/", "@"):
            if sep in text:
                out.append(text.rsplit(sep, 1)[1])
    path = getattr(item, "path", ())
    last = path[-1] if isinstance(path, tuple) and path else None
    if isinstance(last, str):
        out.append(f"{last}:")
    return [n for n in out if len(n) >= 3]


def rendered_locator(rendered: RenderedChange, read: Callable[[str], str | None]) -> Locate:
    """A ``locate`` for :func:`diffing.render.annotations.annotate`; ``read(path)`` gives a file's
    text at the head revision (None when absent). Plain files keep the report's own lines, also
    when the renderer lists one as a root of its own (its changed file is itself)."""
    cache: dict[str, list[str] | None] = {}

    def lines_of(path: str) -> list[str] | None:
        if path not in cache:
            text = read(path)
            cache[path] = text.splitlines() if text is not None else None
        return cache[path]

    def locate(r: ResourceReport, item: Any) -> tuple[str, int | None] | None:
        files = rendered.root_files.get(r.origin)
        if files is None:  # a plain file: the report knows its lines
            origin = r.origin.split(":", 1)[1] if ":" in r.origin else r.origin
            return origin, getattr(item, "line", None)
        line = getattr(item, "line", None)
        if line is not None and r.origin in files:  # a root that is one of the changed files itself
            return r.origin, line
        for needle in _needles(item):
            for path in files:
                lines = lines_of(path)
                for i, line in enumerate(lines or (), 1):
                    if needle in line:
                        return path, i
        return (files[0], None) if files else None

    return locate
