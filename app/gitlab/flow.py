"""One merge request, end to end: read it, judge it (:func:`app.forge.judge.judge_and_publish`),
publish the note and the status, all through :class:`app.forge.gitlab.GitLabForge`.

The note's comment mode is the repository's own setting at the base it is compared with:
``.gitlab/rayservice-impact.yml``, else ``.github/rayservice-impact.yml`` (a repository mirrored
between GitHub and GitLab keeps one file), read from the base archive (:mod:`app.forge.settings`)."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable

from app.clients.gitlab import GitLabClient, GitLabError, GitLabNotFound
from app.forge import Change
from app.forge.gitlab import GitLabForge
from app.forge.judge import judge_and_publish
from app.forge.options import AnalysisOptions, Outcome
from app.github.change import PullRequest
from app.github.repo_config import GITLAB_PATHS as SETTINGS

from .commands import status_ref
from .mr import project_path

log = logging.getLogger(__name__)


async def run_merge_request(gl: GitLabClient, job: PullRequest, options: AnalysisOptions, *,
                            approve_level: int = 30, checks: dict[str, int | None] | None = None,
                            inline: str = "off",
                            is_current: Callable[[], bool] = lambda: True) -> Outcome:
    project = project_path(job)
    name = f"{project}!{job.number}"
    try:
        mr = await gl.merge_request(project, job.number)
    except GitLabNotFound:
        log.warning("%s: GitLab does not show this merge request; nothing to judge", name)
        return Outcome("failed")
    except GitLabError as exc:
        log.error("%s: cannot read the merge request: %s", name, exc)
        return Outcome("failed", retryable=True)
    if mr.get("state") != "opened":
        return Outcome("closed")
    head = job.head_sha or str(mr.get("sha") or "")
    forge = GitLabForge(gl, project, job.number, head, web_url=str(mr.get("web_url") or ""),
                        status_ref=status_ref(mr), approve_level=approve_level, checks=checks, mr=mr,
                        gate=True, inline=inline)
    change = Change(name, job.number, head, str(mr.get("target_branch") or job.base_ref), job.updated_at,
                    job.requested_by)
    options = dataclasses.replace(options, render="auto")
    return await judge_and_publish(forge, change, options, is_current=is_current, repo_url=job.repo_url,
                                   settings=SETTINGS)
