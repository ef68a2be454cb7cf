"""``analyze DIR_BEFORE DIR_AFTER``: a kustomization, a chart or a folder of YAML on either side."""

from __future__ import annotations

import os

from diffing import Finding, Source

from .kustomize import render_kustomize
from .pipeline import RenderedChange, RenderOptions, render_directory
from .process import RenderError
from .roots import KUSTOMIZATION_FILES, DirectoryOptions, RenderSource, release_name_for
from .snapshot import Snapshot, SnapshotError, check_tree


def _render_side(path: str, options: RenderOptions) -> tuple[str, str]:
    """(label, rendered text) of one side; a file is read as it is, ``/dev/null`` is nothing."""
    if not os.path.isdir(path):
        from app.files import read_text

        return path, read_text(path)
    snap = Snapshot(os.path.abspath(path), "")
    if any(os.path.isfile(os.path.join(path, n)) for n in KUSTOMIZATION_FILES):
        return f"{path} (kustomize)", render_kustomize(snap, "", None, options.limits,
                                                       renderer=options.kustomize)
    if os.path.isfile(os.path.join(path, "Chart.yaml")):
        from .helm import HelmSource, render_helm

        release = release_name_for(os.path.abspath(path))
        return f"{path} (helm)", render_helm(HelmSource(chart_dir=snap.root, snapshot=snap.root,
                                                        release_name=release), options.limits)
    check_tree(snap.root)  # the folder is walked to its bottom: refuse a tree too deep or too large first
    src = RenderSource("directory", "", directory=DirectoryOptions(recurse=True))
    return f"{path} (directory)", render_directory(snap, src, options)


def render_folders(before: str, after: str, options: RenderOptions) -> RenderedChange:
    out = RenderedChange()
    for side, path, into in (("before", before, out.before), ("after", after, out.after)):
        try:
            label, text = _render_side(path, options)
        except RenderError as exc:
            out.notes.append(Finding("error", "render-failed", path, f"{exc.tool} ({side}): {exc.message}"))
            continue
        except SnapshotError as exc:
            out.notes.append(Finding("error", "render-failed", path, f"directory ({side}): {exc}"))
            continue
        into.append(Source(label, text, lines=not os.path.isdir(path)))
    if out.notes:  # never compare a rendered side against nothing
        out.before, out.after = [], []
    return out
