"""The command line: formats, exit codes and error messages, as users and scripts see them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import diffing
from app import cli

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "samples"


def run(*args: str, stdin: str | None = None, env: dict[str, str] | None = None
        ) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "app", *args], capture_output=True, text=True, cwd=ROOT,
                          input=stdin, timeout=60, env=env)


def test_cli_hold_exits_3_with_the_json_report() -> None:
    pair = SAMPLES / "gpu-image-bump"
    proc = run("analyze", str(pair / "before.yaml"), str(pair / "after.yaml"), "--format", "json")
    assert proc.returncode == 3, proc.stderr
    report = json.loads(proc.stdout)
    assert (report["schemaVersion"], report["decision"]) == (1, "hold")
    assert report["resources"][0]["capacity"]["extra"]["nvidia.com/gpu"] == 4


def test_cli_output_writes_every_format_from_one_analysis(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    pair = SAMPLES / "gpu-image-bump"
    monkeypatch.chdir(pair)
    md, cq = tmp_path / "impact.md", tmp_path / "gl-code-quality-report.json"
    code = cli.main(["analyze", "before.yaml", "after.yaml", "--format", "json",
                     "--output", f"markdown={md}", "--output", f"codequality={cq}"])
    assert code == 3
    assert json.loads(capsys.readouterr().out)["decision"] == "hold"
    # the markdown file is what --format markdown prints (the golden file a human checked)
    assert md.read_text(encoding="utf-8") == (pair / "expected.md").read_text()
    assert any(issue["severity"] == "critical" for issue in json.loads(cq.read_text(encoding="utf-8")))


@pytest.mark.parametrize("value, says", [("bogus=x", "FORMAT=FILE"), ("json", "FORMAT=FILE"),
                                         ("json=/nonexistent-dir/r.json", "cannot write it")])
def test_cli_output_bad_value_exits_2_and_names_it(value: str, says: str,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    pair = SAMPLES / "gpu-image-bump"
    code = cli.main(["analyze", str(pair / "before.yaml"), str(pair / "after.yaml"), "--output", value])
    assert code == 2
    err = capsys.readouterr().err
    assert says in err and value.split("=")[-1] in err


def test_cli_markdown_is_the_pr_comment_text(capsys: pytest.CaptureFixture[str],
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    pair = SAMPLES / "serve-only"
    monkeypatch.chdir(pair)
    code = cli.main(["analyze", "before.yaml", "after.yaml", "--format", "markdown"])
    assert code == 0
    assert capsys.readouterr().out == (pair / "expected.md").read_text()


def test_cli_headroom_turns_the_hold_into_approve(capsys: pytest.CaptureFixture[str]) -> None:
    pair = SAMPLES / "gpu-image-bump"
    code = cli.main(["analyze", str(pair / "before.yaml"), str(pair / "after.yaml"), "--format", "json",
                     "--headroom", "nvidia.com/gpu=4", "cpu=64"])
    out = json.loads(capsys.readouterr().out)
    assert (code, out["decision"]) == (0, "approve")
    assert out["resources"][0]["capacity"]["headroom"] == {"nvidia.com/gpu": 4, "cpu": "64"}


def test_cli_stdin_and_dev_null_mean_create(capsys: pytest.CaptureFixture[str],
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    text = (SAMPLES / "kuberay-v1.7.0" / "ray-service.sample.yaml").read_text()
    monkeypatch.setattr(sys, "stdin", type("S", (), {"buffer": __import__("io").BytesIO(text.encode())})())
    code = cli.main(["analyze", "/dev/null", "-", "--format", "json"])
    res = json.loads(capsys.readouterr().out)["resources"][0]
    assert (code, res["action"], res["rollout"]) == (0, "created", "create")


def test_cli_invalid_yaml_exit_2_names_file_document_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("apiVersion: v1\nkind: ConfigMap\n---\nkind: RayService\nspec: [1, 2\n")
    proc = run("analyze", "/dev/null", str(bad))
    assert proc.returncode == 2
    assert f"{bad}, document 2, line " in proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize(("args", "message"), [
    (["analyze", "/nonexistent.yaml", "/dev/null"], "/nonexistent.yaml: cannot read"),
    (["analyze", "-", "-"], "only one of BEFORE and AFTER"),
    (["analyze", "/dev/null", "/dev/null", "--headroom", "gpu"], "expected RESOURCE=N"),
    (["analyze", "/dev/null", "/dev/null", "--kuberay-version", "1.2.0"], "not supported"),
    (["analyze", "/dev/null", "/dev/null", "--headroom", "nvidia.com/gpu=lots"], "not an amount"),
    (["analyze", "/dev/null"], "usage:"),
])
def test_cli_usage_errors_exit_2(args: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(args) == 2
    assert message in capsys.readouterr().err


def test_cli_bad_policy_file_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    policy = tmp_path / "policy.yaml"
    policy.write_text("holdOnRecreate: sometimes\n")
    assert cli.main(["analyze", "/dev/null", "/dev/null", "--policy", str(policy)]) == 2
    assert "holdOnRecreate" in capsys.readouterr().err


def test_cli_policy_from_environment_warns_instead_of_holding(tmp_path: Path) -> None:
    policy = tmp_path / "policy.yaml"
    policy.write_text("notApplied: warn\n")
    pair = SAMPLES / "tolerations-only"
    env = {**__import__("os").environ, "RAYSERVICE_IMPACT_POLICY_FILE": str(policy)}
    proc = run("analyze", str(pair / "before.yaml"), str(pair / "after.yaml"), "--format", "json", env=env)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["resources"][0]["rollout"] == "not-applied"


def test_cli_internal_error_exits_1(monkeypatch: pytest.MonkeyPatch,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    def boom(*args: object, **kwargs: object) -> None:
        raise RuntimeError("unexpected")

    monkeypatch.setattr(diffing, "analyze", boom)
    assert cli.main(["analyze", "/dev/null", "/dev/null"]) == 1
    assert "internal error: RuntimeError: unexpected" in capsys.readouterr().err


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True,
                          env={"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
                               "GIT_COMMITTER_EMAIL": "t@t", "PATH": "/usr/bin:/bin"}).stdout.strip()


def test_cli_git_follows_renames_and_skips_other_files(tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q")
    pair = SAMPLES / "gpu-image-bump"
    (repo / "apps").mkdir()
    (repo / "apps" / "llm.yaml").write_text((pair / "before.yaml").read_text())
    (repo / "notes.yaml").write_text("a: [broken\n")  # not a RayService: never parsed
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "base")
    base = _git(repo, "rev-parse", "HEAD")
    _git(repo, "mv", "apps/llm.yaml", "apps/llm-serve.yaml")
    (repo / "apps" / "llm-serve.yaml").write_text((pair / "after.yaml").read_text())
    (repo / "notes.yaml").write_text("a: [still broken\n")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "head")
    code = cli.main(["git", base, "HEAD", "--repo", str(repo), "--format", "json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 3
    assert [(r["name"], r["action"], r["rollout"]) for r in out["resources"]] == [
        ("ray-serve-llm", "updated", "new-cluster")]



RAYCLUSTER = """\
apiVersion: ray.io/v1
kind: RayCluster
metadata: {name: raycluster-batch, namespace: batch}
spec:
  headGroupSpec:
    template:
      spec:
        containers: [{name: ray-head, image: "rayproject/ray:IMAGE"}]
