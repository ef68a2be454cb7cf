#!/usr/bin/env python3
"""A new user's first run, scripted (issue 24): a fresh clone, README's commands as written, the CLI
from a wheel built with ``python -m build`` in a fresh virtualenv, the HTTP service with its
``[server]`` extra, and the container image where a Docker engine runs.

    python3 scripts/new_user_run.py              # a clone of HEAD (what CI checked out)
    python3 scripts/new_user_run.py --worktree   # the working tree as it is, uncommitted edits included
    python3 scripts/new_user_run.py --keep       # keep the temporary directory to look around

Nothing is installed outside a temporary directory. Like README's commands it downloads the
dependencies from the package index, so it takes a minute or two: .ci/run runs it after the
test suite, not inside it. Each step prints what it checked and how long it took; the exit code
is 0 when no step failed (a step that cannot run here, e.g. without a Docker engine, is SKIPPED
and says why).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import tomllib
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEMO = "samples/gpu-image-bump"
HOLD_HEADER = "## 🔴 rayservice-impact: **hold**"


class StepFailed(Exception):
    pass


class Skipped(Exception):
    pass


def sh(script: str, cwd: Path, *, timeout: float = 900, env: dict[str, str] | None = None
       ) -> subprocess.CompletedProcess[str]:
    """``script`` in bash, as a user pastes it; stdout and stderr kept apart."""
    return subprocess.run(["bash", "-c", script], cwd=cwd, capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})}, check=False)


def expect(ok: bool, what: str, proc: subprocess.CompletedProcess[str] | None = None) -> None:
    if not ok:
        detail = ""
        if proc is not None:
            detail = (f"\n--- exit code {proc.returncode}\n--- stdout (end)\n{proc.stdout[-3000:]}"
                      f"\n--- stderr (end)\n{proc.stderr[-3000:]}")
        raise StepFailed(what + detail)


def code_blocks(markdown: str, after_heading: str = "", lang: str = "sh") -> list[str]:
    """The fenced ``lang`` blocks of ``markdown``, from the heading ``after_heading`` on."""
    if after_heading:
        start = markdown.index(after_heading)
        markdown = markdown[start:]
    return re.findall(rf"^```{lang}\n(.*?)^```", markdown, re.M | re.S)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Run:
    def __init__(self, tmp: Path, worktree: bool) -> None:
        self.tmp = tmp
        self.worktree = worktree
        self.clone = tmp / "clone"
        self.version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
        self.wheel: Path | None = None
        self.results: list[tuple[str, str, float, str]] = []

    def step(self, name: str, fn: Callable[[], str]) -> None:
        print(f"==> {name}", flush=True)
        started = time.monotonic()
        try:
            note = fn()
            status = "ok"
        except Skipped as exc:
            status, note = "SKIPPED", str(exc)
        except (StepFailed, subprocess.TimeoutExpired) as exc:
            status, note = "FAILED", str(exc)
        except Exception as exc:  # noqa: BLE001 - an answer this script did not expect is a failure too
            status, note = "FAILED", f"{type(exc).__name__}: {exc}"
        seconds = time.monotonic() - started
        self.results.append((name, status, seconds, note.splitlines()[0] if note else ""))
        print(f"    {status} ({seconds:.1f} s){': ' + note if note else ''}", flush=True)

    # -- the steps ------------------------------------------------------------------------------

    def fresh_clone(self) -> str:
        if subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--git-dir"], capture_output=True,
                          check=False).returncode != 0:  # a source tarball, not a clone: copy it
            shutil.copytree(ROOT, self.clone, ignore=shutil.ignore_patterns(
                ".venv", ".cache", "__pycache__", "*.egg-info", "dist", "build", ".*_cache", ".hypothesis"))
            return f"a copy of {ROOT} (not a git repository)"
        if not self.worktree:
            proc = sh(f"git clone --quiet --no-hardlinks {ROOT} {self.clone}", self.tmp)
            expect(proc.returncode == 0, "git clone failed", proc)
            head = sh("git rev-parse --short HEAD", self.clone).stdout.strip()
            return f"git clone of HEAD ({head})"
        listed = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z", "--cached", "--others",
                                 "--exclude-standard"], capture_output=True, check=True).stdout
        count = 0
        for name in sorted({n for n in listed.decode().split("\0") if n}):
            src = ROOT / name
            if src.is_file():
                (self.clone / name).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(src, self.clone / name)
                count += 1
        return f"{count} files of the working tree (uncommitted edits included)"

    def readme_demo(self) -> str:
        """README's command 1, as written: a venv, `pip install -e .`, the demo; exit code 3."""
        readme = (self.clone / "README.md").read_text()
        first = [line for line in code_blocks(readme)[0].splitlines() if line and not line.startswith("#")][0]
        expect("rayservice-impact analyze" in first, f"README's command 1 is not the demo: {first}")
        proc = sh(first, self.clone)
        expect("exit code: 3" in proc.stdout and HOLD_HEADER in proc.stdout,
               "README's command 1 did not print the hold report and `exit code: 3`", proc)
        return f"`{first[:60]}…` printed the hold report, exit code 3"

    def cli_only_serve(self) -> str:
        """Without the [server] extra, `serve` says how to add it, from where this copy came."""
        proc = sh(".venv/bin/rayservice-impact serve --port 1", self.clone)
        expect(proc.returncode == 2 and "[server] extra" in proc.stderr
               and f"'{self.clone}[server]'" in proc.stderr,
               "`serve` without the [server] extra did not name the install command", proc)
        return proc.stderr.strip().splitlines()[-1][:160]

    def readme_http(self) -> str:
        """README's HTTP service block (port changed to a free one), then the webhook without a secret."""
        for tool in ("curl", "jq"):
            if shutil.which(tool) is None:
                raise Skipped(f"{tool} is not installed (README's HTTP example uses it)")
        readme = (self.clone / "README.md").read_text()
        block = code_blocks(readme, "## HTTP service")[0]
        expected = json.loads(code_blocks(readme, "## HTTP service", "json")[0])
        port = free_port()
        script = ("trap 'kill $(jobs -p) 2>/dev/null' EXIT\n" + block.replace("8080", str(port)) +
                  f"\ncurl -s -X POST localhost:{port}/webhooks/github -H 'content-type: application/json' "
                  "-d '{}' -w '\\nstatus %{http_code}\\n'\n")
        proc = sh(script, self.clone, timeout=600)
        found = re.search(r"^\{\n.*?^\}$", proc.stdout, re.M | re.S)  # jq's pretty-printed answer
        try:
            got = json.loads(found.group(0)) if found else None
        except ValueError:
            got = None
        webhook = proc.stdout[found.end():] if found else proc.stdout
        expect(got == expected, f"README's HTTP example answered {got!r}, README shows {expected!r}", proc)
        expect("status 503" in webhook and '"not-configured"' in webhook
               and "RAYSERVICE_IMPACT_GITHUB_WEBHOOK_SECRET" in webhook,
               "/webhooks/github without a secret did not answer 503 not-configured", proc)
        return f"{got['decision']}: {got['summary'][:70]}…; /webhooks/github → 503 not-configured"

    def build_wheel(self) -> str:
        tools = self.tmp / "build-tools"
        proc = sh(f"python3 -m venv {tools} && {tools}/bin/pip install -q build && "
                  f"{tools}/bin/python -m build --wheel --outdir {self.tmp}/dist .", self.clone)
        expect(proc.returncode == 0, "python -m build --wheel failed", proc)
        wheels = sorted((self.tmp / "dist").glob("rayservice_impact-*.whl"))
        expect(len(wheels) == 1, f"expected one wheel, found {wheels}")
        self.wheel = wheels[0]
        return f"{self.wheel.name} ({self.wheel.stat().st_size // 1024} KiB)"

    def wheel_demo(self) -> str:
        """The wheel in a fresh virtualenv: --version, the demo (exit 3), serve names the extra."""
        if self.wheel is None:
            raise Skipped("no wheel was built")
        venv = self.tmp / "wheel-venv"
        proc = sh(f"python3 -m venv {venv} && {venv}/bin/pip install -q {self.wheel}", self.tmp)
        expect(proc.returncode == 0, "pip install of the wheel failed", proc)
        exe = venv / "bin" / "rayservice-impact"
        proc = sh(f"{exe} --version", self.tmp)
        expect(proc.stdout.strip() == f"rayservice-impact {self.version}", "--version", proc)
        proc = sh(f"{exe} analyze {DEMO}/before.yaml {DEMO}/after.yaml --format markdown", self.clone)
        expect(proc.returncode == 3 and proc.stdout.startswith(HOLD_HEADER), "the demo from the wheel", proc)
        proc = sh(f"{exe} serve", self.tmp)
        expect(proc.returncode == 2 and f"'{self.wheel}[server]'" in proc.stderr,
               "`serve` from the wheel did not name the wheel with its [server] extra", proc)
        return f"--version {self.version}; demo exit 3; serve names '{self.wheel.name}[server]'"

    def container(self) -> str:
        if shutil.which("docker") is None:
            raise Skipped("no docker command: the image build is not checked on this machine")
        if sh("docker info", self.tmp, timeout=60).returncode != 0:
            raise Skipped("no Docker engine answers (docker info failed): the image build is not checked "
                          "on this machine")
        image = f"rayservice-impact:{self.version}"
        proc = sh(f"docker build -q -t {image} .", self.clone, timeout=1800)
        expect(proc.returncode == 0, "docker build failed", proc)
        proc = sh(f"docker image inspect -f '{{{{.Config.User}}}} {{{{.Size}}}}' {image}", self.tmp)
        user, size = proc.stdout.split()
        expect(user == "10001:10001", f"the image runs as {user!r}, not 10001:10001", proc)
        proc = sh(f"docker run --rm {image} --version", self.tmp)
        expect(proc.stdout.strip() == f"rayservice-impact {self.version}", "the image's --version", proc)
        proc = sh(f"docker run --rm -v {self.clone}/samples:/samples:ro {image} analyze "
                  f"/samples/gpu-image-bump/before.yaml /samples/gpu-image-bump/after.yaml --format json",
                  self.tmp)
        expect(proc.returncode == 3 and json.loads(proc.stdout)["decision"] == "hold",
               "the demo in the image", proc)
        return f"{image}: user 10001:10001, {int(size) / 1e6:.0f} MB, demo exit 3"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--worktree", action="store_true",
                        help="copy the working tree instead of cloning HEAD")
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory")
    parser.add_argument("--no-container", action="store_true", help="skip the image build")
    args = parser.parse_args(argv)
    tmp = Path(tempfile.mkdtemp(prefix="rayservice-impact-new-user-"))
    run = Run(tmp, args.worktree)
    print(f"new-user run in {tmp} (python3: {sys.version.split()[0]} for this script)", flush=True)
    try:
        run.step("a fresh copy of the repository", run.fresh_clone)
        run.step("README command 1: venv, pip install -e ., the demo", run.readme_demo)
        run.step("serve without the [server] extra", run.cli_only_serve)
        run.step("README's HTTP service example, then /webhooks/github", run.readme_http)
        run.step("python -m build --wheel", run.build_wheel)
        run.step("the wheel in a fresh virtualenv", run.wheel_demo)
        if not args.no_container:
            run.step("docker build from the Dockerfile", run.container)
    finally:
        if args.keep:
            print(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    print("\nsummary:")
    for name, status, seconds, note in run.results:
        print(f"  {status:8} {seconds:6.1f} s  {name}{' - ' + note if note and status != 'ok' else ''}")
    failed = [r for r in run.results if r[1] == "FAILED"]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
