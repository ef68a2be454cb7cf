"""Building a Flux root as the controllers do (docs/flux.md): from what the GitRepository's
artifact holds (:mod:`app.render.sourceignore`), the kustomization kustomize-controller generates
for a plain folder, ``kubectl kustomize`` with the root-only limits, the post-build ``envsubst``, a
HelmRelease's ``valuesFiles`` and post-renderers. Finding the roots is :mod:`app.render.flux`; this
module is what :mod:`app.render.pipeline` runs for them.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import tempfile
from collections.abc import Iterator, Mapping
from typing import Any

import yaml

from diffing.errors import ManifestError
from diffing.kube.loading import Limits, load_documents

from .flux import _VAR_NAME, SUBSTITUTE_KEY, FluxKustomize, FluxPostRender, _mapping, _meta, _seq, merge_maps
from .kustomize import _link_or_copy, _load, _uses_helm_charts, find_tool, kustomize_command
from .process import RenderError, RenderLimits, decode_utf8, run_tool
from .roots import KUSTOMIZATION_FILES
from .snapshot import Snapshot
from .sourceignore import SYMLINK, ArtifactRules, Pattern, artifact_copy, excluded_paths

# -- envsubst ------------------------------------------------------------------------------------

_DEFAULT_OPS = (":=", ":-", "=", "-")


def substitute(text: str, variables: Mapping[str, str]) -> str:
    """Flux's ``envsubst`` (not strict) on one object's YAML: ``${var}`` and the default forms
    ``${var:=d}``, ``${var:-d}``, ``${var=d}``, ``${var-d}`` (all give ``d`` when the value is empty:
    envsubst/funcs.go:74, template.go:132), ``$$`` for ``$``; ``$var`` is left as it is. The string
    functions (``${#v}``, ``${v/a/b}``, ``${v:1:2}`` ...) are not evaluated here: ValueError."""
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c != "$":
            j = text.find("$", i)
            j = n if j < 0 else j
            out.append(text[i:j])
            i = j
            continue
        nxt = text[i + 1] if i + 1 < n else ""
        if nxt == "$":
            out.append("$")
            i += 2
            continue
        if nxt != "{":
            out.append("$")
            i += 1
            continue
        end = text.find("}", i + 2)
        if end < 0:
            raise ValueError(f"unclosed ${{ at offset {i}")
        body = text[i + 2:end]
        m = re.match(r"[A-Za-z0-9_]+", body)
        if not m:
            raise ValueError(f"${{{body}}}: not a variable expression evaluated here")
        name, rest = m.group(0), body[m.end():]
        value = variables.get(name, "")
        if rest:
            op = next((o for o in _DEFAULT_OPS if rest.startswith(o)), None)
            if op is None or "$" in rest:
                raise ValueError(f"${{{body}}}: only ${{var}} and its default forms are evaluated here")
            value = value or rest[len(op):]
        out.append(value)
        i = end + 1
    return "".join(out)


# -- rendering -----------------------------------------------------------------------------------

_OUTPUT_LIMITS = Limits(max_bytes=256 * 1024 * 1024, max_documents=100_000)


def _flags(folder: str, root: str, tool: str) -> list[str]:
    flags = ["--load-restrictor=LoadRestrictionsRootOnly"]
    helm = find_tool("helm")
    if helm and _uses_helm_charts(folder, root, tool):
        flags += ["--enable-helm", f"--helm-command={helm}"]
    return flags


def _scan(top: str) -> list[str]:
    """The generator's resource list for a folder without a kustomization file: every .yaml/.yml
    file below it, and every sub-folder holding a kustomization file (not descended), in the
    lexical walk order of Go's filepath.Walk (kustomize_generator.go:575-632)."""
    found: list[str] = []

    def visit(folder: str, rel: str) -> None:
        for entry in sorted(os.listdir(folder)):
            path = os.path.join(folder, entry)
            inner = f"{rel}/{entry}" if rel else entry
            if os.path.isdir(path) and not os.path.islink(path):
                if entry == ".git":
                    continue
                if any(os.path.isfile(os.path.join(path, k)) for k in KUSTOMIZATION_FILES):
                    found.append(f"./{inner}")
                else:
                    visit(path, inner)
            elif entry.endswith((".yaml", ".yml")) and os.path.isfile(path):
                found.append(f"./{inner}")

    visit(top, "")
    return found


def generate(folder: str, opts: FluxKustomize) -> dict[str, Any]:
    """The kustomization kustomize-controller builds ``folder`` with (kustomize_generator.go:162-347)."""
    name = next((k for k in KUSTOMIZATION_FILES if os.path.isfile(os.path.join(folder, k))), None)
    if name is not None:
        with open(os.path.join(folder, name), "rb") as fh:
            try:
                doc = _load(fh.read(4 * 1024 * 1024 + 1), name) or {}
            except ManifestError as exc:
                raise RenderError("kustomize", f"{name}: {exc.message}") from None
        if not isinstance(doc, dict):
            raise RenderError("kustomize", f"{name}: not a mapping")
        if not doc.get("resources"):
            doc.setdefault("buildMetadata", ["originAnnotations"])
    else:
        resources = _scan(folder)
        doc = {"apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization"}
        if resources:
            doc["resources"] = resources
        else:
            doc["namespace"] = "_placeholder"
    if opts.target_namespace is not None:
        doc["namespace"] = opts.target_namespace
    if opts.name_prefix is not None:
        doc["namePrefix"] = opts.name_prefix
    if opts.name_suffix is not None:
        doc["nameSuffix"] = opts.name_suffix
    patches = _seq(doc.get("patches"))
    for raw in opts.patches:
        p = json.loads(raw)
        patches.append({k: v for k, v in (("patch", p.get("patch")), ("target", p.get("target"))) if v})
    if patches:
        doc["patches"] = patches
    components = _seq(doc.get("components"))
    for comp in opts.components:
        if comp.startswith("/") or "://" in comp:
            raise RenderError("flux", f"component path {comp!r} must be local and relative")
        if opts.ignore_missing_components and not os.path.exists(os.path.join(folder, comp)):
            continue
        components.append(comp)
    if components:
        doc["components"] = components
    if opts.patches_strategic:
        doc["patchesStrategicMerge"] = [*_seq(doc.get("patchesStrategicMerge")),
                                        *(yaml.safe_dump(json.loads(p)) for p in opts.patches_strategic)]
    if opts.patches_json6902:
        doc["patchesJson6902"] = [*_seq(doc.get("patchesJson6902")), *(
            {"target": json.loads(p).get("target"), "patch": json.dumps(json.loads(p).get("patch"))}
            for p in opts.patches_json6902)]
    images = _seq(doc.get("images"))
    for raw in opts.images:
        img = json.loads(raw)
        same = next((i for i in images if isinstance(i, dict) and i.get("name") == img.get("name")), None)
        if same is None:
            images.append({k: img[k] for k in ("name", "newName", "newTag", "digest") if img.get(k)})
            continue
        if img.get("newName"):
            same["newName"] = img["newName"]
        if img.get("newTag") or img.get("digest"):  # kustomize_generator.go:319-322: one unit
            same.pop("newTag", None)
            same.pop("digest", None)
            same.update({k: img[k] for k in ("newTag", "digest") if img.get(k)})
    if images:
        doc["images"] = images
    return doc


def _write_kustomization(folder: str, doc: Mapping[str, Any]) -> None:
    for name in KUSTOMIZATION_FILES:
        path = os.path.join(folder, name)
        if os.path.isfile(path):
            os.unlink(path)  # hard links to the snapshot: never write through them
    with open(os.path.join(folder, "kustomization.yaml"), "w", encoding="utf-8") as fh:
        yaml.safe_dump(dict(doc), fh, sort_keys=False)


def _lay_out(snapshot: Snapshot, copy: str, rules: ArtifactRules | None) -> dict[str, Pattern]:
    """The tree a controller builds from, hard-linked into ``copy``: the artifact of ``rules``' GitRepository
    (what it excludes, by path), or the whole snapshot without rules."""
    if rules is None:
        shutil.copytree(snapshot.root, copy, symlinks=True, copy_function=_link_or_copy)
        return {}
    excluded = excluded_paths(snapshot, rules)
    artifact_copy(snapshot.root, copy, excluded)
    return excluded


def _left_out(rel: str, excluded: Mapping[str, Pattern]) -> tuple[str, Pattern] | None:
    """``rel`` or its nearest folder that the artifact leaves out, with the pattern that does."""
    parts = rel.split("/")
    for i in range(len(parts), 0, -1):
        head = "/".join(parts[:i])
        if head in excluded:
            return head, excluded[head]
    return None


def _because(rules: ArtifactRules, rel: str, excluded: Mapping[str, Pattern]) -> str:
    found = _left_out(rel, excluded)
    if found is None:
        return ""
    what, pattern = found
    if pattern is SYMLINK:
        return f"{what} is a symlink, left out of the artifact of {rules.repository} ({pattern.origin})"
    return (f"{what} is left out of the artifact of {rules.repository} by {pattern.text!r} "
            f"({pattern.origin})")


def _with_exclusions(message: str, root: str, rules: ArtifactRules | None, excluded: Mapping[str, Pattern]
                     ) -> str:
    """A failed build's message, with why a path it names (``root``/path, as the tools print it) is not
    in the artifact: the build fails in Flux too, kustomize finds no such file. The longest one."""
    if rules is None:
        return message
    named = [rel for rel in excluded if f"{root}/{rel}" in message]
    if not named:
        return message
    return f"{message} ({_because(rules, max(named, key=len), excluded)})"


def render_flux_kustomization(snapshot: Snapshot, folder: str, opts: FluxKustomize, limits: RenderLimits,
                              *, renderer: str | None = None) -> str:
    """What kustomize-controller applies for a Kustomization of ``folder``: the artifact's tree,
    generated kustomization, real kustomize (root-only, no plugins), postBuild substitution,
    commonMetadata."""
    tool, argv = kustomize_command(renderer)
    with tempfile.TemporaryDirectory(prefix="rsi-flux-") as scratch:
        copy = os.path.join(scratch, "repo")
        excluded = _lay_out(snapshot, copy, opts.artifact)
        target = os.path.join(copy, folder) if folder else copy
        if not os.path.isdir(target) and opts.artifact is not None:
            # kustomization_controller.go:371-380 (kustomize-controller 186fb3b): the build stops
            raise RenderError("flux", f"kustomization path not found: spec.path {folder!r} is not in the "
                                      f"artifact: {_because(opts.artifact, folder, excluded)}")
        _write_kustomization(target, generate(target, opts))
        try:
            text = decode_utf8(tool, run_tool(tool, [*argv, target, *_flags(target, copy, tool)], cwd=copy,
                                              limits=limits))
        except RenderError as exc:
            message = _with_exclusions(exc.message.replace(copy, snapshot.root), snapshot.root, opts.artifact,
                                       excluded)
            raise RenderError(exc.tool, message) from None
    return after_build(text, opts)


def after_build(text: str, opts: FluxKustomize) -> str:
    """postBuild substitution (kustomization_controller.go:815) then commonMetadata (:854)."""
    if not opts.post_build and not opts.common_labels and not opts.common_annotations:
        return text
    bad = [k for k, _ in opts.variables if not _VAR_NAME.match(k)]
    if bad:
        raise RenderError("flux", f"postBuild variable {bad[0]!r}: an invalid name (kustomize_varsub.go:41)")
    variables = dict(opts.variables)
    try:
        docs = [d.value for d in load_documents(text, source="kustomize output", limits=_OUTPUT_LIMITS)
                if d.value is not None]
    except ManifestError as exc:
        raise RenderError("flux", f"the build output cannot be read: {exc.message}") from None
    out = []
    for doc in docs:
        if opts.post_build and variables and isinstance(doc, dict) and not _opted_out(doc):
            raw = yaml.safe_dump(doc, sort_keys=False, width=1 << 30)
            try:
                doc = yaml.safe_load(substitute(raw, variables))
            except (ValueError, yaml.YAMLError) as exc:
                meta = _meta(doc)
                raise RenderError("flux", f"post build failed for {doc.get('kind')} {meta.get('name')}: "
                                          f"{exc}") from None
        if isinstance(doc, dict) and (opts.common_labels or opts.common_annotations):
            meta = dict(_meta(doc))
            if opts.common_labels:
                meta["labels"] = {**_mapping(meta.get("labels")), **dict(opts.common_labels)}
            if opts.common_annotations:
                meta["annotations"] = {**_mapping(meta.get("annotations")), **dict(opts.common_annotations)}
            doc = {**doc, "metadata": meta}
        out.append(doc)
    return yaml.safe_dump_all(out, sort_keys=False, width=1 << 30)


def _opted_out(doc: Mapping[str, Any]) -> bool:
    meta = _meta(doc)
    return any(_mapping(meta.get(k)).get(SUBSTITUTE_KEY) == "disabled" for k in ("labels", "annotations"))


@contextlib.contextmanager
def chart_source(snapshot: Snapshot, chart: str, post: FluxPostRender) -> Iterator[Snapshot]:
    """The tree the HelmChart is built from: the GitRepository's artifact (a hard-linked copy without
    what it excludes), whose chart values.yaml is, with ``valuesFiles``, the merge of those files in
    order, as the HelmChart that source-controller builds holds. ``snapshot`` itself when neither
    applies."""
    if not post.chart_values and post.artifact is None:
        yield snapshot
        return
    with tempfile.TemporaryDirectory(prefix="rsi-fluxchart-") as scratch:
        copy = os.path.join(scratch, "repo")
        excluded = _lay_out(snapshot, copy, post.artifact)
        if not os.path.isdir(os.path.join(copy, chart) if chart else copy) and post.artifact is not None:
            raise RenderError("helm", f"chart {chart!r} is not in the artifact: "
                                      f"{_because(post.artifact, chart, excluded)}")
        if post.chart_values:
            _replace_values(copy, chart, post, excluded)
        try:
            yield Snapshot(copy, snapshot.revision, dict(snapshot.refused))
        except RenderError as exc:
            message = _with_exclusions(exc.message.replace(copy, snapshot.root), snapshot.root, post.artifact,
                                       excluded)
            raise RenderError(exc.tool, message) from None


def _replace_values(copy: str, chart: str, post: FluxPostRender, excluded: Mapping[str, Pattern]) -> None:
    merged: dict[str, Any] = {}
    for rel in post.chart_values:
        path = os.path.join(copy, rel)
        if not os.path.isfile(path):
            if post.ignore_missing_values:
                continue
            why = _because(post.artifact, rel, excluded) if post.artifact is not None else ""
            raise RenderError("helm", f"valuesFiles {rel}: no such file in this repository's artifact"
                                      + (f" ({why})" if why else ""))
        with open(path, "rb") as fh:
            try:
                loaded = _load(fh.read(4 * 1024 * 1024 + 1), rel)
            except ManifestError as exc:
                raise RenderError("helm", f"valuesFiles {rel}: {exc.message}") from None
        if loaded is not None and not isinstance(loaded, dict):
            raise RenderError("helm", f"valuesFiles {rel}: not a mapping")
        merged = merge_maps(merged, loaded or {})
    values = os.path.join(copy, chart, "values.yaml") if chart else os.path.join(copy, "values.yaml")
    if os.path.lexists(values):
        os.unlink(values)  # a hard link to the snapshot's file: never write through it
    with open(values, "w", encoding="utf-8") as fh:
        yaml.safe_dump(merged, fh, sort_keys=False)


def post_render(text: str, post: FluxPostRender, limits: RenderLimits, renderer: str | None = None) -> str:
    """A HelmRelease's ``postRenderers`` kustomize patches and images over the chart's output
    (helm-controller internal/postrender/build.go:30), with real kustomize."""
    if not post.patches and not post.images:
        return text
    tool, argv = kustomize_command(renderer)
    with tempfile.TemporaryDirectory(prefix="rsi-fluxpost-") as scratch:
        with open(os.path.join(scratch, "rendered.yaml"), "w", encoding="utf-8") as fh:
            fh.write(text)
        doc: dict[str, Any] = {"resources": ["rendered.yaml"]}
        if post.patches:
            doc["patches"] = [json.loads(p) for p in post.patches]
        if post.images:
            doc["images"] = [json.loads(i) for i in post.images]
        _write_kustomization(scratch, doc)
        try:
            out = run_tool(tool, [*argv, scratch, "--load-restrictor=LoadRestrictionsRootOnly"], cwd=scratch,
                           limits=limits)
            return decode_utf8(tool, out)
        except RenderError as exc:
            message = exc.message.replace(scratch + os.sep, "")
            raise RenderError(exc.tool, f"postRenderers: {message}") from None
