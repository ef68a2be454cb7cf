"""The GitLab CI route: deploy/gitlab/rayservice-impact.yml's job and ``python -m app.gitlab.ci``, run
in real git repositories with GitLab's predefined variables for each pipeline type."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import jsonschema_rs
import pytest
from github_helpers import MANIFEST, manifest
from gitlab_ci_runner import INPUT, ROOT, TEMPLATE, documents, interpolate, run_job

from app.github.repo_config import GITLAB_PATHS, config_in_checkout
from app.gitlab.ci import job_exit, make_plan

SCHEMA = json.loads((ROOT / "tests" / "data" / "gitlab" / "codequality.schema.json").read_text())
OTHER = "k8s/other.yaml"


def _git(repo: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"}
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True,
                          env=env).stdout.strip()


@dataclass
class Origin:
    path: Path
    base: str        # where the merge request branched off (B0)
    target: str      # the target branch's tip (T1: B0 + a RayService of its own)
    head: str        # the merge request's head (H1)
    merge: str       # GitLab's merged result (T1 + H1)
    car: str         # a merge train's previous car (T1 + another merge request)
    train: str       # this merge request's train commit (car + H1)


def make_origin(tmp_path: Path, before: str, after: str) -> Origin:
    """A bare ``origin`` with main, the merge request's branch and GitLab's refs for it."""
    work = tmp_path / "work"
    (work / "k8s").mkdir(parents=True)
    _git(work, "init", "-q", "-b", "main")
    (work / MANIFEST).write_text(before)
    (work / "app").mkdir()  # a repository with its own app/ package must not shadow ours
    (work / "app" / "__init__.py").write_text("raise SystemExit('wrong app package')\n")
    (work / "README.md").write_text("# gitops\n")
    _git(work, "add", ".")
    _git(work, "commit", "-q", "-m", "base")
    base = _git(work, "rev-parse", "HEAD")
    for i in range(3):  # history behind the base, for the shallow clones
        (work / "README.md").write_text(f"# gitops {i}\n")
        _git(work, "commit", "-q", "-am", f"readme {i}")
    base = _git(work, "rev-parse", "HEAD")
    _git(work, "checkout", "-q", "-b", "feature")
    (work / MANIFEST).write_text(after)
    _git(work, "commit", "-q", "-am", "the merge request's change")
    head = _git(work, "rev-parse", "HEAD")
    _git(work, "checkout", "-q", "main")
    (work / OTHER).write_text(manifest("sample.base.yaml"))  # the target's own change meanwhile
    _git(work, "add", ".")
    _git(work, "commit", "-q", "-m", "target moves on")
    target = _git(work, "rev-parse", "HEAD")
    _git(work, "merge", "-q", "--no-ff", "-m", "merged result", "feature")
    merge = _git(work, "rev-parse", "HEAD")
    _git(work, "checkout", "-q", "--detach", target)
    (work / "NOTES.md").write_text("another merge request\n")
    _git(work, "add", ".")
    _git(work, "commit", "-q", "-m", "car ahead in the train")
    car = _git(work, "rev-parse", "HEAD")
    _git(work, "merge", "-q", "--no-ff", "-m", "train", "feature")
    train = _git(work, "rev-parse", "HEAD")
    origin = tmp_path / "origin.git"
    subprocess.run(["git", "init", "-q", "--bare", str(origin)], check=True)
    _git(work, "push", "-q", str(origin), f"{target}:refs/heads/main", f"{head}:refs/heads/feature",
         f"{head}:refs/merge-requests/1/head", f"{merge}:refs/merge-requests/1/merge",
         f"{train}:refs/merge-requests/1/train")
    return Origin(origin, base, target, head, merge, car, train)


@pytest.fixture
def hold_origin(tmp_path: Path) -> Origin:
    return make_origin(tmp_path, manifest("llm.base.yaml"), manifest("llm.head.yaml"))


def mr_variables(o: Origin, event: str) -> dict[str, str]:
    """GitLab's predefined variables of a merge request pipeline of type ``event``."""
    ci = {"CI_PIPELINE_SOURCE": "merge_request_event", "CI_MERGE_REQUEST_EVENT_TYPE": event,
          "CI_MERGE_REQUEST_IID": "1", "CI_MERGE_REQUEST_PROJECT_ID": "42",
          "CI_MERGE_REQUEST_SOURCE_PROJECT_ID": "42", "CI_PROJECT_ID": "42",
          "CI_MERGE_REQUEST_TARGET_BRANCH_NAME": "main", "CI_MERGE_REQUEST_SOURCE_BRANCH_NAME": "feature",
          "CI_MERGE_REQUEST_DIFF_BASE_SHA": o.base}
    if event == "merged_result":
        ci.update(CI_COMMIT_SHA=o.merge, CI_MERGE_REQUEST_TARGET_BRANCH_SHA=o.target,
                  CI_MERGE_REQUEST_SOURCE_BRANCH_SHA=o.head)
    elif event == "merge_train":
        ci.update(CI_COMMIT_SHA=o.train, CI_MERGE_REQUEST_TARGET_BRANCH_SHA=o.car,
                  CI_MERGE_REQUEST_SOURCE_BRANCH_SHA=o.head)
    else:
        ci.update(CI_COMMIT_SHA=o.head)
    return ci


