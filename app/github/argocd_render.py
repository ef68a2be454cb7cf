"""A pull request rendered by Argo CD: the Applications of the repository, at both revisions.

Argo CD's repo-server renders exactly what it would deploy (its kustomize and Helm versions,
its plugins, sources outside this repository), so when the service can reach Argo CD it asks
it rather than rendering the tarballs itself:

1. list the Applications and keep those with a source (``source`` or any of ``sources``)
   from this repository (URLs compared by :func:`app.render.roots.normalize_repo_url`);
2. keep those the change affects: a changed file under one of their source paths or under
   a path of their ``argocd.argoproj.io/manifest-generate-paths`` annotation. A changed file
   under no Application's paths may still be read by any of them (a shared base), so then
   every Application of the repository is affected, unless such files are all ``*.md``;
3. ``GET /api/v1/applications/{name}/manifests?revision=SHA`` at base and head, at most
   :data:`CONCURRENCY` calls at once, each bounded by the client's timeout and retries.

An Application that Argo CD cannot render at a revision is a ``render-failed`` error finding
naming it and the revision; both of its sides are left out, so nothing is compared against
half of it.
"""

from __future__ import annotations

import asyncio
import json
import logging
import posixpath
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from app.clients.argocd import ArgoCDClient, ArgoCDError
from app.render.pipeline import RenderedChange, with_document
from app.render.roots import normalize_repo_url
from diffing import Finding, Source

from .change import PullRequest

log = logging.getLogger(__name__)

CONCURRENCY = 4
GENERATE_PATHS = "argocd.argoproj.io/manifest-generate-paths"
_GLOB = re.compile(r"[*?\[]")


@dataclass(frozen=True, slots=True)
class TrackedApp:
    """An Application that deploys from this repository, as far as the change needs it."""

    name: str
    app_namespace: str | None          # metadata.namespace (apps in any namespace)
    namespace: str | None              # spec.destination.namespace: for objects without one
    watched: tuple[str, ...]           # repository paths ("" = all of it) or globs
    source_positions: tuple[int, ...]  # 1-based positions of its sources from this repo (multi-source)
    document: str = ""                 # the Application as JSON: analysed with what it renders, since
                                       # its sync options change what KubeRay receives

    @property
    def label(self) -> str:
        """The root's name in the report, as the CLI names an Application it renders itself."""
        if self.app_namespace in (None, "", "argocd"):
            return f"Application {self.name}"
        return f"Application {self.app_namespace}/{self.name}"

    def watches(self, path: str) -> bool:
        return any(_covers(w, path) for w in self.watched)


def _covers(watched: str, path: str) -> bool:
    if _GLOB.search(watched):
        # Argo CD matches a glob entry with Go's filepath.Match: '*' stays within one folder.
        return _glob_regex(watched).fullmatch(path) is not None or any(
            _glob_regex(watched).fullmatch(parent) is not None for parent in _parents(path))
    return watched == "" or path == watched or path.startswith(watched + "/")


def _parents(path: str) -> Iterable[str]:
    while "/" in path:
        path = path.rsplit("/", 1)[0]
        yield path


def _glob_regex(pattern: str) -> re.Pattern[str]:
    out, i = [], 0
    while i < len(pattern):
        c = pattern[i]
        if c == "*":
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "[" and "]" in pattern[i + 1:]:
            end = pattern.index("]", i + 1)
            body = pattern[i + 1:end].replace("\\", "\\\\")
            out.append("[" + ("^" + body[1:] if body.startswith("^") else body) + "]")
            i = end
        else:
            out.append(re.escape(c))
        i += 1
    return re.compile("".join(out))


