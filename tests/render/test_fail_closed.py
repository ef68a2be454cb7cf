"""Green means safe: no spelling, encoding, wrapper or source turns a GPU-doubling change green.

Each case is the LLM sample's GPU image bump (a second RayCluster, 4 extra nvidia.com/gpu, hold
without headroom) written another way that kubectl, kustomize and Argo CD deploy the same. The
flows that decide what to read — ``git`` with and without rendering, the webhook (plain files and
tarballs) — must give the decision ``analyze`` gives on the two plain files. Real git
repositories, real kubectl kustomize, the real service against the GitHub stand-in.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from gitops import NEW_TAG, REPO_URL, application, commit, edit_yaml, git, make_repo, run, write
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from spellings import SPELLINGS

import diffing
from app.cli import main
from diffing.kube.scope import decode

ROOT = Path(__file__).resolve().parents[2]
BEFORE = (ROOT / "samples" / "gpu-image-bump" / "before.yaml").read_text()
AFTER = (ROOT / "samples" / "gpu-image-bump" / "after.yaml").read_text()
needs_kubectl = pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")


def _expected() -> str:
    return diffing.analyze([("before", BEFORE)], [("after", AFTER)]).decision


EXPECTED = _expected()


def empty_repo(tmp_path: Path) -> Path:
    """A new git repository ``gitops`` with this project's Applications' origin."""
    repo = tmp_path / "gitops"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    git(repo, "remote", "add", "origin", REPO_URL)
    return repo


def plain_repo(tmp_path: Path, before: tuple[bytes, str] | None = None) -> tuple[Path, str]:
    repo = empty_repo(tmp_path)
    data, suffix = before or (BEFORE.encode(), ".yaml")
    (repo / "llm").mkdir()
    (repo / "llm" / f"rayservice{suffix}").write_bytes(data)
    write(repo, "README.md", "# llm\n")
    return repo, commit(repo, "initial")


def spell_after(repo: Path, spelling: str, text: str = AFTER) -> str:
    data, suffix = SPELLINGS[spelling](text)
    for old in (repo / "llm").glob("rayservice.*"):
        old.unlink()
    (repo / "llm" / f"rayservice{suffix}").write_bytes(data)
    return commit(repo, spelling)


def decisions(repo: Path, base: str, head: str, capsys: Any) -> dict[str, tuple[int, str]]:
    out = {}
    for mode in ("auto", "none"):
        code, report = run(repo, base, head, capsys, "--render", mode)
        out[mode] = (code, report.get("decision") or report.get("stderr", ""))
    return out


def _pairs() -> dict[str, tuple[str, str]]:
    """Every sample pair of the repository (RayService and RayCluster), and a RayJob pair from
    KubeRay's own RayJob sample (an entrypoint change: the next run)."""
    out = {}
    for d in sorted((ROOT / "samples").iterdir()):
        if (d / "before.yaml").is_file():
            out[d.name] = ((d / "before.yaml").read_text(), (d / "after.yaml").read_text())
    job = (ROOT / "tests" / "data" / "kuberay-rayjob" / "ray-job.sample.yaml").read_text()
    docs = [d for d in yaml.safe_load_all(job) if d]
    changed = json.loads(json.dumps(docs))
    for d in changed:
        if d.get("kind") == "RayJob":
            d["spec"]["entrypoint"] = "python /home/ray/samples/sample_code.py --epochs 2"
    out["rayjob-entrypoint"] = (yaml.safe_dump_all(docs, sort_keys=False),
                                yaml.safe_dump_all(changed, sort_keys=False))
    return out


PAIRS = _pairs()


# -- 1, 2, 3: spellings, encodings and list kinds ----------------------------------------------

@pytest.mark.parametrize("spelling", sorted(SPELLINGS))
def test_every_spelling_of_the_after_side_holds_in_git(tmp_path: Path, capsys, spelling: str) -> None:
    repo, base = plain_repo(tmp_path)
    head = spell_after(repo, spelling)
    got = decisions(repo, base, head, capsys)
    assert got == {"auto": (3, EXPECTED), "none": (3, EXPECTED)}, got


@pytest.mark.parametrize("spelling", ["kind-comment", "utf-16", "RayServiceList", "json-file",
                                      "escaped-group"])
def test_spelled_on_both_sides_is_the_same_change(tmp_path: Path, capsys, spelling: str) -> None:
    repo, base = plain_repo(tmp_path, SPELLINGS[spelling](BEFORE))
    head = spell_after(repo, spelling)
    code, report = run(repo, base, head, capsys)
    assert (code, report["decision"]) == (3, EXPECTED)
    [res] = report["resources"]
    assert (res["name"], res["action"], res["rollout"]) == ("ray-serve-llm", "updated", "new-cluster")


