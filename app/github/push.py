"""A push to a base branch, as a deployed change to follow (docs/rollout.md).

A ``push`` event's ``before..after`` is what reached the branch: for a merged pull request, its
merge commit. It is analysed by the pipeline every pull request goes through (the changed paths
from ``GET compare/{before}...{after}``, rendered from the tarballs or by Argo CD
(:func:`.rendering.render_pull`), or with ``RAYSERVICE_IMPACT_RENDER=none`` the changed
RayService, RayCluster and RayJob files (:func:`.change.fetch_change`)), and every object the
report says the operator acts on becomes a :class:`~app.rollout.model.Target` with what was
predicted for it. The pull requests the commit merged come from ``GET commits/{sha}/pulls``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import diffing
from app.clients.argocd import ArgoCDClient
from app.clients.github import GitHubClient
from app.rollout.model import Target
from diffing.vocab import Rollout

from .change import PayloadError, PullRequest, fetch_change
from .flow import AnalysisOptions, analyse, analyse_rendered
from .rendering import render_pull
from .revisions import Revisions, merge_group_entries, paths_of

FOLLOWED_KINDS = ("RayService", "RayCluster", "RayJob")
# Rollouts with nothing for the operator to do on the object: nothing to follow.
NOT_FOLLOWED = frozenset({Rollout.NONE, Rollout.NOT_APPLIED, Rollout.LATENT, Rollout.DELETE})
ZERO_SHA = "0" * 40
NOT_ACCELERATORS = frozenset({"cpu", "memory", "ephemeral-storage"})  # capacity.extra's other resources


@dataclass(frozen=True, slots=True)
class Push:
    owner: str
    repo: str
    branch: str
    before: str
    after: str
    default_branch: str = ""
    installation_id: int | None = None
    repo_url: str = ""

    @classmethod
    def from_payload(cls, payload: Mapping[str, Any]) -> Push:
        try:
            repo = payload["repository"]
            owner = repo["owner"]
            installation = payload.get("installation") or {}
            return cls(owner=str(owner.get("login") or owner["name"]), repo=str(repo["name"]),
                       branch=str(payload["ref"]).removeprefix("refs/heads/"),
                       before=str(payload["before"]), after=str(payload["after"]),
                       default_branch=str(repo.get("default_branch") or ""),
                       installation_id=int(installation["id"]) if "id" in installation else None,
                       repo_url=str(repo.get("clone_url") or repo.get("html_url") or ""))
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise PayloadError(f"push payload without {exc}") from None

    @property
    def key(self) -> str:
        return f"github:{self.owner}/{self.repo}@{self.after}"

    def as_pull(self) -> PullRequest:
        """The push in the shape the pipeline takes: base ``before``, head ``after``."""
        return PullRequest(self.owner, self.repo, 0, self.before, self.after,
                           installation_id=self.installation_id, repo_url=self.repo_url, base_ref=self.branch)


def why_not_followed(payload: Mapping[str, Any], push: Push) -> str:
    """Why a push is not a deployed change to follow ("" when it is)."""
    if not str(payload.get("ref") or "").startswith("refs/heads/"):
        return "only pushes to branches are followed"
    if payload.get("deleted") or push.after == ZERO_SHA:
        return "the branch was deleted"
    if payload.get("created") or push.before == ZERO_SHA:
        return "a new branch: nothing to compare with"
    if push.default_branch and push.branch != push.default_branch:
        return f"only pushes to the default branch {push.default_branch!r} are followed"
    return ""


async def merged_pulls(gh: GitHubClient, push: Push) -> tuple[int, ...]:
    """The pull requests merged into the branch by the pushed commit."""
    out = []
    for pull in await gh.commit_pulls(push.owner, push.repo, push.after):
        base = str((pull.get("base") or {}).get("ref") or push.branch)
        if pull.get("merged_at") and base == push.branch and isinstance(pull.get("number"), int):
            out.append(int(pull["number"]))
    return tuple(sorted(set(out)))


async def analyse_push(gh: GitHubClient, push: Push, options: AnalysisOptions,
                       argocd: ArgoCDClient | None = None) -> diffing.Report | None:
    """The report of ``before..after`` (None when no RayService, RayCluster or RayJob changed)."""
    pr = push.as_pull()
    entries = await merge_group_entries(gh, pr)
    if options.render != "none":
        revisions = Revisions(push.before, push.after, "merge-group", paths_of(entries), 0, (), push.branch,
                              push.after, tuple(entries))
        pull = await render_pull(gh, pr, options.render_options, tarball_max_bytes=options.tarball_max_bytes,
                                 argocd=argocd, revisions=revisions)
        if not pull.rendered.before and not pull.rendered.after:
            return None
        return await analyse_rendered(pull.rendered, options)
    change = await fetch_change(gh, pr, entries)
    if not change.before and not change.after:
        return None
    return await analyse(change.before, change.after, options)


def targets_of(report: diffing.Report) -> tuple[Target, ...]:
    """Every object of ``report`` the operator acts on, with its predicted rollout and extra
    accelerators at peak. An object without a namespace is taken as in ``default`` (kubectl's and
    Argo CD's default when neither the manifest nor the destination names one)."""
    out: dict[str, Target] = {}
    for r in report.resources:
        if r.kind not in FOLLOWED_KINDS or r.rollout in NOT_FOLLOWED:
            continue
        extra = {str(k): int(v) for k, v in (r.capacity.extra or {}).items()
                 if k not in NOT_ACCELERATORS and isinstance(v, int) and not isinstance(v, bool) and v}
        target = Target(r.kind, r.namespace or "default", r.name, str(r.rollout), extra)
        out.setdefault(target.key, target)
    return tuple(out.values())

