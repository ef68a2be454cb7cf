"""What a repository deploys: its render roots, found in a snapshot of one revision.

A root is what Argo CD (or a person running kustomize/helm) renders as one unit:

* an Argo CD ``Application`` of this repository: each of its sources whose ``path`` is a
  folder here, with the Application's own kustomize / Helm / directory options and its
  destination namespace;
* a Flux ``Kustomization`` or ``HelmRelease`` whose source is this repository
  (:mod:`.flux`, docs/flux.md);
* else a kustomization that no other kustomization includes, a Helm chart that is not
  another chart's dependency, and a plain YAML file outside all of these.

Each root knows which files its render reads (``reads``), so a change can tell which roots
it affects without rendering anything. The reads are a superset, never a subset: a
kustomize root reads every file under the folders of its kustomization closure (its own,
and those of the bases/components it includes, transitively); kustomize's root-only load
restrictor guarantees it reads nothing else of the repository.
"""

from __future__ import annotations

import configparser
import fnmatch
import json
import os
import posixpath
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import yaml

from diffing.errors import ManifestError
from diffing.kube.loading import Limits, load_documents
from diffing.kube.scope import ARGOCD_GROUP, api_group, decode, expand_lists, may_hold
from diffing.policy import source_key

from .snapshot import Snapshot, walk_files

KUSTOMIZATION_FILES = ("kustomization.yaml", "kustomization.yml", "Kustomization")
# What kubectl, kustomize and Argo CD apply as a manifest file, JSON too (Argo CD's plain
# directory source: reposerver/repository/repository.go, findManifests; .jsonnet is rendered by
# Argo CD but not here).
YAML_SUFFIXES = (".yaml", ".yml", ".json")
_MAX_DISCOVERY_FILE = 4 * 1024 * 1024  # Applications and kustomizations are small
# Applications, kustomizations and values files are small: the bounds of a manifest would let
# an alias bomb in one of them cost seconds and gigabytes before it is refused.
DISCOVERY_LIMITS = Limits(max_bytes=_MAX_DISCOVERY_FILE, max_nodes=200_000, max_depth=64,
                          max_documents=1_000)


@dataclass(frozen=True, slots=True)
class KustomizeOptions:
    """An Application's ``spec.source.kustomize`` (the parts that change what is rendered)."""

    name_prefix: str = ""
    name_suffix: str = ""
    namespace: str = ""
    images: tuple[str, ...] = ()
    common_labels: tuple[tuple[str, str], ...] = ()
    common_annotations: tuple[tuple[str, str], ...] = ()
    patches: tuple[str, ...] = ()       # each a YAML dump of one patch entry
    components: tuple[str, ...] = ()
    replicas: tuple[tuple[str, int], ...] = ()

    @property
    def empty(self) -> bool:
        return self == KustomizeOptions()


@dataclass(frozen=True, slots=True)
class HelmOptions:
    release_name: str
    namespace: str | None = None
    value_files: tuple[str, ...] = ()   # repository paths, in order
    values: tuple[str, ...] = ()        # inline YAML documents (Application values / valuesObject)
    parameters: tuple[tuple[str, str, bool], ...] = ()
    ignore_missing_value_files: bool = False


@dataclass(frozen=True, slots=True)
class DirectoryOptions:
    recurse: bool = False
    include: str = ""
    exclude: str = ""


@dataclass(frozen=True, slots=True)
class RenderSource:
    """One thing to render: ``type`` is kustomize, helm, directory or file; ``path`` is repo-relative."""

    type: str
    path: str
    kustomize: KustomizeOptions | None = None
    helm: HelmOptions | None = None
    directory: DirectoryOptions | None = None
    flux: Any = None    # app.render.flux.FluxKustomize / FluxPostRender of a Flux root


