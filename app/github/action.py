"""The composite Action's analyse step (``python -m app.github.action``, see action.yml).

It decides what to compare, runs ``rayservice-impact git`` (markdown and JSON), writes the job
summary and the step's outputs (the comment mode among them: the ``comment`` input, else the
repository's ``.github/rayservice-impact.yml`` at the base commit, :mod:`.repo_config`). Inputs
come from the environment: ``BASE``, ``HEAD``, ``SHA``, ``PR``, ``POST``, ``COMMENT``,
``KUBERAY_VERSION``, ``POLICY``, ``HEADROOM``, ``PATHS``, ``RENDER``, and the
runner's ``GITHUB_*`` variables (``GITHUB_EVENT_NAME``, ``GITHUB_EVENT_PATH``, ``GITHUB_WORKSPACE``,
``GITHUB_OUTPUT``, ``GITHUB_STEP_SUMMARY``, ``RUNNER_TEMP``).

What is compared, with ``base`` left empty (the default):

* ``pull_request``: the checkout is GitHub's test merge commit (``refs/pull/N/merge``, which
  ``actions/checkout`` checks out by default for this event; its first parent is the base
  branch's tip, its second the pull request's head): first parent → merge commit, i.e. what
  runs now against what the merge would deploy.
* any other checkout of a pull request (its head, or ``pull_request_target``'s base): the merge
  base of the base branch and the head → the head (``rayservice-impact git BASE...HEAD``), said so.
* ``merge_group``: ``merge_group.base_sha`` → ``merge_group.head_sha``; the status goes on the
  group's head and no comment is written.

Pull requests from forks get a read-only ``GITHUB_TOKEN``: the report goes to the job summary and
the posting step is skipped with a notice (``POST=auto``).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from app.output import EXIT_USAGE
from diffing.versions import DEFAULT

from .comment import fit
from .repo_config import ALWAYS, MODES, RepoConfig, config_in_checkout

SUMMARY_MAX_BYTES = 1024 * 1024      # GitHub's limit for one step's job summary (1 MiB)
SUMMARY_BUDGET = SUMMARY_MAX_BYTES - 16 * 1024


@dataclass
class Plan:
    range_args: list[str] = field(default_factory=list)   # rayservice-impact git ARGS
    status_sha: str = ""
    pr: str = ""
    post: bool = True
    skip: str = ""                      # why nothing is posted (one line)
    notes: list[str] = field(default_factory=list)
    footer: str = ""
    error: str = ""                     # nothing to compare: said instead of a report
    comment: str = ALWAYS               # the comment mode (.repo_config)


_SHA = re.compile(r"[0-9a-f]{40}(?:[0-9a-f]{24})?")


def _short(rev: str) -> str:
    """A revision as the footer shows it: a full SHA as its first 12 digits, anything else (a branch,
    a tag, ``origin/main...HEAD``) whole: a branch name is never cut."""
    return "".join(r[:12] if _SHA.fullmatch(r) else r for r in re.split(r"(\.\.\.?)", rev))


def _git(workspace: str, *args: str) -> str | None:
    proc = subprocess.run(["git", "-C", workspace, *args], capture_output=True, text=True, check=False)
    return proc.stdout.strip() if proc.returncode == 0 else None


def _parents(workspace: str, rev: str) -> tuple[str, list[str]]:
    """(the commit's SHA, its parents' SHAs), read from the commit object itself (a shallow clone's
    boundary commit still names its parents there)."""
    sha = _git(workspace, "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}") or ""
    raw = _git(workspace, "cat-file", "-p", sha) if sha else None
    parents = [line.split()[1] for line in (raw or "").splitlines() if line.startswith("parent ")]
    return sha, parents


def _ensure(workspace: str, sha: str) -> None:
    """Fetch one commit the checkout lacks (a shallow clone); harmless when it fails."""
    if sha and _git(workspace, "cat-file", "-e", f"{sha}^{{commit}}") is None:
        subprocess.run(["git", "-C", workspace, "fetch", "--no-tags", "--quiet", "origin", sha],
                       capture_output=True, check=False, timeout=300)


def is_fork(pull: dict[str, Any]) -> bool:
    """A pull request whose head lives in another repository. Its full name, not ``head.repo.fork``,
    decides: a pull request inside a repository that is itself a fork has ``fork: true`` and a
    normal token; a deleted fork's ``head.repo`` is null."""
    head = (pull.get("head") or {}).get("repo")
    base = (pull.get("base") or {}).get("repo") or {}
    if not isinstance(head, dict):
        return True
    return str(head.get("full_name", "")).lower() != str(base.get("full_name", "")).lower()


