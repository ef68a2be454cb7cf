"""The PR flow on a real GitOps repository: real git, real ``kubectl kustomize`` (skipped without it)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from gitops import NEW_TAG, REPO_URL, application, commit, edit_yaml, git, make_repo, run, write

from app.cli import main
from app.render.kustomize import find_tool

pytestmark = pytest.mark.skipif(find_tool("kubectl") is None, reason="kubectl is not installed")



@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path)


@pytest.fixture
def apps_repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path, with_apps=True)


def head_of(repo: Path) -> str:
    return git(repo, "rev-parse", "HEAD")


def test_image_bump_through_overlay_images_is_a_new_cluster_hold(repo: Path, capsys) -> None:
    base = head_of(repo)
    edit_yaml(repo, "overlays/prod/kustomization.yaml", lambda d: d["images"][0].update(newTag=NEW_TAG))
    code, report = run(repo, base, commit(repo), capsys)
    assert code == 3 and report["decision"] == "hold"
    [r] = report["resources"]
    assert (r["namespace"], r["name"], r["rollout"]) == ("ray-prod", "ray-serve-llm", "new-cluster")
    assert r["source"] == "overlays/prod (kustomize)"
    assert r["capacity"]["extra"]["nvidia.com/gpu"] == 4
    images = {c["after"] for c in r["changes"] if c["path"].endswith(".image")}
    assert images == {f"rayproject/ray-llm:{NEW_TAG}"}
    # rendered sources carry no line numbers: they would be the render's, not a file's
    assert all("line" not in f for f in r["findings"])


def test_with_headroom_the_same_bump_is_approved(repo: Path, capsys) -> None:
    base = head_of(repo)
    edit_yaml(repo, "overlays/prod/kustomization.yaml", lambda d: d["images"][0].update(newTag=NEW_TAG))
    code, report = run(repo, base, commit(repo), capsys, "--headroom", "nvidia.com/gpu=4")
    assert (code, report["decision"]) == (0, "approve")


def test_patch_that_changes_only_serve_config_is_serve_in_place(repo: Path, capsys) -> None:
    base = head_of(repo)
    serve = ("applications:\n- name: llms\n  import_path: ray.serve.llm:build_openai_app\n"
             "  route_prefix: /\n  runtime_env: {env_vars: {LOG_LEVEL: debug}}\n")
    doc = {"apiVersion": "ray.io/v1", "kind": "RayService", "metadata": {"name": "ray-serve-llm"},
           "spec": {"serveConfigV2": serve}}
    write(repo, "overlays/prod/serve-patch.yaml", doc)
    code, report = run(repo, base, commit(repo), capsys)
    [r] = report["resources"]
    assert r["namespace"] == "ray-prod"  # the overlay's namespace, not "default"
    assert r["rollout"] == "serve-in-place"
    assert {c["category"] for c in r["changes"]} == {"serve-in-place"}
    assert not [f for f in r["findings"] if f["severity"] == "error"]
    assert code == 0


def test_base_change_reaches_both_overlays(repo: Path, capsys) -> None:
    base = head_of(repo)
    text = (repo / "base/rayservice.yaml").read_text().replace("num-cpus: \"0\"", "num-cpus: \"1\"", 1)
    (repo / "base/rayservice.yaml").write_text(text)
    code, report = run(repo, base, commit(repo), capsys)
    got = sorted((r["namespace"], r["source"], r["rollout"]) for r in report["resources"])
    assert got == [("ray-prod", "overlays/prod (kustomize)", "new-cluster"),
                   ("ray-staging", "overlays/staging (kustomize)", "new-cluster")]
    assert code == 3


def test_unrelated_change_is_approved_without_rendering(repo: Path, capsys) -> None:
    base = head_of(repo)
    write(repo, "README.md", "# changed\n")
    code, report = run(repo, base, commit(repo), capsys)
    assert (code, report["decision"], report["resources"], report["findings"]) == (0, "approve", [], [])


def test_broken_overlay_holds_and_names_the_root(repo: Path, capsys) -> None:
    base = head_of(repo)
    edit_yaml(repo, "overlays/prod/kustomization.yaml",
              lambda d: d["resources"].append("missing-file.yaml"))
    code, report = run(repo, base, commit(repo), capsys)
    assert code == 3 and report["decision"] == "hold"
    [f] = report["findings"]
    assert (f["severity"], f["code"], f["path"]) == ("error", "render-failed", "overlays/prod (kustomize)")
    assert "missing-file.yaml" in f["message"] and "at head" in f["message"]
    assert "/tmp" not in f["message"] and "rsi-snap" not in f["message"]  # repository paths only
    assert "render-failed" in report["summary"]
    assert report["resources"] == []  # never compared against half a render


def test_render_failure_warn_policy_approves_with_the_finding(repo: Path, capsys, tmp_path: Path) -> None:
    base = head_of(repo)
    edit_yaml(repo, "overlays/prod/kustomization.yaml", lambda d: d["resources"].append("nope.yaml"))
    policy = tmp_path / "policy.yaml"
    policy.write_text("renderFailure: warn\n")
    code, report = run(repo, base, commit(repo), capsys, "--policy", str(policy))
    assert code == 0 and report["findings"][0]["severity"] == "warning"


def test_symlink_escaping_the_snapshot_is_refused(repo: Path, capsys) -> None:
    base = head_of(repo)
    os.symlink("/etc/passwd", repo / "overlays/prod/passwd.yaml")
    edit_yaml(repo, "overlays/prod/kustomization.yaml", lambda d: d["resources"].append("passwd.yaml"))
    code, report = run(repo, base, commit(repo), capsys)
    assert code == 3
    [f] = report["findings"]
    assert f["code"] == "render-failed" and "passwd.yaml" in f["message"]
    assert "leaves the repository" in f["message"]
    assert "root:" not in json.dumps(report)  # nothing of /etc/passwd was read


def test_exec_plugin_kustomization_is_refused(repo: Path, capsys, tmp_path: Path) -> None:
    base = head_of(repo)
    marker = tmp_path / "pwned"
    write(repo, "overlays/prod/gen.sh", f"#!/bin/sh\ntouch {marker}\necho 'kind: ConfigMap'\n")
    (repo / "overlays/prod/gen.sh").chmod(0o755)
    write(repo, "overlays/prod/generator.yaml", {
        "apiVersion": "example.com/v1", "kind": "Gen", "metadata": {
            "name": "gen", "annotations": {"config.kubernetes.io/function": "exec:\n  path: ./gen.sh\n"}}})
    edit_yaml(repo, "overlays/prod/kustomization.yaml", lambda d: d.update(generators=["generator.yaml"]))
    code, report = run(repo, base, commit(repo), capsys)
    assert code == 3 and report["findings"][0]["code"] == "render-failed"
    assert not marker.exists()


def test_application_kustomize_images_override_is_a_change(apps_repo: Path, capsys) -> None:
    repo = apps_repo
    base = head_of(repo)
    edit_yaml(repo, "apps/llm-prod.yaml", lambda d: d["spec"]["source"].update(
        kustomize={"images": [f"rayproject/ray-llm:{NEW_TAG}"]}))
    code, report = run(repo, base, commit(repo), capsys)
    [r] = report["resources"]
    assert (r["namespace"], r["source"], r["rollout"]) == ("ray-prod", "Application llm-prod", "new-cluster")
    assert code == 3


def test_application_destination_namespace_applies_to_resources_without_one(apps_repo: Path,
                                                                             capsys) -> None:
    repo = apps_repo
    edit_yaml(repo, "overlays/staging/kustomization.yaml", lambda d: d.pop("namespace"))
    base = commit(repo)
    text = (repo / "base/rayservice.yaml").read_text().replace("max_replicas: 4", "max_replicas: 5")
    (repo / "base/rayservice.yaml").write_text(text)
    code, report = run(repo, base, commit(repo), capsys)
    got = sorted((r["namespace"], r["source"], r["rollout"]) for r in report["resources"])
    assert got == [("ray-prod", "Application llm-prod", "serve-in-place"),
                   ("ray-staging", "Application llm-staging", "serve-in-place")]


def test_two_applications_producing_one_rayservice_is_a_finding(apps_repo: Path, capsys) -> None:
    repo = apps_repo
    write(repo, "apps/llm-prod-copy.yaml", application("llm-prod-copy", "overlays/prod", "ray-prod"))
    base = commit(repo)
    edit_yaml(repo, "overlays/prod/kustomization.yaml", lambda d: d["images"][0].update(newTag=NEW_TAG))
    code, report = run(repo, base, commit(repo), capsys, "--headroom", "nvidia.com/gpu=8")
    [r] = report["resources"]
    dup = [f for f in r["findings"] if f["code"] == "duplicate-resource"]
    assert len(dup) == 1 and "Application llm-prod" in dup[0]["message"]
    assert code == 3  # an error finding holds even with room


def test_application_of_another_repository_is_not_rendered(apps_repo: Path, capsys) -> None:
    repo = apps_repo
    base = head_of(repo)
    write(repo, "apps/cert-manager.yaml", {
        "apiVersion": "argoproj.io/v1alpha1", "kind": "Application", "metadata": {"name": "cert-manager"},
        "spec": {"source": {"repoURL": "https://charts.jetstack.io", "chart": "cert-manager",
                            "targetRevision": "1.15.0"},
                 "destination": {"namespace": "cert-manager"}}})
    code, report = run(repo, base, commit(repo), capsys)
    assert code == 3  # unknown means hold: whether the chart holds a RayService is not known here
    [f] = report["findings"]
    assert (f["severity"], f["code"], f["path"]) == ("error", "unknown-source", "apps/cert-manager.yaml")


def test_paths_narrow_the_change(repo: Path, capsys) -> None:
    base = head_of(repo)
    edit_yaml(repo, "overlays/prod/kustomization.yaml", lambda d: d["images"][0].update(newTag=NEW_TAG))
    code, report = run(repo, base, commit(repo), capsys, "--paths", "overlays/staging/*")
    assert (code, report["resources"]) == (0, [])


def test_render_none_reads_files_as_they_are(repo: Path, capsys) -> None:
    base = head_of(repo)
    edit_yaml(repo, "overlays/prod/kustomization.yaml", lambda d: d["images"][0].update(newTag=NEW_TAG))
    code, report = run(repo, base, commit(repo), capsys, "--render", "none")
    assert (code, report["resources"]) == (0, [])  # the old, blind behaviour, on request only


def test_plain_file_outside_roots_keeps_its_lines(repo: Path, capsys) -> None:
    write(repo, "raw/rs.yaml", (repo / "base/rayservice.yaml").read_text())
    base = commit(repo)
    text = (repo / "raw/rs.yaml").read_text().replace("rayVersion: \"2.52.0\"", "rayVersion: \"2.53.0\"")
    (repo / "raw/rs.yaml").write_text(text)
    code, report = run(repo, base, commit(repo), capsys)
    [r] = report["resources"]
    assert (r["source"], r["namespace"], r["rollout"]) == ("raw/rs.yaml", "default", "new-cluster")


def test_non_utf8_plain_file_holds_instead_of_reading_as_deleted(repo: Path, capsys) -> None:
    write(repo, "raw/rs.yaml", (repo / "base/rayservice.yaml").read_text())
    base = commit(repo)
    text = (repo / "raw/rs.yaml").read_text().replace("2.52.0-py311", "2.53.0-py311")
    (repo / "raw/rs.yaml").write_bytes(text.encode() + "# r\xe9sum\xe9\n".encode("latin-1"))
    code, report = run(repo, base, commit(repo), capsys)
    assert code == 3
    [f] = report["findings"]
    assert f["code"] == "render-failed" and "not UTF-8" in f["message"] and "raw/rs.yaml" in f["message"]
    assert not [r for r in report["resources"] if r["action"] == "deleted"]


def test_unknown_revision_is_a_usage_error(repo: Path, capsys) -> None:
    code = main(["git", "nosuchrev", "HEAD", "--repo", str(repo), "--format", "json"])
    assert code == 2 and "nosuchrev" in capsys.readouterr().err


def test_kustomize_folders_in_analyze(repo: Path, capsys, tmp_path: Path) -> None:
    before = tmp_path / "before"
    shutil.copytree(repo, before, ignore=shutil.ignore_patterns(".git"))
    edit_yaml(repo, "overlays/prod/kustomization.yaml", lambda d: d["images"][0].update(newTag=NEW_TAG))
    code = main(["analyze", str(before / "overlays/prod"), str(repo / "overlays/prod"), "--format", "json"])
    report = json.loads(capsys.readouterr().out)
    assert code == 3
    [r] = report["resources"]
    assert r["rollout"] == "new-cluster" and r["source"].endswith("overlays/prod (kustomize)")


def test_repo_url_tells_this_repositorys_applications(apps_repo: Path, capsys) -> None:
    repo = apps_repo
    base = head_of(repo)
    edit_yaml(repo, "overlays/prod/kustomization.yaml", lambda d: d["images"][0].update(newTag=NEW_TAG))
    head = commit(repo)
    # Under another URL the Applications are someone else's: the overlays are rendered as roots.
    code, report = run(repo, base, head, capsys, "--repo-url", "https://github.com/other/repo")
    assert [r["source"] for r in report["resources"]] == ["overlays/prod (kustomize)"]
    code, report = run(repo, base, head, capsys, "--repo-url", REPO_URL.replace(".git", ""))
    assert [r["source"] for r in report["resources"]] == ["Application llm-prod"]


# -- Helm, on both engines: the SDK child and the real helm binary ------------------------------

OLD_IMAGE = "rayproject/ray-llm:2.52.0-py311-cu128"


def add_chart(repo: Path, folder: str = "charts/llm") -> None:
    template = (repo / "base/rayservice.yaml").read_text().replace(OLD_IMAGE, "{{ .Values.image }}")
    template = template.replace("name: ray-serve-llm", "name: {{ .Release.Name }}", 1)
    write(repo, f"{folder}/Chart.yaml", {"apiVersion": "v2", "name": "llm", "version": "0.1.0"})
    write(repo, f"{folder}/values.yaml", {"image": OLD_IMAGE})
    write(repo, f"{folder}/templates/rayservice.yaml", template)


def test_chart_values_change_is_rendered(repo: Path, capsys, engine: str) -> None:
    add_chart(repo)
    base = commit(repo)
    write(repo, "charts/llm/values.yaml", {"image": f"rayproject/ray-llm:{NEW_TAG}"})
    code, report = run(repo, base, commit(repo), capsys)
    [r] = report["resources"]
    assert (r["source"], r["name"], r["rollout"]) == ("charts/llm (helm)", "llm", "new-cluster")
    assert code == 3


def test_template_braces_do_not_hide_holds_elsewhere(repo: Path, capsys, engine: str) -> None:
    add_chart(repo)
    base = commit(repo)
    # A template edit that leaves the render unchanged, plus an image bump in an overlay.
    text = (repo / "charts/llm/templates/rayservice.yaml").read_text()
    (repo / "charts/llm/templates/rayservice.yaml").write_text("{{/* a comment */}}\n" + text)
    edit_yaml(repo, "overlays/prod/kustomization.yaml", lambda d: d["images"][0].update(newTag=NEW_TAG))
    code, report = run(repo, base, commit(repo), capsys)
    got = {(r["source"], r["rollout"]) for r in report["resources"]}
    assert got == {("charts/llm (helm)", "none"), ("overlays/prod (kustomize)", "new-cluster")}
    assert code == 3 and report["findings"] == []


def test_application_helm_value_files_parameters_and_release(apps_repo: Path, capsys, engine: str) -> None:
    repo = apps_repo
    add_chart(repo)
    write(repo, "envs/prod/values.yaml", {"image": OLD_IMAGE})
    write(repo, "apps/llm-helm.yaml", application(
        "llm-helm", "charts/llm", "ray-helm",
        helm={"releaseName": "llm-h", "valueFiles": ["../../envs/prod/values.yaml"],
              "parameters": [{"name": "unused", "value": "1"}]}))
    base = commit(repo)
    write(repo, "envs/prod/values.yaml", {"image": f"rayproject/ray-llm:{NEW_TAG}"})
    code, report = run(repo, base, commit(repo), capsys)
    [r] = report["resources"]
    assert (r["source"], r["namespace"], r["name"]) == ("Application llm-helm", "ray-helm", "llm-h")
    assert r["rollout"] == "new-cluster" and code == 3


def test_chart_with_missing_dependency_is_a_render_failure(repo: Path, capsys, engine: str) -> None:
    add_chart(repo)
    base = commit(repo)
    edit_yaml(repo, "charts/llm/Chart.yaml", lambda d: d.update(dependencies=[
        {"name": "redis", "version": "1.0.0", "repository": "https://charts.example.com"}]))
    code, report = run(repo, base, commit(repo), capsys)
    [f] = report["findings"]
    assert (f["code"], f["path"]) == ("render-failed", "charts/llm (helm)") and "redis" in f["message"]
    assert code == 3


def test_template_error_is_a_render_failure(repo: Path, capsys, engine: str) -> None:
    add_chart(repo)
    base = commit(repo)
    write(repo, "charts/llm/templates/broken.yaml", "{{ .Values.nope.deeper }}\n")
    code, report = run(repo, base, commit(repo), capsys)
    [f] = report["findings"]
    assert f["code"] == "render-failed" and "broken.yaml" in f["message"]
    assert code == 3


@pytest.mark.parametrize("text", ["- a\n", "image: [\n"])
def test_bad_values_file_is_a_render_failure_naming_it(apps_repo: Path, capsys, engine: str,
                                                       text: str) -> None:
    repo = apps_repo
    add_chart(repo)
    write(repo, "envs/prod/values.yaml", {"image": OLD_IMAGE})
    write(repo, "apps/llm-helm.yaml", application("llm-helm", "charts/llm", "ray-helm",
                                                  helm={"valueFiles": ["../../envs/prod/values.yaml"]}))
    base = commit(repo)
    write(repo, "envs/prod/values.yaml", text)
    code, report = run(repo, base, commit(repo), capsys)
    [f] = report["findings"]
    assert (f["code"], f["path"]) == ("render-failed", "Application llm-helm") and code == 3
    assert "envs/prod/values.yaml" in f["message"]
    assert "/tmp" not in f["message"] and "rsi-" not in f["message"]  # repository paths only


def test_gitops_sample_renders_to_its_reviewed_report(monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    """samples/gitops-overlay-image-bump: folders given to ``analyze``, rendered, then compared."""
    root = Path(__file__).resolve().parents[2]
    sample = "samples/gitops-overlay-image-bump"
    monkeypatch.chdir(root)
    args = [f"{sample}/before/overlays/prod", f"{sample}/after/overlays/prod"]
    assert main(["analyze", *args, "--format", "json"]) == 3
    assert json.loads(capsys.readouterr().out) == json.loads((root / sample / "expected.json").read_text())
    assert main(["analyze", *args, "--format", "markdown"]) == 3
    assert capsys.readouterr().out == (root / sample / "expected.md").read_text()