@dataclass(slots=True)
class Root:
    id: str                       # the same root at both revisions has the same id
    label: str                    # what a person reads: "overlays/prod (kustomize)", "Application llm-prod"
    sources: list[RenderSource]
    namespace: str | None = None  # for resources without one (an Application's destination)
    read_dirs: set[str] = field(default_factory=set)    # every file below these is read
    read_files: set[str] = field(default_factory=set)
    problem: str = ""             # why it cannot be rendered here (rendering it is a failure)
    elsewhere: str = ""           # it deploys only from other repositories: these (a note, no render)
    tool: str = ""                # the renderer named in a failure
    unknown: bool = False         # the problem is content GitOps fetches and this tool does not
                                  # (a remote base, a submodule): an ``unknown-source`` finding
    application: str = ""         # the Application that deploys it, as YAML: analysed with what it
                                  # renders, since its sync options change what KubeRay receives
                                  # (a Flux Kustomization or HelmRelease likewise)
    notes: list[str] = field(default_factory=list)  # warnings about its render (an optional source unread)
    suspended: bool = False       # a suspended Flux object: nothing new is applied until it resumes

    def reads(self, path: str) -> bool:
        if path in self.read_files:
            return True
        return any(d == "" or path == d or path.startswith(d + "/") for d in self.read_dirs)


@dataclass(frozen=True, slots=True)
class Note:
    """A file a change may touch that is not rendered as a root of its own, and why."""

    file: str
    why: str
    severity: str = "warning"
    code: str = "not-rendered"
    always: bool = False  # said even when a rendered root reads the file (a Flux object's source)


@dataclass(slots=True)
class Discovery:
    roots: dict[str, Root]
    notes: list[Note] = field(default_factory=list)
    submodules: dict[str, str] = field(default_factory=dict)  # path -> url (.gitmodules)


# -- the tree ---------------------------------------------------------------------------------

@dataclass(slots=True)
class _Tree:
    snapshot: Snapshot
    files: list[str]                      # repo-relative, "/" separated
    kustomizations: dict[str, str]        # folder -> its kustomization file name
    charts: set[str]                      # folders holding Chart.yaml

    def isdir(self, rel: str) -> bool:
        return os.path.isdir(self.snapshot.path(rel))

    def isfile(self, rel: str) -> bool:
        return os.path.isfile(self.snapshot.path(rel))

    def read(self, rel: str) -> bytes | None:
        try:
            with open(self.snapshot.path(rel), "rb") as fh:
                return fh.read(_MAX_DISCOVERY_FILE + 1)
        except OSError:
            return None


def walk(top: str) -> Iterator[tuple[str, list[str], list[str]]]:
    """:func:`.snapshot.walk_files` (iterative, sorted, .git left out, symlinked folders listed
    but never entered) with each folder relative to ``top``: "" for ``top``, "/" separators.
    Clearing the folder list in place prunes the walk, as with ``os.walk``."""
    for folder, dirs, files in walk_files(top):
        rel = os.path.relpath(folder, top).replace(os.sep, "/")
        yield ("" if rel == "." else rel), dirs, files


def _walk(snapshot: Snapshot) -> _Tree:
    files: list[str] = []
    kustomizations: dict[str, str] = {}
    charts: set[str] = set()
    for rel_top, _, names in walk(snapshot.root):
        for name in names:
            rel = f"{rel_top}/{name}" if rel_top else name
            files.append(rel)
            if name in KUSTOMIZATION_FILES and rel_top not in kustomizations:
                kustomizations[rel_top] = name
            elif name == "Chart.yaml":
                charts.add(rel_top)
    return _Tree(snapshot, files, kustomizations, charts)


def _load_docs(data: bytes, source: str = "") -> list[Any]:
    """The documents of a small file the discovery reads (kustomization, Application), decoded and
    bounded as a manifest is; lists unwrapped. Raises :class:`ManifestError`."""
    docs = load_documents(decode(data, source), source=source, limits=DISCOVERY_LIMITS)
    return [v for d in docs if d.value is not None for v in expand_lists(d.value)]


