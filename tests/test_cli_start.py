"""What a command-line run loads (issue 24): ``analyze`` on plain files imports the analysis core
and PyYAML, never the service's stack (FastAPI, uvicorn, httpx, the Kubernetes client, pydantic),
and ``import diffing`` loads a part of the core only when a caller reads it.

No timing here: the machines are noisy; bench/bench_cli_start.py measures. Which modules a run
has loaded is exact, and most of the time follows it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import diffing
from app import cli, environ

ROOT = Path(__file__).resolve().parent.parent
PAIR = ROOT / "samples" / "gpu-image-bump"

# The service's stack, and importlib.metadata (the --version lookup, which --version alone needs).
# Then what the core no longer pays for at import (issue 24, bench/bench_cli_start.py): dataclasses
# (and inspect; diffing/record.py), typing (diffing/hints.py), shutil (argparse's help formatter;
# app/cli.py), difflib (a misspelt resource's likely name only).
NOT_ON_THE_ANALYZE_PATH = ("fastapi", "starlette", "uvicorn", "httpx", "httpcore", "anyio", "kubernetes",
                           "pydantic", "pydantic_core", "pydantic_settings", "importlib.metadata",
                           "dataclasses", "inspect", "typing", "shutil", "difflib")


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAYSERVICE_IMPACT_")}
    env.update(extra)
    return env


# Runs ``python -m app ARGS`` as the console script does, and writes sys.modules as the process
# ends (atexit runs after main's SystemExit): every module the run imported, however (import
# statements, importlib.import_module, at any point of the run).
_DUMP = """
import atexit, json, runpy, sys
out, sys.argv = sys.argv[1], ["rayservice-impact", *sys.argv[2:]]
atexit.register(lambda: open(out, "w").write(json.dumps(sorted(sys.modules))))
runpy.run_module("app", run_name="__main__", alter_sys=True)
"""


def imported(tmp_path: Path, *args: str) -> tuple[subprocess.CompletedProcess[str], set[str]]:
    """A whole ``rayservice-impact ARGS`` process and the modules it had loaded when it ended."""
    out = tmp_path / "modules.json"
    proc = subprocess.run([sys.executable, "-c", _DUMP, str(out), *args], capture_output=True, text=True,
                          cwd=ROOT, timeout=120, env=_env())
    return proc, set(json.loads(out.read_text()))


def test_analyze_on_files_imports_no_server_stack(tmp_path: Path) -> None:
    proc, names = imported(tmp_path, "analyze", str(PAIR / "before.yaml"), str(PAIR / "after.yaml"))
    assert proc.returncode == 3, proc.stderr[-2000:]  # the pair is a hold: the analysis ran
    assert {"yaml", "diffing.pipeline", "diffing.rayservice.analyze"} <= names
    loaded = sorted(n for n in names if n.split(".")[0] in NOT_ON_THE_ANALYZE_PATH
                    or n in NOT_ON_THE_ANALYZE_PATH)
    assert loaded == []
    # Only the kinds present are loaded: this pair holds a RayService (and a Secret).
    assert not any(n.startswith(("diffing.rayjob", "diffing.raycronjob")) for n in names)


def test_import_diffing_loads_nothing_until_read() -> None:
    code = "import sys, diffing; print(sorted(m for m in sys.modules if m.startswith('diffing')))"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                          timeout=60, env=_env())
    assert (proc.returncode, proc.stdout) == (0, "['diffing']\n"), proc.stderr


def test_every_public_name_of_diffing_resolves() -> None:
    assert sorted(diffing.__all__) == sorted(diffing._EXPORTS)
    for name in diffing.__all__:
        assert getattr(diffing, name) is not None
        assert name in dir(diffing)
    from diffing.pipeline import analyze

    assert diffing.analyze is analyze
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        diffing.nope  # noqa: B018


def test_version_flag_in_a_process() -> None:
    proc = subprocess.run([sys.executable, "-m", "app", "--version"], capture_output=True, text=True,
                          cwd=ROOT, timeout=60, env=_env())
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("rayservice-impact ") and proc.stdout.count("\n") == 1


# -- the environment as the command line reads it (app/environ.py, no pydantic) ----------------


def test_bad_kuberay_version_variable_is_named(monkeypatch: pytest.MonkeyPatch,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("RAYSERVICE_IMPACT_KUBERAY_VERSION", "1.2.0")
    assert cli.main(["analyze", "/dev/null", "/dev/null"]) == 2
    err = capsys.readouterr().err
    assert "RAYSERVICE_IMPACT_KUBERAY_VERSION" in err and "not supported" in err
    # the flag wins over the variable
    assert cli.main(["analyze", "/dev/null", "/dev/null", "--kuberay-version", "1.7.0"]) == 0


def test_variable_names_in_any_case(monkeypatch: pytest.MonkeyPatch,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("rayservice_impact_kuberay_version", "1.6.2")
    assert environ.kuberay_version() == "1.6.2"
    assert cli.main(["analyze", "/dev/null", "/dev/null", "--format", "json"]) == 0
    assert '"kuberayVersion": "1.6.2"' in capsys.readouterr().out


def test_a_service_only_variable_does_not_stop_the_command_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAYSERVICE_IMPACT_ANALYSIS_WORKERS", "many")  # the service's, not read here
    assert cli.main(["analyze", "/dev/null", "/dev/null", "--format", "json"]) == 0


@pytest.mark.parametrize(("name", "value", "says"), [
    ("RAYSERVICE_IMPACT_RENDER_TIMEOUT_S", "0", "greater than 0"),
    ("RAYSERVICE_IMPACT_RENDER_TIMEOUT_S", "soon", "not a number"),
    ("RAYSERVICE_IMPACT_RENDER_MAX_BYTES", "1.5", "not an integer"),
    ("RAYSERVICE_IMPACT_RENDER_MAX_BYTES", "-1", "greater than 0"),
])
def test_bad_render_limits_are_named(monkeypatch: pytest.MonkeyPatch, name: str, value: str,
                                     says: str) -> None:
    monkeypatch.setenv(name, value)
    with pytest.raises(environ.SettingsError, match=f"{name}: .*{says}"):
        environ.render_options()


def test_render_limits_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    from app.render.process import RenderLimits

    assert environ.render_options().limits == RenderLimits()
    monkeypatch.setenv("RAYSERVICE_IMPACT_RENDER_TIMEOUT_S", "7.5")
    monkeypatch.setenv("RAYSERVICE_IMPACT_RENDER_MAX_BYTES", "1000")
    options = environ.render_options(kustomize="kustomize")
    assert (options.limits.timeout_s, options.limits.max_bytes, options.kustomize) == (7.5, 1000, "kustomize")


def test_help_wraps_at_the_terminal_width_as_argparse_does(monkeypatch: pytest.MonkeyPatch) -> None:
    import argparse

    # argparse's own formatter, which reads the width through shutil, is the reference
    reference = cli.build_parser()._subparsers._group_actions[0].choices["analyze"]  # type: ignore[union-attr]
    reference.formatter_class = argparse.HelpFormatter
    seen = set()
    for columns in ("50", "120"):
        proc = subprocess.run([sys.executable, "-m", "app", "analyze", "--help"], capture_output=True,
                              text=True, cwd=ROOT, timeout=60, env=_env(COLUMNS=columns))
        assert proc.returncode == 0, proc.stderr
        monkeypatch.setenv("COLUMNS", columns)
        assert proc.stdout == reference.format_help()
        seen.add(proc.stdout)
    assert len(seen) == 2  # the width did change the text
