"""From a change (two snapshots and the paths it touched) to what the core compares.

1. Find the render roots of both revisions (:mod:`.roots`).
2. Keep the roots whose render reads a changed path.
3. Render each at both revisions, in parallel (bounded), each distinct input once.
4. Hand the core one :class:`diffing.Source` per root and revision, named after the root,
   plus a ``render-failed`` finding for every root that could not be rendered: both of its
   sides are then left out, so nothing is compared against a half.
"""

from __future__ import annotations

import hashlib
import os
import posixpath
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field

import diffing
from diffing import Finding, Source
from diffing.kube.scope import RAY_GROUP, decode, may_hold

from .discovery import discover
from .kustomize import render_kustomize
from .process import RenderError, RenderLimits
from .roots import (
    YAML_SUFFIXES,
    Discovery,
    PathIndex,
    RenderSource,
    Root,
    matches_directory,
    under,
    walk,
)
from .snapshot import Snapshot

MAX_PLAIN_FILE = 32 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class RenderOptions:
    kustomize: str | None = None        # "kubectl" | "kustomize" | None = whichever is on PATH
    limits: RenderLimits = RenderLimits()
    workers: int = max(1, min(8, os.cpu_count() or 1))
    repo_url: str | None = None         # this repository, to tell its Applications from others'



@dataclass(slots=True)
class RenderedChange:
    before: list[Source] = field(default_factory=list)
    after: list[Source] = field(default_factory=list)
    notes: list[Finding] = field(default_factory=list)
    root_files: dict[str, list[str]] = field(default_factory=dict)  # label -> changed paths it reads
    head_texts: dict[str, str] = field(default_factory=dict)  # those files' text at head (annotations)

    def read_head(self, path: str) -> str | None:
        return self.head_texts.get(path)
    renders: int = 0                                     # renderer runs (after de-duplication)
    # An operator change (diffing.operator.detect) and every root's render at base, to judge it.
    operator: tuple[object, ...] = ()
    fleet: list[Source] = field(default_factory=list)


class _Failed(Exception):
    def __init__(self, tool: str, message: str, unknown: bool = False) -> None:
        super().__init__(message)
        self.tool, self.message, self.unknown = tool, message, unknown


def render_change(base: Snapshot | None, head: Snapshot | None, changed: Iterable[str],
                  options: RenderOptions) -> RenderedChange:
    """What the change deploys at both revisions, for the roots it affects."""
    paths = {p for p in changed if p}
    disc_b = discover(base, repo_url=options.repo_url) if base else Discovery({})
    disc_h = discover(head, repo_url=options.repo_url) if head else Discovery({})
    out = RenderedChange()
    index_b, index_h = PathIndex(disc_b.roots.values()), PathIndex(disc_h.roots.values())
    readers = {p: index_b.readers(p) | index_h.readers(p) for p in paths}
    read_by: dict[str, list[str]] = {}
    for p in sorted(paths):
        for rid in readers[p]:
            read_by.setdefault(rid, []).append(p)
    affected = sorted(read_by)
    out.notes += _submodule_changes(paths, disc_b, disc_h)
    for disc in (disc_b, disc_h):
        for note in disc.notes:
            # A file an affected root reads fails that root's render instead.
            read = not note.always and any(not rid.startswith("file:") for rid in readers.get(note.file, ()))
            if note.file in paths and not any(n.path == note.file for n in out.notes) and not read:
                out.notes.append(Finding(note.severity, note.code, note.file, note.why))
    operator = _operator_changes(base, head, paths)
    if not affected and not operator:
        return out
    renderer = _Renderer(options)
    try:
        if operator:
            out.operator = operator
            _render_fleet(renderer, base or head, disc_b if base else disc_h, out)
        jobs: dict[tuple[str, str], Future[str]] = {}
        for rid in affected:
            for side, snap, disc in (("base", base, disc_b), ("head", head, disc_h)):
                root = disc.roots.get(rid)
                if root is not None and snap is not None:
                    jobs[(rid, side)] = renderer.submit(snap, root)
        for rid in affected:
            rb, rh = disc_b.roots.get(rid), disc_h.roots.get(rid)
            main = rh or rb
            assert main is not None
            out.root_files[main.label] = read_by[rid]
            if head is not None:
                for p in out.root_files[main.label]:
                    if p not in out.head_texts and (text := _small_text(head, p)) is not None:
                        out.head_texts[p] = text
            texts: dict[str, str] = {}
            failure: Finding | None = None
            for side, snap, root in (("base", base, rb), ("head", head, rh)):
                job = jobs.get((rid, side))
                if job is None:
                    continue
                try:
                    texts[side] = with_document(job.result(), root.application if root else "")
                except _Failed as exc:
                    rev = f" ({snap.revision[:12]})" if snap is not None and snap.revision else ""
                    code = "unknown-source" if exc.unknown else "render-failed"
                    failure = failure or Finding("error", code, main.label,
                                                 f"{exc.tool} at {side}{rev}: {exc.message}")
            if failure is not None:
                out.notes.append(failure)
                continue
            out.notes += _root_notes(main)
            lines = main.sources[0].type == "file" if main.sources else False
            if "base" in texts:
                out.before.append(Source(main.label, texts["base"], lines, rb.namespace if rb else None))
            if "head" in texts:
                out.after.append(Source(main.label, texts["head"], lines, rh.namespace if rh else None))
    finally:
        renderer.close()
    out.renders = renderer.runs
    return out


