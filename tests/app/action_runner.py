"""action.yml's shell steps run the way the GitHub runner runs them, for the Action's tests.

bash, GITHUB_OUTPUT, GITHUB_STEP_SUMMARY and GITHUB_EVENT_PATH as on a runner, the step's
``${{ }}`` expressions expanded, against the GitHub stand-in; steps without ``run`` (setup-python,
the cache) and the pip install step are skipped (this venv has the package).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml
from github_helpers import OWNER, REPO, TOKEN

ACTION = Path(__file__).resolve().parents[2] / "action.yml"
BIN = Path(sys.executable).parent


def _git_head(repo: Path) -> str:
    return subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], check=True, capture_output=True,
                          text=True).stdout.strip()


def _lookup(data: Any, dotted: str) -> str:
    for part in dotted.split("."):
        data = data.get(part) if isinstance(data, dict) else None
    return "" if data is None else str(data)


def run_action(repo: Path, tmp_path: Path, api_url: str, event_name: str, event: dict[str, Any],
               **given: str) -> dict[str, Any]:
    """action.yml's run steps with the runner's environment for ``event``; ``given``: inputs."""
    action = yaml.safe_load(ACTION.read_text())
    temp = tmp_path / "runner-temp"
    temp.mkdir(exist_ok=True)
    event_path = temp / "event.json"
    event_path.write_text(json.dumps(event))
    head_sha = _git_head(repo)
    context = {"event": event, "token": TOKEN, "action_path": str(ACTION.parent), "sha": head_sha}
    outputs: dict[str, str] = {}

    def expand(text: str) -> str:
        def one(m: re.Match[str]) -> str:
            expr = m.group(1).strip()
            if expr.startswith("inputs."):
                return inputs[expr.removeprefix("inputs.")]
            if expr.startswith("steps.analyse.outputs."):
                return outputs.get(expr.removeprefix("steps.analyse.outputs."), "")
            if expr == "runner.temp":
                return str(temp)
            if expr.startswith("github."):
                return _lookup(context, expr.removeprefix("github."))
            raise AssertionError(f"unexpected expression {expr}")
        return re.sub(r"\$\{\{(.*?)\}\}", one, text)

    inputs: dict[str, str] = {}
    for name, spec in action["inputs"].items():
        inputs[name] = given.get(name.replace("-", "_"), expand(str(spec.get("default", ""))))
    results, summaries = [], []
    for step in action["runs"]["steps"]:
        if "run" not in step or "pip install" in step["run"]:
            continue
        if step.get("if") and not (inputs["fail-on-hold"] == "true" and outputs.get("exit-code") != "0"):
            continue
        out_file, summary = temp / "output", temp / f"summary-{len(results)}"
        out_file.write_text("")
        summary.write_text("")
        env = {"PATH": f"{BIN}:{os.environ['PATH']}", "HOME": str(tmp_path), "GITHUB_WORKSPACE": str(repo),
               "RUNNER_TEMP": str(temp), "GITHUB_OUTPUT": str(out_file), "GITHUB_STEP_SUMMARY": str(summary),
               "GITHUB_REPOSITORY": f"{OWNER}/{REPO}", "GITHUB_API_URL": api_url,
               "GITHUB_SERVER_URL": "https://github.com", "GITHUB_EVENT_NAME": event_name,
               "GITHUB_EVENT_PATH": str(event_path), "GITHUB_SHA": head_sha,
               **{k: expand(str(v)) for k, v in (step.get("env") or {}).items()}}
        cwd = expand(step.get("working-directory", str(repo)))
        proc = subprocess.run(["bash", "-e", "-c", expand(step["run"])], cwd=cwd, env=env,
                              capture_output=True, text=True, timeout=120)
        results.append((step["name"], proc.returncode, proc.stdout + proc.stderr))
        summaries.append(summary.read_text())
        for line in out_file.read_text().splitlines():
            key, _, value = line.partition("=")
            outputs[key] = value
    return {"outputs": outputs, "steps": results, "summary": "".join(summaries)}