@pytest.mark.parametrize("spelling", ["utf-16", "utf-32", "RayServiceList", "ConfigMapList", "nested-List",
                                      "kind-tag", "json-file"])
def test_analyze_reads_every_spelling(tmp_path: Path, capsys, spelling: str) -> None:
    data, suffix = SPELLINGS[spelling](AFTER)
    (tmp_path / "before.yaml").write_text(BEFORE)
    (tmp_path / f"after{suffix}").write_bytes(data)
    code = main(["analyze", str(tmp_path / "before.yaml"), str(tmp_path / f"after{suffix}"),
                 "--format", "json"])
    report = json.loads(capsys.readouterr().out)
    assert (code, report["decision"], report["resources"][0]["rollout"]) == (3, EXPECTED, "new-cluster")
    assert "not_analysed" not in report or "RayServiceList" not in json.dumps(report["not_analysed"])


def test_undecodable_file_that_may_hold_a_rayservice_is_an_error_never_a_deletion(tmp_path: Path,
                                                                                  capsys) -> None:
    repo, base = plain_repo(tmp_path)
    # a UTF-16 mark, then an odd number of bytes: no UTF-16 text
    broken = b"\xff\xfe" + "kind: RayService\n".encode("utf-16-le")[:-1]
    (repo / "llm" / "rayservice.yaml").write_bytes(broken)
    head = commit(repo)
    for mode in ("auto", "none"):
        code, report = run(repo, base, head, capsys, "--render", mode)
        assert code in (2, 3), (mode, code, report)
        assert report.get("decision") != "approve"


def test_utf8_behind_a_stray_utf16_mark_is_an_error_never_a_deletion(tmp_path: Path, capsys) -> None:
    """The UTF-16 mark decodes the UTF-8 bytes behind it into one string of CJK characters, which
    would hold no RayService (found by the CLI's byte fuzz: b'\\xfe\\xff' spliced at offset 0)."""
    repo, base = plain_repo(tmp_path)
    path = repo / "llm" / "rayservice.yaml"
    path.write_bytes(b"\xfe\xff" + path.read_bytes())
    head = commit(repo)
    for mode in ("auto", "none"):
        code, report = run(repo, base, head, capsys, "--render", mode)
        assert code in (2, 3), (mode, code, report)
        assert report.get("decision") != "approve"


def test_a_pattern_never_decides_what_an_application_is(tmp_path: Path, capsys) -> None:
    """``kind: Application  # prod`` with a ``kustomize.images`` bump: the Application is found by
    its parsed kind, so the bump it makes is rendered and held."""
    repo = make_repo(tmp_path)
    app = application("llm-prod", "overlays/prod", "ray-prod")
    text = yaml.safe_dump(app, sort_keys=False).replace("kind: Application", "kind: Application  # prod")
    write(repo, "apps/llm-prod.yaml", text)
    base = commit(repo)
    app["spec"]["source"]["kustomize"] = {"images": [f"rayproject/ray-llm:{NEW_TAG}"]}
    write(repo, "apps/llm-prod.yaml",
          yaml.safe_dump(app, sort_keys=False).replace("kind: Application", "kind: Application  # prod"))
    head = commit(repo)
    code, report = run(repo, base, head, capsys)
    assert (code, report["decision"]) == (3, "hold")
    assert report["resources"][0]["source"] == "Application llm-prod"


# -- 5: submodules ------------------------------------------------------------------------------

def _submodule_repos(tmp_path: Path) -> tuple[Path, Path, str]:
    """A base repository holding the LLM RayService, and a GitOps repository that has it as a
    submodule ``vendor/llm`` and deploys it through an overlay: (gitops, base repo, first commit)."""
    lib = tmp_path / "llm-base"
    lib.mkdir()
    git(lib, "init", "-q", "-b", "main")
    write(lib, "rayservice.yaml", BEFORE)
    write(lib, "kustomization.yaml", {"resources": ["rayservice.yaml"]})
    commit(lib, "base")
    repo = empty_repo(tmp_path)
    git(repo, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(lib), "vendor/llm")
    write(repo, "overlays/prod/kustomization.yaml", {"resources": ["../../vendor/llm"]})
    return repo, lib, commit(repo, "initial")


