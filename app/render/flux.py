"""Flux objects as render roots: a ``Kustomization`` and a ``HelmRelease`` of this repository,
rendered as kustomize-controller and helm-controller render them (docs/flux.md).

Upstream read (fluxcd/kustomize-controller 186fb3b, fluxcd/pkg e2cfd1a, fluxcd/helm-controller
0f61a86):

* kustomize-controller internal/controller/kustomization_controller.go:749 generates the
  kustomization with fluxcd/pkg kustomize/kustomize_generator.go (``NewGenerator``, no ignore
  filter): a folder without a kustomization file gets one listing every ``.yaml``/``.yml`` file
  below it and every sub-folder that holds a kustomization file, which is not descended
  (kustomize_generator.go:575-632); none at all gives the ``_placeholder`` namespace
  (kustomize_generator.go:559-563). Then ``targetNamespace``, ``namePrefix``/``nameSuffix``,
  ``patches``, ``components``, ``patchesStrategicMerge``/``patchesJson6902`` (v1beta2) and
  ``images`` (merged into an entry of the same name) are written into it
  (kustomize_generator.go:219-331).
* kustomization_controller.go:815-829 then substitutes ``postBuild`` variables in every object
  but those labelled or annotated ``kustomize.toolkit.fluxcd.io/substitute: disabled``
  (fluxcd/pkg kustomize/kustomize_varsub.go:107): ``substituteFrom`` in order, ``substitute``
  over them (kustomize_varsub.go:115-135), newlines removed from values; only ``${...}`` is an
  expression and ``$$`` stands for ``$`` (fluxcd/pkg envsubst/parse/scan.go:190-230); an unset
  variable is empty unless the controller runs with strict substitution (kustomize_varsub.go:199).
* kustomization_controller.go:854 sets ``commonMetadata`` labels and annotations on every object
  after the build.
* helm-controller api/v2/helmrelease_types.go:1551 names the release ``[targetNamespace-]name``
  unless ``releaseName`` is set, internal/release/name.go:35 shortens one over 53 characters;
  fluxcd/pkg chartutil/values.go:233-255 merges ``valuesFrom`` in order (a ``targetPath`` sets one
  value as ``--set`` would), ``values`` over them; internal/postrender/build.go:30 runs the
  ``postRenderers`` kustomize patches and images over the chart's output.
* Both build from the GitRepository's artifact, which leaves out what ``.sourceignore`` files,
  ``spec.ignore`` and source-controller's defaults exclude: :mod:`app.render.sourceignore`.

Nothing here is fetched: a source that is not this repository, a Secret, a chart from a Helm or
OCI repository is an ``unknown-source`` finding that holds, as for Argo CD.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import yaml

from diffing.errors import ManifestError
from diffing.kube.scope import api_group, may_hold

from .roots import (
    HelmOptions,
    Note,
    RenderSource,
    Root,
    _closure,
    _discovered_docs,
    _Kustomization,
    _load_docs,
    _norm,
    _outside_problem,
    _Tree,
    normalize_repo_url,
)
from .sourceignore import ArtifactRules, ignore_files

KUSTOMIZE_GROUP = "kustomize.toolkit.fluxcd.io"
HELM_GROUP = "helm.toolkit.fluxcd.io"
SOURCE_GROUP = "source.toolkit.fluxcd.io"
FLUX_GROUPS = (KUSTOMIZE_GROUP, HELM_GROUP, SOURCE_GROUP)
# The bootstrap GitRepository (``flux bootstrap`` writes it to clusters/<name>/flux-system/
# gotk-sync.yaml): taken as this repository when no URL says otherwise (docs/flux.md).
BOOTSTRAP = ("flux-system", "flux-system")
SUBSTITUTE_KEY = "kustomize.toolkit.fluxcd.io/substitute"
_VAR_NAME = re.compile(r"^[_A-Za-z][_A-Za-z0-9]*$")  # kustomize_varsub.go:41
MAX_RELEASE_NAME = 53


@dataclass(frozen=True, slots=True)
class FluxKustomize:
    """What a Flux Kustomization adds to the build of its ``spec.path`` (each list as JSON)."""

    target_namespace: str | None = None
    name_prefix: str | None = None
    name_suffix: str | None = None
    patches: tuple[str, ...] = ()
    patches_strategic: tuple[str, ...] = ()
    patches_json6902: tuple[str, ...] = ()
    images: tuple[str, ...] = ()
    components: tuple[str, ...] = ()
    ignore_missing_components: bool = False
    common_labels: tuple[tuple[str, str], ...] = ()
    common_annotations: tuple[tuple[str, str], ...] = ()
    post_build: bool = False
    variables: tuple[tuple[str, str], ...] = ()
    artifact: ArtifactRules | None = None  # what the GitRepository's artifact leaves out


@dataclass(frozen=True, slots=True)
class FluxPostRender:
    """A HelmRelease's ``postRenderers[].kustomize`` (patches and images, as JSON), and its chart's
    ``valuesFiles``: repository paths merged in order to *replace* the chart's values.yaml
    (helm-controller api/v2/helmrelease_types.go:414-419: values.yaml is not included unless listed)."""

    patches: tuple[str, ...] = ()
    images: tuple[str, ...] = ()
    chart_values: tuple[str, ...] = ()
    ignore_missing_values: bool = False
    artifact: ArtifactRules | None = None


# -- discovery -----------------------------------------------------------------------------------

def _meta(doc: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = doc.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


def _spec(doc: Mapping[str, Any]) -> Mapping[str, Any]:
    spec = doc.get("spec")
    return spec if isinstance(spec, Mapping) else {}


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _seq(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


@dataclass(slots=True)
class _FluxDocs:
    kustomizations: list[tuple[str, Mapping[str, Any]]]
    releases: list[tuple[str, Mapping[str, Any]]]
    repositories: dict[tuple[str, str], tuple[str, Mapping[str, Any]]]  # (ns, name) -> (file, doc)
    ignores: tuple[tuple[str, str], ...] | None = None  # (file, text) of every .sourceignore, read once


def _flux_docs(tree: _Tree, notes: list[Note]) -> _FluxDocs:
    """Every Flux object of the snapshot, recognised by its parsed apiVersion group and kind."""
    out = _FluxDocs([], [], {})
    for rel, doc in _discovered_docs(tree, notes, FLUX_GROUPS, "a Flux object"):
        if not isinstance(doc, Mapping):
            continue
        group, kind = api_group(doc), doc.get("kind")
        if group == KUSTOMIZE_GROUP and kind == "Kustomization":
            out.kustomizations.append((rel, doc))
        elif group == HELM_GROUP and kind == "HelmRelease":
            out.releases.append((rel, doc))
        elif group == SOURCE_GROUP and kind == "GitRepository":
            meta = _meta(doc)
            key = (str(meta.get("namespace") or "default"), str(meta.get("name") or ""))
            out.repositories.setdefault(key, (rel, doc))
    return out


def _ours(docs: _FluxDocs, ref: Mapping[str, Any], namespace: str, repo_url: str | None
          ) -> tuple[bool, str, str]:
    """Whether a ``sourceRef`` is this repository: (ours, what it names, the GitRepository's file).
    A GitRepository whose URL is this repository's; without a URL to compare, or when the
    GitRepository is not in the snapshot, only the bootstrap ``flux-system/flux-system``."""
    kind = str(ref.get("kind") or "")
    name = str(ref.get("name") or "")
    ns = str(ref.get("namespace") or namespace)
    what = f"{kind or '?'} {ns}/{name}"
    if kind != "GitRepository":
        return False, what, ""
    found = docs.repositories.get((ns, name))
    if found is not None:
        url = str(_spec(found[1]).get("url") or "")
        what += f" ({url})" if url else ""
        if repo_url is not None and url:
            return normalize_repo_url(url) == normalize_repo_url(repo_url), what, found[0]
        return (ns, name) == BOOTSTRAP, what, found[0]
    return (ns, name) == BOOTSTRAP, what, ""


def _artifact_rules(tree: _Tree, docs: _FluxDocs, ref: Mapping[str, Any], namespace: str, root: Root
                    ) -> ArtifactRules:
    """What source-controller leaves out of this repository's artifact (app/render/sourceignore.py):
    every ``.sourceignore`` of the snapshot (each is read by the root, since any one of them turns
    the default exclusions off) and the GitRepository's ``spec.ignore``. A bootstrap GitRepository
    that is not in the snapshot is taken to have none (docs/flux.md: a guess)."""
    ns = str(ref.get("namespace") or namespace)
    name = str(ref.get("name") or "")
    if docs.ignores is None:
        docs.ignores = tuple((rel, (tree.read(rel) or b"").decode("utf-8", "surrogateescape"))
                             for rel in ignore_files(tree.files))
    root.read_files.update(rel for rel, _ in docs.ignores)
    texts = [(rel.rpartition("/")[0], text) for rel, text in docs.ignores]
    found = docs.repositories.get((ns, name))
    ignore = _spec(found[1]).get("ignore") if found is not None else None
    if ignore is not None and not isinstance(ignore, str):
        where = found[0] if found is not None else "?"
        root.problem = root.problem or (f"spec.ignore of GitRepository {ns}/{name} ({where}) is not a "
                                        "string: source-controller refuses it")
        ignore = None
    return ArtifactRules(f"GitRepository {ns}/{name}", tuple(texts), ignore)


def _pairs(value: Any) -> tuple[tuple[str, str], ...]:
    return tuple(sorted((str(k), str(v)) for k, v in _mapping(value).items()))


def _json(items: Iterable[Any]) -> tuple[str, ...]:
    return tuple(json.dumps(i, sort_keys=True) for i in items if isinstance(i, Mapping))


def _configmap_data(tree: _Tree, namespace: str, name: str) -> tuple[str, dict[str, str]] | None:
    """(file, data) of the ConfigMap ``namespace/name`` in the snapshot: one whose
    ``metadata.namespace`` is ``namespace``, or that names none (docs/flux.md: a guess that the
    overlay deploying it puts it there)."""
    for rel in tree.files:
        if not rel.endswith((".yaml", ".yml", ".json")):
            continue
        data = tree.read(rel)
        if data is None or not may_hold(data, "ConfigMap") or not may_hold(data, name):
            continue
        try:
            docs = _load_docs(data, rel)
        except ManifestError:
            continue
        for doc in docs:
            if not isinstance(doc, Mapping) or (doc.get("apiVersion"), doc.get("kind")) != ("v1",
                                                                                              "ConfigMap"):
                continue
            meta = _meta(doc)
            if str(meta.get("name") or "") != name or str(meta.get("namespace") or namespace) != namespace:
                continue
            return rel, {str(k): "" if v is None else str(v) for k, v in _mapping(doc.get("data")).items()}
    return None


def _manifest_folders(tree: _Tree, path: str) -> set[str]:
    """The kustomization folders the generator lists as resources below ``path`` (the first one
    down each branch; kustomize_generator.go:588-596)."""
    prefix = f"{path}/" if path else ""
    found = {f for f in tree.kustomizations if f != path and (f.startswith(prefix) if prefix else True)}
    return {f for f in found if not any(o != f and f.startswith(o + "/") for o in found)}


def _ks_root(tree: _Tree, docs: _FluxDocs, file: str, doc: Mapping[str, Any], repo_url: str | None,
             info: Mapping[str, _Kustomization]) -> Root | None:
    meta, spec = _meta(doc), _spec(doc)
    name = str(meta.get("name") or "")
    if not name:
        return None
    ns = str(meta.get("namespace") or "flux-system")
    label = f"Kustomization {ns}/{name}"
    root = Root(id=f"flux-ks:{ns}/{name}", label=label, sources=[], read_files={file},
                application=json.dumps(doc, sort_keys=True), tool="flux")
    ours, what, repo_file = _ours(docs, _mapping(spec.get("sourceRef")), ns, repo_url)
    if not ours:
        root.elsewhere = what
        return root
    if repo_file:
        root.read_files.add(repo_file)
    artifact = _artifact_rules(tree, docs, _mapping(spec.get("sourceRef")), ns, root)
    raw_path = str(spec.get("path") or "./")
    path = _norm("", raw_path.lstrip("/") or ".")
    if path is None or not tree.isdir(path):
        root.problem = f"spec.path {raw_path!r} is not a folder of this repository"
        return root
    target_ns = spec.get("targetNamespace")
    root.namespace = str(target_ns) if target_ns else None
    problems, variables = _variables(tree, spec, ns, root)
    post = _mapping(spec.get("postBuild"))
    cmeta = _mapping(spec.get("commonMetadata"))
    opts = FluxKustomize(
        target_namespace=str(target_ns) if isinstance(target_ns, str) and target_ns else None,
        name_prefix=str(spec["namePrefix"]) if isinstance(spec.get("namePrefix"), str) else None,
        name_suffix=str(spec["nameSuffix"]) if isinstance(spec.get("nameSuffix"), str) else None,
        patches=_json(_only(p, ("patch", "target")) for p in _seq(spec.get("patches"))),
        # inline objects only: a string entry would be a file kustomize loads (or fetches)
        patches_strategic=tuple(json.dumps(p, sort_keys=True)
                                for p in _seq(spec.get("patchesStrategicMerge")) if isinstance(p, Mapping)),
        patches_json6902=_json(_only(p, ("patch", "target")) for p in _seq(spec.get("patchesJson6902"))),
        images=_json(_only(i, _IMAGE_KEYS) for i in _seq(spec.get("images"))),
        components=tuple(str(c) for c in _seq(spec.get("components")) if isinstance(c, str)),
        ignore_missing_components=spec.get("ignoreMissingComponents") is True,
        common_labels=_pairs(cmeta.get("labels")), common_annotations=_pairs(cmeta.get("annotations")),
        post_build=bool(post), variables=variables, artifact=artifact)
    if any(not isinstance(p, Mapping) for p in _seq(spec.get("patchesStrategicMerge"))):
        problems.append("spec.patchesStrategicMerge holds an entry that is not an inline object (a file "
                        "or URL kustomize would load): not evaluated here")
    root.sources.append(RenderSource("flux-kustomize", path, flux=opts))
    reads = {path} if path not in tree.kustomizations else set()
    for folder in ({path} if path in tree.kustomizations else _manifest_folders(tree, path)):
        closure = _closure(tree, folder, info)
        reads |= closure
        if not root.problem and (outside := _outside_problem(tree, closure, info)):
            root.problem, root.tool, root.unknown = outside, "kustomize", True
    for comp in opts.components:
        target_dir = None if _is_remote_ref(comp) else _norm(path, comp)
        if target_dir is None or not tree.isdir(target_dir):
            if not (opts.ignore_missing_components and target_dir is not None):
                root.problem = root.problem or (
                    f"spec.components entry {comp!r} is not a folder of this repository: kustomize would "
                    "fetch it, and nothing is fetched here, so what it deploys is unknown")
                root.tool, root.unknown = "kustomize", True
            continue
        reads |= _closure(tree, target_dir, info)
    root.read_dirs |= reads
    if problems and not root.problem:
        root.problem, root.unknown = "; ".join(problems), True
    if spec.get("suspend") is True:
        root.suspended = True
    return root


def _variables(tree: _Tree, spec: Mapping[str, Any], namespace: str, root: Root
               ) -> tuple[list[str], tuple[tuple[str, str], ...]]:
    """The postBuild variables as kustomize_varsub.go:153-185 loads them (``substituteFrom`` in
    order, ``substitute`` over them), and what cannot be read here."""
    post = _mapping(spec.get("postBuild"))
    problems: list[str] = []
    out: dict[str, str] = {}
    for ref in _seq(post.get("substituteFrom")):
        ref = _mapping(ref)
        kind, name = str(ref.get("kind") or ""), str(ref.get("name") or "")
        optional = ref.get("optional") is True
        if kind == "ConfigMap":
            found = _configmap_data(tree, namespace, name)
            if found is not None:
                root.read_files.add(found[0])
                out.update({k: v.replace("\n", "") for k, v in found[1].items()})
                continue
            where = f"ConfigMap {namespace}/{name} is not in this repository"
        else:
            where = f"{kind or '?'} {namespace}/{name} is not read here (a Secret's data never is)"
        if optional:
            root.notes.append(f"postBuild.substituteFrom {where}; it is optional, so its variables are "
                              "taken as unset (empty, or their ${var:=default})")
            continue
        problems.append(f"postBuild.substituteFrom {where}: the variables it sets are unknown, so what "
                        "the Kustomization deploys is unknown")
    for k, v in _mapping(post.get("substitute")).items():
        out[str(k)] = str(v).replace("\n", "")
    return problems, tuple(sorted(out.items()))


def _is_remote_ref(ref: str) -> bool:
    first = ref.split("/", 1)[0]
    return "://" in ref or ref.startswith(("git@", "git::", "/")) or ("." in first.strip(".") and "/" in ref)


def _release_name(doc: Mapping[str, Any]) -> str:
    """helm-controller's release name: api/v2/helmrelease_types.go:1551, shortened as
    internal/release/name.go:35 does (first 40 characters, '-', 12 of the name's SHA-256)."""
    spec = _spec(doc)
    name = str(spec.get("releaseName") or "")
    if not name:
        target = str(spec.get("targetNamespace") or "")
        name = f"{target}-{_meta(doc).get('name')}" if target else str(_meta(doc).get("name") or "")
    if len(name) <= MAX_RELEASE_NAME:
        return name
    return name[:MAX_RELEASE_NAME - 13] + "-" + hashlib.sha256(name.encode()).hexdigest()[:12]


def _hr_root(tree: _Tree, docs: _FluxDocs, file: str, doc: Mapping[str, Any], repo_url: str | None
             ) -> Root | None:
    meta, spec = _meta(doc), _spec(doc)
    name = str(meta.get("name") or "")
    if not name:
        return None
    ns = str(meta.get("namespace") or "default")
    root = Root(id=f"flux-hr:{ns}/{name}", label=f"HelmRelease {ns}/{name}", sources=[], read_files={file},
                application=json.dumps(doc, sort_keys=True), tool="flux")
    if spec.get("chartRef") is not None:
        ref = _mapping(spec.get("chartRef"))
        root.elsewhere = f"chartRef {ref.get('kind') or '?'} {ref.get('namespace') or ns}/{ref.get('name')}"
        return root
    chart = _mapping(_mapping(spec.get("chart")).get("spec"))
    ours, what, repo_file = _ours(docs, _mapping(chart.get("sourceRef")), ns, repo_url)
    if not ours:
        root.elsewhere = f"chart {chart.get('chart') or '?'} from {what}"
        return root
    if repo_file:
        root.read_files.add(repo_file)
    artifact = _artifact_rules(tree, docs, _mapping(chart.get("sourceRef")), ns, root)
    chart_path = _norm("", str(chart.get("chart") or "").lstrip("/") or ".")
    if chart_path is None or chart_path not in tree.charts:
        root.problem = f"spec.chart.spec.chart {chart.get('chart')!r} is not a chart folder of this repo"
        return root
    target_ns = str(spec.get("targetNamespace") or "") or ns
    root.namespace = target_ns
    value_files = []
    problems = []
    for raw in _seq(chart.get("valuesFiles")) or ([chart["valuesFile"]] if chart.get("valuesFile") else []):
        target = _norm("", str(raw).lstrip("/"))
        if target is None:
            problems.append(f"valuesFiles {raw!r} leaves the repository")
        else:
            value_files.append(target)
    merged: dict[str, Any] = {}
    for ref in _seq(spec.get("valuesFrom")):
        ref = _mapping(ref)
        kind, rname = str(ref.get("kind") or ""), str(ref.get("name") or "")
        key = str(ref.get("valuesKey") or "values.yaml")
        optional = ref.get("optional") is True
        found = _configmap_data(tree, ns, rname) if kind == "ConfigMap" else None
        if found is None or key not in found[1]:
            if kind != "ConfigMap":
                where = f"{kind or '?'} {ns}/{rname} is not read here (a Secret's data never is)"
            elif found is None:
                where = f"ConfigMap {ns}/{rname} is not in this repository"
            else:
                where = f"ConfigMap {ns}/{rname} has no key {key!r}"
            if optional:
                root.notes.append(f"valuesFrom {where}; it is optional, so its values are left out")
            else:
                problems.append(f"valuesFrom {where}: the values it gives are unknown")
            if found is not None:
                root.read_files.add(found[0])
            continue
        root.read_files.add(found[0])
        text = found[1][key]
        try:
            if ref.get("targetPath"):
                _set_path(merged, str(ref["targetPath"]), text, literal=ref.get("literal") is True)
            else:
                loaded = yaml.safe_load(text) if text.strip() else {}
                merged = merge_maps(merged, loaded if isinstance(loaded, dict) else {})
        except (ValueError, yaml.YAMLError) as exc:
            problems.append(f"valuesFrom ConfigMap {ns}/{rname}: {exc}")
    if isinstance(spec.get("values"), Mapping):
        merged = merge_maps(merged, dict(spec["values"]))
    kustomize = [_mapping(_mapping(r).get("kustomize")) for r in _seq(spec.get("postRenderers"))]
    # Only what helm-controller's API has (api/v2 Kustomize: patches of patch + target, images):
    # a ``path`` key would make kustomize load (or fetch) a file.
    post = FluxPostRender(
        patches=_json(_only(p, ("patch", "target")) for k in kustomize for p in _seq(k.get("patches"))),
        images=_json(_only(i, _IMAGE_KEYS) for k in kustomize for i in _seq(k.get("images"))),
        chart_values=tuple(value_files), ignore_missing_values=chart.get("ignoreMissingValuesFiles") is True,
        artifact=artifact)
    helm = HelmOptions(release_name=_release_name(doc), namespace=target_ns,
                       values=(yaml.safe_dump(merged),) if merged else ())
    root.sources.append(RenderSource("flux-helm", chart_path, helm=helm, flux=post))
    root.read_dirs.add(chart_path)
    root.read_files |= set(value_files)
    if problems:
        root.problem, root.tool, root.unknown = "; ".join(problems), "flux", True
    if spec.get("suspend") is True:
        root.suspended = True
    return root


_IMAGE_KEYS = ("name", "newName", "newTag", "digest")


def _only(value: Any, keys: tuple[str, ...]) -> dict[str, Any]:
    m = _mapping(value)
    return {k: m[k] for k in keys if m.get(k) not in (None, "")}


def merge_maps(a: Mapping[str, Any], b: Mapping[str, Any]) -> dict[str, Any]:
    """``b`` over ``a``, maps merged deeply (fluxcd/pkg chartutil ``MergeMaps``)."""
    out = dict(a)
    for k, v in b.items():
        if isinstance(v, Mapping) and isinstance(out.get(k), Mapping):
            out[k] = merge_maps(out[k], v)
        else:
            out[k] = v
    return out


_PLAIN_PATH = re.compile(r"^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$")


def _set_path(values: dict[str, Any], path: str, text: str, *, literal: bool) -> None:
    """A ``targetPath`` value as helm-controller sets it (fluxcd/pkg chartutil/values.go:259-308):
    ``literal`` is the text verbatim; one quoted at both ends (either quote) loses every leading and
    trailing quote and is a string (Helm's ``--set-string``); else it is typed as Helm's ``--set``
    types it (helm v4.2.1 pkg/strvals/parser.go:529-560: true, false and null in any case, an int64
    written without a leading zero, else a string). Only a plain dotted path, and a value Helm's
    parser keeps whole (no ``,``, no ``\\`` escape, no leading ``{`` list), are evaluated here;
    the rest is refused (ValueError), never guessed."""
    if not _PLAIN_PATH.match(path):
        raise ValueError(f"targetPath {path!r}: only a plain dotted path is evaluated here")
    value: Any = text
    if not literal:
        quoted = any(text.startswith(q) and text.endswith(q) for q in "'\"")
        if quoted:
            value = text.strip("'\"")
        if "," in value or "\\" in value or value.startswith("{"):
            raise ValueError(f"targetPath {path!r}: a value with a comma, a backslash or a leading {{ "
                             "is split or escaped by Helm's parser: not evaluated here")
        if not quoted:
            value = _typed(value)
    keys = path.split(".")
    node = values
    for k in keys[:-1]:
        if not isinstance(node.get(k), dict):
            node[k] = {}
        node = node[k]
    node[keys[-1]] = value


_INT64 = (-(2 ** 63), 2 ** 63 - 1)


def _typed(text: str) -> Any:
    """Helm ``--set``'s typing of one value (strvals typedVal)."""
    folded = text.lower()
    if folded in ("true", "false"):
        return folded == "true"
    if folded == "null":
        return None
    if text == "0":
        return 0
    if text and text[0] != "0" and re.fullmatch(r"[+-]?[0-9]+", text):  # Go's ParseInt, base 10
        number = int(text)
        if _INT64[0] <= number <= _INT64[1]:
            return number
    return text


def discover_flux(tree: _Tree, info: Mapping[str, _Kustomization], repo_url: str | None,
                  notes: list[Note]) -> list[Root]:
    """The Flux Kustomizations and HelmReleases of the snapshot as roots; one that deploys only from
    elsewhere is an ``unknown-source`` note on its file (what it deploys is not known here)."""
    docs = _flux_docs(tree, notes)
    out: list[Root] = []
    made = [(f, _ks_root(tree, docs, f, d, repo_url, info)) for f, d in docs.kustomizations]
    made += [(f, _hr_root(tree, docs, f, d, repo_url)) for f, d in docs.releases]
    for file, root in made:
        if root is None:
            continue
        if root.elsewhere:
            notes.append(Note(file, f"{root.label} deploys {root.elsewhere}: not in this repository, so not "
                                    "rendered; whether it holds RayServices, RayClusters or RayJobs is not "
                                    "known here", "error", "unknown-source", always=True))
            continue
        out.append(root)
    return out


def covered_folders(tree: _Tree, root: Root) -> set[str]:
    """The kustomization and chart folders a Flux root renders (not roots of their own)."""
    out: set[str] = set()
    for src in root.sources:
        out.add(src.path)
        if src.type == "flux-kustomize" and src.path not in tree.kustomizations:
            out |= _manifest_folders(tree, src.path)
    return out
