"""A PR that bumps the kuberay-operator chart: the CLI's git path judges every object the
repository deploys (docs/operator-upgrade.md)."""

from __future__ import annotations

import json
import pathlib
import subprocess

from app.cli import main

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _git(repo: pathlib.Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", *args],
                   check=True, capture_output=True)


def test_git_chart_bump_reports_operator_upgrade(tmp_path, capsys):
    repo = tmp_path / "repo"
    (repo / "apps" / "serve").mkdir(parents=True)
    (repo / "platform").mkdir()
    (repo / "apps" / "serve" / "rayservice.yaml").write_text(
        (ROOT / "samples" / "gpu-image-bump" / "before.yaml").read_text())
    chart = "apiVersion: v2\nname: platform\nversion: 0.1.0\ndependencies:\n" \
            "- name: kuberay-operator\n  version: %s\n  repository: https://ray-project.github.io/kuberay-helm/\n"
    (repo / "platform" / "Chart.yaml").write_text(chart % "1.6.2")
    _git(tmp_path, "init", "-q", str(repo))
    _git(repo, "add", ".")
    _git(repo, "commit", "-qm", "base")
    (repo / "platform" / "Chart.yaml").write_text(chart % "1.7.0")
    _git(repo, "commit", "-qam", "bump the operator")
    code = main(["git", "HEAD~1", "HEAD", "--repo", str(repo), "--format", "json"])
    out = json.loads(capsys.readouterr().out)
    up = out["operatorUpgrade"]
    assert (up["from"], up["to"], up["supported"], up["rebuilt"]) == ("1.6.2", "1.7.0", True, 0)
    assert up["changes"][0]["path"] == "platform/Chart.yaml"
    assert up["crds"]["state"] == "depends-on-installer"
    assert [(o["kind"], o["name"], o["firstReconcile"], o["hashChanges"]) for o in up["objects"]] == [
        ("RayService", "ray-serve-llm", "annotations-only", True)]
    assert up["decision"] == "approve"
    # The umbrella chart's dependency is not vendored, so that root fails to render (an error, as
    # for any change) and its own objects are not judged (a warning); the operator upgrade approves.
    assert [(f["severity"], f["code"]) for f in out["findings"]] == [
        ("error", "render-failed"), ("warning", "render-failed")]
    assert out["summary"].endswith("operator upgrade: " + up["summary"]) and code == 3


def test_git_unknown_operator_version_holds(tmp_path, capsys):
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "svc.yaml").write_text((ROOT / "samples" / "gpu-image-bump" / "before.yaml").read_text())
    values = "image:\n  repository: quay.io/kuberay/operator\n  tag: %s\n"
    (repo / "values.yaml").write_text(values % "v1.7.0")
    _git(tmp_path, "init", "-q", str(repo))
    _git(repo, "add", ".")
    _git(repo, "commit", "-qm", "base")
    (repo / "values.yaml").write_text(values % "v1.9.0")
    _git(repo, "commit", "-qam", "bump")
    main(["git", "HEAD~1", "HEAD", "--repo", str(repo), "--format", "json"])
    out = json.loads(capsys.readouterr().out)
    assert out["decision"] == "hold"
    assert "1.9.0 is not a version this tool models" in out["operatorUpgrade"]["summary"]
