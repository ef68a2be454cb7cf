"""--format codequality: GitLab's Code Quality report, validated against the documented fields."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema_rs
import pytest
from gitops import NEW_TAG, commit, edit_yaml, git, make_repo, write

import diffing
from app.cli import main
from app.render.kustomize import find_tool
from diffing.record import replace
from diffing.render.codequality import render_codequality

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = json.loads((ROOT / "tests" / "data" / "gitlab" / "codequality.schema.json").read_text())
needs_kubectl = pytest.mark.skipif(find_tool("kubectl") is None, reason="kubectl is not installed")


def valid(issues: object) -> list[str]:
    return [e.message for e in jsonschema_rs.validator_for(SCHEMA).iter_errors(issues)]


def analyze(capsys: pytest.CaptureFixture[str], before: Path, after: Path) -> tuple[int, list[dict]]:
    code = main(["analyze", str(before), str(after), "--format", "codequality"])
    return code, json.loads(capsys.readouterr().out)


def sample(name: str) -> tuple[Path, Path]:
    """The sample's files relative to the repository (the working directory): paths as in a repo."""
    return Path("samples", name, "before.yaml"), Path("samples", name, "after.yaml")


@pytest.fixture(autouse=True)
def _in_the_repository(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)


def test_the_schema_rejects_what_gitlab_would_not_read() -> None:
    good = {"description": "d", "check_name": "c", "fingerprint": "f", "severity": "minor",
            "location": {"path": "a.yaml", "lines": {"begin": 3}}}
    assert valid([good]) == []
    assert valid([{**good, "severity": "error"}])
    assert valid([{**good, "location": {"path": "a.yaml"}}])
    assert valid([{k: v for k, v in good.items() if k != "fingerprint"}])
    assert valid(good)  # not an array


def test_a_hold_is_critical_on_the_changed_lines(capsys) -> None:
    before, after = sample("gpu-image-bump")
    code, issues = analyze(capsys, before, after)
    assert code == 3
    assert valid(issues) == []
    critical = [i for i in issues if i["severity"] == "critical"]
    assert len(critical) >= 3 and issues[:len(critical)] == critical  # the holds first
    assert [i["check_name"] for i in issues[len(critical):]] == ["rayservice-impact/gpu-without-toleration"]
    lines = after.read_text().splitlines()
    for issue in critical:
        assert issue["location"]["path"] == str(after)
        assert issue["check_name"] == "rayservice-impact/new-cluster"
        changed = lines[issue["location"]["lines"]["begin"] - 1]
        assert "2.53.0" in changed, changed
    assert len({i["fingerprint"] for i in issues}) == len(issues)


def test_an_approve_without_findings_is_an_empty_list(capsys) -> None:
    code, issues = analyze(capsys, *sample("serve-only"))
    assert (code, issues) == (0, [])


@pytest.mark.parametrize("name", ["replicas-autoscaling", "raycluster-autoscaler-fight"])
def test_ignore_differences_findings_are_minor_never_critical(capsys, name: str) -> None:
    code, issues = analyze(capsys, *sample(name))
    assert code == 0
    assert valid(issues) == []
    expected = json.loads((ROOT / "samples" / name / "expected.json").read_text())
    assert len(issues) == sum(len(r["findings"]) for r in expected["resources"])
    assert {i["severity"] for i in issues} <= {"minor", "info"}


@pytest.mark.parametrize("name", sorted(p.name for p in (ROOT / "samples").iterdir()
                                        if (p / "after.yaml").is_file() and (p / "expected.json").is_file()))
def test_every_sample_validates_and_every_hold_has_a_critical_issue(capsys, name: str) -> None:
    code, issues = analyze(capsys, *sample(name))
    assert valid(issues) == []
    decision = json.loads((ROOT / "samples" / name / "expected.json").read_text())["decision"]
    assert any(i["severity"] == "critical" for i in issues) == (decision == "hold")
    assert (code == 3) == (decision == "hold")


def test_fingerprints_do_not_move_with_the_lines(tmp_path: Path, capsys) -> None:
    before, after = sample("gpu-image-bump")
    moved_after = tmp_path / "after2.yaml"
    moved_after.write_text(after.read_text())
    _, first = analyze(capsys, before, moved_after)
    moved_after.write_text("# a comment\n# another\n" + after.read_text())
    _, second = analyze(capsys, before, moved_after)
    assert [i["fingerprint"] for i in first] == [i["fingerprint"] for i in second]
    assert [i["location"]["lines"]["begin"] + 2 for i in first] == \
        [i["location"]["lines"]["begin"] for i in second]
    _, elsewhere = analyze(capsys, *sample("strategy-none"))
    assert not {i["fingerprint"] for i in first} & {i["fingerprint"] for i in elsewhere}


def test_a_hold_with_nothing_locatable_still_gets_a_critical_issue() -> None:
    before, after = sample("gpu-image-bump")
    report = diffing.analyze([(str(before), before.read_text())], [(str(after), after.read_text())])
    [held] = report.resources
    bare = replace(report, resources=(replace(held, changes=(), findings=()),))
    [issue] = render_codequality(bare)
    assert issue["severity"] == "critical"
    assert issue["location"]["path"] == str(after)
    assert after.read_text().splitlines()[issue["location"]["lines"]["begin"] - 1].startswith("apiVersion")
    assert valid([issue]) == []
    nothing = diffing.Report(report.kuberay_version, "hold", "hold: an operator upgrade")
    [alone] = render_codequality(nothing, root_files={"overlays/prod (kustomize)": ["overlays/prod/k.yaml"]})
    assert (alone["severity"], alone["location"]["path"]) == ("critical", "overlays/prod/k.yaml")
    assert "an operator upgrade" in alone["description"]


@needs_kubectl
def test_git_overlay_bump_points_at_the_overlay_line(tmp_path: Path, capsys) -> None:
    repo = make_repo(tmp_path)
    base = git(repo, "rev-parse", "HEAD")
    edit_yaml(repo, "overlays/prod/kustomization.yaml", lambda d: d["images"][0].update(newTag=NEW_TAG))
    head = commit(repo)
    assert main(["git", base, head, "--repo", str(repo), "--format", "codequality"]) == 3
    issues = json.loads(capsys.readouterr().out)
    assert valid(issues) == []
    critical = [i for i in issues if i["severity"] == "critical"]
    assert critical and {i["location"]["path"] for i in critical} == {"overlays/prod/kustomization.yaml"}
    text = (repo / "overlays/prod/kustomization.yaml").read_text().splitlines()
    assert text[critical[0]["location"]["lines"]["begin"] - 1].strip() == f"newTag: {NEW_TAG}"


@needs_kubectl
def test_git_render_failure_is_an_issue_on_the_roots_changed_file(tmp_path: Path, capsys) -> None:
    repo = make_repo(tmp_path)
    base = git(repo, "rev-parse", "HEAD")
    write(repo, "overlays/prod/kustomization.yaml", "resources: [../../nope]\n")
    head = commit(repo)
    assert main(["git", base, head, "--repo", str(repo), "--format", "codequality"]) == 3
    issues = json.loads(capsys.readouterr().out)
    assert valid(issues) == []
    [issue] = issues
    assert issue["check_name"] == "rayservice-impact/render-failed"
    assert issue["severity"] == "major"
    assert issue["location"] == {"path": "overlays/prod/kustomization.yaml", "lines": {"begin": 1}}