class _Renderer:
    """Renders roots on a bounded pool; the same input (source + the content it reads) runs once."""

    def __init__(self, options: RenderOptions) -> None:
        self.options = options
        self.pool = ThreadPoolExecutor(max_workers=options.workers, thread_name_prefix="render")
        self.cache: dict[tuple[object, ...], Future[str]] = {}
        self.digests: dict[tuple[str, str], str] = {}
        self.runs = 0

    def close(self) -> None:
        self.pool.shutdown(wait=True, cancel_futures=True)

    def submit(self, snap: Snapshot, root: Root) -> Future[str]:
        if root.problem:
            done: Future[str] = Future()
            done.set_exception(_Failed(root.tool or "render", root.problem, root.unknown))
            return done
        refused = sorted(p for p in snap.refused if root.reads(p))
        if refused:
            done = Future()
            done.set_exception(_Failed("render", f"{refused[0]}: {snap.refused[refused[0]]}"))
            return done
        parts = [self._source(snap, root, s) for s in root.sources]
        if len(parts) == 1:
            return parts[0]
        joined: Future[str] = Future()

        def join(_: Future[str]) -> None:
            if all(p.done() for p in parts) and not joined.done():
                try:
                    joined.set_result("\n---\n".join(p.result() for p in parts))
                except _Failed as exc:
                    joined.set_exception(exc)

        for p in parts:
            p.add_done_callback(join)
        return joined

    def _source(self, snap: Snapshot, root: Root, src: RenderSource) -> Future[str]:
        key = (src, self._digest(snap, root, src))
        if key not in self.cache:
            self.runs += src.type in ("kustomize", "helm", "flux-kustomize", "flux-helm")
            self.cache[key] = self.pool.submit(self._render, snap, src)
        return self.cache[key]

    def _digest(self, snap: Snapshot, root: Root, src: RenderSource) -> str:
        """The content ``src``'s render reads, as one hash (folders hashed once per snapshot).
        An Application's own file is not among it (its options are in ``src`` itself), so two
        Applications that deploy one folder with the same options render it once."""
        h = hashlib.sha256()
        for d in sorted(root.read_dirs):
            h.update(b"d\0" + d.encode() + b"\0" + self._dir_digest(snap, d).encode())
        value_files = set(src.helm.value_files) if src.helm else set()
        value_files |= set(getattr(src.flux, "chart_values", ()))  # a HelmRelease's valuesFiles
        for f in sorted(root.read_files):
            in_directory = src.type == "directory" and posixpath.dirname(f) == src.path
            if f == src.path or f in value_files or in_directory:
                h.update(b"f\0" + f.encode() + b"\0" + _file_digest(snap.path(f)).encode())
        return h.hexdigest()

    def _dir_digest(self, snap: Snapshot, rel: str) -> str:
        key = (snap.root, rel)
        if key not in self.digests:
            h = hashlib.sha256()
            top = snap.path(rel)
            for folder, _, files in walk(top):
                for name in files:
                    inner = f"{folder}/{name}" if folder else name
                    h.update(inner.encode() + b"\0" + _file_digest(os.path.join(top, inner)).encode())
            self.digests[key] = h.hexdigest()
        return self.digests[key]

    def _render(self, snap: Snapshot, src: RenderSource) -> str:
        try:
            return _RENDER[src.type](snap, src, self.options)
        except RenderError as exc:
            raise _Failed(exc.tool, repo_paths(exc.message, snap.root)) from None


def _operator_changes(base: Snapshot | None, head: Snapshot | None, paths: set[str]) -> tuple[object, ...]:
    """The KubeRay operator version changes among the changed YAML files (docs/operator-upgrade.md)."""
    from diffing.operator.detect import detect

    found: list[object] = []
    for p in sorted(paths):
        if not p.endswith(YAML_SUFFIXES):
            continue
        b = _small_text(base, p) if base is not None else None
        a = _small_text(head, p) if head is not None else None
        if b == a:
            continue
        try:
            found.extend(detect([(p, b, a)]))
        except diffing.ManifestError:
            continue  # not YAML (a Helm template): its root's render says what it deploys
    return tuple(found)