@needs_kubectl
def test_a_moved_submodule_holds(tmp_path: Path, capsys) -> None:
    repo, lib, base = _submodule_repos(tmp_path)
    write(lib, "rayservice.yaml", AFTER)
    new = commit(lib, "GPU image bump")
    git(repo / "vendor" / "llm", "-c", "protocol.file.allow=always", "fetch", "-q", "origin")
    git(repo / "vendor" / "llm", "checkout", "-q", new)
    head = commit(repo, "move the submodule")
    for mode in ("auto", "none"):
        code, report = run(repo, base, head, capsys, "--render", mode)
        assert (code, report["decision"]) == (3, "hold"), (mode, report)
        codes = {(f["code"], f["path"]) for f in report["findings"]}
        assert ("unknown-source", "vendor/llm") in codes, (mode, codes)


@needs_kubectl
def test_an_overlay_over_a_submodule_holds_as_unknown(tmp_path: Path, capsys) -> None:
    repo, _, base = _submodule_repos(tmp_path)
    edit_yaml(repo, "overlays/prod/kustomization.yaml",
              lambda d: d.update(images=[{"name": "rayproject/ray-llm", "newTag": NEW_TAG}]))
    code, report = run(repo, base, commit(repo), capsys)
    [f] = report["findings"]
    assert (code, f["code"], f["path"]) == (3, "unknown-source", "overlays/prod (kustomize)")
    assert "submodule vendor/llm" in f["message"]


# -- 6: the Applications that deploy a root travel with it --------------------------------------

RAYJOB = {
    "apiVersion": "ray.io/v1", "kind": "RayJob", "metadata": {"name": "nightly"},
    "spec": {"entrypoint": "python train.py", "shutdownAfterJobFinishes": True,
             "rayClusterSpec": {"headGroupSpec": {"rayStartParams": {}, "template": {"spec": {"containers": [
                 {"name": "ray-head", "image": "rayproject/ray:2.52.0"}]}}}}}}


def test_an_unchanged_self_heal_application_is_analysed_with_the_job_it_deploys(tmp_path: Path,
                                                                                   capsys) -> None:
    repo = empty_repo(tmp_path)
    write(repo, "jobs/rayjob.yaml", RAYJOB)
    app = application("jobs", "jobs", "ray")
    app["spec"]["syncPolicy"] = {"automated": {"selfHeal": True, "prune": True}}
    write(repo, "apps/jobs.yaml", app)
    base = commit(repo)
    job = json.loads(json.dumps(RAYJOB))
    job["spec"]["deletionStrategy"] = {"onSuccess": {"policy": "DeleteSelf"},
                                       "onFailure": {"policy": "DeleteSelf"}}
    write(repo, "jobs/rayjob.yaml", job)
    head = commit(repo)
    code, report = run(repo, base, head, capsys)
    codes = [(f["severity"], f["code"]) for r in report["resources"] for f in r["findings"]]
    assert ("error", "rayjob-deleteself-selfheal") in codes, report
    assert code == 3


def test_an_unchanged_respect_ignore_differences_application_is_analysed(tmp_path: Path, capsys) -> None:
    """A worker memory edit of a RayCluster whose Application copies the live worker-group list into
    every sync (RespectIgnoreDifferences=true): the edit is never applied, which holds, though the
    Application is not in the change."""
    cluster = yaml.safe_load((ROOT / "samples" / "raycluster-image-bump" / "before.yaml").read_text())
    repo = empty_repo(tmp_path)
    write(repo, "cluster/raycluster.yaml", cluster)
    app = application("cluster", "cluster", "ray")
    app["spec"]["syncPolicy"] = {"syncOptions": ["RespectIgnoreDifferences=true"]}
    app["spec"]["ignoreDifferences"] = [{"group": "ray.io", "kind": "RayCluster",
                                         "jqPathExpressions": [".spec.workerGroupSpecs[]?.replicas"]}]
    write(repo, "apps/cluster.yaml", app)
    base = commit(repo)
    worker = cluster["spec"]["workerGroupSpecs"][0]["template"]["spec"]["containers"][0]
    worker.setdefault("resources", {}).setdefault("limits", {})["memory"] = "99Gi"
    write(repo, "cluster/raycluster.yaml", cluster)
    code, report = run(repo, base, commit(repo), capsys)
    [res] = report["resources"]
    assert (code, res["rollout"]) == (3, "not-applied"), report
    assert "respect-ignore-differences-drops-edits" in {f["code"] for f in res["findings"]}