"""
RAYJOB = """\
apiVersion: ray.io/v1
kind: "RayJob"
metadata: {name: nightly, namespace: batch}
spec:
  entrypoint: ENTRYPOINT
  rayClusterSpec:
    headGroupSpec:
      template:
        spec:
          containers: [{name: ray-head, image: "rayproject/ray:2.52.0"}]
"""


@pytest.mark.parametrize("render", ["auto", "none"])
def test_cli_git_keeps_raycluster_and_rayjob_files(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                   render: str) -> None:
    """Files holding only a RayCluster or a RayJob are changes too (plain files, or as they are)."""
    repo = tmp_path / "repo"
    (repo / "batch").mkdir(parents=True)
    _git(repo, "init", "-q")
    (repo / "batch" / "cluster.yaml").write_text(RAYCLUSTER.replace("IMAGE", "2.52.0"))
    (repo / "batch" / "job.yml").write_text(RAYJOB.replace("ENTRYPOINT", "python a.py"))
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "base")
    base = _git(repo, "rev-parse", "HEAD")
    (repo / "batch" / "cluster.yaml").write_text(RAYCLUSTER.replace("IMAGE", "2.53.0"))
    (repo / "batch" / "job.yml").write_text(RAYJOB.replace("ENTRYPOINT", "python b.py"))
    _git(repo, "commit", "-qam", "head")
    code = cli.main(["git", base, "HEAD", "--repo", str(repo), "--format", "json", "--render", render])
    out = json.loads(capsys.readouterr().out)
    assert code in (0, 3)
    assert [(r["kind"], r["namespace"], r["name"]) for r in out["resources"]] == [
        ("RayCluster", "batch", "raycluster-batch"), ("RayJob", "batch", "nightly")]


def test_cli_git_unknown_revision_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _git(tmp_path, "init", "-q")
    assert cli.main(["git", "nope", "HEAD", "--repo", str(tmp_path)]) == 2
    assert "unknown revision 'nope'" in capsys.readouterr().err


CLI_ONLY = """
import sys
SERVER = ("fastapi", "starlette", "uvicorn", "kubernetes", "prometheus_client", "jwt")
class Block:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in SERVER:
            raise ImportError(f"{name} is not installed (blocked by the test)")
        return None