def _render_fleet(renderer: _Renderer, snap: Snapshot | None, disc: Discovery, out: RenderedChange) -> None:
    """Every root of ``snap`` rendered: the objects running before the operator changes. A root that
    cannot be rendered is a warning: its objects are not judged."""
    if snap is None:
        return
    jobs = {rid: renderer.submit(snap, root) for rid, root in sorted(disc.roots.items())}
    for rid, job in jobs.items():
        root = disc.roots[rid]
        try:
            text = job.result()
        except _Failed as exc:
            why = f"operator upgrade: {exc.tool}: {exc.message}; its objects are not judged"
            out.notes.append(Finding("warning", "render-failed", root.label, why))
            continue
        lines = root.sources[0].type == "file" if root.sources else False
        out.fleet.append(Source(root.label, text, lines, root.namespace))


def _small_text(snap: Snapshot, rel: str, limit: int = 1 << 20) -> str | None:
    """A changed file's text for annotations (None: absent, binary or over ``limit``)."""
    try:
        with open(snap.path(rel), "rb") as fh:
            data = fh.read(limit + 1)
    except OSError:
        return None
    if len(data) > limit:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def repo_paths(message: str, *roots: str) -> str:
    """A renderer's message with the snapshot's temporary folder cut out of its paths: a PR comment
    names ``overlays/prod/gone.yaml``, never a server path that changes on every run."""
    for root in roots:
        for form in {root, os.path.realpath(root)}:
            message = message.replace(form.rstrip(os.sep) + os.sep, "").replace(form, ".")
    return message


def _file_digest(path: str) -> str:
    """The content's hash; a symlink's own target for a symlink (a Flux root's artifact has no
    symlinks, so a file turned into a link to the same content renders differently there)."""
    h = hashlib.sha256()
    if os.path.islink(path):
        h.update(b"symlink\0" + os.fsencode(os.readlink(path)))
        return h.hexdigest()
    try:
        with open(path, "rb") as fh:
            while chunk := fh.read(1 << 20):
                h.update(chunk)
    except OSError:
        return "-"
    return h.hexdigest()


def _decode(tool: str, rel: str, data: bytes) -> str:
    """A manifest file's text, decoded as kubectl and Argo CD decode it (byte-order marks
    included); one that cannot be decoded fails its root: what it deploys is unknown."""
    try:
        return decode(data, rel)
    except diffing.ManifestError as exc:
        raise RenderError(tool, f"{rel}: {exc.reason}: it cannot be read as YAML, so what it deploys "
                                "is unknown") from None


def _read(snap: Snapshot, rel: str, tool: str) -> bytes:
    try:
        with open(snap.path(rel), "rb") as fh:
            data = fh.read(MAX_PLAIN_FILE + 1)
    except OSError as exc:
        raise RenderError(tool, f"{rel}: cannot read: {exc.strerror or exc}") from None
    if len(data) > MAX_PLAIN_FILE:
        raise RenderError(tool, f"{rel} is larger than {MAX_PLAIN_FILE} bytes")
    return data


def _render_plain_file(snap: Snapshot, src: RenderSource, options: RenderOptions) -> str:
    """A plain manifest file as it is. Only a file that may hold a KubeRay object is passed on
    (an exact test, :func:`diffing.kube.scope.may_hold`: a broken file that cannot hold one is no
    error); the core then reads it with a parser, so the kinds in it decide, not its spelling.
    A file that cannot be decoded at all fails: kubectl and Argo CD refuse it, so it deploys
    nothing, which must never read as "its objects were deleted"."""
    text = _decode("read", src.path, _read(snap, src.path, "read"))
    return text if may_hold(text, RAY_GROUP) else ""


def render_directory(snap: Snapshot, src: RenderSource, options: RenderOptions) -> str:
    opts = src.directory
    top = snap.path(src.path)
    texts: list[str] = []
    for folder, dirs, files in walk(top):
        if opts is None or not opts.recurse:
            dirs.clear()  # this folder's files only
        for name in files:
            rel = f"{folder}/{name}" if folder else name
            if not name.endswith(YAML_SUFFIXES):
                continue
            if opts is not None and not matches_directory(rel, opts):
                continue
            repo_rel = posixpath.join(src.path, rel) if src.path else rel
            texts.append(_decode("directory", repo_rel, _read(snap, repo_rel, "directory")))
    return "\n---\n".join(texts)


