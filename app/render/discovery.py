"""Every render root of a snapshot (docs/rendering.md): Argo CD Applications of this repository
(:mod:`app.render.roots`), Flux Kustomizations and HelmReleases (:mod:`app.render.flux`), then the
kustomizations, charts and plain files no Application or Flux object renders.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from . import flux
from .roots import (
    YAML_SUFFIXES,
    Discovery,
    HelmOptions,
    KustomizeOptions,
    Note,
    PathIndex,
    RenderSource,
    Root,
    _application_root,
    _applications,
    _closure,
    _is_dependency,
    _Kustomization,
    _kustomization,
    _outside_problem,
    _walk,
    read_submodules,
    release_name_for,
    under,
)
from .snapshot import Snapshot


def discover(snapshot: Snapshot, *, repo_url: str | None = None) -> Discovery:
    """Every render root of ``snapshot``, by id."""
    tree = _walk(snapshot)
    info = {folder: _kustomization(tree, folder) for folder in tree.kustomizations}
    roots: dict[str, Root] = {}
    notes: list[Note] = []
    covered: set[str] = set()  # folders an Application renders: not roots of their own
    for file, doc, kind in _applications(tree, notes):
        meta = doc.get("metadata") if isinstance(doc.get("metadata"), Mapping) else {}
        if kind == "ApplicationSet":
            notes.append(Note(file, f"ApplicationSet {meta.get('name', '?')}: its generators are not "
                                    "evaluated here, so the Applications it makes (and what they deploy) "
                                    "are unknown", "error", "unknown-source"))
            continue
        root = _application_root(tree, doc, file, repo_url, info)
        if root is None:
            continue
        if root.elsewhere:
            notes.append(Note(file, f"{root.label} deploys {root.elsewhere}: not in this repository, so "
                                    "not rendered; whether it holds RayServices, RayClusters or RayJobs "
                                    "is not known here", "error", "unknown-source"))
            continue
        roots[root.id] = root
        covered |= {s.path for s in root.sources}
    for root in flux.discover_flux(tree, info, repo_url, notes):
        roots[root.id] = root
        covered |= flux.covered_folders(tree, root)
    included = {d for k in info.values() for d in k.includes}
    for folder in sorted(tree.kustomizations):
        if folder in included or folder in covered:
            continue
        closure = _closure(tree, folder, info)
        root = Root(id=f"kustomize:{folder}", label=f"{folder or '.'} (kustomize)",
                    sources=[RenderSource("kustomize", folder, kustomize=KustomizeOptions())],
                    read_dirs=closure)
        if outside := _outside_problem(tree, closure, info):
            root.problem, root.tool, root.unknown = outside, "kustomize", True
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
    claimed = PathIndex(roots.values())
    for rel in tree.files:
        if rel.endswith(YAML_SUFFIXES) and not claimed.readers(rel):
            roots[f"file:{rel}"] = Root(id=f"file:{rel}", label=rel, sources=[RenderSource("file", rel)],
                                        read_files={rel})
    submodules = read_submodules(snapshot)
    if submodules:
        _mark_submodule_readers(roots.values(), submodules, info)
    notes += [Note(file, why) for file, why in snapshot.refused.items()]
    return Discovery(roots, notes, submodules)


def _mark_submodule_readers(roots: Iterable[Root], submodules: Mapping[str, str],
                            info: Mapping[str, _Kustomization]) -> None:
    """A root that reads a submodule's folder renders an empty folder here, and the checked-out
    submodule in Argo CD: its problem says so."""
    for root in roots:
        if not root.problem and (sub := _submodule_read(root, submodules, info)) is not None:
            root.problem = (f"it reads the submodule {sub or '.'} ({submodules[sub]}), whose content is "
                            "not in this repository's archive but is checked out by Argo CD: what it "
                            "deploys is unknown")
            root.tool, root.unknown = "git", True


def _submodule_read(root: Root, submodules: Mapping[str, str], info: Mapping[str, _Kustomization]
                    ) -> str | None:
    for path in sorted(root.read_dirs | root.read_files):
        k = info.get(path) if path in root.read_dirs else None
        if k is not None:  # a kustomization's folder: what it loads, not all that is below it
            for target in k.targets:
                if (sub := under(target, submodules)) is not None:
                    return sub
            continue
        if (sub := under(path, submodules)) is not None:
            return sub
        if path in root.read_dirs:
            inside = next((s for s in sorted(submodules) if path == "" or s.startswith(path + "/")), None)
            if inside is not None:
                return inside
    return None


