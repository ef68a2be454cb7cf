"""The webhook renders what GitOps would deploy, without a clone: from the repository tarballs
(a real ``git archive`` served through a 302 like GitHub's) or by Argo CD (a stand-in whose
manifests are real ``kubectl kustomize`` output), and says the same as ``rayservice-impact git``.

Real uvicorn servers on 127.0.0.1, real git repositories (tests/render/gitops.py), real kubectl.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from argocd_standins import ARGO_TOKEN, ArgoCDRepoServer, serve
from github_helpers import TOKEN, github_service, payload, post_event, settle, statuses_for, wait_for
from github_standin import GitHubStandIn
from serverutil import running_server

import diffing
from app.cli import main
from app.clients.argocd import ArgoCDClient
from app.clients.github import GitHubClient, GitHubError, TarballTooLarge, static_token
from app.github.argocd_render import TrackedApp, affected_apps, render_with_argocd, tracked_apps
from app.github.change import PullRequest
from app.github.comment import MARKER
from app.github.flow import AnalysisOptions, analyse_rendered
from app.github.rendering import VIA_ARGOCD, VIA_TARBALLS, render_pull
from app.settings import load_settings

sys.path.append(str(Path(__file__).resolve().parents[1] / "render"))  # the GitOps repo builder

from gitops import REPO_URL, application, commit, edit_yaml, git, make_repo, write  # noqa: E402

pytestmark = pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")

OWNER, REPO = "example-org", "ray-gitops"   # REPO_URL's owner and name
NEW_TAG = "2.53.0-py311-cu128"
SOURCE = "overlays/prod (kustomize)"


# -- helpers ----------------------------------------------------------------------------------------


@pytest.fixture(autouse=True)
def _clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """The CLI and the service read RAYSERVICE_IMPACT_*: an Argo CD server or a policy file of
    the shell running the tests must not change the path taken or the reports compared."""
    for name in [n for n in os.environ if n.upper().startswith("RAYSERVICE_IMPACT_")]:
        monkeypatch.delenv(name)



def pr_payload(base: str, head: str, number: int) -> dict[str, Any]:
    """GitHub's opened payload, moved to the GitOps repository and these commits."""
    data = payload("pull_request.opened.repo-webhook.json", base=base, head=head, number=number)
    repo = data["repository"]
    repo.update(name=REPO, full_name=f"{OWNER}/{REPO}", clone_url=REPO_URL,
                html_url=f"https://github.com/{OWNER}/{REPO}", ssh_url=f"git@github.com:{OWNER}/{REPO}.git")
    repo["owner"]["login"] = OWNER
    return data


def image_bump(repo: Path) -> str:
    edit_yaml(repo, "overlays/prod/kustomization.yaml", lambda d: d["images"][0].update(newTag=NEW_TAG))
    return commit(repo, "bump the prod image")


def run_webhook(url: str, gh: GitHubStandIn, repo: Path, base: str, head: str, number: int = 1
                ) -> tuple[dict[str, Any], str | None]:
    """(the status posted for ``head``, the sticky comment's body or None)."""
    gh.add_git_pull(OWNER, REPO, number, base, head, repo)
    assert post_event(url, "pull_request", pr_payload(base, head, number)).status_code == 202
    [status] = wait_for(lambda: statuses_for(gh, head), timeout=20, what="a status")
    settle(gh, 0.1)
    comments = gh.comments.get((OWNER, REPO, number)) or []
    return status, comments[0]["body"] if comments else None


def cli_report(repo: Path, base: str, head: str, capsys: pytest.CaptureFixture[str],
               fmt: str = "json") -> Any:
    """``rayservice-impact git`` in this process: the report (``fmt`` json) or its text."""
    capsys.readouterr()
    main(["git", base, head, "--repo", str(repo), "--format", fmt])
    out = capsys.readouterr().out
    return json.loads(out) if fmt == "json" else out


