"""The repository's comment setting (:mod:`app.github.repo_config`) for the forge-neutral flow, read
from the base revision already unpacked to be rendered (:func:`app.forge.render.render_archives`,
``on_base``): no API call of its own, and always the revision the change is compared with (what
runs now: a change cannot set how it is itself noted).

The caller names the files, the first one there wins (GitLab's service: ``.gitlab/rayservice-impact.yml``,
then ``.github/rayservice-impact.yml`` for a repository mirrored between hosts). The parsing is
:func:`app.github.repo_config.parse_config`'s. A file that cannot be read or holds anything unusable
is the default ``always``, and :func:`warned` puts what is wrong above the report.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence

from app.github.comment import Verdict
from app.github.repo_config import MAX_BYTES, RepoConfig, parse_config
from app.render.snapshot import Snapshot


def read_settings(snap: Snapshot, paths: Sequence[str]) -> RepoConfig:
    """The settings in the first of ``paths`` the revision holds; the default when none is there.

    A symlink is followed: the snapshot keeps none that leaves the repository (one that did is in
    ``snap.refused``, and is a problem here, as is a folder or a dangling link)."""
    for path in paths:
        if path in snap.refused:
            return _unreadable(path, snap.refused[path])
        full = snap.path(path)
        if not os.path.lexists(full):
            continue
        try:
            with open(full, "rb") as handle:
                return parse_config(handle.read(MAX_BYTES + 1), path)
        except OSError as exc:
            return _unreadable(path, exc.strerror or type(exc).__name__)
    return RepoConfig()


def _unreadable(path: str, why: str) -> RepoConfig:
    return RepoConfig(problem=f"`{path}` cannot be read at the base ({why}); commenting `always`")


class BaseSettings:
    """``on_base`` for :func:`app.forge.render.render_archives`: the settings of the unpacked base
    revision in ``config``; the default until then (a base that was not unpacked is noted ``always``)."""

    def __init__(self, paths: Sequence[str]) -> None:
        self.paths, self.config = tuple(paths), RepoConfig()

    def __call__(self, snap: Snapshot) -> None:
        self.config = read_settings(snap, self.paths)


def warned(verdict: Verdict, config: RepoConfig) -> Verdict:
    """The verdict with what is wrong with the setting above its report (as it was when nothing is,
    or when there is no report to put it in)."""
    if not config.problem or verdict.markdown is None:
        return verdict
    return dataclasses.replace(verdict, markdown=f"> [!WARNING]\n> {config.problem}\n\n{verdict.markdown}")
