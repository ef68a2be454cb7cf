"""KubeRay manifests as read from texts: pairing keys, server-set fields, collection.

RayServices, standalone RayClusters and RayJobs are collected, each by (kind, namespace,
name); a RayCluster that a RayService or RayJob owns (an ownerReference) is the operator's,
not the user's, and is left with the other kinds, to be named as not analysed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from diffing.errors import ManifestError
from diffing.flux import is_deployer
from diffing.hints import Any
from diffing.kinds import NAMES, ORDER
from diffing.kube.loading import Document, Limits, load_documents
from diffing.kube.paths import Path
from diffing.kube.schema import SchemaSet
from diffing.kube.scope import expand_lists
from diffing.kube.values import mapping
from diffing.live import live_key
from diffing.record import Record, set_field


class Source(Record):
    """One text to analyse and where it came from.

    ``lines`` is False for a renderer's output (kustomize, Helm, Argo CD): its line numbers
    are the rendered stream's, not any file's, so findings leave them out.
    """

    __slots__ = ("name", "text", "lines", "namespace")

    name: str
    text: str
    lines: bool
    namespace: str | None  # for objects without one (an Argo CD Application's destination)

    def __init__(self, name: str, text: str, lines: bool = True, namespace: str | None = None) -> None:
        set_field(self, "name", name)
        set_field(self, "text", text)
        set_field(self, "lines", lines)
        set_field(self, "namespace", namespace)


Texts = str | Sequence[tuple[str, str] | Source]


SERVER_METADATA = ("managedFields", "resourceVersion", "uid", "generation", "creationTimestamp",
                   "selfLink", "deletionTimestamp", "deletionGracePeriodSeconds")

SERVER_ANNOTATIONS = ("kubectl.kubernetes.io/last-applied-configuration",)

OPERATOR_FINALIZERS = ("ray.io/rayservice-finalizer", "ray.io/rayjob-finalizer",
                       "ray.io/gcs-ft-redis-cleanup-finalizer")

# The kinds analysed, in the order a report lists them.
KINDS = NAMES  # the registry's list (diffing.kinds), in report order
KIND_ORDER = ORDER


class Manifest(Record):
    """One RayService, RayCluster or RayJob as read from a text."""

    __slots__ = ("obj", "doc", "source", "lines", "namespace")

    obj: dict[str, Any]
    doc: Document
    source: str
    lines: bool
    namespace: str

    def __init__(self, obj: dict[str, Any], doc: Document, source: str, lines: bool = True,
                 namespace: str = "default") -> None:
        set_field(self, "obj", obj)
        set_field(self, "doc", doc)
        set_field(self, "source", source)
        set_field(self, "lines", lines)
        set_field(self, "namespace", namespace)

    @property
    def api_version(self) -> str:
        return str(self.obj.get("apiVersion", ""))

    @property
    def kind(self) -> str:
        return str(self.obj.get("kind", ""))

    @property
    def ident(self) -> Ident:
        return (self.kind, *self.key)

    @property
    def key(self) -> tuple[str, str]:
        meta = self.obj.get("metadata") or {}
        return str(meta.get("namespace") or self.namespace), str(meta["name"])

    def line(self, path: Path = ()) -> int | None:
        return self.doc.line_of(path) if self.lines else None

    def where(self, path: Path = ()) -> str:
        line = self.line(path)
        return f"{self.source}:{line}" if line else self.source


def strip_server_fields(obj: Mapping[str, Any]) -> dict[str, Any]:
    """Drop what the API server and the operator write: status, managedFields, uid, ..."""
    out = {k: v for k, v in obj.items() if k != "status"}
    meta = dict(mapping(out.get("metadata")))
    for k in SERVER_METADATA:
        meta.pop(k, None)
    if isinstance(meta.get("annotations"), dict):
        ann = {k: v for k, v in meta["annotations"].items() if k not in SERVER_ANNOTATIONS}
        if ann:
            meta["annotations"] = ann
        else:
            meta.pop("annotations")
    if isinstance(meta.get("finalizers"), list):
        fin = [f for f in meta["finalizers"] if f not in OPERATOR_FINALIZERS]
        if fin:
            meta["finalizers"] = fin
        else:
            meta.pop("finalizers")
    out["metadata"] = meta
    return out


def is_rayservice(value: Any) -> bool:
    return (isinstance(value, dict) and value.get("kind") == "RayService"
            and str(value.get("apiVersion", "")).startswith("ray.io/"))


def analysed_kind(value: Any) -> str | None:
    """The kind when ``value`` is one this tool analyses, else ``None``.

    An object another analysed kind creates and owns (what ``kubectl get`` or an Argo CD live
    tree shows next to its owner) is not: the owner's analysis covers it. That is a RayCluster
    of a RayService or RayJob, and a RayJob of a RayCronJob.
    """
    kind = value.get("kind") if isinstance(value, dict) else None
    if not isinstance(kind, str) or kind not in KIND_ORDER:
        return None
    if not str(value.get("apiVersion", "")).startswith("ray.io/"):
        return None
    owner_kinds = _OWNERS.get(value["kind"])
    if owner_kinds:
        meta = value.get("metadata")
        owners = meta.get("ownerReferences") if isinstance(meta, dict) else None
        if isinstance(owners, list) and any(isinstance(o, dict) and o.get("kind") in owner_kinds
                                            for o in owners):
            return None
    return str(value["kind"])


# Which kinds create and own objects of another analysed kind.
_OWNERS = {"RayCluster": ("RayService", "RayJob"), "RayJob": ("RayCronJob",)}


ObjectKey = tuple[str, str, str]  # (kind, namespace, name) of an object that is not analysed
Ident = tuple[str, str, str]  # (kind, namespace, name) of an analysed object


def _other_key(value: Any, namespace: str | None) -> ObjectKey | None:
    if not isinstance(value, dict) or not isinstance(value.get("kind"), str):
        return None
    raw = value.get("metadata")
    meta: dict[str, Any] = raw if isinstance(raw, dict) else {}
    return (value["kind"], str(meta.get("namespace") or namespace or "default"), str(meta.get("name") or ""))


def collect(text: str, source: str, limits: Limits, *, lines: bool = True, namespace: str | None = None,
            others: dict[ObjectKey, Any] | None = None, deployers: dict[str, Any] | None = None
            ) -> tuple[dict[Ident, Manifest], list[Any]]:
    """RayServices, RayClusters and RayJobs of a text by (kind, namespace, name), plus any Argo
    CD Applications in it. Every other object goes into ``others`` (when given), so a change
    to them can be named as not analysed rather than passed over in silence. A text whose
    last document is a Flux Kustomization or HelmRelease puts it into ``deployers[source]`` (when
    given): a rendered Flux root carries the object that deploys it last (app/render/pipeline.py
    with_document)."""
    found: dict[Ident, Manifest] = {}
    apps: list[Any] = []
    last: Any = None
    for doc in load_documents(text, source=source, limits=limits):
        try:
            # Any object with an ``items`` list is a list, whatever its kind (see .scope).
            values = list(expand_lists(doc.value))
        except ManifestError as exc:
            raise ManifestError(exc.reason, source=source, document=doc.index, line=doc.line) from None
        for value in values:
            if isinstance(value, dict) and value.get("kind") == "Application" and str(
                    value.get("apiVersion", "")).startswith("argoproj.io/"):
                apps.append(value)
            last = value
            kind = analysed_kind(value)
            if kind is None:
                if others is not None and (key := _other_key(value, namespace)) is not None:
                    others[key] = value
                continue
            meta = value.get("metadata")
            if kind != "RayService" and isinstance(meta, dict) and not meta.get("name") and isinstance(
                    meta.get("generateName"), str) and meta["generateName"]:
                # `kubectl create` names it at random (KubeRay's Kueue samples do this): the
                # prefix is what pairs the two sides, and the report shows it with a "*".
                value = {**value, "metadata": {**meta, "name": meta["generateName"] + "*"}}
                meta = value["metadata"]
            if not isinstance(meta, dict) or not isinstance(meta.get("name"), str) or not meta["name"]:
                raise ManifestError(f"a {kind} without metadata.name", source=source,
                                    document=doc.index, line=doc.line, path="metadata.name")
            if not isinstance(value.get("spec"), dict):
                raise ManifestError(f"a {kind} without a spec mapping", source=source,
                                    document=doc.index, line=doc.line, path="spec")
            m = Manifest(strip_server_fields(value), doc, source, lines, namespace or "default")
            if m.ident in found:
                first = found[m.ident]
                raise ManifestError(
                    f"{kind} {m.key[0]}/{m.key[1]} appears twice (first in document "
                    f"{first.doc.index}, line {first.doc.line})",
                    source=source, document=doc.index, line=doc.line)
            found[m.ident] = m
    if deployers is not None and is_deployer(last):
        deployers[source] = last
    return found, apps


class Duplicate(Record):
    """The same (namespace, name) produced by two sources (e.g. two Argo CD Applications)."""

    __slots__ = ("key", "kept", "dropped")

    key: Ident
    kept: str
    dropped: str

    def __init__(self, key: Ident, kept: str, dropped: str) -> None:
        set_field(self, "key", key)
        set_field(self, "kept", kept)
        set_field(self, "dropped", dropped)


def collect_all(texts: Texts, source: str, limits: Limits, others: dict[ObjectKey, Any] | None = None,
                deployers: dict[str, Any] | None = None
                ) -> tuple[dict[Ident, Manifest], list[Any], list[Duplicate]]:
    """Analysed objects across every text, the Applications among them, and cross-source duplicates.

    A name twice in one text is an input error; the same name from two different sources is
    not silently merged either: the first is kept and the clash is returned, for a finding.
    """
    pairs: list[Source] = [Source(source, texts)] if isinstance(texts, str) else [
        t if isinstance(t, Source) else Source(t[0], t[1]) for t in texts]
    found: dict[Ident, Manifest] = {}
    apps: list[Any] = []
    duplicates: list[Duplicate] = []
    for src in pairs:
        more, more_apps = collect(src.text or "", src.name, limits, lines=src.lines,
                                  namespace=src.namespace, others=others, deployers=deployers)
        for key, m in more.items():
            if key in found:
                if found[key].source == src.name:
                    raise ManifestError(
                        f"{key[0]} {key[1]}/{key[2]} appears twice (also in {found[key].where()})",
                        source=src.name, document=m.doc.index, line=m.doc.line)
                duplicates.append(Duplicate(key, found[key].source, src.name))
                continue
            found[key] = m
        apps.extend(more_apps)
    return found, apps, duplicates


PLUMBING = frozenset({"Application", "ApplicationSet", "AppProject", "Kustomization", "HelmRelease",
                      "GitRepository", "OCIRepository", "HelmRepository", "HelmChart", "Bucket"})


def changed_others(before: dict[ObjectKey, Any], after: dict[ObjectKey, Any]) -> dict[str, int]:
    """How many objects of each other kind were added, removed or changed (``{"RayCluster": 1}``).
    Argo CD's own objects (Applications, ApplicationSets) and Flux's (Kustomizations, HelmReleases
    and their sources) are the deployment's plumbing: left out."""
    counts: dict[str, int] = {}
    for key in before.keys() | after.keys():
        if key[0] in PLUMBING:
            continue
        if before.get(key) != after.get(key):
            counts[key[0]] = counts.get(key[0], 0) + 1
    return dict(sorted(counts.items()))


def live_objects(texts: Texts, source: str = "after") -> dict[str, dict[str, Any]]:
    """Every analysed object of ``texts`` by its live key (:func:`diffing.live.live_key`), for a
    caller that looks them up in the cluster."""
    found, _, _ = collect_all(texts, source, Limits())
    return {live_key(ident): m.obj for ident, m in found.items()}


def crd_schemas(crd_text: str) -> SchemaSet:
    """A SchemaSet from a user-supplied RayService CRD (``--crd``)."""
    value = load_documents(crd_text, source="crd")
    crd = next((d.value for d in value if isinstance(d.value, dict)
                and d.value.get("kind") == "CustomResourceDefinition"), None)
    try:
        versions = {v["name"]: v["schema"]["openAPIV3Schema"] for v in crd["spec"]["versions"]}  # type: ignore[index]
    except (TypeError, KeyError) as exc:
        raise ManifestError(f"not a CustomResourceDefinition with versions[].schema ({exc})",
                            source="crd") from None
    return SchemaSet.from_versions(versions)