sys.meta_path.insert(0, Block())
import importlib.util
_find = importlib.util.find_spec
importlib.util.find_spec = lambda name, *a: None if name.split(".")[0] in (
    "fastapi", "uvicorn", "kubernetes") else _find(name, *a)
from app.cli import main
sys.exit(main(sys.argv[1:]))
"""


@pytest.mark.parametrize(("args", "code", "says"), [
    (["analyze", "samples/gpu-image-bump/before.yaml", "samples/gpu-image-bump/after.yaml"], 3, ""),
    (["serve"], 2, "serve needs the [server] extra"),
    (["argocd-presync", "--app", "x"], 2, "argocd-presync needs the [server] extra"),
])
def test_cli_only_install_needs_no_server_stack(args: list[str], code: int, says: str) -> None:
    """`pipx install .` (no [server] extra): analyze works; serve says what to install, from the
    source this copy was installed from (this venv: an editable install of the clone)."""
    root = Path(__file__).resolve().parents[1]
    proc = subprocess.run([sys.executable, "-c", CLI_ONLY, *args], cwd=root, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == code, proc.stderr
    assert says in proc.stderr
    if says:
        assert f"-m pip install '{root}[server]'" in proc.stderr, proc.stderr


def test_server_extra_hint_names_the_wheel_it_was_installed_from(monkeypatch: pytest.MonkeyPatch) -> None:
    """The package is on no index: the hint installs the extra from the recorded source (PEP 610)."""
    import importlib.metadata

    class Dist:
        def read_text(self, name: str) -> str:
            assert name == "direct_url.json"
            return json.dumps({"url": "file:///home/me/dist/rayservice_impact-0.1.0-py3-none-any.whl",
                               "archive_info": {}})

    monkeypatch.setattr(importlib.metadata, "distributions", lambda name: iter([Dist()]))
    assert cli._server_install_hint().endswith(
        "-m pip install '/home/me/dist/rayservice_impact-0.1.0-py3-none-any.whl[server]'")
    monkeypatch.setattr(sys, "prefix", "/home/me/.local/share/pipx/venvs/rayservice-impact")
    assert cli._server_install_hint() == (
        "pipx install --force '/home/me/dist/rayservice_impact-0.1.0-py3-none-any.whl[server]'")


def test_cli_git_in_a_shallow_clone_says_to_fetch_the_history(tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    """actions/checkout fetches one commit by default: the base is missing, and the message says
    how to get it (issue 24); a full clone's unknown revision says nothing about depth."""
    origin = tmp_path / "origin"
    origin.mkdir()
    _git(origin, "init", "-q")
    for n in (1, 2):
        (origin / "f.yaml").write_text(f"a: {n}\n")
        _git(origin, "add", "-A")
        _git(origin, "commit", "-qm", f"c{n}")
    _git(tmp_path, "clone", "-q", "--depth", "1", f"file://{origin}", "shallow")
    assert cli.main(["git", "HEAD~1", "HEAD", "--repo", str(tmp_path / "shallow")]) == 2
    err = capsys.readouterr().err
    assert "unknown revision 'HEAD~1'" in err and "shallow clone" in err and "`fetch-depth: 0`" in err
    assert cli.main(["git", "HEAD~1...HEAD", "--repo", str(tmp_path / "shallow")]) == 2
    assert "`fetch-depth: 0`" in capsys.readouterr().err
    assert cli.main(["git", "nope", "HEAD", "--repo", str(origin)]) == 2
    assert "fetch-depth" not in capsys.readouterr().err


def test_version_flag(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["--version"]) == 0
    assert capsys.readouterr().out.startswith("rayservice-impact ")


@pytest.mark.parametrize("args", [
    ["--headroom", "nvidia.com/gpu=4", "cpu=64", "BEFORE", "AFTER"],
    ["BEFORE", "AFTER", "--headroom", "nvidia.com/gpu=4", "cpu=64"],
    ["--headroom", "nvidia.com/gpu=4", "--headroom", "cpu=64", "BEFORE", "AFTER"],
    ["--headroom=nvidia.com/gpu=4", "BEFORE", "--headroom", "cpu=64", "AFTER"],
])
def test_headroom_never_swallows_the_files(args: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    sample = Path(__file__).resolve().parents[1] / "samples" / "gpu-image-bump"
    argv = ["analyze", *[str(sample / "before.yaml") if a == "BEFORE" else str(sample / "after.yaml")
                         if a == "AFTER" else a for a in args], "--format", "json"]
    assert cli.main(argv) == 0  # 4 GPUs of headroom cover the recreation
    report = json.loads(capsys.readouterr().out)
    assert report["resources"][0]["capacity"]["headroom"] == {"nvidia.com/gpu": 4, "cpu": "64"}