REF = {"merged_result": "refs/merge-requests/1/merge", "merge_train": "refs/merge-requests/1/train",
       "detached": "refs/merge-requests/1/head"}


def artifacts(project: Path) -> tuple[list[dict], dict, str, dict]:
    quality = json.loads((project / "gl-code-quality-report.json").read_text())
    report_text = (project / "rayservice-impact.json").read_text()
    return (quality, json.loads(report_text) if report_text else {},
            (project / "rayservice-impact.md").read_text(),
            json.loads((project / "rayservice-impact.plan.json").read_text()))


def assert_hold_artifacts(project: Path) -> dict:
    quality, report, markdown, plan = artifacts(project)
    assert [e.message for e in jsonschema_rs.validator_for(SCHEMA).iter_errors(quality)] == []
    critical = [i for i in quality if i["severity"] == "critical"]
    assert critical and {i["location"]["path"] for i in critical} == {MANIFEST}
    text = (project / MANIFEST).read_text().splitlines()
    assert all("2.53" in text[i["location"]["lines"]["begin"] - 1] for i in critical)
    assert report["decision"] == "hold"
    # the target's own RayService (k8s/other.yaml) is not this merge request's change
    assert [r["name"] for r in report["resources"]] == ["ray-serve-llm"]
    assert "ray-serve-llm" in markdown and "rayservice-sample" not in markdown
    return plan


# -- the template as a file ---------------------------------------------------------------------

def test_the_template_is_a_spec_header_and_one_job_using_every_input() -> None:
    spec, jobs = documents()
    declared = set(spec["spec"]["inputs"])
    used = set(INPUT.findall(jobs))
    assert used == declared
    action = {"kuberay-version", "policy", "headroom", "paths", "render", "comment", "fail-on-hold", "post",
              "base", "head"}
    assert action <= declared and {"stage", "image", "package"} <= declared
    with pytest.raises(AssertionError, match="package is required"):  # on no index: say where from
        interpolate(jobs, spec, {})
    job = interpolate(jobs, spec, {"package": ""})
    assert list(job) == ["rayservice-impact"]
    j = job["rayservice-impact"]
    assert j["rules"] == [{"if": '$CI_PIPELINE_SOURCE == "merge_request_event"'}]
    assert j["artifacts"]["reports"] == {"codequality": "gl-code-quality-report.json"}
    assert j["artifacts"]["when"] == "always"
    assert set(j["artifacts"]["paths"]) == {"rayservice-impact.md", "rayservice-impact.json"}
    assert j["variables"]["GIT_DEPTH"] == "0"
    assert all(isinstance(v, str) for v in j["variables"].values())  # GitLab takes strings
    assert j["stage"] == "test" and j["image"] == "python:3.11"
    staged = interpolate(jobs, spec, {"package": "", "stage": "verify"})
    assert staged["rayservice-impact"]["stage"] == "verify"
    with pytest.raises(AssertionError):
        interpolate(jobs, spec, {"package": "", "render": "sometimes"})  # not one of its options