def _repo_path(raw: str) -> str | None:
    """A repository-relative folder, "" for the root; None for one that leaves the repository."""
    path = posixpath.normpath(raw.strip().lstrip("/") or ".")
    if path == ".":
        return ""
    return None if path == ".." or path.startswith("../") else path


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def tracked_apps(items: Iterable[Mapping[str, Any]], repo_url: str, owner_repo: str = ""
                 ) -> list[TrackedApp]:
    """The Applications with a source from ``repo_url`` (or, without one, a URL ending in
    ``owner/repo``), with the paths whose change may change what they render."""
    want = normalize_repo_url(repo_url) if repo_url else ""
    suffix = "/" + owner_repo.lower()

    def ours(source: Mapping[str, Any]) -> bool:
        url = normalize_repo_url(str(source.get("repoURL") or ""))
        return bool(url) and (url == want if want else url.endswith(suffix))

    apps = []
    for item in items:
        meta, spec = _mapping(item.get("metadata")), _mapping(item.get("spec"))
        name = str(meta.get("name") or "")
        multi = isinstance(spec.get("sources"), list) and bool(spec.get("sources"))
        sources = [_mapping(s) for s in (spec["sources"] if multi else [spec.get("source")])]
        positions = [i for i, s in enumerate(sources, start=1) if ours(s)]
        if not name or not positions:
            continue
        mine = [sources[i - 1] for i in positions]
        # A source that is only a ``ref`` (for another source's ``$ref/...`` value files) renders
        # nothing itself: what it contributes are those files.
        refs = {str(s["ref"]) for s in mine if s.get("ref")}
        paths = {p for s in mine if not (s.get("ref") and not s.get("path"))
                 if (p := _repo_path(str(s.get("path") or "."))) is not None}
        watched = set(paths)
        for source in sources:
            for raw in _mapping(source.get("helm")).get("valueFiles") or []:
                ref, _, rest = str(raw).partition("/")
                if ref.startswith("$") and ref[1:] in refs and (f := _repo_path(rest)) is not None:
                    watched.add(f)
        for entry in str(_mapping(meta.get("annotations")).get(GENERATE_PATHS) or "").split(";"):
            entry = entry.strip()
            if not entry:
                continue
            if entry.startswith("/"):  # relative to the repository's root
                resolved = [_repo_path(entry)]
            else:                      # relative to the source path
                resolved = [_repo_path(posixpath.join(p, entry)) for p in paths or {""}]
            watched |= {r for r in resolved if r is not None}
        apps.append(TrackedApp(
            name=name, app_namespace=str(meta.get("namespace") or "") or None,
            namespace=str(_mapping(spec.get("destination")).get("namespace") or "") or None,
            watched=tuple(sorted(watched)), source_positions=tuple(positions) if multi else (),
            document=json.dumps(_application_spec(item), sort_keys=True)))
    return sorted(apps, key=lambda a: (a.app_namespace or "", a.name))


def _application_spec(item: Mapping[str, Any]) -> dict[str, Any]:
    """What of a live Application the analysis reads: its identity and spec, not its status."""
    meta = _mapping(item.get("metadata"))
    return {"apiVersion": str(item.get("apiVersion") or "argoproj.io/v1alpha1"), "kind": "Application",
            "metadata": {k: meta[k] for k in ("name", "namespace") if k in meta},
            "spec": dict(_mapping(item.get("spec")))}


def affected_apps(apps: Sequence[TrackedApp], changed: Iterable[str]) -> list[TrackedApp]:
    """The Applications whose render the change may alter (see the module docstring, step 2)."""
    changed = sorted(set(changed))
    hit = [a for a in apps if any(a.watches(p) for p in changed)]
    stray = [p for p in changed if not any(a.watches(p) for a in apps)]
    if any(not p.lower().endswith(".md") for p in stray):
        return list(apps)
    return hit


def manifests_text(body: Mapping[str, Any]) -> str:
    """A ``repositoryManifestResponse``'s manifests (each one object as a JSON string) as one
    YAML stream: JSON is YAML, so each string is a document as it is."""
    manifests = body.get("manifests") or []  # "manifests": null when nothing is rendered
    if not isinstance(manifests, list) or not all(isinstance(m, str) for m in manifests):
        raise ArgoCDError("Argo CD answered manifests that are not a list of JSON strings")
    return "\n---\n".join(manifests)


async def render_with_argocd(client: ArgoCDClient, pr: PullRequest, changed: Iterable[str]
                             ) -> RenderedChange:
    """The affected Applications rendered by Argo CD at ``pr.base_sha`` and ``pr.head_sha``.

    Listing the Applications failing raises :class:`ArgoCDError` (nothing can be said); one
    Application failing is a finding about it. The client is synchronous: calls run in threads.
    """
    items = await asyncio.to_thread(client.applications)
    apps = tracked_apps(items, pr.repo_url, f"{pr.owner}/{pr.repo}")
    affected = affected_apps(apps, changed)
    log.info("argocd %s: %d Application(s) of the repository, %d affected", pr.full_name, len(apps),
             len(affected))
    gate = asyncio.Semaphore(CONCURRENCY)

    async def fetch(app: TrackedApp, revision: str) -> str:
        async with gate:
            body = await asyncio.to_thread(client.application_manifests, app.name, revision,
                                           app.app_namespace, source_positions=app.source_positions)
        return await asyncio.to_thread(manifests_text, body)

    sides = (("base", pr.base_sha), ("head", pr.head_sha))
    results = await asyncio.gather(*(fetch(app, sha) for app in affected for _, sha in sides),
                                   return_exceptions=True)
    out = RenderedChange()
    for i, app in enumerate(affected):
        (base, head), problem = results[2 * i: 2 * i + 2], ""
        for (side, sha), result in zip(sides, (base, head), strict=True):
            if isinstance(result, ArgoCDError):
                problem = problem or f"Argo CD at {side} ({sha[:12]}): {result}"
            elif isinstance(result, BaseException):
                raise result  # a bug, not an answer of Argo CD
        if problem:
            out.notes.append(Finding("error", "render-failed", app.label, problem))
            continue
        assert isinstance(base, str) and isinstance(head, str)
        out.before.append(Source(app.label, with_document(base, app.document), False, app.namespace))
        out.after.append(Source(app.label, with_document(head, app.document), False, app.namespace))
        out.renders += 2
    return out