def _try_docs(data: bytes) -> list[Any]:
    """:func:`_load_docs`, or nothing for a file that cannot be read (the renderer that reads it
    fails on it, which is the finding)."""
    try:
        return _load_docs(data)
    except ManifestError:
        return []


def _norm(base: str, rel: str) -> str | None:
    """``rel`` (relative to folder ``base``) as a repository path; None when it leaves the repository."""
    joined = posixpath.normpath(posixpath.join(base, rel)) if base else posixpath.normpath(rel)
    if joined == ".":
        return ""
    if joined.startswith("../") or joined == ".." or joined.startswith("/"):
        return None
    return joined


def _is_remote(ref: str) -> bool:
    return "://" in ref or ref.startswith(("github.com/", "git@", "gitlab.com/", "bitbucket.org/", "git::"))


# -- kustomize ---------------------------------------------------------------------------------

# Fields of a kustomization that name other kustomizations or manifests (kustomize tries an
# entry that is no local file or folder as a remote git repository or URL) ...
_KUSTOMIZE_TARGETS = ("resources", "bases", "components")
# ... and fields that name a file, which kustomize's file loader fetches when it is an http(s) URL.
_KUSTOMIZE_FILES = ("crds", "configurations", "generators", "transformers", "validators",
                    "patchesStrategicMerge")
_KUSTOMIZE_PATHS = ("patches", "patchesJson6902", "replacements")


@dataclass(slots=True)
class _Kustomization:
    includes: list[str] = field(default_factory=list)   # kustomization folders it includes
    targets: list[str] = field(default_factory=list)    # every local path it loads
    outside: list[str] = field(default_factory=list)    # entries that are not in this repository


def _kustomization(tree: _Tree, folder: str) -> _Kustomization:
    """What the kustomization in ``folder`` includes, and every entry it would load from outside
    the repository: a URL, a git repository, or a path that is no file or folder here (which
    kustomize then tries as a remote repository)."""
    out = _Kustomization()
    name = tree.kustomizations.get(folder)
    data = tree.read(f"{folder}/{name}" if folder else name) if name else None
    docs = _try_docs(data) if data else []
    doc = docs[0] if docs and isinstance(docs[0], Mapping) else {}
    for key in _KUSTOMIZE_TARGETS:
        for entry in _strings(doc.get(key)):
            target = None if _is_remote(entry) else _norm(folder, entry)
            if target is None:  # a URL, or a path that leaves the repository
                if _host_like(entry) or not _leaves(entry):
                    out.outside.append(entry)
                continue
            out.targets.append(target)
            if target in tree.kustomizations:
                out.includes.append(target)
            elif _host_like(entry) and not (tree.isfile(target) or tree.isdir(target)):
                out.outside.append(entry)  # "example.com/org/repo": tried as a repository
    urls = [e for key in _KUSTOMIZE_FILES for e in _strings(doc.get(key))]
    urls += [str(p.get("path")) for key in _KUSTOMIZE_PATHS for p in _list(doc.get(key))
             if isinstance(p, Mapping) and isinstance(p.get("path"), str)]
    out.outside += [u for u in urls if _is_remote(u)]
    return out


def _leaves(entry: str) -> bool:
    """A relative path out of the repository (it fails to render in a snapshot)."""
    return entry.startswith("../") or entry.startswith("/")


def _host_like(entry: str) -> bool:
    """Kustomize reads an entry that is no local file or folder as a repository when it names a
    host: a URL, ``git@host:``, ``git::``, or a first segment with a dot (``github.com/org/repo``)."""
    first = entry.split("/", 1)[0]
    return _is_remote(entry) or ("." in first.strip(".") and "/" in entry and not entry.startswith("."))


