"""Rendering a Helm chart from a repository snapshot, the way Argo CD's repo-server would.

Two engines give the same YAML stream:

* ``binary``: a ``helm`` executable on PATH, run as ``helm template``;
* ``sdk``: the ``helm-python-sdk`` extra (Helm v4's Go SDK behind ctypes). The Go library is never
  loaded in this process: a crash, a runaway template or a leak in it must cost a child, not the
  service, so :mod:`app.render.helm_sdk` runs as a child under the same limits as the binary.

The chart and its values come from an untrusted pull request. Before any child starts, the chart
folder, every file in it (Helm's loader follows symlinks) and every values file must resolve inside
the snapshot; nothing is ever fetched (no ``--dependency-update``, no remote values files, no repo
commands), so a chart whose dependencies are not vendored in ``charts/`` fails instead of
downloading them.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import sys
import tempfile
import urllib.parse
from collections.abc import Sequence
from dataclasses import dataclass

import app
from app.render.process import RenderError, RenderLimits, decode_utf8, run_tool

__all__ = ["HelmSource", "helm_engine", "render_helm"]

TOOL = "helm"
ENGINES = ("binary", "sdk")
NOT_INSTALLED = ("helm is not installed: install the Helm SDK extra with "
                 "pip install 'rayservice-impact[helm]' (helm-python-sdk) or put a helm binary on PATH")
SDK_MODULE = "app.render.helm_sdk"


@dataclass(frozen=True, slots=True)
class HelmSource:
    """One chart to render and the values Argo CD would give it (``spec.source.helm``)."""

    chart_dir: str                 # absolute path of the chart folder (holds Chart.yaml), inside `snapshot`
    snapshot: str                  # absolute path of the repository snapshot: nothing outside it may be read
    release_name: str
    namespace: str | None = None   # --namespace / .Release.Namespace
    value_files: tuple[str, ...] = ()       # absolute paths, applied in order (helm --values)
    values: tuple[str, ...] = ()            # inline YAML values documents, applied after the files, in order
    parameters: tuple[tuple[str, str, bool], ...] = ()  # (name, value, force_string): --set / --set-string


@dataclass(frozen=True, slots=True)
class CheckedPaths:
    """The real (symlink-free) paths a render may read, all checked to lie inside the snapshot."""

    snapshot: str
    chart_dir: str
    value_files: tuple[str, ...]


def helm_engine() -> str | None:
    """"binary" when a `helm` executable is on PATH, else "sdk" when helm_python is importable, else None.

    ``find_spec`` only locates the package: importing it would load the Go library into this process.
    """
    if shutil.which("helm"):
        return "binary"
    try:
        if importlib.util.find_spec("helm_python") is not None:
            return "sdk"
    except (ImportError, ValueError):
        pass
    return None


def render_helm(src: HelmSource, limits: RenderLimits, *, engine: str | None = None) -> str:
    """The rendered YAML stream ("---"-separated documents, each preceded by a `# Source: <chart>/<template>`
    comment like helm template prints). Raises RenderError("helm", message) for every failure."""
    chosen = engine if engine is not None else helm_engine()
    if chosen is None:
        raise RenderError(TOOL, NOT_INSTALLED)
    if chosen not in ENGINES:
        raise RenderError(TOOL, f"unknown helm engine {chosen!r} (expected one of {', '.join(ENGINES)})")
    check_release_name(src.release_name)
    paths = check_paths(src)
    if chosen == "binary":
        return _render_binary(src, paths, limits)
    return _render_sdk(src, paths, limits)


# Helm's release-name rule (helm v4.2.3 pkg/chart/v2/util/validate_name.go: ValidateReleaseName).
_RELEASE_NAME = re.compile(r"[a-z0-9](?:[-a-z0-9]*[a-z0-9])?(?:\.[a-z0-9](?:[-a-z0-9]*[a-z0-9])?)*")
_RELEASE_NAME_MAX = 53


def check_release_name(name: str) -> None:
    """Refuse a release name Helm would refuse, before it reaches a command line.

    The name comes from the pull request and is ``helm template``'s first positional argument: a
    name such as ``--post-renderer=./x`` would otherwise be read as a flag. A valid name cannot
    start with ``-``.
    """
    if not name:
        raise RenderError(TOOL, "no release name given")
    if len(name) > _RELEASE_NAME_MAX or not _RELEASE_NAME.fullmatch(name):
        raise RenderError(TOOL, f"release name {name[:80]!r} is invalid: Helm requires lower-case letters, "
                                f"digits, '-' and '.', at most {_RELEASE_NAME_MAX} characters")


# --- path safety --------------------------------------------------------------------------------


def is_inside(path: str, root: str) -> bool:
    """Whether the real path ``path`` is ``root`` or below it (both already realpath'ed)."""
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def shown(path: str, snapshot: str) -> str:
    """``path`` as the pull request's author would name it: relative to the snapshot, symlinks unresolved.

    Absolute paths of this machine stay out of messages that end up in a PR comment.
    """
    return os.path.relpath(os.path.abspath(path), os.path.abspath(snapshot))


def check_paths(src: HelmSource) -> CheckedPaths:
    """Resolve the chart folder and values files, refusing anything that leaves the snapshot.

    Value-file entries are absolute; a relative one is taken relative to the chart folder, as Argo CD
    resolves ``valueFiles``. Runs before any child, so a refused path is never opened by Helm.
    """
    if not src.snapshot or not os.path.isabs(src.snapshot):
        raise RenderError(TOOL, "the repository snapshot path must be absolute")
    root = os.path.realpath(src.snapshot)
    if not os.path.isdir(root):
        raise RenderError(TOOL, "the repository snapshot is not a folder")
    chart_given = src.chart_dir if os.path.isabs(src.chart_dir) else os.path.join(src.snapshot, src.chart_dir)
    chart = os.path.realpath(chart_given)
    if not is_inside(chart, root):
        raise RenderError(TOOL, f"chart folder {shown(chart_given, src.snapshot)} leaves the repository")
    if not os.path.isfile(os.path.join(chart, "Chart.yaml")):
        raise RenderError(TOOL, f"chart folder {shown(chart_given, src.snapshot)} holds no Chart.yaml")
    _check_tree(chart, root)

    files: list[str] = []
    for entry in src.value_files:
        if "://" in entry:
            raise RenderError(TOOL, f"values file {_without_secrets(entry)} is refused: "
                                    "remote values files are not fetched")
        given = entry if os.path.isabs(entry) else os.path.join(chart_given, entry)
        real = os.path.realpath(given)
        name = shown(given, src.snapshot)
        if not is_inside(real, root):
            raise RenderError(TOOL, f"values file {name} leaves the repository")
        if not os.path.exists(real):
            raise RenderError(TOOL, f"values file {name} does not exist")
        if not os.path.isfile(real):
            raise RenderError(TOOL, f"values file {name} is not a file")
        files.append(real)
    return CheckedPaths(snapshot=root, chart_dir=chart, value_files=tuple(files))


def _without_secrets(url: str) -> str:
    """A URL fit for a PR comment: no user, password, query or fragment (they may carry a token)."""
    try:
        parts = urllib.parse.urlsplit(url)
        host = parts.hostname or ""
        if parts.port:
            host = f"{host}:{parts.port}"
    except ValueError:
        return "(a malformed URL)"
    return urllib.parse.urlunsplit((parts.scheme, host, parts.path, "", ""))


def _check_tree(chart: str, root: str) -> None:
    """Refuse a chart holding a symlink that resolves outside the snapshot.

    Helm's chart loader follows symlinks, so ``templates/x.yaml -> /etc/passwd`` or a ``.Files.Get``
    on such a link would copy a file of this machine into the rendered output. Symlinked folders
    inside the snapshot are walked too (once each, so a link loop ends).
    """
    seen: set[str] = set()
    stack = [chart]
    while stack:
        folder = stack.pop()
        if folder in seen:
            continue
        seen.add(folder)
        try:
            entries = list(os.scandir(folder))
        except OSError as exc:
            raise RenderError(TOOL, f"cannot read {shown(folder, root)}: {exc.strerror or exc}") from None
        for entry in entries:
            if entry.is_symlink():
                target = os.path.realpath(entry.path)
                if not is_inside(target, root):
                    raise RenderError(TOOL, f"chart file {shown(entry.path, root)} is a symlink that "
                                            "leaves the repository")
                if os.path.isdir(target):
                    stack.append(target)
            elif entry.is_dir(follow_symlinks=False):
                stack.append(entry.path)


# --- --set expressions --------------------------------------------------------------------------


def set_value(value: str) -> str:
    """A parameter value as Argo CD hands it to ``--set``: commas escaped unless it is a ``{a,b}`` list.

    Argo CD's ``cleanSetParameters`` (argo-cd v3.5.1 util/helm/cmd.go:399-425) escapes every ``,``
    not already preceded by a backslash, so ``a,b`` stays one string value instead of becoming a
    second key; a value wrapped in ``{}`` is left alone as Helm's list syntax.
    """
    if value.startswith("{") and value.endswith("}"):
        return value
    out: list[str] = []
    previous = ""
    for char in value:
        out.append("\\," if char == "," and previous != "\\" else char)
        previous = char
    return "".join(out)


def set_expressions(parameters: Sequence[tuple[str, str, bool]]) -> tuple[list[str], list[str]]:
    """The ``--set`` and the ``--set-string`` expressions, each list in parameter order.

    Helm applies every ``--set`` before any ``--set-string`` whatever their order on the command line
    (helm v4.2.3 pkg/cli/values/options.go, ``MergeValues``), so keeping two lists loses nothing.
    """
    plain: list[str] = []
    strings: list[str] = []
    for name, value, force_string in parameters:
        (strings if force_string else plain).append(f"{name}={set_value(value)}")
    return plain, strings


# --- engines ------------------------------------------------------------------------------------


def _render_binary(src: HelmSource, paths: CheckedPaths, limits: RenderLimits) -> str:
    """``helm template`` with the flags Argo CD's repo-server uses, minus anything that fetches.

    Argo CD passes ``--values`` for each values file, then one more ``--values`` holding the inline
    values, then ``--set``/``--set-string``, and ``--include-crds`` (argo-cd v3.5.1
    util/helm/cmd.go:436-463). Helm itself applies values files in order before any ``--set``.
    """
    helm = shutil.which("helm")
    if helm is None:
        raise RenderError(TOOL, NOT_INSTALLED)
    plain, strings = set_expressions(src.parameters)
    inline_dir = tempfile.mkdtemp(prefix="rsi-helm-values-")  # mode 0700: private to this process
    inline: dict[str, str] = {}
    try:
        argv = [helm, "template", src.release_name, paths.chart_dir]
        if src.namespace:
            argv += ["--namespace", src.namespace]
        for path in paths.value_files:
            argv += ["--values", path]
        for index, document in enumerate(src.values):
            path = os.path.join(inline_dir, f"inline-{index}.yaml")
            with open(path, "w", encoding="utf-8") as handle:
                handle.write(document)
            argv += ["--values", path]
            inline[path] = f"inline values #{index + 1}"  # the SDK child's name for them
        for expression in plain:
            argv += ["--set", expression]
        for expression in strings:
            argv += ["--set-string", expression]
        argv.append("--include-crds")
        try:
            out = run_tool(TOOL, argv, cwd=paths.chart_dir, limits=limits)
        except RenderError as exc:
            # helm names a values file it cannot parse by the path it was given: a private temporary
            # file for inline values, which would change on every run. (Snapshot paths are cut by the
            # pipeline, as for every renderer.)
            message = exc.message
            for path, name in inline.items():
                message = message.replace(path, name)
            raise RenderError(TOOL, message) from None
    finally:
        shutil.rmtree(inline_dir, ignore_errors=True)
    return decode_utf8(TOOL, out)


def sdk_pythonpath() -> str:
    """The folder holding the ``app`` package, so the child imports this very code."""
    return os.path.dirname(os.path.dirname(os.path.abspath(app.__file__)))


def _render_sdk(src: HelmSource, paths: CheckedPaths, limits: RenderLimits) -> str:
    """Run :mod:`app.render.helm_sdk` as a child with the request on stdin (same interpreter, same venv).

    ``-P`` keeps the working directory (the untrusted chart folder) off ``sys.path``: otherwise an
    ``app/`` or ``yaml.py`` committed in the chart would be imported in place of ours. PYTHONPATH is
    the only variable added to run_tool's stripped environment.
    """
    try:
        found = importlib.util.find_spec("helm_python") is not None
    except (ImportError, ValueError):
        found = False
    if not found:
        raise RenderError(TOOL, NOT_INSTALLED)
    request = {
        "chart_dir": paths.chart_dir,
        "snapshot": paths.snapshot,
        "release_name": src.release_name,
        "namespace": src.namespace,
        "value_files": list(paths.value_files),
        "values": list(src.values),
        "parameters": [[name, value, bool(force)] for name, value, force in src.parameters],
    }
    argv = [sys.executable, "-P", "-m", SDK_MODULE]
    out = run_tool(TOOL, argv, cwd=paths.chart_dir, limits=limits,
                   stdin=json.dumps(request).encode("utf-8"), env={"PYTHONPATH": sdk_pythonpath()})
    return decode_utf8(TOOL, out)
