"""What a repository deploys: its render roots, found in a snapshot of one revision.

A root is what Argo CD (or a person running kustomize/helm) renders as one unit:

* an Argo CD ``Application`` of this repository: each of its sources whose ``path`` is a
  folder here, with the Application's own kustomize / Helm / directory options and its
  destination namespace;
* else a kustomization that no other kustomization includes, a Helm chart that is not
  another chart's dependency, and a plain YAML file outside all of these.

Each root knows which files its render reads (``reads``), so a change can tell which roots
it affects without rendering anything. The reads are a superset, never a subset: a
kustomize root reads every file under the folders of its kustomization closure (its own,
and those of the bases/components it includes, transitively); kustomize's root-only load
restrictor guarantees it reads nothing else of the repository.
"""

from __future__ import annotations

import fnmatch
import os
import posixpath
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import yaml

from .snapshot import Snapshot

KUSTOMIZATION_FILES = ("kustomization.yaml", "kustomization.yml", "Kustomization")
YAML_SUFFIXES = (".yaml", ".yml")
# Argo CD reads these in a plain directory source (reposerver/repository/repository.go,
# findManifests); .jsonnet is rendered by Argo CD but not here.
DIRECTORY_SUFFIXES = (".yaml", ".yml", ".json")
SKIP_DIRS = {".git"}
_APP_HINT = re.compile(rb"^\s*kind:\s*[\"']?Application[\"']?\s*$", re.MULTILINE)
_APPSET_HINT = re.compile(rb"^\s*kind:\s*[\"']?ApplicationSet[\"']?\s*$", re.MULTILINE)
_MAX_DISCOVERY_FILE = 4 * 1024 * 1024  # Applications and kustomizations are small


class _Loader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
    """Safe loading only: files of a PR are untrusted."""


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

    def reads(self, path: str) -> bool:
        if path in self.read_files:
            return True
        return any(d == "" or path == d or path.startswith(d + "/") for d in self.read_dirs)


@dataclass(slots=True)
class Discovery:
    roots: dict[str, Root]
    notes: list[tuple[str, str]] = field(default_factory=list)  # (repo path, why it is not rendered)


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


def _walk(snapshot: Snapshot) -> _Tree:
    files: list[str] = []
    kustomizations: dict[str, str] = {}
    charts: set[str] = set()
    for top, dirs, names in os.walk(snapshot.root):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS)
        rel_top = os.path.relpath(top, snapshot.root).replace(os.sep, "/")
        rel_top = "" if rel_top == "." else rel_top
        for name in sorted(names):
            rel = f"{rel_top}/{name}" if rel_top else name
            files.append(rel)
            if name in KUSTOMIZATION_FILES and rel_top not in kustomizations:
                kustomizations[rel_top] = name
            elif name == "Chart.yaml":
                charts.add(rel_top)
    return _Tree(snapshot, files, kustomizations, charts)


def _load_docs(data: bytes) -> list[Any]:
    try:
        return [d for d in yaml.load_all(data.decode("utf-8"), Loader=_Loader) if d is not None]
    except (yaml.YAMLError, UnicodeDecodeError, RecursionError):
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
    return "://" in ref or ref.startswith(("github.com/", "git@", "gitlab.com/", "bitbucket.org/"))


# -- kustomize ---------------------------------------------------------------------------------

def _kustomization_refs(tree: _Tree, folder: str) -> list[str]:
    """The kustomization folders the kustomization in ``folder`` includes (remote ones are left
    to the render, which fails on them offline)."""
    name = tree.kustomizations.get(folder)
    data = tree.read(f"{folder}/{name}" if folder else name) if name else None
    docs = _load_docs(data) if data else []
    doc = docs[0] if docs and isinstance(docs[0], Mapping) else {}
    dirs: list[str] = []
    for key in ("resources", "bases", "components"):
        entries = doc.get(key)
        for entry in entries if isinstance(entries, list) else []:
            if isinstance(entry, str) and not _is_remote(entry):
                target = _norm(folder, entry)
                if target is not None and target in tree.kustomizations:
                    dirs.append(target)
    return dirs


