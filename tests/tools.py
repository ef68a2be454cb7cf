"""Real ``helm`` and ``kustomize`` for the render tests, built from their Go modules.

The product never needs Go: these builds exist only so the tests can run the renderers the
product shells out to, at the versions Argo CD v3.5.1 bundles (argo-cd v3.5.1
hack/tool-versions.sh: helm 4.2.1, kustomize 5.8.1), instead of recording stand-ins.

Each tool has a Go module of its own under ``tools/go/<tool>/`` whose ``go.mod`` names one program
with a ``tool`` directive and requires nothing else, so its build list is the tool's own
(``go.sum`` pins every checksum). Two modules, not one: minimal version selection over both would
lift kustomize's dependencies to helm's and build a kustomize no release was built from.

Caches follow conformance/harness.py (:func:`conformance.harness.go_env`): the Go module and
build caches are the harness's (``.cache/conformance/{gomod,gocache}``, or under
``$CONFORMANCE_GO_CACHE``), so one folder kept between CI runs keeps both warm; the binaries go
to ``.cache/tools/bin/<tool>-<version>-<digest>/<tool>`` (git-ignored), rebuilt when the module
files, the build flags or the Go version change. A machine without Go, or whose module proxy
does not serve the modules, raises :class:`Unavailable` (the tests skip loudly); a failing
compile is a ``RuntimeError`` (the tests error).
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from conformance.harness import go_env

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODULES = os.path.join(ROOT, "tools", "go")
BIN = os.path.join(ROOT, ".cache", "tools", "bin")


class Unavailable(Exception):
    """The tool cannot be built here (no Go, the module proxy unreachable): a reason, not a failure."""


@dataclass(frozen=True, slots=True)
class Tool:
    name: str
    module: str          # the Go module that holds the program (its version comes from go.mod)
    package: str         # the program's package, named by go.mod's `tool` directive
    ldflags: str = ""    # {version} is replaced by the version go.mod requires

    @property
    def folder(self) -> str:
        return os.path.join(MODULES, self.name)

    def version(self) -> str:
        """The version of :attr:`module` that ``tools/go/<name>/go.mod`` requires."""
        with open(os.path.join(self.folder, "go.mod"), encoding="utf-8") as fh:
            text = fh.read()
        found = re.search(rf"^\s*(?:require\s+)?{re.escape(self.module)}\s+(v\S+)", text, re.M)
        if not found:
            raise RuntimeError(f"tools/go/{self.name}/go.mod does not require {self.module}")
        return found.group(1)

    def build_args(self) -> list[str]:
        # As the upstream release builds do: no cgo, no local paths in the binary, stripped.
        # -buildvcs=false: the stamp would be this repository's commit, not the tool's.
        flags = ["-trimpath", "-buildvcs=false"]
        if self.ldflags:
            flags.append("-ldflags=" + self.ldflags.format(version=self.version()))
        return flags


# helm's Makefile (helm v4.2.1 Makefile, target `build`) links with -w -s and stamps the version
# into internal/version; kustomize reads its own version from the binary's build information.
TOOLS = {
    "helm": Tool("helm", "helm.sh/helm/v4", "helm.sh/helm/v4/cmd/helm",
                 "-w -s -X helm.sh/helm/v4/internal/version.version={version} "
                 "-X helm.sh/helm/v4/internal/version.gitTreeState=clean"),
    "kustomize": Tool("kustomize", "sigs.k8s.io/kustomize/kustomize/v5", "sigs.k8s.io/kustomize/kustomize/v5",
                      "-w -s"),
    # Not an upstream program: tools/go/argocd-lua/main.go runs an Argo CD health script in gopher-lua
    # (the Lua VM Argo CD embeds) with Argo CD's library set (tests/deploy/test_argocd_health_gopher.py).
    "argocd-lua": Tool("argocd-lua", "github.com/yuin/gopher-lua", "rayservice-impact/tools/argocd-lua",
                       "-w -s"),
}


def _env() -> dict[str, str]:
    return {**go_env(), "CGO_ENABLED": "0"}


def _run(cmd: Sequence[str], cwd: str, **kw: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(cmd), cwd=cwd, env=_env(), text=True, capture_output=True, check=False, **kw)


def _last_lines(text: str, count: int = 6) -> str:
    return " | ".join(line.strip() for line in text.strip().splitlines()[-count:])


def binary_path(tool: Tool, go_version: str) -> str:
    """Where the build of ``tool`` for these module files, flags and Go version lives."""
    digest = hashlib.sha256(go_version.encode() + b"\0" + " ".join(tool.build_args()).encode())
    for name in ("go.mod", "go.sum"):
        with open(os.path.join(tool.folder, name), "rb") as fh:
            digest.update(b"\0" + name.encode() + b"\0" + fh.read())
    return os.path.join(BIN, f"{tool.name}-{tool.version()}-{digest.hexdigest()[:12]}", tool.name)


def build(name: str, log: list[str] | None = None) -> str:
    """The path of the built ``name`` (a key of :data:`TOOLS`), built when missing.

    Raises :class:`Unavailable` when it cannot be built here, RuntimeError when the build fails.
    """
    log = log if log is not None else []
    tool = TOOLS[name]
    if not shutil.which("go"):
        raise Unavailable("no `go` on PATH")
    version = _run(["go", "env", "GOVERSION"], tool.folder)
    if version.returncode != 0:
        raise Unavailable(f"`go env` failed: {_last_lines(version.stderr)}")
    binary = binary_path(tool, version.stdout.strip())
    if os.path.exists(binary):
        log.append(f"{name} {tool.version()}: cached {os.path.relpath(binary, ROOT)}")
        return binary
    t0 = time.monotonic()
    # Downloading is the step that needs the network: its failure means "not here", not "broken".
    fetched = _run(["go", "mod", "download"], tool.folder)
    if fetched.returncode != 0:
        raise Unavailable(f"the Go module proxy did not serve {tool.module}@{tool.version()}'s modules: "
                          f"{_last_lines(fetched.stderr)}")
    t1 = time.monotonic()
    folder = os.path.dirname(binary)
    os.makedirs(BIN, exist_ok=True)
    scratch = folder + ".tmp"
    shutil.rmtree(scratch, ignore_errors=True)
    built = _run(["go", "build", *tool.build_args(), "-o", os.path.join(scratch, name), tool.package],
                 tool.folder)
    if built.returncode != 0:
        shutil.rmtree(scratch, ignore_errors=True)
        raise RuntimeError(f"go build of {tool.package}@{tool.version()} failed:\n{built.stderr[-4000:]}")
    shutil.rmtree(folder, ignore_errors=True)
    os.replace(scratch, folder)
    for old in os.listdir(BIN):  # one build per tool is kept
        if old.startswith(f"{name}-") and os.path.join(BIN, old) != folder:
            shutil.rmtree(os.path.join(BIN, old), ignore_errors=True)
    log.append(f"{name} {tool.version()}: downloaded in {t1 - t0:.1f} s, "
               f"built in {time.monotonic() - t1:.1f} s ({os.path.getsize(binary) / 1e6:.0f} MB)")
    return binary


def main() -> int:
    """``python -m tests.tools [helm|kustomize ...]``: build (or find) the tools, print their paths."""
    import sys

    status = 0
    for name in sys.argv[1:] or list(TOOLS):
        log: list[str] = []
        try:
            path = build(name, log)
        except Unavailable as exc:
            print(f"{name}: not built: {exc}", file=sys.stderr)
            status = 1
            continue
        print("\n".join(log), file=sys.stderr)
        print(path)
    return status


if __name__ == "__main__":
    raise SystemExit(main())