def unsnap(text: str) -> str:
    """``text`` with the snapshot's temp folder replaced by a placeholder."""
    return re.sub(r"/[^\s'\"]*/rsi-snap-[A-Za-z0-9_]+", "<snapshot>", text)


def flow_report(github_url: str, base: str, head: str, number: int = 1) -> diffing.Report:
    """The report the webhook flow computes, from its own functions against the stand-in."""
    settings = load_settings(github_api_url=github_url, render="auto")
    options = AnalysisOptions(render="auto", render_options=settings.render_options())
    pr = PullRequest.from_payload(pr_payload(base, head, number))

    async def go() -> diffing.Report:
        async with httpx.AsyncClient(timeout=30) as http:
            gh = GitHubClient(http, github_url, static_token(TOKEN))
            pull = await render_pull(gh, pr, options.render_options,
                                     tarball_max_bytes=settings.render_tarball_max_bytes)
            assert pull.via == VIA_TARBALLS
            return await analyse_rendered(pull.rendered, options)

    return asyncio.run(go())


def argocd_flow_report(argo_url: str, base: str, head: str, changed: set[str]) -> diffing.Report:
    """The report the webhook flow computes through Argo CD, from its own functions."""
    pr = PullRequest.from_payload(pr_payload(base, head, 1))
    with ArgoCDClient(argo_url, ARGO_TOKEN) as client:
        rendered = asyncio.run(render_with_argocd(client, pr, changed))
    return asyncio.run(analyse_rendered(rendered, AnalysisOptions(render="auto")))


@contextmanager
def argocd(repo: Path, **kwargs: Any) -> Iterator[tuple[str, ArgoCDRepoServer]]:
    apps = [application("llm-prod", "overlays/prod", "ray-prod"),
            application("llm-staging", "overlays/staging", "ray-staging")]
    server = ArgoCDRepoServer(repo, apps, **kwargs)
    with serve(server) as base_url:
        yield base_url, server


ARGO_SETTINGS = {"argocd_token": ARGO_TOKEN, "argocd_retries": 0, "argocd_timeout_seconds": 20}


# -- from the repository tarballs -----------------------------------------------------------------