def _strings(value: Any) -> list[str]:
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _outside_problem(tree: _Tree, folders: Iterable[str], info: Mapping[str, _Kustomization]) -> str:
    """Why a kustomize root cannot be rendered here: an entry of its closure from outside the
    repository (never fetched: what Argo CD fetches later may differ, and fetching from a PR's
    text would let it reach any address the service can)."""
    for folder in sorted(folders):
        k = info.get(folder)
        if k is not None and k.outside:
            where = f"{folder}/{tree.kustomizations[folder]}" if folder else tree.kustomizations[folder]
            return (f"{where} loads {k.outside[0]!r}, which is not a file or folder of this repository: "
                    "kustomize would fetch it from the network, and remote bases are never fetched here, "
                    "so what it deploys is unknown")
    return ""


def _closure(tree: _Tree, folder: str, info: Mapping[str, _Kustomization]) -> set[str]:
    seen = {folder}
    stack = [folder]
    while stack:
        k = info.get(stack.pop())
        for nxt in k.includes if k is not None else ():
            if nxt not in seen:
                seen.add(nxt)
                stack.append(nxt)
    return seen


# -- Argo CD Applications -------------------------------------------------------------------

def normalize_repo_url(url: str) -> str:
    """``git@github.com:org/repo.git``, ``https://github.com/org/repo`` → ``github.com/org/repo``."""
    return source_key(url)


def _pairs(value: Any) -> tuple[tuple[str, str], ...]:
    if not isinstance(value, Mapping):
        return ()
    return tuple(sorted((str(k), str(v)) for k, v in value.items()))


def _kustomize_options(spec: Any) -> KustomizeOptions:
    if not isinstance(spec, Mapping):
        return KustomizeOptions()
    images = tuple(str(i) for i in spec.get("images") or [] if isinstance(i, (str, int)))
    patches = tuple(yaml.safe_dump(p, sort_keys=True) for p in spec.get("patches") or []
                    if isinstance(p, Mapping))
    replicas = tuple((str(r.get("name")), int(r.get("count", 0))) for r in spec.get("replicas") or []
                     if isinstance(r, Mapping) and str(r.get("count", "")).lstrip("-").isdigit())
    return KustomizeOptions(
        name_prefix=str(spec.get("namePrefix") or ""), name_suffix=str(spec.get("nameSuffix") or ""),
        namespace=str(spec.get("namespace") or ""), images=images,
        common_labels=_pairs(spec.get("commonLabels")),
        common_annotations=_pairs(spec.get("commonAnnotations")),
        patches=patches,
        components=tuple(str(c) for c in spec.get("components") or [] if isinstance(c, str)),
        replicas=replicas)


def _helm_options(app_name: str, spec: Any, source_path: str, refs: Mapping[str, str],
                  destination_ns: str | None) -> tuple[HelmOptions, list[str]]:
    """Helm options with value files as repository paths (``$ref/...`` resolved), and problems."""
    spec = spec if isinstance(spec, Mapping) else {}
    problems: list[str] = []
    files: list[str] = []
    for raw in spec.get("valueFiles") or []:
        raw = str(raw)
        if _is_remote(raw):
            problems.append(f"values file {raw} is remote: not fetched")
            continue
        if raw.startswith("$"):
            ref, _, rest = raw[1:].partition("/")
            if ref not in refs:
                problems.append(f"values file {raw}: no source with ref {ref!r} in this repository")
                continue
            target = _norm(refs[ref], rest)
        else:
            target = _norm(source_path, raw)
        if target is None:
            problems.append(f"values file {raw} leaves the repository")
            continue
        files.append(target)
    values: list[str] = []
    if isinstance(spec.get("values"), str) and spec["values"].strip():
        values.append(spec["values"])
    if isinstance(spec.get("valuesObject"), Mapping):
        # valuesObject wins over values (Argo CD merges it on top: ApplicationSourceHelm.ValuesYAML)
        values.append(yaml.safe_dump(dict(spec["valuesObject"])))
    params = tuple((str(p.get("name")), str(p.get("value", "")), bool(p.get("forceString")))
                   for p in spec.get("parameters") or [] if isinstance(p, Mapping) and p.get("name"))
    namespace = str(spec.get("namespace") or "") or destination_ns
    return HelmOptions(release_name=str(spec.get("releaseName") or app_name), namespace=namespace,
                       value_files=tuple(files), values=tuple(values), parameters=params,
                       ignore_missing_value_files=bool(spec.get("ignoreMissingValueFiles"))), problems


