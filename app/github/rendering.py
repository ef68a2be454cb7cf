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

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass

from app.clients.argocd import ArgoCDClient
from app.clients.github import GitHubClient
from app.forge.github import GitHubForge
from app.forge.render import render_archives, render_snapshots
from app.render.pipeline import RenderedChange, RenderOptions

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
    """Both revisions' tarballs through the forge boundary, rendered
    (:func:`app.forge.render.render_archives`, GitLab's archives use it too)."""
    options = dataclasses.replace(options, repo_url=pr.repo_url or options.repo_url)
    return await render_archives(GitHubForge(gh, pr), pr.base_sha, pr.head_sha, changed, options,
                                 max_bytes=max_bytes, word="tarball", root=TARBALL_ROOT)


def _render_tarballs(base: bytes, head: bytes, pr: PullRequest, changed: set[str],
                     options: RenderOptions) -> RenderedChange:
    return render_snapshots(base, head, pr.base_sha, pr.head_sha, changed, options, TARBALL_ROOT)