def _closure(tree: _Tree, folder: str, edges: Mapping[str, list[str]]) -> set[str]:
    seen = {folder}
    stack = [folder]
    while stack:
        for nxt in edges.get(stack.pop(), []):
            if nxt not in seen:
                seen.add(nxt)
                stack.append(nxt)
    return seen


# -- Argo CD Applications -------------------------------------------------------------------

def normalize_repo_url(url: str) -> str:
    """``git@github.com:org/repo.git``, ``https://github.com/org/repo`` → ``github.com/org/repo``."""
    u = url.strip().lower()
    if u.startswith("git@") and ":" in u:
        u = u[4:].replace(":", "/", 1)
    u = re.sub(r"^[a-z+]+://", "", u)
    u = re.sub(r"^[^@/]+@", "", u)
    u = u.rstrip("/")
    return u[:-4] if u.endswith(".git") else u


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
                      edges: Mapping[str, list[str]]) -> Root | None:
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
                read_files={file})
    external: list[str] = []
    for src in sources:
        if src.get("ref") and not src.get("path") and not src.get("chart"):
            continue  # only a ref for another source's $values
        if not ours(src):
            what = f"chart {src.get('chart')}" if src.get("chart") else f"path {src.get('path') or '.'}"
            external.append(f"{what} from {src.get('repoURL') or '?'}")
            continue
        path = _norm("", str(src.get("path") or "."))
        if path is None or not tree.isdir(path):
            root.problem = f"source path {src.get('path')!r} is not a folder of this repository"
            root.tool = "argocd"
            continue
        kind = _source_type(tree, src, path)
        if kind == "plugin":
            root.problem = "a config management plugin source: plugins are not run here"
            root.tool = "argocd"
            root.read_dirs.add(path)
            continue
        if kind == "kustomize":
            opts = _kustomize_options(src.get("kustomize"))
            root.sources.append(RenderSource("kustomize", path, kustomize=opts))
            root.read_dirs |= _closure(tree, path, edges)
            root.read_dirs |= {d for c in opts.components if (d := _norm(path, c)) is not None}
        elif kind == "helm":
            opts_h, problems = _helm_options(name, src.get("helm"), path, refs, dest_ns)
            if problems:
                root.problem, root.tool = "; ".join(problems), "helm"
            root.sources.append(RenderSource("helm", path, helm=opts_h))
            root.read_dirs.add(path)
            root.read_files |= set(opts_h.value_files)
        else:
            d = src.get("directory") if isinstance(src.get("directory"), Mapping) else {}
            opts_d = DirectoryOptions(bool(d.get("recurse")), str(d.get("include") or ""),
                                      str(d.get("exclude") or ""))
            root.sources.append(RenderSource("directory", path, directory=opts_d))
            if opts_d.recurse:
                root.read_dirs.add(path)
            else:
                root.read_files |= {f for f in tree.files if posixpath.dirname(f) == path}
    # $ref value files of external charts live here: a change to them changes what is deployed.
    for src in sources:
        if not ours(src) and src.get("chart"):
            helm = src.get("helm") if isinstance(src.get("helm"), Mapping) else {}
            for raw in helm.get("valueFiles") or []:
                raw = str(raw)
                if raw.startswith("$"):
                    ref, _, rest = raw[1:].partition("/")
                    if ref in refs and (target := _norm("", rest)) is not None:
                        root.read_files.add(target)
    if external:
        if not root.sources and root.read_files == {file}:
            root.elsewhere = "; ".join(external)  # a change to its file is a note, not a root
            return root
        root.problem = root.problem or (
            f"{'; '.join(external)}: not in this repository, so it cannot be rendered here (the "
            "webhook service with RAYSERVICE_IMPACT_ARGOCD_SERVER renders it through Argo CD)")
        root.tool = root.tool or "argocd"
    return root


