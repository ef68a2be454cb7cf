"""A pull request read through the REST API: the paths it touched (the rendering flows) or, with
``RAYSERVICE_IMPACT_RENDER=none``, its changed RayService files at the base and head SHAs."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from app.clients.github import GitHubClient
from app.gitdiff import Texts, rayservice_texts

YAML_SUFFIXES = (".yaml", ".yml")
FILES_CAP = 3000  # GitHub lists at most this many files of a pull request
FETCH_CONCURRENCY = 4


class PayloadError(ValueError):
    """A webhook payload without the fields a pull_request event must carry."""


@dataclass(frozen=True, slots=True)
class PullRequest:
    owner: str
    repo: str
    number: int
    base_sha: str
    head_sha: str
    updated_at: str = ""            # ISO 8601 from the payload: orders events of one PR
    installation_id: int | None = None
    repo_url: str = ""              # repository.clone_url (else html_url): tells this repo's
                                    # Argo CD Applications from others'

    @property
    def key(self) -> tuple[str, str, int]:
        return (self.owner.lower(), self.repo.lower(), self.number)

    @property
    def full_name(self) -> str:
        return f"{self.owner}/{self.repo}#{self.number}"

    @classmethod
    def from_payload(cls, payload: dict[str, Any]) -> PullRequest:
        try:
            pr, repo = payload["pull_request"], payload["repository"]
            installation = payload.get("installation") or {}
            return cls(owner=str(repo["owner"]["login"]), repo=str(repo["name"]), number=int(pr["number"]),
                       base_sha=str(pr["base"]["sha"]), head_sha=str(pr["head"]["sha"]),
                       updated_at=str(pr.get("updated_at") or ""),
                       installation_id=int(installation["id"]) if "id" in installation else None,
                       repo_url=str(repo.get("clone_url") or repo.get("html_url") or ""))
        except (KeyError, TypeError, ValueError) as exc:
            raise PayloadError(f"pull_request payload without {exc}") from None


@dataclass(frozen=True, slots=True)
class Change:
    before: Texts
    after: Texts
    files_listed: int
    yaml_files: int

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


async def fetch_changed_paths(gh: GitHubClient, pr: PullRequest) -> tuple[set[str], int]:
    """(every path the PR touched, both names of a rename; how many files GitHub listed).

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
    return paths, listed


async def fetch_change(gh: GitHubClient, pr: PullRequest) -> Change:
    """Every changed YAML file holding a RayService on either side, as (source, text) pairs."""
    plans: list[tuple[str | None, str | None]] = []
    listed = 0
    async for entry in gh.pull_files(pr.owner, pr.repo, pr.number):
        listed += 1
        base, head = plan_fetches(entry)
        if base or head:
            plans.append((base, head))
    gate = asyncio.Semaphore(FETCH_CONCURRENCY)

    async def read(path: str | None, sha: str) -> str:
        if path is None:
            return ""
        async with gate:
            return await gh.file_text(pr.owner, pr.repo, path, sha)

    texts = await asyncio.gather(*(asyncio.gather(read(b, pr.base_sha), read(h, pr.head_sha))
                                   for b, h in plans))
    before, after = rayservice_texts(
        (f"{pr.base_sha[:7]}:{base}", b, f"{pr.head_sha[:7]}:{head}", a)
        for (base, head), (b, a) in zip(plans, texts, strict=True))
    return Change(before, after, listed, len(plans))
