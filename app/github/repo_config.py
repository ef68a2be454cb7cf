"""A repository's own settings for its pull requests' comment: ``.github/rayservice-impact.yml``.

    comment: on-change   # always (the default) | on-change | on-hold

read at the base revision a pull request is compared with (what runs now: a pull request cannot
change how it is itself commented on), by the webhook service through the contents API and by
the Action from its checkout. GitLab's webhook service reads the same settings from
``.gitlab/rayservice-impact.yml``, else this file, in the base archive it renders
(:mod:`app.forge.settings`). A missing file is the default; a file that cannot be read or holds
anything else is the default too, and the comment says what is wrong with it (a setting that
silences the comment must never do so by mistake).

* ``always``: the comment is created for every pull request with something to report and
  rewritten on every run (as before the setting existed).
* ``on-change``: no comment for a pull request that touches no RayService, RayCluster, RayJob or
  RayCronJob (unless it holds or fails: a root that did not render); once there, the report in it
  is rewritten only when the verdict or a number changes (the hidden stamps still follow each
  head, for ``/rayservice-impact approve``).
* ``on-hold``: as ``on-change``, and no comment until a run holds (or fails); one already there is
  kept up to date, so a hold that clears says so.

The status and the check run report every run, whatever the mode.

    rollout:
      deadlineMinutes: 45   # a followed rollout still progressing after it is stuck (docs/rollout.md)

read at the deployed commit when a push to the default branch is followed; unset, unusable or
out of range (1 to 1440) is the service's ``RAYSERVICE_IMPACT_ROLLOUT_DEADLINE_MINUTES``.
"""

from __future__ import annotations

import logging
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass

import yaml

from app.clients.github import GitHubClient, GitHubError, GitHubNotFound

log = logging.getLogger(__name__)

PATH = ".github/rayservice-impact.yml"
# GitLab (the service and the CI job): its own file first, then GitHub's, for a repository mirrored
# between the hosts; the first one there decides.
GITLAB_PATHS = (".gitlab/rayservice-impact.yml", PATH)
MODES = ("always", "on-change", "on-hold")
ALWAYS = "always"
MAX_BYTES = 16 * 1024


@dataclass(frozen=True, slots=True)
class RepoConfig:
    comment: str = ALWAYS
    problem: str = ""   # what is wrong with the file, said in the comment ("" when nothing is)
    rollout_deadline_minutes: float | None = None  # rollout.deadlineMinutes


def parse_config(text: str | bytes, path: str = PATH) -> RepoConfig:
    """The settings in the file's text; the default with a ``problem`` when they are unusable.
    ``path``: the file's name in the repository, as the problem names it (GitLab's service reads
    ``.gitlab/rayservice-impact.yml`` first, :mod:`app.forge.settings`)."""
    if len(text) > MAX_BYTES:
        return RepoConfig(problem=f"`{path}` is larger than {MAX_BYTES} bytes; commenting `always`")
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark is not None else ""
        return RepoConfig(problem=f"`{path}` is not valid YAML{where}; commenting `always`")
    if data is None:
        return RepoConfig()
    if not isinstance(data, dict) or set(data) - {"comment", "rollout"}:
        keys = ", ".join(sorted(map(str, data))) if isinstance(data, dict) else type(data).__name__
        return RepoConfig(problem=f"`{path}` may only set `comment` (found {keys}); commenting `always`")
    deadline = _deadline(data.get("rollout"), path)
    mode = data.get("comment", ALWAYS)
    if mode not in MODES:
        return RepoConfig(problem=f"`{path}`: `comment` must be one of {', '.join(MODES)}, not "
                                  f"`{str(mode)[:40]}`; commenting `always`",
                          rollout_deadline_minutes=deadline)
    return RepoConfig(str(mode), rollout_deadline_minutes=deadline)


def _deadline(rollout: object, path: str) -> float | None:
    """``rollout.deadlineMinutes`` when it is a number of minutes from 1 to 1440, else None."""
    if not isinstance(rollout, dict):
        return None
    value = rollout.get("deadlineMinutes")
    if isinstance(value, bool) or not isinstance(value, int | float) or not 1 <= value <= 1440:
        if value is not None:
            log.warning("%s: rollout.deadlineMinutes %r is not a number from 1 to 1440; ignored", path, value)
        return None
    return float(value)


async def read_config(gh: GitHubClient, owner: str, repo: str, ref: str) -> RepoConfig:
    """The repository's settings at ``ref`` (one ``GET contents``). GitHub failing to answer is
    the default, logged, never a failed run."""
    try:
        return parse_config(await gh.file_bytes(owner, repo, PATH, ref, retry_404=False))
    except GitHubNotFound:
        return RepoConfig()
    except GitHubError as exc:
        log.warning("%s/%s: %s not read at %s (%s); commenting always", owner, repo, PATH, ref[:12], exc)
        return RepoConfig()


def config_in_checkout(workspace: str, rev: str, paths: Sequence[str] = (PATH,), *,
                       timeout: float = 300) -> RepoConfig:
    """The settings at ``rev`` of the git checkout ``workspace`` (the Action's, the GitLab CI job's),
    from the first of ``paths`` there; the default without a ``rev`` or a file. Something other
    than a file at that path is a problem, as is a file that cannot be parsed."""
    if not rev:
        return RepoConfig()
    for path in paths:
        kind = _git(workspace, timeout, "cat-file", "-t", f"{rev}:{path}")
        if kind is None:
            continue
        kind = kind.decode().strip()
        if kind != "blob":
            return RepoConfig(problem=f"`{path}` cannot be read at the base (a {kind}); commenting `always`")
        raw = _git(workspace, timeout, "cat-file", "blob", f"{rev}:{path}")
        return parse_config((raw or b"")[:MAX_BYTES + 1], path)
    return RepoConfig()


def _git(workspace: str, timeout: float, *args: str) -> bytes | None:
    proc = subprocess.run(["git", "-C", workspace, *args], capture_output=True, check=False, timeout=timeout)
    return proc.stdout if proc.returncode == 0 else None