def _source_type(tree: _Tree, src: Mapping[str, Any], path: str) -> str:
    """What the folder holds, as Argo CD's discovery decides (util/app/discovery/discovery.go:62-66:
    Chart.yaml means Helm, a kustomization file means kustomize, else a plain directory)."""
    if src.get("plugin") is not None:
        return "plugin"
    if path in tree.charts:
        return "helm"
    if path in tree.kustomizations:
        return "kustomize"
    return "directory"


def _application_root(tree: _Tree, app: Mapping[str, Any], file: str, repo_url: str | None,
                      info: Mapping[str, _Kustomization]) -> Root | None:
    meta = app.get("metadata") if isinstance(app.get("metadata"), Mapping) else {}
    spec = app.get("spec") if isinstance(app.get("spec"), Mapping) else {}
    name = str(meta.get("name") or "")
    if not name:
        return None
    app_ns = str(meta.get("namespace") or "")
    dest = spec.get("destination") if isinstance(spec.get("destination"), Mapping) else {}
    dest_ns = str(dest.get("namespace") or "") or None
    raw_sources = spec.get("sources") if isinstance(spec.get("sources"), list) else [spec.get("source")]
    sources = [s for s in raw_sources if isinstance(s, Mapping)]

    def ours(src: Mapping[str, Any]) -> bool:
        url = str(src.get("repoURL") or "")
        if repo_url is None:
            return not src.get("chart") and (not src.get("path") or tree.isdir(str(src.get("path"))))
        return bool(url) and normalize_repo_url(url) == normalize_repo_url(repo_url)

    refs = {str(s["ref"]): "" for s in sources if s.get("ref") and ours(s)}
    label = f"Application {name}" if app_ns in ("", "argocd") else f"Application {app_ns}/{name}"
    root = Root(id=f"app:{app_ns}/{name}", label=label, sources=[], namespace=dest_ns,
                read_files={file}, application=json.dumps(app, sort_keys=True))
    external: list[str] = []
    for src in sources:
        if src.get("ref") and not src.get("path") and not src.get("chart"):
            continue  # only a ref for another source's $values
        if not ours(src):
            what = f"chart {src.get('chart')}" if src.get("chart") else f"path {src.get('path') or '.'}"
            external.append(f"{what} from {src.get('repoURL') or '?'}")
            continue
        _add_source(tree, root, src, name, refs, dest_ns, info)
    # $ref value files of external charts live here: a change to them changes what is deployed.
    root.read_files |= _ref_value_files([s for s in sources if not ours(s)], refs)
    if external:
        if not root.sources and root.read_files == {file}:
            root.elsewhere = "; ".join(external)  # a change to its file is a note, not a root
            return root
        if not root.problem:
            root.problem = (
                f"{'; '.join(external)}: not in this repository, so it cannot be rendered here (the "
                "webhook service with RAYSERVICE_IMPACT_ARGOCD_SERVER renders it through Argo CD)")
            root.unknown = True
        root.tool = root.tool or "argocd"
    return root


