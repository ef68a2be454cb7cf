"""Flux drift advice (diffing/flux.py, docs/flux.md): a replicas-only change to an autoscaled object
that Flux deploys gets Flux's advice, not the Argo CD ignoreDifferences snippet; the same change
deployed by Argo CD keeps its report byte for byte."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema_rs
import pytest
from fluxrepo import SOURCE, helm_release, kustomization, make_flux_repo
from gitops import application, commit, git, run, write

from app.cli import main
from app.render.kustomize import find_tool

pytestmark = pytest.mark.skipif(find_tool("kubectl") is None, reason="kubectl is not installed")

ROOT = Path(__file__).resolve().parents[2]
FIGHT = ROOT / "samples" / "raycluster-autoscaler-fight"
SCHEMA = jsonschema_rs.validator_for(json.loads((ROOT / "docs" / "report.schema.json").read_text()))
SERVE = ROOT / "samples" / "replicas-autoscaling"


def scaled(repo: Path, folder: str, sample: Path) -> str:
    """``folder`` holds ``sample``'s before side; returns base after committing its after side."""
    write(repo, f"{folder}/cluster.yaml", (sample / "before.yaml").read_text())
    write(repo, f"{folder}/kustomization.yaml", {"resources": ["cluster.yaml"], "namespace": "ray"})
    base = commit(repo, "cluster")
    write(repo, f"{folder}/cluster.yaml", (sample / "after.yaml").read_text())
    commit(repo, "replicas")
    return base


def markdown(repo: Path, base: str, capsys) -> str:
    main(["git", base, git(repo, "rev-parse", "HEAD"), "--repo", str(repo), "--format", "markdown"])
    return capsys.readouterr().out


def test_replicas_only_on_a_flux_raycluster_gets_the_flux_advice(tmp_path: Path, capsys) -> None:
    repo = make_flux_repo(tmp_path)
    write(repo, "clusters/prod/notebooks.yaml", kustomization("notebooks", "./notebooks"))
    base = scaled(repo, "notebooks", FIGHT)
    code, report = run(repo, base, git(repo, "rev-parse", "HEAD"), capsys)
    [r] = report["resources"]
    assert (code, r["decision"], r["kind"]) == (0, "ignore-differences", "RayCluster")
    assert r["ignoreDifferences"] == []  # no Argo CD rule for a Flux object
    advice = r["driftAdvice"]
    assert advice["tool"] == "flux" and advice["fix"] == "spec-ignore" and advice["field"] == "spec.ignore"
    assert advice["deployer"] == {"kind": "Kustomization", "namespace": "flux-system", "name": "notebooks"}
    [rule] = advice["ignore"]
    assert rule["paths"] == ["/spec/workerGroupSpecs/0/replicas", "/spec/workerGroupSpecs/0/scaleStrategy"]
    assert rule["target"] == {"group": "ray.io", "kind": "RayCluster", "name": "notebooks-l4",
                              "namespace": "ray"}
    assert any("IfNotPresent" in n for n in advice["notes"])
    assert "Argo CD" not in " ".join(r["reasons"]) and "Flux" in " ".join(r["reasons"])
    assert "Flux advice" in report["summary"] and "Argo CD" not in report["summary"]
    assert [e.message for e in SCHEMA.iter_errors(report)] == []
    md = markdown(repo, base, capsys)
    assert "**Flux: leave what the autoscaler owns to it** (Kustomization flux-system/notebooks)" in md
    assert "    - paths:\n        - /spec/workerGroupSpecs/0/replicas" in md
    assert "ignoreDifferences:" not in md


def test_the_same_change_through_argo_cd_keeps_the_argo_snippet(tmp_path: Path, capsys) -> None:
    repo = tmp_path / "argo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    write(repo, "apps/notebooks.yaml", application("notebooks", "notebooks", "ray"))
    base = scaled(repo, "notebooks", FIGHT)
    code, report = run(repo, base, git(repo, "rev-parse", "HEAD"), capsys)
    [r] = report["resources"]
    assert "driftAdvice" not in r and r["ignoreDifferences"][0]["kind"] == "RayCluster"
    assert "ignore these fields in Argo CD" in report["summary"]
    assert "ignoreDifferences:" in markdown(repo, base, capsys)


def test_a_flux_rayservice_needs_no_ignore_rule(tmp_path: Path, capsys) -> None:
    repo = make_flux_repo(tmp_path)
    write(repo, "clusters/prod/serve.yaml", kustomization("serve", "./serve"))
    base = scaled(repo, "serve", SERVE)
    code, report = run(repo, base, git(repo, "rev-parse", "HEAD"), capsys)
    [r] = report["resources"]
    assert (r["kind"], r["decision"]) == ("RayService", "ignore-differences")
    assert r["driftAdvice"]["fix"] == "none-needed" and r["driftAdvice"]["ignore"] == []
    assert [e.message for e in SCHEMA.iter_errors(report)] == []


def test_a_helmrelease_gets_drift_detection_ignore(tmp_path: Path, capsys, engine: str) -> None:
    repo = make_flux_repo(tmp_path)
    chart = "charts/notebooks"
    write(repo, f"{chart}/Chart.yaml", {"apiVersion": "v2", "name": "notebooks", "version": "0.1.0"})
    write(repo, f"{chart}/values.yaml", {"replicas": 1})
    text = (FIGHT / "before.yaml").read_text()
    text = text.replace("    replicas: 1", "    replicas: {{ .Values.replicas }}")
    write(repo, f"{chart}/templates/cluster.yaml", text)
    write(repo, "clusters/prod/notebooks.yaml", helm_release(
        "notebooks", "ray", {"chart": chart, "sourceRef": {**SOURCE, "namespace": "flux-system"}},
        values={"replicas": 1}))
    base = commit(repo, "release")
    write(repo, "clusters/prod/notebooks.yaml", helm_release(
        "notebooks", "ray", {"chart": chart, "sourceRef": {**SOURCE, "namespace": "flux-system"}},
        values={"replicas": 3}))
    code, report = run(repo, base, commit(repo), capsys)
    [r] = report["resources"]
    advice = r["driftAdvice"]
    assert (advice["fix"], advice["field"]) == ("drift-detection-ignore", "spec.driftDetection.ignore")
    assert advice["deployer"]["kind"] == "HelmRelease" and r["ignoreDifferences"] == []
    assert "driftDetection:" in markdown(repo, base, capsys)
