"""The operator's view of one KubeRay version: API-server defaults, Go encoding, the cluster hash."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from functools import lru_cache

from diffing import record
from diffing.hints import Any
from diffing.kube.diff import Differ, Difference
from diffing.kube.gojson import ABSENT, OMIT, GoTypes, TypeDesc, same_encoding, struct
from diffing.kube.manifests import Manifest
from diffing.kube.paths import Path
from diffing.kube.schema import STORAGE_VERSION, Schema, SchemaSet
from diffing.kube.values import dig, mapping, seq
from diffing.policy import Policy
from diffing.rayservice import serve
from diffing.versions import VersionRules, schema_data

RCC: Path = ("spec", "rayClusterConfig")


@lru_cache(maxsize=4)
def tables(minor: tuple[int, int]) -> tuple[SchemaSet, GoTypes]:
    schema_json, go_json = schema_data(minor)
    return SchemaSet(schema_json), GoTypes(go_json)


class Engine:
    """Analysis for one KubeRay version and policy."""

    def __init__(self, rules: VersionRules, policy: Policy, schemas: SchemaSet | None = None, *,
                 before_is_live: bool = False) -> None:
        self.rules = rules
        self.policy = policy
        self.schemas, self.gotypes = tables(rules.minor)
        if schemas is not None:
            self.schemas = schemas
        self.differ = Differ(self.schemas, self.gotypes)
        self.before_is_live = before_is_live
        patterns = rules.muted_patterns
        # The hash's muted paths, relative to rayClusterConfig (without its groups) and to a group.
        self._muted = (frozenset(p[2:] for p in patterns if p[2] != "workerGroupSpecs"),
                       frozenset(p[4:] for p in patterns if p[2:4] == ("workerGroupSpecs", "[]")))
        self.cluster_muted = frozenset(rules.cluster_muted)  # a standalone RayCluster's hash
        self._serve: dict[str, serve.ServeConfig] = {}

    def serve_config(self, text: Any) -> serve.ServeConfig:
        """A ``serveConfigV2`` value read, each distinct text once per analysis: an unchanged
        one (an image bump) is the same text on both sides, and RayServices stamped out of one
        template share theirs. The result is only read, never changed, so it can be shared."""
        if type(text) is not str:
            return serve.parse(text)
        found = self._serve.get(text)
        if found is None:
            found = self._serve[text] = serve.parse(text)
        return found

    # -- API server view -------------------------------------------------------------------

    def schema_root(self, api_version: str) -> Schema | None:
        return self.schemas.served_root(api_version)

    def spec_schema(self, m: Manifest) -> Schema | None:
        return self.schemas.child(self.schema_root(m.api_version), "spec")

    def defaulted(self, m: Manifest) -> dict[str, Any]:
        """The object as the API server stores it: pruned and defaulted spec (a v1alpha1 write as
        v1 stores it, :meth:`SchemaSet.stored`)."""
        return self.schemas.stored(m.obj, self.spec_schema(m),
                                   self.schemas.child(self.schemas.root(STORAGE_VERSION), "spec"))

    def stored_view(self, m: Manifest) -> Manifest:
        """``m`` as the field walk and the hash read it: the same object when written in the
        storage version, else as stored (:func:`stored_view`)."""
        return stored_view(self.schemas, m, lambda v: self.schemas.child(self.schema_root(v), "spec"))

    def spec_type(self, key: str) -> TypeDesc | None:
        if key == "rayClusterConfig":
            return self.gotypes.root
        if key == "serveService":
            return struct("core/v1.Service")
        return None

    # -- the cluster hash ------------------------------------------------------------------

    def hash_compare(self, b: Manifest, a: Manifest) -> tuple[bool, bool]:
        """(full, partial) equality of the operator's cluster hash, ``b`` being the running spec.

        ``partial`` is ``isClusterSpecHashEqual(..., partial=true)``: the first N worker groups
        of the new spec (N = groups running) hash-equal to the running ones. Groups whose text
        is identical are not encoded at all: equal input, equal hash.
        """
        b, a = self.stored_view(b), self.stored_view(a)
        brcc = dict(dig(b.obj, "spec", "rayClusterConfig"))
        arcc = dict(dig(a.obj, "spec", "rayClusterConfig"))
        bgroups, agroups = seq(brcc.pop("workerGroupSpecs", None)), seq(arcc.pop("workerGroupSpecs", None))
        sch = self.schemas.child(self.spec_schema(a), "rayClusterConfig")
        top, per_group = self._muted
        if not same_encoding(self.gotypes, brcc, arcc, self.gotypes.root, self.schemas, sch, top):
            return False, False
        item_sch = self.schemas.child(self.schemas.child(sch, "workerGroupSpecs"), 0)
        group_type = struct("ray/v1.WorkerGroupSpec")
        n = len(bgroups)
        prefix = len(agroups) >= n and all(
            same_encoding(self.gotypes, bgroups[i], agroups[i], group_type, self.schemas, item_sch, per_group)
            for i in range(n))
        return prefix and len(agroups) == n, prefix

    # -- diffing -----------------------------------------------------------------------------

    def differences(self, b: Manifest, a: Manifest) -> list[Difference]:
        out = envelope_differences(self.differ, b, a)
        b, a = self.stored_view(b), self.stored_view(a)  # each side as the API server stores it
        bspec, aspec = mapping(b.obj.get("spec")), mapping(a.obj.get("spec"))
        sch = self.spec_schema(a)
        for key in list(bspec) + [k for k in aspec if k not in bspec]:
            if key == "serveConfigV2":
                continue
            bv, av = bspec.get(key, ABSENT), aspec.get(key, ABSENT)
            if type(bv) is type(av) and bv == av:
                continue
            child = self.schemas.child(sch, key)
            if child is None:
                kind = "added" if bv is ABSENT else "removed" if av is ABSENT else "modified"
                out.append(Difference(("spec", key), bv, av, kind, True, "unknown field, pruned"))
                continue
            out.extend(self.differ.diff(bv, av, ("spec", key), child, self.spec_type(key)))
        return out


def stored_view(schemas: SchemaSet, m: Manifest, spec_at: Callable[[str], Schema | None]) -> Manifest:
    """``m`` with its spec as the storage version holds it, for the field walk and the hash (both
    read with the storage version's schema): the same manifest when written in the storage
    version (or an unserved one, rejected), else its spec pruned with its own version's schema,
    relabelled ``<group>/v1`` (:meth:`SchemaSet.stored`: a v1alpha1 write drops v1's newer
    fields). ``spec_at`` gives a version's ``spec`` schema. Its own version's defaults are left to
    the walk: each is also v1's, with the same value (checked in tests/diffing/kube/test_stored.py).
    """
    if not schemas.converted(m.api_version) or "spec" not in m.obj:
        return m
    group = m.api_version.split("/", 1)[0]
    spec = schemas.prune(m.obj["spec"], spec_at(m.api_version))
    return record.replace(m, obj={**m.obj, "apiVersion": f"{group}/{STORAGE_VERSION}", "spec": spec})


def envelope_differences(differ: Differ, b: Manifest, a: Manifest) -> list[Difference]:
    """What differs outside the spec, the same for every kind: the API version (no change by
    itself: the object is stored as v1 either way; what a v1alpha1 write drops shows in the
    spec, diffed as stored, :func:`stored_view`) and the metadata, without the name and
    namespace that paired the two (a missing namespace is "default")."""
    out: list[Difference] = []
    if b.api_version != a.api_version:
        out.append(Difference(("apiVersion",), b.api_version, a.api_version, "modified", True,
                              "stored as v1 either way"))
    identity = ("name", "namespace")
    bmeta = {k: v for k, v in mapping(b.obj.get("metadata")).items() if k not in identity}
    ameta = {k: v for k, v in mapping(a.obj.get("metadata")).items() if k not in identity}
    out.extend(differ.diff(bmeta, ameta, ("metadata",), None, None))
    return out


# -- a standalone RayCluster -------------------------------------------------------------------
# Its spec is the RayService's rayClusterConfig type (the two CRDs carry the same schema), so the
# same tables serve both; only the hash's muted fields differ (docs/semantics/raycluster.md §3.3).


def cluster_schema(engine: Engine, api_version: str) -> Schema | None:
    """The RayCluster ``spec`` schema of ``api_version`` (ray.io/v1 or v1alpha1)."""
    return engine.schemas.child(engine.schemas.child(engine.schema_root(api_version), "spec"),
                                "rayClusterConfig")


def cluster_defaulted(engine: Engine, m: Manifest) -> dict[str, Any]:
    """A RayCluster as the API server stores it: pruned and defaulted spec (a v1alpha1 write as
    v1 stores it, :meth:`SchemaSet.stored`)."""
    return engine.schemas.stored(m.obj, cluster_schema(engine, m.api_version),
                                 cluster_schema(engine, STORAGE_VERSION))


def cluster_view(engine: Engine, m: Manifest) -> Manifest:
    """A RayCluster as the field walk and the hash read it (:func:`stored_view`)."""
    return stored_view(engine.schemas, m, lambda v: cluster_schema(engine, v))


def cluster_stored_spec(engine: Engine, spec: Any, api_version: str) -> Any:
    """A RayCluster spec (or a RayService's ``rayClusterConfig``) written in ``api_version`` as
    the operator reads it from the storage version: ``spec`` itself for a v1 write, else
    pruned and defaulted (:meth:`SchemaSet.stored`). What the cluster hash encodes."""
    if not engine.schemas.converted(api_version):
        return spec
    return engine.schemas.stored({"spec": mapping(spec)}, cluster_schema(engine, api_version),
                                 cluster_schema(engine, STORAGE_VERSION))["spec"]


def cluster_differences(engine: Engine, b: Manifest, a: Manifest) -> list[Difference]:
    """The RayCluster's differences: apiVersion, metadata (name and namespace are the key), spec."""
    out = envelope_differences(engine.differ, b, a)
    b, a = cluster_view(engine, b), cluster_view(engine, a)  # each side as the API server stores it
    out.extend(engine.differ.diff(mapping(b.obj.get("spec")), mapping(a.obj.get("spec")), ("spec",),
                                  cluster_schema(engine, a.api_version), engine.gotypes.root))
    return out


def recreate_hash_input(engine: Engine, spec: Any, api_version: str = "ray.io/v1") -> Any:
    """What ``GenerateHashWithoutReplicasAndWorkersToDelete`` serialises for a RayCluster.

    The spec as the operator holds it (API-server defaults, then ``setDefaults``), encoded the
    Go way, with the fields utils/util.go:645-668 sets to nil after defaulting (the version's
    ``cluster_muted`` paths: ``replicas``, ``minReplicas``/``maxReplicas``,
    ``workersToDelete``, tolerations, schedulingGates, ``upgradeStrategy``) replaced by the
    encoding of Go's nil for their type: left out for a pointer or slice with omitempty
    (``replicas``), ``null`` for a pointer without it (``minReplicas``), ``{}`` for a struct
    (``scaleStrategy``, whose only field is ``workersToDelete``).
    """
    types = engine.gotypes
    spec = cluster_stored_spec(engine, spec, api_version)  # a v1alpha1 write: as v1 stores it
    if engine.schemas.converted(api_version):
        api_version = f"ray.io/{STORAGE_VERSION}"
    encoded = types.encode(_operator_defaults(spec), types.root, engine.schemas,
                           cluster_schema(engine, api_version))
    for pattern in engine.cluster_muted:
        _clear(types, engine.schemas, encoded, types.root, pattern)
    return encoded


def _clear(types: GoTypes, schemas: SchemaSet, encoded: Any, t: TypeDesc | None,
           pattern: tuple[str, ...]) -> None:
    """Set the field ``pattern`` names (``"[]"``: in every list item) of an encoded value to the
    encoding of Go's nil for its type (dropped when that is "left out")."""
    key, rest = pattern[0], pattern[1:]
    if key == "[]":
        if type(encoded) is list:
            for item in encoded:
                _clear(types, schemas, item, types.element(t), rest)
        return
    if type(encoded) is not dict or key not in encoded:
        return
    ft = types.field(types.deref(t), key)
    if rest:
        _clear(types, schemas, encoded[key], ft, rest)
        return
    nil = types.encode(ABSENT, ft, schemas, None)
    if nil is OMIT:
        del encoded[key]
    else:
        encoded[key] = nil


def cluster_hash_equal(engine: Engine, before: Any, after: Any, api_version: str = "ray.io/v1") -> bool:
    """Whether two RayCluster specs give the same Recreate hash, encoding only where they differ
    (:func:`~diffing.kube.gojson.same_encoding`): equal encodings, equal hashes."""
    return same_encoding(engine.gotypes, _operator_defaults(before), _operator_defaults(after),
                         engine.gotypes.root, engine.schemas, cluster_schema(engine, api_version),
                         engine.cluster_muted)


def _operator_defaults(spec: Any) -> dict[str, Any]:
    """``setDefaults`` before the hash: a nil ``rayStartParams`` becomes ``{}`` for the head and
    every worker group (raycluster_controller.go:2422-2432). Copies only what it changes."""
    spec = dict(mapping(spec))
    head = mapping(spec.get("headGroupSpec"))
    if head.get("rayStartParams") is None:
        spec["headGroupSpec"] = {**head, "rayStartParams": {}}
    if "workerGroupSpecs" in spec:
        spec["workerGroupSpecs"] = [
            {**g, "rayStartParams": {}} if type(g) is dict and g.get("rayStartParams") is None else g
            for g in seq(spec["workerGroupSpecs"])]
    return spec


def go_json(value: Any) -> bytes:
    """``value`` serialised as Go's ``encoding/json`` writes it (struct fields in the order
    given, map keys sorted by the encoder already; ``<``, ``>``, ``&``, U+2028 and U+2029
    escaped; no spaces)."""
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    for raw, escaped in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"),
                         ("\u2028", "\\u2028"), ("\u2029", "\\u2029")):
        text = text.replace(raw, escaped)
    return text.encode("utf-8")


def recreate_hash(engine: Engine, spec: Any, api_version: str = "ray.io/v1") -> str:
    """The value the operator writes to the head pod's ``ray.io/upgrade-strategy-recreate-hash``:
    base32 (extended hex alphabet) of the SHA-1 of the encoding (utils/util.go:631-643).

    Byte-for-byte agreement with Go rests on :func:`go_json` and the encoder; it could not be
    checked against a Go build here, so a mismatch with a live head pod is reported as
    "may be pending", never as certain.
    """
    import hashlib  # here, not at the top: its import costs a CLI run more than a small analysis does

    digest = hashlib.sha1(go_json(recreate_hash_input(engine, spec, api_version)), usedforsecurity=False)
    return base64.b32hexencode(digest.digest()).decode("ascii")