def with_document(text: str, document: str) -> str:
    """A rendered root with the Application that deploys it (``document``, "" for none): its sync
    options and ignore rules change what KubeRay receives, so they are analysed with the objects
    in every flow."""
    if not document:
        return text
    return f"{text}\n---\n{document}\n" if text.strip() else f"{document}\n"


def _submodule_changes(paths: Iterable[str], *discs: Discovery) -> list[Finding]:
    """An ``unknown-source`` error for each changed submodule (or ``.gitmodules``): Argo CD checks
    submodules out, so moving one changes what it deploys, and its content is not here."""
    subs = {p: u for d in discs for p, u in d.submodules.items()}
    out = []
    for path in sorted(paths):
        sub = ".gitmodules" if path == ".gitmodules" else under(path, subs)
        if sub is None:
            continue
        where = "the submodule list" if sub == ".gitmodules" else f"the submodule {sub} ({subs[sub]})"
        out.append(Finding("error", "unknown-source", path,
                           f"the change moves {where}: Argo CD deploys the submodule's content, which is not "
                           "in this repository's archive, so what it deploys is unknown"))
    return out


def _render_kustomize(snap: Snapshot, src: RenderSource, options: RenderOptions) -> str:
    return render_kustomize(snap, src.path, src.kustomize, options.limits, renderer=options.kustomize)


def _render_helm(snap: Snapshot, src: RenderSource, options: RenderOptions) -> str:
    from .helm import HelmSource, render_helm  # loaded only when a chart is rendered

    h = src.helm
    assert h is not None
    files = []
    for rel in h.value_files:
        if h.ignore_missing_value_files and not os.path.isfile(snap.path(rel)):
            continue
        files.append(snap.path(rel))
    return render_helm(HelmSource(chart_dir=snap.path(src.path), snapshot=snap.root,
                                  release_name=h.release_name, namespace=h.namespace,
                                  value_files=tuple(files), values=h.values, parameters=h.parameters),
                       options.limits)


def _render_flux_kustomize(snap: Snapshot, src: RenderSource, options: RenderOptions) -> str:
    from .flux_build import render_flux_kustomization

    return render_flux_kustomization(snap, src.path, src.flux, options.limits, renderer=options.kustomize)


def _render_flux_helm(snap: Snapshot, src: RenderSource, options: RenderOptions) -> str:
    from .flux_build import chart_source, post_render

    with chart_source(snap, src.path, src.flux) as chart_snap:
        text = _render_helm(chart_snap, src, options)
    return post_render(text, src.flux, options.limits, options.kustomize)


def _root_notes(root: Root) -> list[Finding]:
    """Warnings about a rendered root: what it left unread on purpose, and a suspended Flux object."""
    out = [Finding("warning", "not-rendered", root.label, why) for why in root.notes]
    if root.suspended:
        out.append(Finding("warning", "flux-suspended", root.label,
                           "spec.suspend is true: Flux applies nothing new while it is suspended "
                           "(kustomize-controller docs/spec/v1/kustomizations.md, Suspend); this is what it "
                           "applies once resumed"))
    return out


_RENDER: dict[str, Callable[[Snapshot, RenderSource, RenderOptions], str]] = {
    "file": _render_plain_file,
    "directory": render_directory,
    "kustomize": _render_kustomize,
    "helm": _render_helm,
    "flux-kustomize": _render_flux_kustomize,
    "flux-helm": _render_flux_helm,
}


def analyze_rendered(rendered: RenderedChange, **kwargs: object) -> diffing.Report:
    """``diffing.analyze`` on a rendered change. A rendered text the core cannot read (a Helm
    template that printed broken YAML) becomes a ``render-failed`` finding for its root, and
    the rest is still compared; a plain file that cannot be read stays an input error."""
    before, after, notes = list(rendered.before), list(rendered.after), list(rendered.notes)
    while True:
        try:
            report = diffing.analyze(before, after, notes=notes, **kwargs)  # type: ignore[arg-type]
            if rendered.operator:
                from diffing.operator.judge import judge, with_operator_upgrade

                upgrade = judge(rendered.operator, rendered.fleet,  # type: ignore[arg-type]
                                policy=kwargs.get("policy"))  # type: ignore[arg-type]
                report = with_operator_upgrade(report, upgrade)
            return report
        except diffing.ManifestError as exc:
            bad = exc.source
            if not bad or not any(s.name == bad and not s.lines for s in before + after):
                raise  # a plain file of the repository: an input error (exit 2) naming its line
            notes.append(Finding("error", "render-failed", bad, f"the rendered output cannot be read: "
                                                               f"{exc.message}"))
            before = [s for s in before if s.name != bad]
            after = [s for s in after if s.name != bad]
