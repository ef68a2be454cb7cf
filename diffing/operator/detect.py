"""Find a change of the KubeRay operator itself in the before/after texts of the changed files.

Pure: (path, before text, after text) per changed file in, :class:`OperatorChange` values out.
What counts as the operator (docs/operator-upgrade.md, "What it detects"):

* a Helm chart dependency named ``kuberay-operator`` (``Chart.yaml`` ``dependencies``);
* the operator image anywhere in a YAML value: an ``image:`` string ``…/kuberay/operator:TAG``, a
  mapping ``{repository: …/kuberay/operator, tag: TAG}``, or ``image.tag`` under a
  ``kuberay-operator`` key (the values of that chart as a dependency);
* an Argo CD Application (or ApplicationSet template) whose source is the ``kuberay-operator``
  chart or a path of github.com/ray-project/kuberay: its ``targetRevision`` (and Helm
  parameters ``image.tag``);
* a kustomization: ``images`` entries for the operator image (``newTag``) and remote resources
  of github.com/ray-project/kuberay (``?ref=``);
* a ray.io CustomResourceDefinition that changed (no version can be read from it).

A version is read only when it is one exact release (``v1.7.0``, ``1.6.2``, ``1.7.0-rc.0``); a
range, a branch or a digest is kept as written and :attr:`OperatorChange.version_known` is
False: the judge then says the version is unknown instead of guessing.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence

from diffing.hints import Any
from diffing.kube.loading import load_documents
from diffing.kube.paths import Key, Path, format_path
from diffing.record import Record, set_field

CHART = "kuberay-operator"
RAY_CRDS = ("rayclusters.ray.io", "rayservices.ray.io", "rayjobs.ray.io", "raycronjobs.ray.io")
_IMAGE = re.compile(r"(?:^|.*/)kuberay/operator(?::(?P<tag>[^@/\s]+))?(?:@(?P<digest>\S+))?")
_REPOSITORY = re.compile(r"(?:^|.*/)kuberay/operator")
_RELEASE = re.compile(r"v?(\d+)\.(\d+)\.(\d+)(-[0-9A-Za-z.\-]+)?")
_KUBERAY_REPO = re.compile(r"github\.com[/:]ray-project/kuberay(?:\.git)?(?:/|$|\?|//)")
_REF = re.compile(r"[?&]ref=([^&\s]+)")

# How each source carries the CRDs (docs/operator-upgrade.md, "The CRDs").
HELM_CRDS = "helm-crds"            # a chart's crds/ folder: installed once, never upgraded by Helm
ARGOCD_HELM = "argocd-helm"        # Argo CD renders the chart with its CRDs and syncs them
ARGOCD_SKIP_CRDS = "argocd-skip-crds"  # the same with helm.skipCrds: this app leaves them alone
KUSTOMIZE = "kustomize"            # a remote kustomize base: CRDs only if the base includes them
IMAGE_ONLY = "image-only"          # only the image moves: the installed CRDs stay as they are
CRD_FILES = "crd-files"            # the CRD manifests themselves changed


class OperatorChange(Record):
    """One place in one file where the operator version changes."""

    __slots__ = ("path", "field", "via", "before", "after", "crds")

    path: str          # the file
    field: str         # where in it: ``dependencies[name=kuberay-operator].version``
    via: str  # chart-dependency | image | argocd-application | kustomize-image | kustomize-remote | crd
    before: str | None  # as written (None: absent on that side)
    after: str | None
    crds: str          # how this source carries the CRDs (HELM_CRDS ...)

    def __init__(self, path: str, field: str, via: str, before: str | None, after: str | None,
                 crds: str) -> None:
        set_field(self, "path", path)
        set_field(self, "field", field)
        set_field(self, "via", via)
        set_field(self, "before", before)
        set_field(self, "after", after)
        set_field(self, "crds", crds)

    @property
    def version_known(self) -> bool:
        return release(self.before) is not None and release(self.after) is not None

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "field": self.field, "via": self.via, "before": self.before,
                "after": self.after, "crds": self.crds}


def release(text: str | None) -> str | None:
    """``"1.7.0"`` from ``"v1.7.0"``/``"1.7.0"``; None for anything that is not one release."""
    if text is None:
        return None
    m = _RELEASE.fullmatch(str(text).strip())
    if not m:
        return None
    return f"{m.group(1)}.{m.group(2)}.{m.group(3)}{m.group(4) or ''}"


def detect(files: Iterable[tuple[str, str | None, str | None]]) -> tuple[OperatorChange, ...]:
    """The operator changes in ``(path, before text, after text)`` per changed file (``None``:
    the file is absent on that side).

    >>> detect([("Chart.yaml", "dependencies: [{name: kuberay-operator, version: 1.6.2}]",
    ...          "dependencies: [{name: kuberay-operator, version: 1.7.0}]")])[0].after
    '1.7.0'

    Raises :class:`~diffing.errors.ManifestError` (naming the file and document) for a text
    that cannot be read as YAML.
    """
    out: list[OperatorChange] = []
    for path, before, after in files:
        b, a = _found(path, before), _found(path, after)
        for key in sorted(set(b) | set(a)):
            vb, va = b.get(key), a.get(key)
            if vb is None and va is None or vb is not None and va is not None and vb[0] == va[0]:
                continue
            field, via = key
            crds = (va or vb or (None, IMAGE_ONLY))[1]
            out.append(OperatorChange(path, field, via, vb[0] if vb else None, va[0] if va else None, crds))
    return tuple(out)


_Found = dict[tuple[str, str], tuple[str | None, str]]  # (field, via) -> (version text, crds)


def _found(path: str, text: str | None) -> _Found:
    if not text or not text.strip():
        return {}
    out: _Found = {}
    base = posixpath.basename(path)
    for doc in load_documents(text, source=path):
        value = doc.value
        if not isinstance(value, Mapping):
            continue
        prefix = f"document {doc.index}: " if doc.index > 1 else ""
        for field, via, version, crds in _scan(base, value):
            out[(prefix + field, via)] = (version, crds)
    return out


def _scan(base: str, doc: Mapping[str, Any]) -> Iterator[tuple[str, str, str | None, str]]:
    kind = str(doc.get("kind", ""))
    api = str(doc.get("apiVersion", ""))
    if kind == "CustomResourceDefinition" and _name(doc) in RAY_CRDS:
        # The whole CRD as its "version": any edit of it is a change.
        yield f"CustomResourceDefinition {_name(doc)}", "crd", _fingerprint(doc), CRD_FILES
        return
    if api.startswith("argoproj.io/") and kind in ("Application", "ApplicationSet"):
        spec = doc.get("spec")
        at: Path = ("spec",)
        if kind == "ApplicationSet":
            spec = _get(spec, "template", "spec")
            at = ("spec", "template", "spec")
        yield from _argocd(spec, at)
    if base in ("Chart.yaml", "Chart.yml"):
        for i, dep in enumerate(_seq(doc.get("dependencies"))):
            if isinstance(dep, Mapping) and dep.get("name") == CHART:
                key = Key("name", CHART) if _unique(doc.get("dependencies"), CHART) else i
                yield format_path(("dependencies", key, "version")), "chart-dependency", \
                    _text(dep.get("version")), HELM_CRDS
    if kind == "Kustomization" or base in ("kustomization.yaml", "kustomization.yml", "Kustomization"):
        for img in _seq(doc.get("images")):
            if isinstance(img, Mapping) and _REPOSITORY.fullmatch(str(img.get("name", ""))):
                tag = img.get("newTag", img.get("digest"))
                yield format_path(("images", Key("name", str(img["name"])), "newTag")), \
                    "kustomize-image", _text(tag), IMAGE_ONLY
        for field in ("resources", "bases", "components"):
            for entry in _seq(doc.get(field)):
                if isinstance(entry, str) and _KUBERAY_REPO.search(entry):
                    ref = _REF.search(entry)
                    where = entry.split("?")[0]
                    version = ref.group(1) if ref else None
                    yield format_path((field, where)), "kustomize-remote", version, KUSTOMIZE
    yield from _images(doc, ())


def _argocd(spec: Any, at: Path) -> Iterator[tuple[str, str, str | None, str]]:
    sources: list[tuple[Path, Any]] = []
    if isinstance(_get(spec, "source"), Mapping):
        sources.append((at + ("source",), _get(spec, "source")))
    for i, s in enumerate(_seq(_get(spec, "sources"))):
        sources.append((at + ("sources", i), s))
    for where, src in sources:
        if not isinstance(src, Mapping):
            continue
        repo, chart, path = str(src.get("repoURL", "")), src.get("chart"), str(src.get("path", ""))
        is_chart = chart == CHART or (bool(_KUBERAY_REPO.search(repo + "/")) and
                                      path.strip("/").startswith("helm-chart/kuberay-operator"))
        is_kuberay = is_chart or (bool(_KUBERAY_REPO.search(repo + "/"))
                                  and path.strip("/").startswith("ray-operator/config"))
        if not is_kuberay:
            continue
        helm: Mapping[str, Any] = src["helm"] if isinstance(src.get("helm"), Mapping) else {}
        crds = KUSTOMIZE
        if is_chart:
            crds = ARGOCD_SKIP_CRDS if helm.get("skipCrds") is True else ARGOCD_HELM
        if path.strip("/").endswith("/crds") or path.strip("/").endswith("config/crd"):
            crds = CRD_FILES
        revision = _text(src.get("targetRevision"))
        yield format_path(where + ("targetRevision",)), "argocd-application", revision, crds
        for p in _seq(helm.get("parameters")):
            if isinstance(p, Mapping) and p.get("name") == "image.tag":
                yield format_path(where + ("helm", "parameters", Key("name", "image.tag"), "value")), \
                    "image", _text(p.get("value")), IMAGE_ONLY


def _images(value: Any, at: Path, depth: int = 0) -> Iterator[tuple[str, str, str | None, str]]:
    """The operator image's tag wherever a value names it (values files, Deployments, Helm
    ``valuesObject``)."""
    if depth > 64:
        return
    if isinstance(value, str):
        m = _IMAGE.fullmatch(value.strip())
        if m and at and at[-1] == "image":
            yield format_path(at), "image", m.group("tag") or m.group("digest"), IMAGE_ONLY
        return
    if isinstance(value, Mapping):
        repo = value.get("repository")
        if isinstance(repo, str) and _REPOSITORY.fullmatch(repo.strip()) and "tag" in value:
            yield format_path(at + ("tag",)), "image", _text(value.get("tag")), IMAGE_ONLY
        elif at and at[-1] == CHART and isinstance(value.get("image"), Mapping) and "tag" in value["image"]:
            yield format_path(at + ("image", "tag")), "image", _text(value["image"].get("tag")), IMAGE_ONLY
        for k, v in value.items():
            if isinstance(k, str):
                yield from _images(v, at + (k,), depth + 1)
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _images(v, at + (i,), depth + 1)


def _fingerprint(doc: Mapping[str, Any]) -> str:
    import hashlib
    import json

    data = json.dumps(doc.get("spec"), sort_keys=True, default=str).encode()
    return "sha256:" + hashlib.sha256(data).hexdigest()[:12]


def _name(doc: Mapping[str, Any]) -> str:
    return str(_get(doc, "metadata", "name") or "")


def _get(value: Any, *keys: str) -> Any:
    for k in keys:
        if not isinstance(value, Mapping):
            return None
        value = value.get(k)
    return value


def _seq(value: Any) -> Sequence[Any]:
    return value if isinstance(value, list) else ()


def _unique(deps: Any, name: str) -> bool:
    return sum(1 for d in _seq(deps) if isinstance(d, Mapping) and d.get("name") == name) == 1


def _text(value: Any) -> str | None:
    return None if value is None else str(value)
