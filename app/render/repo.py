"""A git range of a local clone, rendered: what the CLI's ``git`` command and the Action compare."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from app.gitdiff import GitError, changed_paths, remote_url

from .pipeline import RenderedChange, RenderOptions, render_change
from .snapshot import SnapshotError, git_snapshot


def render_git_range(repo: str, base: str, head: str, pathspecs: Sequence[str] | None,
                     options: RenderOptions, *, repo_url: str | None = None) -> RenderedChange:
    """Render the roots ``base..head`` affects, from ``git archive`` snapshots (never the work tree)."""
    changed = changed_paths(repo, base, head, pathspecs)
    if not changed:
        return RenderedChange()
    url = repo_url or options.repo_url or remote_url(repo)
    options = dataclasses.replace(options, repo_url=url)
    try:
        with git_snapshot(repo, base) as b, git_snapshot(repo, head) as h:
            return render_change(b, h, changed, options)
    except SnapshotError as exc:
        raise GitError(str(exc)) from None
