"""Root discovery and the renderers' boundaries: Argo CD source kinds, limits, the child's environment."""

from __future__ import annotations

import http.server
import json
import os
import stat
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from gitops import NEW_TAG, REPO_URL, application, commit, edit_yaml, git, make_repo, run, write

from app.render.discovery import discover
from app.render.kustomize import edit_kustomization, find_tool, parse_image
from app.render.process import RenderError, RenderLimits
from app.render.roots import KustomizeOptions, normalize_repo_url
from app.render.snapshot import Snapshot

needs_kubectl = pytest.mark.skipif(find_tool("kubectl") is None, reason="kubectl is not installed")


# -- discovery (no renderer needed) ---------------------------------------------------------------

def test_discovery_of_the_recommended_layout(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    roots = discover(Snapshot(str(repo), "HEAD")).roots
    kinds = {rid: r.label for rid, r in roots.items() if not rid.startswith("file:")}
    # the base is included by both overlays: not a root of its own
    assert kinds == {"kustomize:overlays/prod": "overlays/prod (kustomize)",
                     "kustomize:overlays/staging": "overlays/staging (kustomize)"}
    prod = roots["kustomize:overlays/prod"]
    assert prod.reads("base/rayservice.yaml") and prod.reads("overlays/prod/serve-patch.yaml")
    assert not prod.reads("overlays/staging/kustomization.yaml") and not prod.reads("README.md")


def test_applications_cover_their_folders(tmp_path: Path) -> None:
    repo = make_repo(tmp_path, with_apps=True)
    disc = discover(Snapshot(str(repo), "HEAD"), repo_url=REPO_URL)
    apps = {rid: r for rid, r in disc.roots.items() if rid.startswith("app:")}
    assert sorted(r.label for r in apps.values()) == ["Application llm-prod", "Application llm-staging"]
    assert "kustomize:overlays/prod" not in disc.roots  # rendered through its Application only
    prod = apps["app:argocd/llm-prod"]
    assert prod.namespace == "ray-prod" and prod.reads("apps/llm-prod.yaml") and prod.reads("base/x.yaml")


@pytest.mark.parametrize(("url", "same"), [
    ("git@github.com:example-org/ray-gitops.git", True),
    ("https://github.com/Example-Org/ray-gitops", True),
    ("ssh://git@github.com/example-org/ray-gitops.git/", True),
    ("https://github.com/example-org/other", False),
])
def test_repo_urls_compare_across_forms(url: str, same: bool) -> None:
    assert (normalize_repo_url(url) == normalize_repo_url(REPO_URL)) is same


@pytest.mark.parametrize(("spec", "entry"), [
    ("rayproject/ray-llm:2.53.0", {"name": "rayproject/ray-llm", "newTag": "2.53.0"}),
    ("rayproject/ray-llm=my.registry:5000/ray-llm:2.53.0",
     {"name": "rayproject/ray-llm", "newName": "my.registry:5000/ray-llm", "newTag": "2.53.0"}),
    ("ray@sha256:abc", {"name": "ray", "digest": "sha256:abc"}),
    ("ray=other", {"name": "ray", "newName": "other"}),
])
def test_application_image_overrides_parse_like_kustomize_edit(spec: str, entry: dict[str, str]) -> None:
    assert parse_image(spec) == entry


def test_application_options_edit_the_kustomization_as_argo_cd_does() -> None:
    doc: dict[str, Any] = {"images": [{"name": "a", "newTag": "1"}, {"name": "b", "newTag": "1"}],
                           "commonLabels": {"team": "x"}, "patches": [{"path": "p.yaml"}]}
    edit_kustomization(doc, KustomizeOptions(name_prefix="p-", namespace="ns", images=("a:2",),
                                             common_labels=(("env", "prod"),),
                                             patches=("target: {kind: RayService}\npatch: '[]'\n",)))
    assert doc["images"] == [{"name": "b", "newTag": "1"}, {"name": "a", "newTag": "2"}]
    assert doc["namePrefix"] == "p-" and doc["namespace"] == "ns"
    assert doc["commonLabels"] == {"team": "x", "env": "prod"}
    assert doc["patches"] == [{"path": "p.yaml"}, {"target": {"kind": "RayService"}, "patch": "[]"}]


# -- Argo CD source kinds through the git flow -----------------------------------------------------

@needs_kubectl
def test_multi_source_application_with_ref_values_reads_them(tmp_path: Path, capsys) -> None:
    repo = make_repo(tmp_path)
    write(repo, "apps/llm.yaml", {
        "apiVersion": "argoproj.io/v1alpha1", "kind": "Application", "metadata": {"name": "llm"},
        "spec": {"destination": {"namespace": "ray-llm"}, "sources": [
            {"repoURL": REPO_URL, "path": "overlays/staging"},
            {"repoURL": "https://ray-project.github.io/kuberay-helm/", "chart": "ray-cluster",
             "targetRevision": "1.7.0", "helm": {"valueFiles": ["$values/envs/llm/values.yaml"]}},
            {"repoURL": REPO_URL, "ref": "values"}]}})
    write(repo, "envs/llm/values.yaml", {"image": {"tag": "2.52.0"}})
    base = commit(repo)
    write(repo, "envs/llm/values.yaml", {"image": {"tag": "2.53.0"}})
    code, report = run(repo, base, commit(repo), capsys)
    # the chart lives elsewhere: a values change here cannot be judged, so it holds, naming why
    [f] = report["findings"]
    assert (f["code"], f["path"]) == ("unknown-source", "Application llm")
    assert "ray-cluster" in f["message"] and "not in this repository" in f["message"]
    assert code == 3


@needs_kubectl
def test_directory_source_with_recurse_include_and_exclude(tmp_path: Path, capsys) -> None:
    repo = make_repo(tmp_path)
    sample = (repo / "base/rayservice.yaml").read_text()
    write(repo, "plain/svc/rayservice.yaml", sample)
    write(repo, "plain/svc/ignored.yaml", sample.replace("name: ray-serve-llm", "name: ignored", 1))
    write(repo, "apps/plain.yaml", application("plain", "plain", "ray-plain",
                                               directory={"recurse": True, "exclude": "ignored.yaml"}))
    base = commit(repo)
    for rel in ("plain/svc/rayservice.yaml", "plain/svc/ignored.yaml"):
        (repo / rel).write_text((repo / rel).read_text().replace('rayVersion: "2.52.0"',
                                                                 'rayVersion: "2.53.0"'))
    code, report = run(repo, base, commit(repo), capsys)
    got = [(r["namespace"], r["name"], r["source"], r["rollout"]) for r in report["resources"]]
    assert got == [("ray-plain", "ray-serve-llm", "Application plain", "new-cluster")]


@needs_kubectl
def test_plugin_source_is_a_render_failure(tmp_path: Path, capsys) -> None:
    repo = make_repo(tmp_path)
    write(repo, "apps/cmp.yaml", application("cmp", "overlays/prod", "ray-prod",
                                             plugin={"name": "argocd-vault-plugin"}))
    base = commit(repo)
    edit_yaml(repo, "overlays/prod/kustomization.yaml", lambda d: d["images"][0].update(newTag=NEW_TAG))
    code, report = run(repo, base, commit(repo), capsys)
    [f] = report["findings"]
    assert f["path"] == "Application cmp" and "plugin" in f["message"] and code == 3


@needs_kubectl
def test_changed_application_set_holds_as_unknown(tmp_path: Path, capsys) -> None:
    """Its generators are not evaluated: the Applications it makes are unknown, so it holds."""
    repo = make_repo(tmp_path)
    base = git(repo, "rev-parse", "HEAD")
    write(repo, "apps/set.yaml", {
        "apiVersion": "argoproj.io/v1alpha1", "kind": "ApplicationSet", "metadata": {"name": "envs"},
        "spec": {"generators": [{"git": {"repoURL": REPO_URL, "directories": [{"path": "overlays/*"}]}}],
                 "template": {"metadata": {"name": "{{path.basename}}"}, "spec": {}}}})
    code, report = run(repo, base, commit(repo), capsys)
    [f] = report["findings"]
    assert (f["severity"], f["code"]) == ("error", "unknown-source") and "ApplicationSet envs" in f["message"]
    assert code == 3


class _Recorder(http.server.BaseHTTPRequestHandler):
    hits: list[str] = []

    def do_GET(self) -> None:  # noqa: N802 (the standard library's name)
        _Recorder.hits.append(self.path)
        body = b"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def loopback() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    _Recorder.hits = []
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@needs_kubectl
@pytest.mark.parametrize("entry", ["{url}/base.yaml", "{url}/org/repo//deploy?ref=v1",
                                   "git::{url}/org/repo.git//deploy", "github.com/org/repo//deploy?ref=v1"])
def test_remote_base_holds_and_is_never_fetched(tmp_path: Path, capsys, loopback: str, entry: str) -> None:
    """A remote base is unknown (what Argo CD fetches later may differ), and rendering never
    reaches the network: a server on loopback sees no request at all."""
    repo = make_repo(tmp_path)
    base = git(repo, "rev-parse", "HEAD")
    edit_yaml(repo, "overlays/prod/kustomization.yaml",
              lambda d: d["resources"].append(entry.format(url=loopback)))
    code, report = run(repo, base, commit(repo), capsys)
    [f] = report["findings"]
    assert (f["severity"], f["code"], f["path"]) == ("error", "unknown-source", "overlays/prod (kustomize)")
    assert "never fetched" in f["message"] and code == 3
    assert _Recorder.hits == []


@needs_kubectl
def test_remote_patch_file_holds_and_is_never_fetched(tmp_path: Path, capsys, loopback: str) -> None:
    repo = make_repo(tmp_path)
    base = git(repo, "rev-parse", "HEAD")
    edit_yaml(repo, "overlays/prod/kustomization.yaml",
              lambda d: d.setdefault("patches", []).append({"path": f"{loopback}/patch.yaml"}))
    code, report = run(repo, base, commit(repo), capsys)
    [f] = report["findings"]
    assert (f["code"], code, _Recorder.hits) == ("unknown-source", 3, [])


# -- the child process: its environment, its limits, the renderer choice ------------------------

def stand_in(folder: Path, name: str, output: str) -> Path:
    """An executable that records its argv and environment, then prints ``output``."""
    log = folder / f"{name}.log"
    script = folder / name
    script.write_text(f"#!{sys.executable}\nimport json, os, sys\n"
                      f"open({str(log)!r}, 'a').write(json.dumps({{'argv': sys.argv[1:], "
                      f"'env': dict(os.environ)}}) + '\\n')\nsys.stdout.write({output!r})\n")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return log


def test_kustomize_binary_gets_root_only_flags_and_no_secrets(tmp_path: Path, capsys,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    repo = make_repo(tmp_path)
    base = git(repo, "rev-parse", "HEAD")
    edit_yaml(repo, "overlays/prod/kustomization.yaml", lambda d: d["images"][0].update(newTag=NEW_TAG))
    head = commit(repo)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    log = stand_in(bin_dir, "kustomize", "")
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("RAYSERVICE_IMPACT_GITHUB_TOKEN", "ghp_secret")
    monkeypatch.setenv("RAYSERVICE_IMPACT_ARGOCD_TOKEN", "argo_secret")
    code, report = run(repo, base, head, capsys, "--kustomize", "kustomize")
    calls = [json.loads(line) for line in log.read_text().splitlines()]
    assert len(calls) == 2  # overlays/prod at base and at head
    for call in calls:
        assert call["argv"][0] == "build" and call["argv"][1].endswith("/overlays/prod")
        assert call["argv"][2:] in (["--load-restrictor=LoadRestrictionsRootOnly"],
                                    ["--load-restrictor=LoadRestrictionsRootOnly", "--enable-helm"])
        assert not any("plugin" in a or "exec" in a for a in call["argv"])
        assert "secret" not in json.dumps(call["env"])
        assert set(call["env"]) <= {"PATH", "HOME", "TMPDIR", "LANG", "LC_ALL", "HELM_CACHE_HOME",
                                    "HELM_CONFIG_HOME", "HELM_DATA_HOME", "KUSTOMIZE_PLUGIN_HOME", "NO_PROXY",
                                    "GOMEMLIMIT", "PWD", "SHLVL", "_"}
        assert not call["argv"][1].startswith(str(repo))  # a snapshot, never the work tree
    # both renders printed nothing: the RayService is gone on both sides, nothing to compare
    assert code == 0 and report["resources"] == []


@needs_kubectl
def test_output_cap_and_time_limit_fail_the_render(tmp_path: Path) -> None:
    from app.render.kustomize import render_kustomize

    repo = make_repo(tmp_path)
    snap = Snapshot(str(repo), "HEAD")
    with pytest.raises(RenderError, match="more than 100 bytes"):
        render_kustomize(snap, "overlays/prod", None, RenderLimits(max_bytes=100))
    with pytest.raises(RenderError, match="longer than 0.001 s"):
        render_kustomize(snap, "overlays/prod", None, RenderLimits(timeout_s=0.001))


@needs_kubectl
def test_kustomize_helm_charts_are_never_downloaded(tmp_path: Path, capsys,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    repo = make_repo(tmp_path)
    base = git(repo, "rev-parse", "HEAD")
    edit_yaml(repo, "overlays/prod/kustomization.yaml", lambda d: d.update(helmCharts=[
        {"name": "ray-cluster", "repo": "https://ray-project.github.io/kuberay-helm/", "version": "1.7.0"}]))
    head = commit(repo)
    # Without helm, kustomize refuses helmCharts by itself.
    code, report = run(repo, base, head, capsys)
    assert code == 3 and report["findings"][0]["code"] == "render-failed"
    # With helm on PATH, a chart missing from chartHome is refused before kustomize could pull it.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    log = stand_in(bin_dir, "helm", "")
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    code, report = run(repo, base, head, capsys)
    [f] = report["findings"]
    assert "ray-cluster" in f["message"] and "would be downloaded" in f["message"] and code == 3
    assert not log.exists()  # helm never ran


@needs_kubectl
def test_identical_inputs_render_once(tmp_path: Path) -> None:
    """Two Applications deploying one overlay with the same options: one render per revision."""
    from app.render.pipeline import RenderOptions
    from app.render.repo import render_git_range

    repo = make_repo(tmp_path)
    write(repo, "apps/a.yaml", application("a", "overlays/prod", "ray-prod"))
    write(repo, "apps/b.yaml", application("b", "overlays/prod", "ray-prod"))
    base = commit(repo)
    edit_yaml(repo, "overlays/prod/kustomization.yaml", lambda d: d["images"][0].update(newTag=NEW_TAG))
    rendered = render_git_range(str(repo), base, commit(repo), None, RenderOptions(), repo_url=REPO_URL)
    assert sorted(s.name for s in rendered.after) == ["Application a", "Application b"]
    assert rendered.renders == 2  # base and head, shared by both Applications