def _add_source(tree: _Tree, root: Root, src: Mapping[str, Any], app_name: str, refs: Mapping[str, str],
                dest_ns: str | None, info: Mapping[str, _Kustomization]) -> None:
    """One source of an Application that is in this repository, added to its ``root``: how it
    renders and what it reads. One that cannot be rendered here sets ``root.problem``."""
    path = _norm("", str(src.get("path") or "."))
    if path is None or not tree.isdir(path):
        root.problem = f"source path {src.get('path')!r} is not a folder of this repository"
        root.tool = "argocd"
        return
    kind = _source_type(tree, src, path)
    if kind == "plugin":
        root.problem = "a config management plugin source: plugins are not run here"
        root.tool = "argocd"
        root.read_dirs.add(path)
        return
    if kind == "kustomize":
        opts = _kustomize_options(src.get("kustomize"))
        root.sources.append(RenderSource("kustomize", path, kustomize=opts))
        closure = _closure(tree, path, info)
        root.read_dirs |= closure
        root.read_dirs |= {d for c in opts.components if (d := _norm(path, c)) is not None}
        if not root.problem and (outside := _outside_problem(tree, closure, info)):
            root.problem, root.tool, root.unknown = outside, "kustomize", True
    elif kind == "helm":
        opts_h, problems = _helm_options(app_name, src.get("helm"), path, refs, dest_ns)
        if problems:
            root.problem, root.tool = "; ".join(problems), "helm"
        root.sources.append(RenderSource("helm", path, helm=opts_h))
        root.read_dirs.add(path)
        root.read_files |= set(opts_h.value_files)
    else:
        spec = src.get("directory") if isinstance(src.get("directory"), Mapping) else {}
        opts_d = DirectoryOptions(bool(spec.get("recurse")), str(spec.get("include") or ""),
                                  str(spec.get("exclude") or ""))
        root.sources.append(RenderSource("directory", path, directory=opts_d))
        if opts_d.recurse:
            root.read_dirs.add(path)
        else:
            root.read_files |= {f for f in tree.files if posixpath.dirname(f) == path}


def _ref_value_files(external: Iterable[Mapping[str, Any]], refs: Mapping[str, str]) -> set[str]:
    """The files of this repository that the external chart sources among ``external`` take as
    ``$ref/...`` value files (``refs``: the ref names of this repository's sources)."""
    out: set[str] = set()
    for src in external:
        if src.get("chart"):
            helm = src.get("helm") if isinstance(src.get("helm"), Mapping) else {}
            for raw in helm.get("valueFiles") or []:
                raw = str(raw)
                if raw.startswith("$"):
                    ref, _, rest = raw[1:].partition("/")
                    if ref in refs and (target := _norm("", rest)) is not None:
                        out.add(target)
    return out


def _applications(tree: _Tree, notes: list[Note]) -> Iterable[tuple[str, Mapping[str, Any], str]]:
    """(file, document, kind) of every Application / ApplicationSet in the snapshot, recognised by
    its parsed apiVersion and kind (lists unwrapped), never by a text pattern. A file that may hold
    one and cannot be read is an error note: what it would deploy is unknown."""
    for rel, doc in _discovered_docs(tree, notes, (ARGOCD_GROUP,), "an Argo CD Application"):
        if (isinstance(doc, Mapping) and api_group(doc) == ARGOCD_GROUP
                and doc.get("kind") in ("Application", "ApplicationSet")):
            yield rel, doc, str(doc["kind"])


def _discovered_docs(tree: _Tree, notes: list[Note], groups: tuple[str, ...],
                     what: str) -> Iterator[tuple[str, Any]]:
    """(file, document) of every YAML/JSON file of the snapshot (chart templates aside) that may
    hold an object of an API group in ``groups`` (:func:`may_hold`, a cheap pre-check before
    parsing). Such a file over the discovery cap or unreadable is an error note, "it may hold
    ``what`` and cannot be read", and yields nothing."""
    chart_templates = tuple(f"{c}/templates/" if c else "templates/" for c in tree.charts)
    for rel in tree.files:
        if not rel.endswith(YAML_SUFFIXES) or rel.startswith(chart_templates):
            continue
        data = tree.read(rel)
        if data is None or not may_hold(data, *groups):
            continue
        try:
            if len(data) > _MAX_DISCOVERY_FILE:
                raise ManifestError(f"larger than {_MAX_DISCOVERY_FILE} bytes", source=rel)
            docs = _load_docs(data, rel)
        except ManifestError as exc:
            notes.append(Note(rel, f"it may hold {what} and cannot be read: {exc.message}",
                              "error", "render-failed"))
            continue
        for doc in docs:
            yield rel, doc


