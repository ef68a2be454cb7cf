"""Both revisions of a change, from the forge's archives, rendered as ``rayservice-impact git``
renders them (:func:`app.render.pipeline.render_change`): GitHub's tarballs and GitLab's archives
alike. A revision whose archive is over the cap or cannot be unpacked is a ``render-failed``
error finding naming it (the change then holds, never passes unseen)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable
from contextlib import ExitStack

from app.render.pipeline import RenderedChange, RenderOptions, render_change
from app.render.snapshot import Snapshot, SnapshotError, tarball_snapshot
from diffing import Finding

from . import ArchiveTooLarge, Forge


async def render_archives(forge: Forge, base_sha: str, head_sha: str, changed: Iterable[str],
                          options: RenderOptions, *, max_bytes: int, word: str, root: str,
                          on_base: Callable[[Snapshot], None] | None = None) -> RenderedChange:
    """Download both revisions (at once: the render needs both), then render in a worker thread
    (unpacking and the renderers' subprocesses must not block the event loop). ``word``: what the
    host calls an archive ("tarball", "archive"); ``root``: the finding's path for a whole revision;
    ``on_base``: what else the caller reads from the unpacked base (the repository's settings,
    :mod:`app.forge.settings`), called in that thread before the render; not called when nothing
    changed, an archive is over the cap or the base cannot be unpacked."""
    changed = set(changed)
    if not changed:
        return RenderedChange()  # as ``git BASE HEAD`` with nothing changed: nothing to render
    sides = (("base", base_sha), ("head", head_sha))
    blobs = await asyncio.gather(*(forge.archive(sha, max_bytes) for _, sha in sides), return_exceptions=True)
    notes = []
    for (side, sha), blob in zip(sides, blobs, strict=True):
        if isinstance(blob, ArchiveTooLarge):
            notes.append(Finding("error", "render-failed", root,
                                 f"{side} ({sha[:12]}): the {word} is larger than the {blob.limit}-byte cap "
                                 "(RAYSERVICE_IMPACT_RENDER_TARBALL_MAX_BYTES), so nothing the change "
                                 "touches could be rendered"))
        elif isinstance(blob, BaseException):
            raise blob
    if notes:
        return RenderedChange(notes=notes)
    base, head = blobs
    assert isinstance(base, bytes) and isinstance(head, bytes)
    return await asyncio.to_thread(render_snapshots, base, head, base_sha, head_sha, changed, options, root,
                                   on_base)


def render_snapshots(base: bytes, head: bytes, base_sha: str, head_sha: str, changed: set[str],
                     options: RenderOptions, root: str,
                     on_base: Callable[[Snapshot], None] | None = None) -> RenderedChange:
    """Both archives unpacked (removed afterwards) and rendered; ``on_base``: see :func:`render_archives`."""
    with ExitStack() as stack:
        snaps: list[Snapshot] = []
        for side, data, sha in (("base", base, base_sha), ("head", head, head_sha)):
            try:
                snaps.append(stack.enter_context(tarball_snapshot(data, sha)))
            except SnapshotError as exc:
                note = Finding("error", "render-failed", root, f"{side} ({sha[:12]}): {exc}")
                return RenderedChange(notes=[note])
            if side == "base" and on_base is not None:
                on_base(snaps[0])
        return render_change(snaps[0], snaps[1], changed, options)