def test_webhook_flows_give_the_same_decision(tmp_path: Path) -> None:
    """The webhook reads the same files: plain (RAYSERVICE_IMPACT_RENDER=none) and rendered from
    tarballs, for the spellings a pattern missed."""
    sys.path.insert(0, str(ROOT / "tests" / "app"))
    from github_helpers import (
        OWNER,
        REPO,
        TOKEN,
        github_service,
        post_event,
        pull_event,
        settle,
        statuses_for,
        wait_for,
    )
    from github_standin import GitHubStandIn

    cases = [("gpu-image-bump", "kind-comment"), ("gpu-image-bump", "utf-16"),
             ("gpu-image-bump", "RayServiceList"), ("gpu-image-bump", "json-file"),
             ("gpu-image-bump", "flow-style"), ("raycluster-image-bump-recreate", "utf-32"),
             ("raycluster-group-rename", "List"), ("rayjob-entrypoint", "kind-tag")]
    for render in ("none", "auto"):
        with github_service(GitHubStandIn(token=TOKEN), render=render) as (url, gh):
            for number, (pair, spelling) in enumerate(cases, start=1):
                old, new = PAIRS[pair]
                expected = diffing.analyze([("before", old)], [("after", new)]).decision
                sub = tmp_path / f"{render}-{number}"
                sub.mkdir()
                repo, base = plain_repo(sub, (old.encode(), ".yaml"))
                head = spell_after(repo, spelling, new)
                gh.add_git_pull(OWNER, REPO, number, base, head, repo)
                assert post_event(url, "pull_request", pull_event(number, base, head)).status_code == 202
                wait_for(lambda head=head: statuses_for(gh, head), timeout=60, what="a status")
                settle(gh, 0.05)
                [status] = statuses_for(gh, head)
                state = "failure" if expected == "hold" else "success"
                assert (status["state"], status["description"].split(":")[0]) == (state, expected), \
                    (render, pair, spelling, status)


# -- the property: any combination of spellings, on either side, is the same change ------------

_NAMES = sorted(SPELLINGS)


def _git_json(repo: Path, base: str, head: str, mode: str) -> tuple[int, dict[str, Any]]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(["git", base, head, "--repo", str(repo), "--format", "json", "--render", mode])
    return code, json.loads(out.getvalue())