def make_plan(env: dict[str, str], event_name: str, event: dict[str, Any]) -> Plan:
    ws = env.get("GITHUB_WORKSPACE") or "."
    base, head = env.get("BASE", "").strip(), env.get("HEAD", "").strip()
    pull = event.get("pull_request") if isinstance(event.get("pull_request"), dict) else None
    group = event.get("merge_group") if event_name == "merge_group" else None
    plan = Plan(pr=env.get("PR", "").strip() or (str(pull.get("number", "")) if pull else ""))
    if base:
        if head:
            plan.range_args = [base, head]
        elif "..." in base or ".." in base:
            plan.range_args = [base]
        else:
            head = env.get("GITHUB_SHA") or "HEAD"
            plan.range_args = [base, head]
        plan.footer = f"rayservice-impact · {' → '.join(_short(a) for a in plan.range_args)}"
    elif isinstance(group, dict):
        base, head = str(group.get("base_sha", "")), head or str(group.get("head_sha", ""))
        plan.range_args = [base, head]
        plan.pr = ""  # no pull request to comment on: the status only
        plan.footer = f"rayservice-impact · base `{base[:7]}` → merge group `{head[:7]}`"
    elif pull is not None:
        pr_head = str((pull.get("head") or {}).get("sha") or "")
        checked, parents = _parents(ws, head or "HEAD")
        if len(parents) == 2 and parents[1] == pr_head:
            _ensure(ws, parents[0])
            plan.range_args = [parents[0], checked]
            plan.footer = (f"rayservice-impact · base `{parents[0][:7]}` → merge `{checked[:7]}` "
                           f"of head `{pr_head[:7]}`")
        else:
            target = head or (checked if checked == pr_head else pr_head)
            ref = str((pull.get("base") or {}).get("ref") or "")
            tip = f"origin/{ref}" if ref and _git(ws, "rev-parse", "--verify", "--quiet",
                                                  f"refs/remotes/origin/{ref}") else ""
            tip = tip or str((pull.get("base") or {}).get("sha") or "")
            _ensure(ws, target)
            plan.range_args = [f"{tip}...{target}"]
            plan.notes.append("The checkout is not GitHub's test merge commit of this pull request, so its "
                              f"merge base with `{tip}` was compared with its head `{target[:7]}`: the "
                              "pull request's own change, not the merge result. Check out the default "
                              "`refs/pull/N/merge` (actions/checkout's default for `pull_request`) for that.")
            plan.footer = f"rayservice-impact · merge base of `{tip}` → head `{target[:7]}`"
    else:
        plan.error = ("no base to compare: set the `base` and `head` inputs, or run on a `pull_request` "
                      "or `merge_group` event")
    pull_head = str((pull.get("head") or {}).get("sha") or "") if pull else ""
    group_head = str(group.get("head_sha", "")) if isinstance(group, dict) else ""
    plan.status_sha = env.get("SHA", "").strip() or pull_head or group_head or head
    mode = (env.get("POST") or "auto").strip().lower()
    if mode in ("false", "no", "never", "off"):
        plan.post, plan.skip = False, "not posted (post: false); the report is in the job summary"
    elif mode == "auto" and pull is not None and is_fork(pull):
        plan.post, plan.skip = False, ("not posted: a pull request from a fork gets a read-only token; the "
                                       "report is in the job summary and the job's outcome is the verdict")
    if not plan.status_sha:
        plan.post, plan.skip = False, "not posted: no commit to put the status on"
    return plan


def comment_mode(plan: Plan, env: dict[str, str]) -> RepoConfig:
    """The comment mode: the ``comment`` input when set, else the repository's setting at the base
    commit (what runs now), else ``always``."""
    chosen = env.get("COMMENT", "").strip().lower()
    if chosen:
        if chosen in MODES:
            return RepoConfig(chosen)
        return RepoConfig(problem=f"the `comment:` input must be one of {', '.join(MODES)}, not "
                                  f"`{chosen[:40]}`; commenting `always`")
    if not plan.range_args:
        return RepoConfig()
    base = plan.range_args[0].split("...")[0].split("..")[0] or "HEAD"
    return config_in_checkout(env.get("GITHUB_WORKSPACE") or ".", base)


