"""deploy/gitlab/rayservice-impact.yml's job run the way a GitLab runner runs it, for its tests.

The template's two YAML documents (the ``spec:`` header, ``---``, the jobs); ``$[[ inputs.x ]]``
interpolated from the given inputs or the defaults, as GitLab does when the file is included;
the job's ``rules`` evaluated for ``CI_PIPELINE_SOURCE``; the checkout made as the runner makes it
(``git fetch --depth $GIT_DEPTH`` of the pipeline's ref into an empty repository, then a detached
checkout of ``CI_COMMIT_SHA``); the job's ``variables`` expanded; its ``script`` lines run in one
bash with errexit and pipefail (GitLab's bash shell), in ``CI_PROJECT_DIR``. The ``package``
input is empty (this venv has the tool); ``PYTHONPATH`` puts this worktree's packages first.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
TEMPLATE = ROOT / "deploy" / "gitlab" / "rayservice-impact.yml"
BIN = Path(sys.executable).parent
INPUT = re.compile(r"\$\[\[\s*inputs\.([A-Za-z0-9_-]+)\s*\]\]")


def documents(text: str | None = None) -> tuple[dict[str, Any], str]:
    """(the spec header, the jobs' text before interpolation)."""
    text = TEMPLATE.read_text() if text is None else text
    header, sep, jobs = text.partition("\n---\n")
    assert sep, "the template must be two YAML documents separated by ---"
    return yaml.safe_load(header), jobs


def interpolate(jobs: str, spec: dict[str, Any], given: dict[str, str]) -> dict[str, Any]:
    inputs = spec["spec"]["inputs"]
    unknown = set(given) - set(inputs)
    assert not unknown, f"not inputs of the template: {unknown}"

    def one(m: re.Match[str]) -> str:
        name = m.group(1)
        assert name in inputs, f"$[[ inputs.{name} ]] is not declared"
        assert name in given or "default" in inputs[name], f"input {name} is required"
        value = given.get(name, str(inputs[name].get("default", "")))
        options = inputs[name].get("options")
        assert options is None or value in [str(o) for o in options], (name, value)
        return value
    return yaml.safe_load(INPUT.sub(one, jobs))


def _expand(value: str, env: dict[str, str]) -> str:
    return re.sub(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?", lambda m: env.get(m.group(1), ""), value)


def _rule_runs(job: dict[str, Any], env: dict[str, str]) -> bool:
    for rule in job.get("rules", []):
        m = re.fullmatch(r'\$(\w+) == "([^"]*)"', rule["if"].strip())
        assert m, f"rule not understood by the runner: {rule}"
        if env.get(m.group(1), "") == m.group(2):
            return True
    return False


@dataclass
class JobRun:
    ran: bool
    code: int
    log: str
    project_dir: Path


def checkout(origin: Path, ref: str, sha: str, where: Path, depth: str) -> None:
    """The runner's fetch: an empty repository, ``ref`` fetched (``--depth`` unless 0), ``sha``
    checked out detached."""
    where.mkdir(parents=True)
    run = lambda *a: subprocess.run(["git", "-C", str(where), *a], check=True, capture_output=True)  # noqa: E731
    run("init", "-q")
    run("remote", "add", "origin", f"file://{origin}")
    deep = [f"--depth={depth}"] if depth not in ("", "0") else []
    run("fetch", "-q", "--no-tags", *deep, "origin", f"+{ref}:refs/pipelines/1")
    run("checkout", "-q", "--detach", sha)


def run_job(origin: Path, tmp_path: Path, ci: dict[str, str], *, ref: str,
            inputs: dict[str, str] | None = None, depth: str | None = None,
            text: str | None = None) -> JobRun:
    """The template's job for a pipeline with the predefined variables ``ci`` (``CI_COMMIT_SHA``
    and friends); ``ref``: what the runner fetches; ``depth``: overrides the job's GIT_DEPTH."""
    spec, jobs = documents(text)
    job = interpolate(jobs, spec, {"package": "", **(inputs or {})})["rayservice-impact"]
    project = tmp_path / "builds" / "group" / "project"
    env = {"PATH": f"{BIN}:{os.environ['PATH']}", "HOME": str(tmp_path), "PYTHONPATH": str(ROOT),
           "CI": "true", "GITLAB_CI": "true", "CI_PROJECT_DIR": str(project),
           "CI_PROJECT_URL": "https://gitlab.example.com/group/project",
           "CI_SERVER_URL": "https://gitlab.example.com", "CI_PIPELINE_ID": "1001", **ci}
    if not _rule_runs(job, env):
        return JobRun(False, 0, "", project)
    for key, value in (job.get("variables") or {}).items():
        env[key] = _expand(str(value), env)
    depth = depth if depth is not None else env.get("GIT_DEPTH", "20")
    checkout(origin, ref, env["CI_COMMIT_SHA"], project, depth)
    script = "\n".join(job["script"])
    proc = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", script], cwd=project, env=env,
                          capture_output=True, text=True, timeout=300)
    return JobRun(True, proc.returncode, proc.stdout + proc.stderr, project)
