"""The GitLab CI job's analyse step (``python -m app.gitlab.ci``, see deploy/gitlab/rayservice-impact.yml).

The GitLab twin of :mod:`app.github.action`: it decides what to compare from GitLab's predefined
CI/CD variables, runs ``rayservice-impact git`` three times (markdown, json, codequality), writes
``gl-code-quality-report.json`` (the job's ``artifacts: reports: codequality``),
``rayservice-impact.md`` and ``rayservice-impact.json`` into ``RSI_OUT_DIR`` (default
``$CI_PROJECT_DIR``: GitLab collects artifacts only from there), prints the report to the job log,
and leaves ``rayservice-impact.plan.json`` for the posting step (:mod:`app.gitlab.post_note`).

Exit status, the job's: 3 on hold when ``RSI_FAIL_ON_HOLD`` is ``true`` (the default), else 0 on hold;
2 invalid input or nothing to compare in a merge request pipeline, 1 internal error, as the CLI
(docs/contract.md "Exit codes"). A branch pipeline without a merge request has nothing to compare
and nothing to post on: a line in the job log, an empty Code Quality report, exit 0.

What is compared (the variables' meanings: GitLab's docs, "Predefined CI/CD variables reference",
https://docs.gitlab.com/ci/variables/predefined_variables/, section "Predefined variables for merge
request pipelines"), with ``RSI_BASE`` empty (the default):

* ``CI_MERGE_REQUEST_EVENT_TYPE=merged_result``: the checkout (``CI_COMMIT_SHA``) is the merge of
  the source branch into the target branch that GitLab made for the pipeline; compare
  ``CI_MERGE_REQUEST_TARGET_BRANCH_SHA`` ("the HEAD SHA of the target branch", present only in
  merged results pipelines: what runs now) → ``CI_COMMIT_SHA`` (what the merge deploys).
* ``merge_train``: the same, from what the train has ahead of this merge request: the first parent
  of the train commit when it is a merge of the head (the target branch with the cars ahead),
  else ``CI_MERGE_REQUEST_TARGET_BRANCH_SHA``. The cars' own changes are judged in their own
  pipelines, not attributed to this one.
* ``detached`` (the merge request's head as it is, e.g. merged results disabled, or GitLab fell
  back to it because the merge has conflicts, gitlab-org/gitlab#358228): the merge base of
  ``CI_MERGE_REQUEST_DIFF_BASE_SHA`` ("the base SHA of the merge request diff") and the head →
  ``CI_COMMIT_SHA``: the merge request's own change, not the merge result; the note says so.
* a branch pipeline (``CI_PIPELINE_SOURCE`` other than ``merge_request_event``): no merge request,
  nothing to post: a line in the job log, exit 0 (``RSI_BASE`` set: that comparison, job log only).

GitLab clones 20 commits deep by default (``GIT_DEPTH``, docs "Shallow cloning"); a commit the
checkout lacks is fetched (the target branch by name, then the SHA); a merge base beyond the
shallow boundary deepens the clone. ``GIT_DEPTH: 0`` (a full clone) avoids both.

Inputs from the environment (the template's ``spec: inputs``, prefixed so that a project's own
CI/CD variables, which outrank a job's, cannot collide): ``RSI_BASE``, ``RSI_HEAD``,
``RSI_KUBERAY_VERSION``, ``RSI_POLICY``, ``RSI_HEADROOM``, ``RSI_PATHS``, ``RSI_RENDER``,
``RSI_COMMENT``, ``RSI_POST``, ``RSI_FAIL_ON_HOLD``, ``RSI_OUT_DIR``.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path

from app.github.repo_config import GITLAB_PATHS, config_in_checkout
from app.output import EXIT_HOLD, EXIT_INTERNAL, EXIT_OK, EXIT_USAGE
from diffing.versions import DEFAULT

CODEQUALITY = "gl-code-quality-report.json"
MARKDOWN = "rayservice-impact.md"
JSON = "rayservice-impact.json"
PLAN = "rayservice-impact.plan.json"
TOKEN_VARIABLE = "RAYSERVICE_IMPACT_GITLAB_TOKEN"
COMMENT_MODES = ("always", "on-change", "on-hold")
GIT_TIMEOUT = 300


@dataclass
class Plan:
    range_args: list[str] = field(default_factory=list)   # rayservice-impact git ARGS
    kind: str = ""                      # merged_result | merge_train | detached | branch | given
    project: str = ""                   # CI_MERGE_REQUEST_PROJECT_ID: the project the merge request is in
    iid: str = ""                       # CI_MERGE_REQUEST_IID
    sha: str = ""                       # the commit the pipeline ran on (gets the status)
    head_sha: str = ""                  # the merge request's head
    pipeline_id: str = ""
    post: bool = True
    skip: str = ""                      # why nothing is posted (one line)
    notes: list[str] = field(default_factory=list)
    footer: str = ""
    error: str = ""                     # nothing to compare: said instead of a report
    comment: str = "always"
    exit_code: int = EXIT_OK


_SHA = re.compile(r"[0-9a-f]{40}(?:[0-9a-f]{24})?")


def _git(ws: str, *args: str) -> str | None:
    proc = subprocess.run(["git", "-C", ws, *args], capture_output=True, text=True, check=False,
                          timeout=GIT_TIMEOUT)
    return proc.stdout.strip() if proc.returncode == 0 else None


def _has(ws: str, rev: str) -> bool:
    return _git(ws, "cat-file", "-e", f"{rev}^{{commit}}") is not None


def _ensure(ws: str, sha: str, branch: str = "") -> None:
    """Fetch a commit the (shallow) checkout lacks: the branch it is the tip of, else the SHA itself
    (GitLab serves a reachable SHA). Harmless when it fails: the CLI then names the revision."""
    if not sha or _has(ws, sha):
        return
    if branch:
        _git(ws, "fetch", "--no-tags", "--quiet", "origin",
             f"+refs/heads/{branch}:refs/remotes/origin/{branch}")
    if not _has(ws, sha):
        _git(ws, "fetch", "--no-tags", "--quiet", "origin", sha)


def _ensure_merge_base(ws: str, a: str, b: str) -> None:
    """A shallow clone may end before the merge base of ``a`` and ``b``: deepen it until there is one."""
    if _git(ws, "merge-base", a, b) is not None or _git(ws, "rev-parse", "--is-shallow-repository") != "true":
        return
    for depth in ("100", "1000"):
        _git(ws, "fetch", "--no-tags", "--quiet", f"--deepen={depth}", "origin", a, b)
        if _git(ws, "merge-base", a, b) is not None:
            return
    _git(ws, "fetch", "--no-tags", "--quiet", "--unshallow", "origin")


def _parents(ws: str, rev: str) -> list[str]:
    """The commit's parents as its object names them (a shallow clone's boundary commit too)."""
    raw = _git(ws, "cat-file", "-p", rev) or ""
    return [line.split()[1] for line in raw.splitlines() if line.startswith("parent ")]


def make_plan(env: dict[str, str]) -> Plan:
    """What to compare and where to post, from the predefined variables (the meanings quoted
    from GitLab's predefined variables reference, linked in the module docstring)."""
    ws = env.get("CI_PROJECT_DIR") or "."        # "the full path the repository is cloned to"
    commit = env.get("CI_COMMIT_SHA", "").strip()  # "the commit revision the project is built for"
    # "the event type of the merge request": detached, merged_result or merge_train (unset
    # outside merge request pipelines, gitlab-org/gitlab#516869)
    event = env.get("CI_MERGE_REQUEST_EVENT_TYPE", "").strip()
    # "how the pipeline was triggered": merge_request_event for every merge request pipeline
    is_mr = (env.get("CI_PIPELINE_SOURCE", "") == "merge_request_event"
             and bool(env.get("CI_MERGE_REQUEST_IID")))  # "the project-level IID of the merge request"
    target = env.get("CI_MERGE_REQUEST_TARGET_BRANCH_NAME", "").strip()  # "the target branch name"
    # "the ID of the project of the merge request": the target project, also for a fork's
    # merge request (CI_MERGE_REQUEST_SOURCE_PROJECT_ID is the fork)
    plan = Plan(project=env.get("CI_MERGE_REQUEST_PROJECT_ID", "").strip() if is_mr else "",
                iid=env.get("CI_MERGE_REQUEST_IID", "").strip() if is_mr else "",
                sha=commit, pipeline_id=env.get("CI_PIPELINE_ID", "").strip())
    # CI_MERGE_REQUEST_SOURCE_BRANCH_SHA, "the HEAD SHA of the source branch", is set in merged
    # results pipelines only; in a detached one the checkout is the head itself.
    plan.head_sha = env.get("CI_MERGE_REQUEST_SOURCE_BRANCH_SHA", "").strip() or commit
    base, head = env.get("RSI_BASE", "").strip(), env.get("RSI_HEAD", "").strip()
    if base:
        plan.kind = "given"
        plan.range_args = [base, head] if head else ([base] if ".." in base else [base, commit or "HEAD"])
        plan.footer = f"rayservice-impact · {' → '.join(_short(a) for a in plan.range_args)}"
    elif not is_mr:
        plan.kind = "branch"
        plan.error = ("a branch pipeline, not a merge request pipeline: nothing to compare and nothing "
                      "to post (run the job with `rules: - if: $CI_PIPELINE_SOURCE == "
                      "\"merge_request_event\"`, or set the `base` input)")
    elif event in ("merged_result", "merge_train"):
        plan.kind = event
        tip = env.get("CI_MERGE_REQUEST_TARGET_BRANCH_SHA", "").strip()
        parents = _parents(ws, commit or "HEAD")
        if event == "merge_train" and len(parents) == 2 and parents[1] == plan.head_sha:
            # The train commit merges the head onto what the train has ahead of it (the target
            # branch and the cars before this one): its first parent is what runs when it merges;
            # the cars' own changes are theirs, judged in their own pipelines.
            tip = parents[0]
        elif not tip and parents:  # GitLab left it empty: the merge commit's first parent
            tip = parents[0]
        _ensure(ws, tip, target)
        what = "merge train commit" if event == "merge_train" else "merged result"
        plan.range_args = [tip, commit or "HEAD"]
        plan.footer = (f"rayservice-impact · target `{tip[:8]}` → {what} `{commit[:8]}` "
                       f"of head `{plan.head_sha[:8]}`")
    else:  # detached, or a merge request pipeline GitLab did not label
        plan.kind = "detached"
        diff_base = env.get("CI_MERGE_REQUEST_DIFF_BASE_SHA", "").strip()
        if not diff_base:
            plan.error = "a merge request pipeline without CI_MERGE_REQUEST_DIFF_BASE_SHA: nothing to compare"
        else:
            _ensure(ws, diff_base, target)
            _ensure_merge_base(ws, diff_base, commit or "HEAD")
            plan.range_args = [f"{diff_base}...{commit or 'HEAD'}"]
            plan.notes.append(
                "This is a merge request pipeline on the head as it is (detached), not on the merged "
                f"result: the merge base with `{target or diff_base[:8]}` was compared with the head "
                f"`{commit[:8]}`, the merge request's own change. Enable merged results pipelines "
                "(Settings > Merge requests) to judge what the merge deploys.")
            plan.footer = f"rayservice-impact · merge base of `{diff_base[:8]}` → head `{commit[:8]}`"
    mode = (env.get("RSI_POST") or "auto").strip().lower()
    where = "the report is in the job log and artifacts"
    if not plan.iid:
        plan.post, plan.skip = False, f"not posted: no merge request; {where}"
    elif mode in ("false", "no", "never", "off"):
        plan.post, plan.skip = False, f"not posted (post: false); {where}"
    elif not env.get(TOKEN_VARIABLE):
        # A fork's pipeline runs in the fork without the parent's CI/CD variables (docs/gitlab-ci.md).
        plan.post, plan.skip = False, (
            f"not posted: {TOKEN_VARIABLE} is not set (a merge request from a fork runs in the fork "
            "without the parent's variables); the report is in the job log and artifacts, and the "
            "job's outcome is the verdict")
    comment = (env.get("RSI_COMMENT") or "").strip().lower()
    if not comment:  # the input left empty: the repository's own setting, as the service reads it
        base = plan.range_args[0].split("...")[0].split("..")[0] if plan.range_args else ""
        config = config_in_checkout(ws, base, GITLAB_PATHS, timeout=GIT_TIMEOUT)
        if config.problem:
            plan.notes.append(config.problem)
        comment = config.comment
    if comment not in COMMENT_MODES:
        plan.notes.append(f"the `comment` input must be one of {', '.join(COMMENT_MODES)}, not "
                          f"`{comment[:40]}`; commenting `always`")
        comment = "always"
    plan.comment = comment
    return plan


def _short(rev: str) -> str:
    return "".join(r[:12] if _SHA.fullmatch(r) else r for r in re.split(r"(\.\.\.?)", rev))


def run_cli(plan: Plan, env: dict[str, str], outputs: dict[str, Path]) -> tuple[int, str, str]:
    """One analysis: the markdown on standard output, every other format (``outputs``: format ->
    file) written by the CLI's ``--output``."""
    ws = env.get("CI_PROJECT_DIR") or "."
    # The console script, not ``python -m app``: run in the checkout, a repository with its own
    # app/ package would shadow ours.
    args = ["rayservice-impact", "git", *plan.range_args, "--repo", ws,
            "--kuberay-version", env.get("RSI_KUBERAY_VERSION") or DEFAULT,
            "--render", env.get("RSI_RENDER") or "auto", "--format", "markdown"]
    for fmt, path in outputs.items():
        args += ["--output", f"{fmt}={path}"]
    if env.get("CI_PROJECT_URL"):
        args += ["--repo-url", env["CI_PROJECT_URL"]]
    if env.get("RSI_POLICY", "").strip():
        args += ["--policy", env["RSI_POLICY"].strip()]
    if env.get("RSI_HEADROOM", "").split():
        args += ["--headroom", *env["RSI_HEADROOM"].split()]
    if env.get("RSI_PATHS", "").split():  # git pathspecs, never expanded by a shell
        args += ["--paths", *env["RSI_PATHS"].split()]
    proc = subprocess.run(args, cwd=ws, capture_output=True, text=True, check=False)
    return proc.returncode, proc.stdout, proc.stderr


def _read_or(path: Path, default: str) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except OSError:
        return default


def job_exit(code: int, fail_on_hold: bool) -> int:
    """The job's exit status for the CLI's ``code``."""
    if code == EXIT_HOLD:
        return EXIT_HOLD if fail_on_hold else EXIT_OK
    return code if code in (EXIT_OK, EXIT_USAGE) else EXIT_INTERNAL


def main() -> int:
    env = dict(os.environ)
    out = Path(env.get("RSI_OUT_DIR") or env.get("CI_PROJECT_DIR") or ".")
    out.mkdir(parents=True, exist_ok=True)
    plan = make_plan(env)
    fail_on_hold = (env.get("RSI_FAIL_ON_HOLD") or "true").strip().lower() not in ("false", "no", "0", "off")
    if plan.kind == "branch":
        print(f"rayservice-impact: {plan.error}")
        (out / CODEQUALITY).write_text("[]\n", encoding="utf-8")
        plan.error = ""
        (out / PLAN).write_text(json.dumps(asdict(plan), indent=2) + "\n", encoding="utf-8")
        return EXIT_OK
    if plan.error:
        code, markdown, report, quality = EXIT_USAGE, "", "", "[]\n"
        stderr = f"rayservice-impact: {plan.error}\n"
    else:
        for stale in (JSON, CODEQUALITY):  # a file left from an earlier run is never taken as this one's
            (out / stale).unlink(missing_ok=True)
        code, markdown, stderr = run_cli(plan, env, {"json": (out / JSON).resolve(),
                                                     "codequality": (out / CODEQUALITY).resolve()})
        report = _read_or(out / JSON, "")
        quality = _read_or(out / CODEQUALITY, "")
        if not quality.strip():
            quality = "[]\n"
    plan.exit_code = code
    (out / MARKDOWN).write_text(markdown, encoding="utf-8")
    (out / JSON).write_text(report, encoding="utf-8")
    (out / CODEQUALITY).write_text(quality, encoding="utf-8")
    (out / "rayservice-impact.stderr.txt").write_text(stderr, encoding="utf-8")
    (out / PLAN).write_text(json.dumps(asdict(plan), indent=2) + "\n", encoding="utf-8")
    for note in plan.notes:
        print(f"rayservice-impact: note: {note}")
    if plan.skip:
        print(f"rayservice-impact: {plan.skip}")
    sys.stdout.write(markdown if markdown.endswith("\n") or not markdown else markdown + "\n")
    if stderr.strip():
        sys.stdout.write(stderr if stderr.endswith("\n") else stderr + "\n")
    print(f"rayservice-impact: exit {code}" + (f"; {plan.footer}" if plan.footer else ""))
    return job_exit(code, fail_on_hold)


if __name__ == "__main__":
    sys.exit(main())