def test_the_runner_notices_an_input_the_header_does_not_declare() -> None:
    spec, jobs = documents()
    with pytest.raises(AssertionError, match="not declared"):
        interpolate(jobs + "\n  # $[[ inputs.nope ]]\n", spec, {"package": ""})


# -- each pipeline type, by running the job ----------------------------------------------------

def test_merged_results_pipeline_compares_target_with_the_merge_and_fails_on_hold(hold_origin,
                                                                                   tmp_path) -> None:
    o = hold_origin
    run = run_job(o.path, tmp_path, mr_variables(o, "merged_result"), ref=REF["merged_result"])
    assert run.ran and run.code == 3, run.log
    plan = assert_hold_artifacts(run.project_dir)
    assert plan["range_args"] == [o.target, o.merge]
    assert plan["kind"] == "merged_result" and plan["iid"] == "1" and plan["head_sha"] == o.head
    assert "not posted: RAYSERVICE_IMPACT_GITLAB_TOKEN is not set" in run.log
    assert "ray-serve-llm" in run.log  # the report is in the job log
    assert "wrong app package" not in run.log


def test_merged_results_pipeline_on_a_shallow_clone_fetches_the_target(hold_origin, tmp_path) -> None:
    o = hold_origin
    run = run_job(o.path, tmp_path, mr_variables(o, "merged_result"), ref=REF["merged_result"], depth="1")
    assert run.code == 3, run.log
    assert assert_hold_artifacts(run.project_dir)["range_args"] == [o.target, o.merge]
    assert _git(run.project_dir, "rev-parse", "--is-shallow-repository") == "true"  # fetched, not deepened


def test_fail_on_hold_false_passes_the_job_with_the_same_reports(hold_origin, tmp_path) -> None:
    o = hold_origin
    run = run_job(o.path, tmp_path, mr_variables(o, "merged_result"), ref=REF["merged_result"],
                  inputs={"fail-on-hold": "false"})
    assert run.code == 0, run.log
    assert json.loads((run.project_dir / "rayservice-impact.plan.json").read_text())["exit_code"] == 3
    assert_hold_artifacts(run.project_dir)


@pytest.mark.parametrize("depth", ["0", "1"])
def test_detached_pipeline_compares_the_merge_base_with_the_head_and_says_so(hold_origin, tmp_path,
                                                                             depth) -> None:
    o = hold_origin
    run = run_job(o.path, tmp_path, mr_variables(o, "detached"), ref=REF["detached"], depth=depth)
    assert run.code == 3, run.log
    plan = assert_hold_artifacts(run.project_dir)
    assert plan["range_args"] == [f"{o.base}...{o.head}"]
    assert plan["kind"] == "detached"
    assert "not on the merged result" in run.log
    assert any("not on the merged result" in n for n in plan["notes"])


@pytest.mark.parametrize("given_target", [True, False])
def test_merge_train_compares_the_trains_target_with_the_train_commit(hold_origin, tmp_path,
                                                                       given_target) -> None:
    o = hold_origin
    ci = mr_variables(o, "merge_train")
    # GitLab's variable names the target branch's tip, or is empty: either way the cars ahead of
    # this merge request (o.car: NOTES.md) are not its change
    ci["CI_MERGE_REQUEST_TARGET_BRANCH_SHA"] = o.target if given_target else ""
    run = run_job(o.path, tmp_path, ci, ref=REF["merge_train"], depth="1")
    assert run.code == 3, run.log
    plan = assert_hold_artifacts(run.project_dir)
    assert plan["range_args"] == [o.car, o.train]
    assert plan["kind"] == "merge_train"
    assert "merge train commit" in plan["footer"]