def run_cli(plan: Plan, env: dict[str, str], fmt: str) -> tuple[int, str, str]:
    ws = env.get("GITHUB_WORKSPACE") or "."
    args = ["rayservice-impact", "git", *plan.range_args, "--repo", ws,
            "--kuberay-version", env.get("KUBERAY_VERSION") or DEFAULT,
            "--render", env.get("RENDER") or "auto", "--format", fmt]
    server, repo = env.get("GITHUB_SERVER_URL"), env.get("GITHUB_REPOSITORY")
    if server and repo:
        args += ["--repo-url", f"{server}/{repo}"]
    if env.get("POLICY", "").strip():
        args += ["--policy", env["POLICY"].strip()]
    if env.get("HEADROOM", "").split():
        args += ["--headroom", *env["HEADROOM"].split()]
    if env.get("PATHS", "").split():  # git pathspecs, never expanded by a shell
        args += ["--paths", *env["PATHS"].split()]
    proc = subprocess.run(args, cwd=ws, capture_output=True, text=True, check=False)
    return proc.returncode, proc.stdout, proc.stderr


def summary_text(plan: Plan, markdown: str, stderr: str) -> str:
    """The job summary: notes, the report (cut to fit GitHub's 1 MiB, the verdict kept), the error."""
    parts = []
    if plan.skip:
        parts.append(f"> [!NOTE]\n> rayservice-impact: {plan.skip}.\n")
    if plan.notes:
        parts.append("> [!WARNING]\n> " + "\n>\n> ".join(plan.notes) + "\n")
    tail = f"\n```text\n{stderr.strip()[:20_000]}\n```\n" if stderr.strip() else ""
    head = "\n".join(parts)
    room = SUMMARY_BUDGET - len((head + tail).encode("utf-8"))
    body, chars = markdown, room
    while len(body.encode("utf-8")) > room:
        body = fit(markdown.rstrip("\n"), chars)
        chars = int(chars * 0.9)
    return f"{head}\n{body}\n{tail}" if head else f"{body}\n{tail}"


def main() -> int:
    env = dict(os.environ)
    event_name = env.get("GITHUB_EVENT_NAME", "")
    event: dict[str, Any] = {}
    if env.get("GITHUB_EVENT_PATH") and Path(env["GITHUB_EVENT_PATH"]).is_file():
        try:
            event = json.loads(Path(env["GITHUB_EVENT_PATH"]).read_text(encoding="utf-8"))
        except ValueError:
            event = {}
    out = Path(env.get("RUNNER_TEMP") or ".") / "rayservice-impact"
    out.mkdir(parents=True, exist_ok=True)
    plan = make_plan(env, event_name, event if isinstance(event, dict) else {})
    config = comment_mode(plan, env)
    plan.comment = config.comment
    if config.problem:
        plan.notes.append(config.problem)
    if plan.error:
        code, markdown, stderr = EXIT_USAGE, "", f"rayservice-impact: {plan.error}\n"
        report_json = ""
    else:
        code, markdown, stderr = run_cli(plan, env, "markdown")
        _, report_json, _ = run_cli(plan, env, "json")
    (out / "report.md").write_text(markdown, encoding="utf-8")
    (out / "report.json").write_text(report_json, encoding="utf-8")
    (out / "stderr.txt").write_text(stderr, encoding="utf-8")
    (out / "note.md").write_text("\n>\n> ".join(plan.notes), encoding="utf-8")
    (out / "footer.txt").write_text(plan.footer, encoding="utf-8")
    if env.get("GITHUB_STEP_SUMMARY"):
        with open(env["GITHUB_STEP_SUMMARY"], "a", encoding="utf-8") as summary:
            summary.write(summary_text(plan, markdown, stderr))
    outputs = {"exit-code": str(code), "dir": str(out), "sha": plan.status_sha, "pr": plan.pr,
               "post": "true" if plan.post else "false", "skip": " ".join(plan.skip.split()),
               "comment": plan.comment}
    if env.get("GITHUB_OUTPUT"):
        with open(env["GITHUB_OUTPUT"], "a", encoding="utf-8") as fh:
            for key, value in outputs.items():
                fh.write(f"{key}={' '.join(value.split())}\n")
    if plan.error:
        print(f"::error title=rayservice-impact::{plan.error}")
    return 0  # the verdict is the exit-code output; the Gate step turns it into the job's outcome


if __name__ == "__main__":
    sys.exit(main())