def read_submodules(snapshot: Snapshot) -> dict[str, str]:
    """path -> URL of every submodule ``.gitmodules`` declares. An archive of the revision (git
    archive, GitHub's tarball) holds an empty folder where a submodule is, while Argo CD checks
    submodules out: their content is never known here."""
    try:
        with open(snapshot.path(".gitmodules"), "rb") as fh:
            return parse_gitmodules(fh.read(_MAX_DISCOVERY_FILE))
    except OSError:
        return {}


def parse_gitmodules(data: bytes) -> dict[str, str]:
    """path -> URL from a ``.gitmodules`` text; an unreadable one says every path may be one."""
    parser = configparser.ConfigParser(interpolation=None, strict=False)
    try:
        parser.read_string(data.decode("utf-8", errors="replace"))
    except configparser.Error:
        return {"": "an unreadable .gitmodules"}  # fail closed: every path may be a submodule
    out = {}
    for section in parser.sections():
        path = parser.get(section, "path", fallback="").strip()
        norm = _norm("", path) if path else None
        if norm is not None:
            out[norm] = parser.get(section, "url", fallback="?").strip()
    return out


class PathIndex:
    """Which of many roots read a path, in time linear in the path's depth (a PR may touch tens
    of thousands of files, and a repository hold thousands of roots)."""

    def __init__(self, roots: Iterable[Root]) -> None:
        self.files: dict[str, list[str]] = {}
        self.dirs: dict[str, list[str]] = {}
        for r in roots:
            for f in r.read_files:
                self.files.setdefault(f, []).append(r.id)
            for d in r.read_dirs:
                self.dirs.setdefault(d, []).append(r.id)

    def readers(self, path: str) -> set[str]:
        ids = set(self.files.get(path, ()))
        ids.update(self.dirs.get("", ()))
        i = len(path)
        while i > 0:
            ids.update(self.dirs.get(path[:i], ()))
            i = path.rfind("/", 0, i)
        return ids


def under(path: str, folders: Mapping[str, str]) -> str | None:
    """The folder of ``folders`` that is ``path`` or holds it, if any."""
    if "" in folders:
        return ""
    i = len(path)
    while i > 0:
        if path[:i] in folders:
            return path[:i]
        i = path.rfind("/", 0, i)
    return None


def release_name_for(folder: str) -> str:
    """A chart rendered without an Application gets its folder's name as release name, made a
    name Helm accepts (lower-case letters, digits and '-', at most 53 characters)."""
    base = posixpath.basename(folder.rstrip("/")) or "release"
    name = re.sub(r"[^a-z0-9-]+", "-", base.lower()).strip("-")[:53].strip("-")
    return name or "release"


def _is_dependency(chart: str, charts: set[str]) -> bool:
    """A chart under another chart's ``charts/`` folder is its dependency, not a root."""
    parts = chart.split("/")
    for i in range(len(parts) - 1):
        if parts[i] == "charts" and "/".join(parts[:i]) in charts | ({""} if "" in charts else set()):
            return True
    return False


def matches_directory(rel: str, opts: DirectoryOptions) -> bool:
    """Argo CD's include/exclude globs on a path relative to the source folder ({a,b} allowed)."""
    def glob(pattern: str) -> bool:
        if pattern.startswith("{") and pattern.endswith("}"):
            return any(fnmatch.fnmatch(rel, p.strip()) or fnmatch.fnmatch(posixpath.basename(rel), p.strip())
                       for p in pattern[1:-1].split(","))
        return fnmatch.fnmatch(rel, pattern) or fnmatch.fnmatch(posixpath.basename(rel), pattern)

    if opts.include and not glob(opts.include):
        return False
    return not (opts.exclude and glob(opts.exclude))