def test_branch_pipeline_does_not_run_the_job(hold_origin, tmp_path) -> None:
    o = hold_origin
    ci = {"CI_PIPELINE_SOURCE": "push", "CI_COMMIT_SHA": o.target, "CI_COMMIT_BRANCH": "main"}
    run = run_job(o.path, tmp_path, ci, ref="refs/heads/main")
    assert not run.ran


def test_branch_pipeline_run_anyway_reports_to_the_log_only(hold_origin, tmp_path) -> None:
    """The job's rules removed (a user's own copy): no merge request, nothing compared or posted."""
    o = hold_origin
    text = TEMPLATE.read_text().replace('    - if: $CI_PIPELINE_SOURCE == "merge_request_event"\n',
                                        '    - if: $CI_PIPELINE_SOURCE == "push"\n')
    ci = {"CI_PIPELINE_SOURCE": "push", "CI_COMMIT_SHA": o.target, "CI_COMMIT_BRANCH": "main",
          "RAYSERVICE_IMPACT_GITLAB_TOKEN": "glpat-not-used"}
    run = run_job(o.path, tmp_path, ci, ref="refs/heads/main", text=text)
    assert run.ran and run.code == 0, run.log
    assert "a branch pipeline, not a merge request pipeline" in run.log
    assert json.loads((run.project_dir / "gl-code-quality-report.json").read_text()) == []
    assert json.loads((run.project_dir / "rayservice-impact.plan.json").read_text())["post"] is False


def test_approve_passes_with_its_findings_as_minor_issues(tmp_path) -> None:
    o = make_origin(tmp_path, manifest("sample.base.yaml"), manifest("sample.head.yaml"))
    run = run_job(o.path, tmp_path, mr_variables(o, "merged_result"), ref=REF["merged_result"])
    assert run.code == 0, run.log
    quality, report, markdown, _ = artifacts(run.project_dir)
    assert report["decision"] == "approve" and "rayservice-sample" in markdown
    findings = [f for r in report["resources"] for f in r["findings"]]
    assert len(quality) == len(findings) and {i["severity"] for i in quality} <= {"minor", "info"}


def test_invalid_manifest_fails_the_job_with_2_and_names_the_file(tmp_path) -> None:
    broken = "apiVersion: ray.io/v1\nkind: RayService\nmetadata: {name: x\n"
    o = make_origin(tmp_path, manifest("sample.base.yaml"), broken)
    run = run_job(o.path, tmp_path, mr_variables(o, "merged_result"), ref=REF["merged_result"],
                  inputs={"fail-on-hold": "false"})
    assert run.code == 2, run.log
    assert MANIFEST in run.log
    assert (run.project_dir / "rayservice-impact.stderr.txt").read_text().strip()


def test_the_inputs_reach_the_cli(hold_origin, tmp_path) -> None:
    """``paths`` that leave the change out, and ``render: none``: nothing to compare, approve."""
    o = hold_origin
    run = run_job(o.path, tmp_path, mr_variables(o, "merged_result"), ref=REF["merged_result"],
                  inputs={"paths": "docs/*.md", "render": "none"})
    assert run.code == 0, run.log
    quality, report, _, _ = artifacts(run.project_dir)
    assert quality == [] and report["resources"] == []


def test_job_exit_maps_the_cli_codes() -> None:
    assert [job_exit(c, True) for c in (0, 3, 2, 1, 130)] == [0, 3, 2, 1, 1]
    assert [job_exit(c, False) for c in (0, 3, 2, 1)] == [0, 0, 2, 1]


