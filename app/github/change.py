"""A pull request read through the REST API: the paths it touched (the rendering flows) or, with
``RAYSERVICE_IMPACT_RENDER=none``, its changed RayService, RayCluster and RayJob files at the base and
head SHAs."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass, field
from typing import Any

from app.clients.github import GitHubClient, GitHubError
from app.gitdiff import Texts, kuberay_texts
from app.render.roots import YAML_SUFFIXES, parse_gitmodules, under

FILES_CAP = 3000  # GitHub lists at most this many files of a pull request
FETCH_CONCURRENCY = 4


class PayloadError(ValueError):
    """A webhook payload without the fields a pull_request event must carry."""


@dataclass(frozen=True, slots=True)
class PullRequest:
    """What one job analyses: a pull request (``number``), or a merge queue's merge group
    (``merge_group_ref`` set, ``number`` 0: its base and head are the group's commits)."""

    owner: str
    repo: str
    number: int
    base_sha: str
    head_sha: str
    updated_at: str = ""            # ISO 8601 from the payload: orders events of one PR
    installation_id: int | None = None
    repo_url: str = ""              # repository.clone_url (else html_url): tells this repo's
                                    # Argo CD Applications from others'
    base_ref: str = ""              # the base branch's name (pull_request.base.ref)
    merge_group_ref: str = ""       # merge_group.head_ref (a merge queue's group)
    requested_by: str = ""          # who asked for this run (``/rayservice-impact rerun``)

    @property
    def key(self) -> tuple[str, str, int | str]:
        """One queue per pull request; every merge group has its own (they do not supersede)."""
        return (self.owner.lower(), self.repo.lower(), self.merge_group_ref or self.number)

    @property
    def is_merge_group(self) -> bool:
        return bool(self.merge_group_ref)

    @property
    def full_name(self) -> str:
        if self.merge_group_ref:
            return f"{self.owner}/{self.repo} merge group {self.merge_group_ref.removeprefix('refs/heads/')}"
        return f"{self.owner}/{self.repo}#{self.number}"

    @classmethod
    def from_payload(cls, payload: dict[str, Any]) -> PullRequest:
        """From a ``pull_request`` event, or any payload with ``pull_request`` (a pull object of
        ``GET pulls/{n}``) and ``repository``."""
        try:
            pr, repo = payload["pull_request"], payload["repository"]
            installation = payload.get("installation") or {}
            return cls(owner=str(repo["owner"]["login"]), repo=str(repo["name"]), number=int(pr["number"]),
                       base_sha=str(pr["base"]["sha"]), head_sha=str(pr["head"]["sha"]),
                       updated_at=str(pr.get("updated_at") or ""),
                       installation_id=int(installation["id"]) if "id" in installation else None,
                       repo_url=str(repo.get("clone_url") or repo.get("html_url") or ""),
                       base_ref=str(pr["base"].get("ref") or ""))
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise PayloadError(f"pull_request payload without {exc}") from None

    @classmethod
    def from_merge_group(cls, payload: dict[str, Any]) -> PullRequest:
        """From a ``merge_group`` event: ``merge_group.head_sha`` is the commit the queue would
        merge (what gets the status), ``base_sha`` its parent on the target branch."""
        try:
            group, repo = payload["merge_group"], payload["repository"]
            installation = payload.get("installation") or {}
            head_ref = str(group["head_ref"])
            if not head_ref:
                raise KeyError("merge_group.head_ref")
            return cls(owner=str(repo["owner"]["login"]), repo=str(repo["name"]), number=0,
                       base_sha=str(group["base_sha"]), head_sha=str(group["head_sha"]),
                       updated_at=str((group.get("head_commit") or {}).get("timestamp") or ""),
                       installation_id=int(installation["id"]) if "id" in installation else None,
                       repo_url=str(repo.get("clone_url") or repo.get("html_url") or ""),
                       base_ref=str(group.get("base_ref") or "").removeprefix("refs/heads/"),
                       merge_group_ref=head_ref)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise PayloadError(f"merge_group payload without {exc}") from None


@dataclass(frozen=True, slots=True)
class Change:
    before: Texts
    after: Texts
    files_listed: int
    yaml_files: int
    submodules: tuple[str, ...] = ()  # changed paths that are submodules (their content is unknown)
    patches: dict[str, str] = field(default_factory=dict, compare=False)  # head path -> its patch

    @property
    def is_truncated(self) -> bool:
        return self.files_listed >= FILES_CAP


def is_yaml(path: str | None) -> bool:
    return bool(path) and str(path).lower().endswith(YAML_SUFFIXES)


def plan_fetches(entry: dict[str, Any]) -> tuple[str | None, str | None]:
    """(base path, head path) to read for one ``diff-entry``; None where there is nothing."""
    status, new = entry.get("status"), entry.get("filename")
    old = entry.get("previous_filename") or new
    if status == "unchanged":
        return None, None
    base = None if status in ("added", "copied") else old
    head = None if status == "removed" else new
    return (base if is_yaml(base) else None), (head if is_yaml(head) else None)


def maybe_submodule(entry: dict[str, Any]) -> bool:
    """Whether a ``diff-entry`` may be a submodule: GitHub's patch for one is a "Subproject commit"
    line; an entry without a patch (too large, binary) may be anything; ``.gitmodules`` itself."""
    patch = entry.get("patch")
    name = str(entry.get("filename") or "")
    return name == ".gitmodules" or not isinstance(patch, str) or "Subproject commit" in patch


async def _aiter(items: Iterable[dict[str, Any]]) -> AsyncIterator[dict[str, Any]]:
    for item in items:
        yield item


def patch_of(entry: dict[str, Any]) -> tuple[str, str] | None:
    """(head path, patch) of a ``diff-entry`` that has a patch (GitHub leaves it out for a binary
    or very large diff): what a review comment can be anchored on (:mod:`.suggestions`)."""
    patch, name = entry.get("patch"), entry.get("filename")
    if not isinstance(patch, str) or not name or entry.get("status") == "removed":
        return None
    return str(name), patch


async def fetch_changed_paths(gh: GitHubClient, pr: PullRequest,
                              patches: dict[str, str] | None = None) -> tuple[set[str], int]:
    """(every path the PR touched, both names of a rename; how many files GitHub listed);
    ``patches``, when given, gets each file's patch (:func:`patch_of`).

    All files, not only YAML: a kustomization may read any file (a configMapGenerator's
    input, a Helm values file), and which roots read which files is known only from the tree.
    """
    paths: set[str] = set()
    listed = 0
    async for entry in gh.pull_files(pr.owner, pr.repo, pr.number):
        listed += 1
        for key in ("filename", "previous_filename"):
            if entry.get(key):
                paths.add(str(entry[key]))
        if patches is not None and (found := patch_of(entry)) is not None:
            patches[found[0]] = found[1]
    return paths, listed


async def fetch_change(gh: GitHubClient, pr: PullRequest,
                       entries: Iterable[dict[str, Any]] | None = None) -> Change:
    """Every changed YAML file holding a RayService, RayCluster or RayJob on either side, as
    (source, text) pairs.

    ``entries``: the ``diff-entry`` list of the change (a merge group's comparison); default:
    the pull request's files list.
    """
    plans: list[tuple[str | None, str | None]] = []
    listed = 0
    source = _aiter(entries) if entries is not None else gh.pull_files(pr.owner, pr.repo, pr.number)
    changed: set[str] = set()
    patches: dict[str, str] = {}
    async for entry in source:
        listed += 1
        if entries is None and (found := patch_of(entry)) is not None and is_yaml(found[0]):
            patches[found[0]] = found[1]
        if maybe_submodule(entry):
            changed.update(str(entry[k]) for k in ("filename", "previous_filename") if entry.get(k))
        base, head = plan_fetches(entry)
        if base or head:
            plans.append((base, head))
    gate = asyncio.Semaphore(FETCH_CONCURRENCY)

    async def read(path: str | None, sha: str) -> bytes:
        if path is None:
            return b""
        async with gate:
            return await gh.file_bytes(pr.owner, pr.repo, path, sha)

    texts = await asyncio.gather(*(asyncio.gather(read(b, pr.base_sha), read(h, pr.head_sha))
                                   for b, h in plans))
    before, after = kuberay_texts(
        (f"{pr.base_sha[:7]}:{base}", b, f"{pr.head_sha[:7]}:{head}", a)
        for (base, head), (b, a) in zip(plans, texts, strict=True))
    return Change(before, after, listed, len(plans), await _changed_submodules(gh, pr, changed), patches)


async def _changed_submodules(gh: GitHubClient, pr: PullRequest, changed: set[str]) -> tuple[str, ...]:
    """The changed paths that are (or were) a submodule, from ``.gitmodules`` at both SHAs (read
    only when an entry could be one: see :func:`maybe_submodule`)."""
    if not changed:
        return ()
    subs: dict[str, str] = {}
    for sha in (pr.base_sha, pr.head_sha):
        try:
            data = await gh.file_bytes(pr.owner, pr.repo, ".gitmodules", sha, retry_404=False)
        except GitHubError as exc:
            if exc.status == 404:
                continue
            raise
        subs.update(parse_gitmodules(data))
    return tuple(sorted(p for p in changed if p == ".gitmodules" or under(p, subs) is not None))