def _applications(tree: _Tree) -> Iterable[tuple[str, Mapping[str, Any], str]]:
    """(file, document, kind) of every Application / ApplicationSet in the snapshot."""
    chart_templates = tuple(f"{c}/templates/" if c else "templates/" for c in tree.charts)
    for rel in tree.files:
        if not rel.endswith(YAML_SUFFIXES) or rel.startswith(chart_templates):
            continue
        data = tree.read(rel)
        if data is None or len(data) > _MAX_DISCOVERY_FILE or b"argoproj.io" not in data:
            continue
        if not (_APP_HINT.search(data) or _APPSET_HINT.search(data)):
            continue
        for doc in _load_docs(data):
            items = doc.get("items") if isinstance(doc, Mapping) and doc.get("kind") == "List" else [doc]
            for item in items if isinstance(items, list) else []:
                if (isinstance(item, Mapping) and str(item.get("apiVersion", "")).startswith("argoproj.io/")
                        and item.get("kind") in ("Application", "ApplicationSet")):
                    yield rel, item, str(item["kind"])


# -- discovery -----------------------------------------------------------------------------------

def discover(snapshot: Snapshot, *, repo_url: str | None = None) -> Discovery:
    """Every render root of ``snapshot``, by id."""
    tree = _walk(snapshot)
    edges = {folder: _kustomization_refs(tree, folder) for folder in tree.kustomizations}
    roots: dict[str, Root] = {}
    notes: list[tuple[str, str]] = []
    covered: set[str] = set()  # folders an Application renders: not roots of their own
    for file, doc, kind in _applications(tree):
        if kind == "ApplicationSet":
            name = (doc.get("metadata") or {}).get("name", "?") if isinstance(doc.get("metadata"), Mapping) \
                else "?"
            notes.append((file, f"ApplicationSet {name}: its generators are not evaluated; the folders it "
                                "points at are analysed as kustomize, Helm or plain roots"))
            continue
        root = _application_root(tree, doc, file, repo_url, edges)
        if root is None:
            continue
        if root.elsewhere:
            notes.append((file, f"{root.label} deploys {root.elsewhere}: not in this repository, "
                                "so not rendered; whether it holds RayServices, RayClusters or RayJobs is "
                                "not known here"))
            continue
        roots[root.id] = root
        covered |= {s.path for s in root.sources}
    included = {d for targets in edges.values() for d in targets}
    for folder in sorted(tree.kustomizations):
        if folder in included or folder in covered:
            continue
        closure = _closure(tree, folder, edges)
        root = Root(id=f"kustomize:{folder}", label=f"{folder or '.'} (kustomize)",
                    sources=[RenderSource("kustomize", folder, kustomize=KustomizeOptions())],
                    read_dirs=closure)
        roots[root.id] = root
    in_kustomize = tuple(f"{d}/" for d in tree.kustomizations if d)
    for chart in sorted(tree.charts):
        if chart in covered or _is_dependency(chart, tree.charts):
            continue
        if "" in tree.kustomizations or chart.startswith(in_kustomize):
            continue  # a chart a kustomization inflates (helmCharts): part of that root
        name = release_name_for(chart)
        root = Root(id=f"helm:{chart}", label=f"{chart or '.'} (helm)",
                    sources=[RenderSource("helm", chart, helm=HelmOptions(release_name=name))],
                    read_dirs={chart})
        roots[root.id] = root
    claimed = list(roots.values())
    for rel in tree.files:
        if not rel.endswith(YAML_SUFFIXES):
            continue
        if any(r.reads(rel) for r in claimed):
            continue
        roots[f"file:{rel}"] = Root(id=f"file:{rel}", label=rel, sources=[RenderSource("file", rel)],
                                    read_files={rel})
    for file, why in snapshot.refused.items():
        notes.append((file, why))
    return Discovery(roots, notes)


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