def test_the_module_without_a_merge_request_or_base_exits_0(tmp_path) -> None:
    env = {"PATH": os.environ["PATH"], "PYTHONPATH": str(ROOT), "CI_PROJECT_DIR": str(tmp_path),
           "CI_PIPELINE_SOURCE": "web", "CI_COMMIT_SHA": "0" * 40}
    proc = subprocess.run([sys.executable, "-m", "app.gitlab.ci"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "nothing to post" in proc.stdout


def test_a_forks_pipeline_without_the_token_reports_in_the_log_and_still_fails_on_hold(hold_origin,
                                                                                       tmp_path) -> None:
    """A fork's merge request pipeline runs in the fork, without the parent's variables."""
    o = hold_origin
    ci = {**mr_variables(o, "detached"), "CI_MERGE_REQUEST_SOURCE_PROJECT_ID": "77", "CI_PROJECT_ID": "77"}
    run = run_job(o.path, tmp_path, ci, ref=REF["detached"])
    assert run.code == 3, run.log
    assert "not posted: RAYSERVICE_IMPACT_GITLAB_TOKEN is not set (a merge request from a fork" in run.log
    assert "post_note" not in run.log  # the posting step did not run
    plan = assert_hold_artifacts(run.project_dir)
    assert plan["post"] is False and plan["project"] == "42"


# -- the comment mode: the input, else the project's setting at the compared base ----------------

def _commit_files(repo: Path, files: dict[str, str | None], message: str) -> str:
    for rel, text in files.items():
        path = repo / rel
        if text is None:
            if path.is_dir():
                for child in path.iterdir():
                    child.unlink()
                path.rmdir()
            elif path.exists():
                path.unlink()
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "--allow-empty", "-m", message)
    return _git(repo, "rev-parse", "HEAD")


def test_the_setting_at_the_base_is_gitlabs_file_else_githubs(tmp_path: Path) -> None:
    repo = tmp_path / "r"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    none = _commit_files(repo, {"README.md": "# r\n"}, "nothing set")
    github = _commit_files(repo, {".github/rayservice-impact.yml": "comment: on-change\n"}, "github")
    both = _commit_files(repo, {".gitlab/rayservice-impact.yml": "comment: on-hold\n"}, "both")
    empty = _commit_files(repo, {".gitlab/rayservice-impact.yml": ""}, "empty gitlab file")
    bad = _commit_files(repo, {".gitlab/rayservice-impact.yml": "comment: loud\n"}, "bad value")
    folder = _commit_files(repo, {".gitlab/rayservice-impact.yml": None,
                                  ".gitlab/rayservice-impact.yml/x": "comment: on-hold\n"}, "a folder")
    ws = str(repo)
    assert [config_in_checkout(ws, c, GITLAB_PATHS).comment for c in (none, github, both, empty)] == [
        "always", "on-change", "on-hold", "always"]   # an empty .gitlab file is the default, no fallback
    assert config_in_checkout(ws, "", GITLAB_PATHS).comment == "always"
    wrong = config_in_checkout(ws, bad, GITLAB_PATHS)
    assert wrong.comment == "always" and "`.gitlab/rayservice-impact.yml`" in wrong.problem
    assert "a tree" in config_in_checkout(ws, folder, GITLAB_PATHS).problem


def test_the_job_takes_the_mode_from_the_base_unless_the_input_sets_one(hold_origin, tmp_path) -> None:
    """The base (``base`` input) has ``comment: on-hold``; the head removes the file: the base's
    setting decides. A ``comment`` input wins; a bad one is ``always``, said in the note."""
    o = hold_origin
    work = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(o.path), str(work)], check=True)
    _git(work, "checkout", "-q", o.target)
    quiet = _commit_files(work, {".gitlab/rayservice-impact.yml": "comment: on-hold\n"}, "quiet")
    loud = _commit_files(work, {".gitlab/rayservice-impact.yml": None}, "the head drops it")
    env = {**mr_variables(o, "merged_result"), "CI_PROJECT_DIR": str(work), "RSI_BASE": quiet,
           "RSI_HEAD": loud}
    assert make_plan(env).comment == "on-hold"
    assert make_plan({**env, "RSI_COMMENT": "on-change"}).comment == "on-change"
    plan = make_plan({**env, "RSI_COMMENT": "shout"})
    assert plan.comment == "always" and any("`shout`" in n for n in plan.notes)
    assert make_plan({**env, "RSI_BASE": loud, "RSI_HEAD": quiet}).comment == "always"