@settings(max_examples=int(os.environ.get("SPELLING_EXAMPLES", "100")), deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(pair=st.sampled_from(sorted(PAIRS)), before=st.sampled_from(_NAMES), after=st.sampled_from(_NAMES))
def test_property_spellings_never_change_the_decision(tmp_path_factory: pytest.TempPathFactory,
                                                      pair: str, before: str, after: str) -> None:
    """For every sample pair (RayService, RayCluster, RayJob) and any spelling of either side,
    ``analyze`` on the spelled texts and the ``git`` flows (rendered and plain) decide as
    ``analyze`` does on the plain files (the webhook: the fixed cases above)."""
    old, new = PAIRS[pair]
    expected = diffing.analyze([("before", old)], [("after", new)]).decision
    # analyze on the spelled files themselves, decoded as the CLI reads them
    spelled = [decode(SPELLINGS[before](old)[0]), decode(SPELLINGS[after](new)[0])]
    assert diffing.analyze([("before", spelled[0])], [("after", spelled[1])]).decision == expected
    tmp = tmp_path_factory.mktemp("spell")
    repo, base = plain_repo(tmp, SPELLINGS[before](old))
    head = spell_after(repo, after, new)
    for mode in ("auto", "none"):
        code, report = _git_json(repo, base, head, mode)
        assert report["decision"] == expected, (pair, before, after, mode, report.get("summary"))
        assert code == (3 if expected == "hold" else 0)


# -- unknown sources: hold by default, relaxed per source by the policy ---------------------------

def _external_app(repo: Path) -> None:
    write(repo, "apps/cert-manager.yaml", {
        "apiVersion": "argoproj.io/v1alpha1", "kind": "Application", "metadata": {"name": "cert-manager"},
        "spec": {"source": {"repoURL": "https://charts.jetstack.io", "chart": "cert-manager",
                            "targetRevision": "1.15.0"}, "destination": {"namespace": "cert-manager"}}})


@pytest.mark.parametrize(("policy", "code", "severity"), [
    (None, 3, "error"),
    ({"unknownSources": "warn"}, 0, "warning"),
    ({"unknownSources": {"allow": ["https://charts.jetstack.io/"]}}, 0, "warning"),
    ({"unknownSources": {"allow": ["git@github.com:example-org/shared.git"]}}, 3, "error"),
])
def test_unknown_sources_policy(tmp_path: Path, capsys, policy: Any, code: int, severity: str) -> None:
    repo = make_repo(tmp_path)
    base = git(repo, "rev-parse", "HEAD")
    _external_app(repo)
    head = commit(repo)
    extra = []
    if policy is not None:
        (tmp_path / "policy.yaml").write_text(yaml.safe_dump(policy))
        extra = ["--policy", str(tmp_path / "policy.yaml")]
    got, report = run(repo, base, head, capsys, *extra)
    [f] = report["findings"]
    assert (got, f["code"], f["severity"]) == (code, "unknown-source", severity)


@needs_kubectl
def test_an_allowed_remote_base_is_a_warning_and_still_never_fetched(tmp_path: Path, capsys) -> None:
    repo = make_repo(tmp_path)
    base = git(repo, "rev-parse", "HEAD")
    edit_yaml(repo, "overlays/prod/kustomization.yaml",
              lambda d: d["resources"].append("https://github.com/example-org/shared//monitoring?ref=v1"))
    head = commit(repo)
    (tmp_path / "policy.yaml").write_text(yaml.safe_dump(
        {"unknownSources": {"allow": ["github.com/example-org/shared"]}}))
    code, report = run(repo, base, head, capsys, "--policy", str(tmp_path / "policy.yaml"))
    [f] = report["findings"]
    # the root is still not rendered (what it deploys is unknown), but the team said this source
    # deploys no KubeRay object
    assert (code, f["code"], f["severity"]) == (0, "unknown-source", "warning")


def test_an_application_set_is_never_allowed_by_source(tmp_path: Path, capsys) -> None:
    repo = make_repo(tmp_path)
    base = git(repo, "rev-parse", "HEAD")
    write(repo, "apps/set.yaml", {
        "apiVersion": "argoproj.io/v1alpha1", "kind": "ApplicationSet", "metadata": {"name": "envs"},
        "spec": {"generators": [{"list": {"elements": [{"env": "prod"}]}}], "template": {"spec": {}}}})
    (tmp_path / "policy.yaml").write_text(yaml.safe_dump({"unknownSources": {"allow": [REPO_URL]}}))
    code, report = run(repo, base, commit(repo), capsys, "--policy", str(tmp_path / "policy.yaml"))
    assert (code, report["findings"][0]["severity"]) == (3, "error")


# -- bombs in what the service reads itself ------------------------------------------------------

def _alias_bomb(levels: int = 9) -> str:
    """A few hundred bytes that expand to 10^levels strings when aliases are followed."""
    lines = ['a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for i in range(1, levels):
        lines.append(f"a{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * 10) + "]")
    return "\n".join(lines) + "\n"


def test_an_alias_bomb_in_an_application_is_refused_fast(tmp_path: Path, capsys) -> None:
    repo = make_repo(tmp_path)
    base = git(repo, "rev-parse", "HEAD")
    bomb = _alias_bomb()
    text = ("apiVersion: argoproj.io/v1alpha1\nkind: Application\n" + bomb
            + "metadata:\n  name: *a8\n  namespace: argocd\nspec: {}\n")
    write(repo, "apps/bomb.yaml", text)
    head = commit(repo)
    started = time.monotonic()
    code, report = run(repo, base, head, capsys)
    assert time.monotonic() - started < 20
    [f] = report["findings"]
    assert (code, f["severity"], f["code"], f["path"]) == (3, "error", "render-failed", "apps/bomb.yaml")
    assert "nodes" in f["message"] or "alias" in f["message"], f["message"]


@needs_kubectl
def test_an_alias_bomb_in_a_kustomization_an_application_edits_is_refused(tmp_path: Path, capsys) -> None:
    """An Application with kustomize options makes the tool rewrite the kustomization: a bomb in it
    is refused when read, never expanded when written back."""
    repo = make_repo(tmp_path, with_apps=True)
    base = git(repo, "rev-parse", "HEAD")
    kust = (repo / "overlays/prod/kustomization.yaml").read_text()
    (repo / "overlays/prod/kustomization.yaml").write_text(_alias_bomb().replace("a0:", "x-a0:", 1)
                                                           .replace("\na", "\nx-a") + kust)
    app = yaml.safe_load((repo / "apps/llm-prod.yaml").read_text())
    app["spec"]["source"]["kustomize"] = {"namePrefix": "p-"}
    write(repo, "apps/llm-prod.yaml", app)
    head = commit(repo)
    started = time.monotonic()
    code, report = run(repo, base, head, capsys)
    assert time.monotonic() - started < 30
    assert code == 3 and report["decision"] == "hold"
    assert {f["code"] for f in report["findings"]} == {"render-failed"}