def test_render_tarball_overlay_image_bump_holds_and_names_the_root(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    base = git(repo, "rev-parse", "HEAD")
    head = image_bump(repo)
    with github_service(GitHubStandIn(token=TOKEN)) as (url, gh):
        status, body = run_webhook(url, gh, repo, base, head)
    assert status["state"] == "failure"
    assert status["description"].startswith("hold: ray-prod/ray-serve-llm → new-cluster")
    assert body is not None and body.startswith(MARKER)
    assert SOURCE in body and "`ray-prod/ray-serve-llm`" in body
    assert f"rayproject/ray-llm:{NEW_TAG}" in body
    assert f"head `{head[:7]}` · {VIA_TARBALLS}" in body
    # the tarballs, through GitHub's 302 to codeload; no file of the change is read through the
    # contents API (only the repository's comment setting, at the base)
    tarballs = sorted(c.path for c in gh.calls_to("GET", "/tarball/"))
    assert tarballs == sorted(f"/repos/{OWNER}/{REPO}/tarball/{sha}" for sha in (base, head))
    assert [c.status for c in gh.calls_to("GET", "/tarball/")] == [302, 302]
    assert sorted(c.path for c in gh.calls_to("GET", "^/_codeload/")) == sorted(
        f"/_codeload/{OWNER}/{REPO}/legacy.tar.gz/{sha}" for sha in (base, head))
    assert [(c.path, c.query["ref"]) for c in gh.calls_to("GET", "/contents/")] == [
        (f"/repos/{OWNER}/{REPO}/contents/.github/rayservice-impact.yml", base)]


@pytest.mark.parametrize("change", ["image-bump", "base-change", "broken-overlay"])
def test_render_tarball_report_equals_the_cli_report(tmp_path: Path, capsys, change: str) -> None:
    repo = make_repo(tmp_path)
    base = git(repo, "rev-parse", "HEAD")
    if change == "image-bump":
        head = image_bump(repo)
    elif change == "base-change":
        text = (repo / "base/rayservice.yaml").read_text().replace('num-cpus: "0"', 'num-cpus: "1"', 1)
        (repo / "base/rayservice.yaml").write_text(text)
        head = commit(repo)
    else:
        edit_yaml(repo, "overlays/prod/kustomization.yaml", lambda d: d["resources"].append("gone.yaml"))
        head = commit(repo)
    expected = cli_report(repo, base, head, capsys)
    markdown = cli_report(repo, base, head, capsys, "markdown")
    with github_service(GitHubStandIn(token=TOKEN)) as (url, gh), \
            running_server(gh.app, ready_path=None) as github_url:  # the same stand-in, its own URL
        gh.add_git_pull(OWNER, REPO, 1, base, head, repo)
        report = flow_report(github_url, base, head)
        status, body = run_webhook(url, gh, repo, base, head)
    # A kustomize error names the throw-away snapshot folder, different in every run: the one
    # part of a report that is not the commits' (app/render should print repository paths).
    assert json.loads(unsnap(json.dumps(report.to_dict()))) == json.loads(unsnap(json.dumps(expected)))
    assert expected["decision"] == "hold" and status["state"] == "failure"
    # the comment is the CLI's markdown (the author's way out names the same overlay line)
    assert body is not None and unsnap(str(markdown).strip()) in unsnap(body)


def test_render_tarball_base_change_leads_with_the_whole_pull_request_then_production(tmp_path: Path) -> None:
    """A base change rendered into two overlays (issue 24): the comment says what the whole pull
    request needs first, then each environment, production before staging."""
    repo = make_repo(tmp_path)
    write(repo, "overlays/dev/kustomization.yaml", {"namespace": "ray-dev", "resources": ["../../base"]})
    base = commit(repo, "a dev overlay")
    text = (repo / "base/rayservice.yaml").read_text().replace('num-cpus: "0"', 'num-cpus: "1"', 1)
    (repo / "base/rayservice.yaml").write_text(text)
    head = commit(repo)
    with github_service(GitHubStandIn(token=TOKEN)) as (url, gh):
        status, body = run_webhook(url, gh, repo, base, head)
    assert status["state"] == "failure" and status["description"].startswith("hold: ray-prod/ray-serve-llm")
    assert body is not None
    whole = body.index("**Extra while it rolls out, whole pull request:** nvidia.com/gpu: 12 (")
    places = [body.index(f"- 🔴 `overlays/{env} (kustomize)`: nvidia.com/gpu: 4 (")
              for env in ("prod", "staging", "dev")]
    assert whole < places[0] < places[1] < places[2] < body.index("| RayService |")
    rows = [body.index(f"| 🔴 `ray-{env}/ray-serve-llm` |") for env in ("prod", "staging", "dev")]
    assert rows == sorted(rows)
    # the author's way out names the file of the pull request the hold comes from: the base
    assert "- **Author** (the hold comes from `base/rayservice.yaml` line " in body


def test_render_tarball_unrelated_change_is_success_without_a_comment(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    base = git(repo, "rev-parse", "HEAD")
    write(repo, "README.md", "# ray gitops, now documented\n")
    head = commit(repo)
    with github_service(GitHubStandIn(token=TOKEN)) as (url, gh):
        status, body = run_webhook(url, gh, repo, base, head)
    assert (status["state"], status["description"], body) == (
        "success", "No RayService, RayCluster, RayJob or RayCronJob changes", None)


def test_render_tarball_broken_overlay_holds_with_render_failed(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    base = git(repo, "rev-parse", "HEAD")
    edit_yaml(repo, "overlays/prod/kustomization.yaml", lambda d: d["resources"].append("missing-file.yaml"))
    head = commit(repo)
    with github_service(GitHubStandIn(token=TOKEN)) as (url, gh):
        status, body = run_webhook(url, gh, repo, base, head)
    assert status["state"] == "failure"
    assert status["description"] == (f"hold: {SOURCE}: render-failed; no RayService, RayCluster, RayJob or "
                                     "RayCronJob could be compared there")
    assert body is not None and "`render-failed`" in body and SOURCE in body
    assert "missing-file.yaml" in body and f"at head ({head[:12]})" in body


@pytest.mark.parametrize("chunked", [False, True], ids=["content-length", "chunked"])
def test_render_tarball_over_the_cap_holds_naming_the_cap(tmp_path: Path, chunked: bool) -> None:
    repo = make_repo(tmp_path)
    base = git(repo, "rev-parse", "HEAD")
    head = image_bump(repo)
    standin = GitHubStandIn(token=TOKEN)
    standin.chunked_tarballs = chunked
    with github_service(standin, render_tarball_max_bytes=1024) as (url, gh):
        status, body = run_webhook(url, gh, repo, base, head)
    assert status["state"] == "failure"
    assert status["description"].startswith("hold: repository tarball: render-failed")
    assert body is not None and "1024-byte cap" in body
    assert "RAYSERVICE_IMPACT_RENDER_TARBALL_MAX_BYTES" in body
    assert "ray-serve-llm" not in body  # nothing was compared


def test_render_none_keeps_the_contents_path(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    base = git(repo, "rev-parse", "HEAD")
    head = image_bump(repo)
    with github_service(GitHubStandIn(token=TOKEN), render="none") as (url, gh):
        status, body = run_webhook(url, gh, repo, base, head)
    # kustomization.yaml holds no RayService: read as files, the image bump is invisible
    assert (status["state"], body) == ("success", None)
    assert gh.calls_to("GET", "/tarball/") == []


# -- the GitHub client's download ------------------------------------------------------------------


def _download(handler: Any, max_bytes: int = 1 << 20) -> bytes:
    async def go() -> bytes:
        async with httpx.AsyncClient(transport=httpx.MockTransport(handler), follow_redirects=True) as http:
            gh = GitHubClient(http, "https://api.github.test", static_token(TOKEN))
            return await gh.tarball("o", "r", "abc", max_bytes)

    return asyncio.run(go())


def test_render_tarball_redirect_to_plain_http_elsewhere_is_refused() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        assert request.url.host == "api.github.test"
        return httpx.Response(302, headers={"location": "http://evil.test/o/r/legacy.tar.gz/abc"})

    with pytest.raises(GitHubError, match=r"redirect to http://evil\.test refused"):
        _download(handler)


def test_render_tarball_token_goes_only_to_the_api_host() -> None:
    seen: list[tuple[str, str | None]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append((request.url.host, request.headers.get("authorization")))
        if request.url.host == "api.github.test":
            return httpx.Response(302, headers={"location": "https://codeload.test/o/r/legacy.tar.gz/abc?token=t"})
        return httpx.Response(200, content=b"tarball bytes")

    assert _download(handler) == b"tarball bytes"
    assert seen == [("api.github.test", f"Bearer {TOKEN}"), ("codeload.test", None)]


def test_render_tarball_cap_applies_while_streaming() -> None:
    async def chunks() -> AsyncIterator[bytes]:
        for _ in range(2):
            yield b"x" * 600

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, content=chunks())  # no Content-Length

    with pytest.raises(TarballTooLarge, match="larger than 1000 bytes"):
        _download(handler, max_bytes=1000)


# -- by Argo CD -------------------------------------------------------------------------------------


def test_render_argocd_image_bump_holds_with_the_application_as_source(tmp_path: Path, capsys) -> None:
    repo = make_repo(tmp_path, with_apps=True)
    base = git(repo, "rev-parse", "HEAD")
    head = image_bump(repo)
    expected = cli_report(repo, base, head, capsys)
    with argocd(repo) as (argo_url, argo), \
            github_service(GitHubStandIn(token=TOKEN), argocd_server=argo_url, **ARGO_SETTINGS) as (url, gh):
        status, body = run_webhook(url, gh, repo, base, head)
        requests = list(argo.requests)  # the webhook's
        report = argocd_flow_report(argo_url, base, head, {"overlays/prod/kustomization.yaml"})
    # what Argo CD renders is what the CLI renders for this repository's Applications
    assert report.to_dict() == expected and expected["resources"][0]["source"] == "Application llm-prod"
    assert status["state"] == "failure"
    assert status["description"].startswith("hold: ray-prod/ray-serve-llm → new-cluster")
    assert body is not None and "<sub>Application llm-prod</sub>" in body and VIA_ARGOCD in body
    assert f"rayproject/ray-llm:{NEW_TAG}" in body
    # only the affected Application, at both revisions; GitHub gave the files list, no tarball
    manifests = sorted((p, q["revision"][0]) for p, q, _ in requests if p.endswith("/manifests"))
    assert manifests == sorted(("/api/v1/applications/llm-prod/manifests", sha) for sha in (base, head))
    assert gh.calls_to("GET", "/tarball/") == []
    # the bearer token on every call
    assert {auth for _, _, auth in requests} == {f"Bearer {ARGO_TOKEN}"}
    assert diffing.render_markdown(report).strip() in body


def test_render_argocd_500_for_one_revision_holds_naming_the_application(tmp_path: Path) -> None:
    repo = make_repo(tmp_path, with_apps=True)
    base = git(repo, "rev-parse", "HEAD")
    head = image_bump(repo)
    with argocd(repo, fail={("llm-prod", base): 500}) as (argo_url, argo), \
            github_service(GitHubStandIn(token=TOKEN), argocd_server=argo_url, **ARGO_SETTINGS) as (url, gh):
        status, body = run_webhook(url, gh, repo, base, head)
    assert status["state"] == "failure"
    assert status["description"] == ("hold: Application llm-prod: render-failed; no RayService, RayCluster, "
                                     "RayJob or RayCronJob could be compared there")
    assert body is not None and "`render-failed`" in body
    assert f"Argo CD at base ({base[:12]})" in body and "answered 500" in body
    assert "repo-server is restarting" in body
    assert "ray-serve-llm" not in body  # the head side alone is never compared


def test_render_argocd_timeout_for_one_revision_holds_naming_the_application(tmp_path: Path) -> None:
    repo = make_repo(tmp_path, with_apps=True)
    base = git(repo, "rev-parse", "HEAD")
    head = image_bump(repo)
    settings = {**ARGO_SETTINGS, "argocd_timeout_seconds": 1.0}
    with argocd(repo, slow={("llm-prod", head): 3.0}) as (argo_url, argo), \
            github_service(GitHubStandIn(token=TOKEN), argocd_server=argo_url, **settings) as (url, gh):
        status, body = run_webhook(url, gh, repo, base, head)
    assert status["state"] == "failure"
    assert body is not None and "`render-failed`" in body and "Application llm-prod" in body
    assert f"Argo CD at head ({head[:12]}): cannot reach Argo CD" in body and "ReadTimeout" in body


def test_render_argocd_rejected_token_is_an_error_status(tmp_path: Path) -> None:
    repo = make_repo(tmp_path, with_apps=True)
    base = git(repo, "rev-parse", "HEAD")
    head = image_bump(repo)
    with argocd(repo, token="another-token") as (argo_url, argo), \
            github_service(GitHubStandIn(token=TOKEN), argocd_server=argo_url, **ARGO_SETTINGS) as (url, gh):
        status, body = run_webhook(url, gh, repo, base, head)
    assert status["state"] == "error"
    assert "cannot list the Argo CD Applications" in status["description"]
    assert body is not None and "RAYSERVICE_IMPACT_ARGOCD_TOKEN" in body
    assert ARGO_TOKEN not in body


# -- which Applications a change affects -----------------------------------------------------------


def _app(name: str, path: str, generate_paths: str | None = None, **spec: Any) -> dict[str, Any]:
    app = application(name, path, "ns")
    if generate_paths is not None:
        app["metadata"]["annotations"] = {"argocd.argoproj.io/manifest-generate-paths": generate_paths}
    app["spec"].update(spec)
    return app


def test_render_argocd_tracked_apps_match_the_repository_however_spelled() -> None:
    ssh, bare = "git@github.com:Example-Org/ray-gitops.git", "https://github.com/example-org/ray-gitops"
    items = [_app("https", "a"),
             _app("ssh", "b", source={"repoURL": ssh, "path": "b"}),
             _app("multi", "c", sources=[{"repoURL": "https://charts.example.com", "chart": "x"},
                                         {"repoURL": bare, "path": "c"}]),
             _app("other", "d", source={"repoURL": "https://github.com/example-org/other.git", "path": "d"})]
    apps = {a.name: a for a in tracked_apps(items, REPO_URL)}
    assert sorted(apps) == ["https", "multi", "ssh"]
    assert apps["multi"].source_positions == (2,) and apps["https"].source_positions == ()
    assert apps["ssh"].label == "Application ssh"


def test_render_argocd_affected_apps_follow_paths_and_generate_paths() -> None:
    apps = tracked_apps([_app("prod", "overlays/prod", "../../base;/shared/values.yaml"),
                         _app("staging", "overlays/staging", "."),
                         _app("docs", "docs", "/site/*/index.yaml")], REPO_URL)

    def names(*changed: str) -> list[str]:
        return [a.name for a in affected_apps(apps, changed)]

    assert names("overlays/prod/kustomization.yaml") == ["prod"]
    assert names("base/rayservice.yaml") == ["prod"]                  # relative to the source path
    assert names("shared/values.yaml") == ["prod"]                    # '/': relative to the root
    assert names("site/en/index.yaml") == ["docs"]                    # a glob, within one folder
    assert names("overlays/staging/x.yaml", "README.md") == ["staging"]  # stray docs change nothing
    assert names("ci/pipeline.yaml") == ["docs", "prod", "staging"]   # under no app's path: all of them
    assert names("site/en/deeper/index.yaml") == ["docs", "prod", "staging"]


def test_render_argocd_ref_only_source_watches_its_value_files() -> None:
    app = _app("chart", "unused", sources=[
        {"repoURL": "https://charts.example.com", "chart": "llm", "targetRevision": "1.0.0",
         "helm": {"valueFiles": ["$values/envs/prod/values.yaml"]}},
        {"repoURL": REPO_URL, "ref": "values"}])
    [tracked] = tracked_apps([app], REPO_URL)
    assert tracked == TrackedApp("chart", "argocd", "ns", ("envs/prod/values.yaml",), (2,), tracked.document)
    assert json.loads(tracked.document)["spec"]["sources"][1] == {"repoURL": REPO_URL, "ref": "values"}


def test_webhook_analyses_run_in_the_service_worker_processes(tmp_path: Path) -> None:
    """The webhook's analyses go through the service's process pool: the rendered sources and
    the verdict cross the process boundary, and an analysis over its budget is killed (its
    worker replaced) instead of running on in a thread while other PRs time out."""
    repo = make_repo(tmp_path)
    base = git(repo, "rev-parse", "HEAD")
    head = image_bump(repo)
    with github_service(GitHubStandIn(token=TOKEN), analysis_executor="process",
                        analysis_workers=1) as (url, gh):
        status, body = run_webhook(url, gh, repo, base, head)
    assert status["state"] == "failure" and body is not None and SOURCE in body

    standin = GitHubStandIn(token=TOKEN)
    with github_service(standin, analysis_executor="process", analysis_workers=1,
                        analysis_timeout_seconds=0.001) as (url, gh):
        status, _ = run_webhook(url, gh, repo, base, head, number=2)
    assert status["state"] == "error" and "longer than its 0.001 s budget" in status["description"]
