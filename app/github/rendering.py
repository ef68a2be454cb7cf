"""What a pull request deploys at its base and head, rendered without a clone on disk.

Two ways, chosen by the configuration:

* by Argo CD (``RAYSERVICE_IMPACT_ARGOCD_SERVER`` and ``_ARGOCD_TOKEN`` set):
  :mod:`.argocd_render` asks repo-server for the affected Applications' manifests;
* else from the repository tarballs: ``GET /repos/{owner}/{repo}/tarball/{sha}`` of both
  revisions, unpacked by :func:`app.render.snapshot.tarball_snapshot` and rendered by the same
  pipeline as ``rayservice-impact git BASE HEAD`` (:func:`app.render.pipeline.render_change`),
  so the webhook and the CLI give the same report for the same commits.

The two revisions are what runs now and what the merge would deploy (:mod:`.revisions`: the
base branch's tip and GitHub's test merge commit, or a merge group's base and head), and the
changed paths are those between them (all files: a kustomization may read any of them). A
revision whose tarball is over the cap or cannot be unpacked is a ``render-failed`` error
finding naming it: the change is then held, never approved unseen.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Iterable
from contextlib import ExitStack
from dataclasses import dataclass

from app.clients.argocd import ArgoCDClient
from app.clients.github import GitHubClient, TarballTooLarge
from app.render.pipeline import RenderedChange, RenderOptions, render_change
from app.render.snapshot import Snapshot, SnapshotError, tarball_snapshot
from diffing import Finding

from .argocd_render import render_with_argocd
from .change import PullRequest
from .revisions import Revisions, resolve

VIA_TARBALLS = "rendered from the repository tarballs"
VIA_ARGOCD = "rendered by Argo CD"
TARBALL_ROOT = "repository tarball"  # the finding's path when a whole revision cannot be read


@dataclass(slots=True)
class RenderedPull:
    rendered: RenderedChange
    files_listed: int
    via: str  # VIA_TARBALLS | VIA_ARGOCD: said in the comment
    revisions: Revisions | None = None

    @property
    def is_truncated(self) -> bool:
        return self.revisions.is_truncated if self.revisions is not None else False


async def render_pull(gh: GitHubClient, pr: PullRequest, options: RenderOptions, *, tarball_max_bytes: int,
                      argocd: ArgoCDClient | None = None, revisions: Revisions | None = None) -> RenderedPull:
    """What the pull request (or merge group) changes, rendered at both revisions: what runs now
    and what the merge would deploy (``revisions``; resolved here when not given).

    Raises :class:`app.clients.github.GitHubError` when GitHub cannot be read and
    :class:`app.clients.argocd.ArgoCDError` when Argo CD cannot list its Applications.
    """
    if revisions is None:
        revisions = await resolve(gh, pr)
    target = dataclasses.replace(pr, base_sha=revisions.base, head_sha=revisions.head)
    changed = set(revisions.changed)
    if argocd is not None:
        rendered = await render_with_argocd(argocd, target, changed) if changed else RenderedChange()
        return RenderedPull(rendered, revisions.pr_files_listed, VIA_ARGOCD, revisions)
    rendered = await render_from_tarballs(gh, target, changed, options, max_bytes=tarball_max_bytes)
    return RenderedPull(rendered, revisions.pr_files_listed, VIA_TARBALLS, revisions)


async def render_from_tarballs(gh: GitHubClient, pr: PullRequest, changed: Iterable[str],
                               options: RenderOptions, *, max_bytes: int) -> RenderedChange:
    """Download both revisions (at once: the render needs both), then render in a worker
    thread: unpacking and the renderers' subprocesses must not block the event loop."""
    changed = set(changed)
    if not changed:
        return RenderedChange()  # as ``git BASE HEAD`` with nothing changed: nothing to render
    options = dataclasses.replace(options, repo_url=pr.repo_url or options.repo_url)
    sides = (("base", pr.base_sha), ("head", pr.head_sha))
    blobs = await asyncio.gather(*(gh.tarball(pr.owner, pr.repo, sha, max_bytes) for _, sha in sides),
                                 return_exceptions=True)
    notes = []
    for (side, sha), blob in zip(sides, blobs, strict=True):
        if isinstance(blob, TarballTooLarge):
            notes.append(Finding("error", "render-failed", TARBALL_ROOT,
                                 f"{side} ({sha[:12]}): the tarball is larger than the {max_bytes}-byte cap "
                                 "(RAYSERVICE_IMPACT_RENDER_TARBALL_MAX_BYTES), so nothing the change "
                                 "touches could be rendered"))
        elif isinstance(blob, BaseException):
            raise blob
    if notes:
        return RenderedChange(notes=notes)
    base, head = blobs
    assert isinstance(base, bytes) and isinstance(head, bytes)
    return await asyncio.to_thread(_render_tarballs, base, head, pr, changed, options)


def _render_tarballs(base: bytes, head: bytes, pr: PullRequest, changed: set[str],
                     options: RenderOptions) -> RenderedChange:
    with ExitStack() as stack:
        snaps: list[Snapshot] = []
        for side, data, sha in (("base", base, pr.base_sha), ("head", head, pr.head_sha)):
            try:
                snaps.append(stack.enter_context(tarball_snapshot(data, sha)))
            except SnapshotError as exc:
                return RenderedChange(notes=[Finding("error", "render-failed", TARBALL_ROOT,
                                                     f"{side} ({sha[:12]}): {exc}")])
        return render_change(snaps[0], snaps[1], changed, options)
