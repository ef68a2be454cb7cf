"""The RayService CRD's structural schema: navigation, defaulting, pruning and validation.

This models what the Kubernetes API server does to a RayService before the operator reads
it: unknown fields are pruned, ``null`` in a non-nullable field is dropped, CRD defaults
fill absent fields, and values that break the schema are rejected (reported here as
:func:`validate` errors, which the analysis turns into ``error`` findings).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from functools import lru_cache

from diffing.hints import Any
from diffing.kube.paths import Path
from diffing.kube.values import mapping
from diffing.record import Record, set_field

Schema = dict[str, Any]
# What default_fill does at a node: (nothing to fill below, an object node, its properties
# with a default, its items), the last two as memos.
Fill = tuple[bool, bool, tuple[tuple[str, "Memo"], ...], "Memo | None"]

_TYPE_CHECKS = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
}
_PRESERVE: dict[str, Any] = {"x-kubernetes-preserve-unknown-fields": True}  # shared: never mutated
# KubeRay's CRDs store v1 and serve v1 and v1alpha1 (config/crd/bases/ray.io_rayclusters.yaml,
# ray.io_rayservices.yaml, ray.io_rayjobs.yaml: the v1 version has ``storage: true``).
STORAGE_VERSION = "v1"
_INT_RANGES = {"int32": (-(2**31), 2**31 - 1), "int64": (-(2**63), 2**63 - 1)}


class SchemaSet:
    """The schemas of one KubeRay version, parsed once from its generated data module."""

    def __init__(self, schema_json: str) -> None:
        doc = json.loads(schema_json)
        self._defs: dict[str, Schema] = doc["defs"]
        self.versions: dict[str, Schema] = doc["versions"]
        self._init_memos()

    def _init_memos(self) -> None:
        self._memos: dict[int, Memo] = {}

    @classmethod
    def from_versions(cls, versions: dict[str, Schema]) -> SchemaSet:
        """A set built from full (unshared) schemas, e.g. a CRD the user supplies."""
        self = cls.__new__(cls)
        self._defs = {}
        self.versions = versions
        self._init_memos()
        return self

    def root(self, api_version: str) -> Schema | None:
        return self.versions.get(api_version)

    def served_root(self, api_version: str) -> Schema | None:
        """The root schema of ``group/version`` as an object names it: ``v1``'s when that
        version is not served (the write is rejected, :func:`version_errors`; the rest of the
        analysis still reads it as v1)."""
        return self.root(api_version.split("/", 1)[-1]) or self.root(STORAGE_VERSION)

    def served(self, api_version: str) -> bool:
        """Whether the CRD serves ``group/version`` (has an endpoint for it)."""
        return api_version.split("/", 1)[-1] in self.versions

    def converted(self, api_version: str) -> bool:
        """Whether a write in ``api_version`` is stored in another version: a served version
        that is not the storage one (KubeRay: ``v1alpha1``)."""
        version = api_version.split("/", 1)[-1]
        return version != STORAGE_VERSION and version in self.versions and STORAGE_VERSION in self.versions

    def stored(self, obj: Mapping[str, Any], spec: Schema | None,
               storage: Schema | None = None) -> dict[str, Any]:
        """``obj`` as the API server stores it and the operator reads it: its ``spec`` pruned and
        defaulted by ``spec``.

        ``storage``, when given and another node than ``spec``, is the same node in the storage
        version's schema (``obj`` is written in a non-storage version). KubeRay's CRDs name no
        conversion (strategy None), so the write is pruned and defaulted with its own version's
        schema, relabelled and pruned with the storage version's (apiextensions-apiserver
        customresource_handler.go:1357-1384, conversion/nop_converter.go:31-41), and every read
        defaults it with the storage version's schema (customresource_handler.go:1288-1311,
        apimachinery runtime/serializer/versioning/versioning.go:167-193): a v1alpha1 write loses
        v1's newer fields and gains v1's defaults (``numOfHosts: 1``, ``priority: 0``).
        """
        out = dict(obj)
        spec_value = mapping(obj.get("spec"))
        if storage is not None and spec is not None and storage is not spec:
            spec_value = self.prune(self.default_fill(self.prune(spec_value, spec), spec), storage)
            spec = storage
        out["spec"] = self.default_fill(spec_value, spec)
        return out

    def prune(self, value: Any, node: Schema | None) -> Any:
        """``value`` with every field ``node`` does not declare removed (structural pruning: a
        preserved or ``additionalProperties`` mapping keeps its keys); a new value where anything
        is removed."""
        node = self.resolve(node)
        return value if node is None else self._prune(value, self.memo(node))

    def _prune(self, value: Any, memo: Memo) -> Any:
        if type(value) is dict:
            out: dict[str, Any] = {}
            for key, item in value.items():
                sub = memo[key]
                if sub is not None:
                    out[key] = item if sub.node is _PRESERVE else self._prune(item, sub)
            return out
        if type(value) is list:
            items = memo[None]
            return value if items is None else [self._prune(v, items) for v in value]
        return value

    def resolve(self, node: Schema | None) -> Schema | None:
        while node is not None and "$ref" in node:
            node = self._defs[node["$ref"]]
        return node

    def child(self, node: Schema | None, seg: Any) -> Schema | None:
        """The schema of ``seg`` below ``node``; ``None`` when the field is unknown (pruned).

        A field name (``str``) names a property; anything else (a list index) the items.
        """
        if node is None:
            return None
        sub = self.memo(node)[seg if type(seg) is str else None]
        return None if sub is None else sub.node

    def memo(self, node: Schema) -> Memo:
        """The :class:`Memo` of a resolved ``node``. The walks ask the same few hundred questions
        for every worker group, so they go down the memos rather than the schema: a loop over a
        mapping's keys indexes its node's memo per key. The entry keeps ``node`` alive, so its
        ``id`` cannot be reused. There is one memo per schema node, whatever the input.
        """
        memo = self._memos.get(id(node))
        if memo is not None and memo.node is node:
            return memo
        memo = self._memos[id(node)] = Memo(self, node)
        return memo

    def _child(self, node: Schema | None, seg: Any) -> Schema | None:
        node = self.resolve(node)
        if node is None:
            return None
        if isinstance(seg, str):
            props = node.get("properties")
            if props is not None and seg in props:
                return self.resolve(props[seg])
            extra = node.get("additionalProperties")
            if isinstance(extra, dict):
                return self.resolve(extra)
            if node.get("x-kubernetes-preserve-unknown-fields"):
                return _PRESERVE
            return None
        items = node.get("items")
        return self.resolve(items) if isinstance(items, dict) else None

    def at(self, root: Schema | None, path: Path) -> Schema | None:
        node = root
        for seg in path:
            node = self.child(node, seg)
            if node is None:
                return None
        return node

    def list_key(self, node: Schema | None) -> str | None:
        """The single field that identifies items of a map-type list, if any."""
        node = self.resolve(node)
        if node is None:
            return None
        keys = node.get("x-kubernetes-list-map-keys")
        return keys[0] if keys else None

    def has_defaults(self, node: Schema | None) -> bool:
        """Whether any default is declared at or below ``node`` (memoised per schema node)."""
        node = self.resolve(node)
        if node is None:
            return False
        key = id(node)
        cache = self.__dict__.setdefault("_has_defaults", {})
        if key not in cache:
            cache[key] = False  # cycles cannot occur in a structural schema, but stay safe
            subs = list((node.get("properties") or {}).values())
            subs += [node[k] for k in ("items", "additionalProperties") if isinstance(node.get(k), dict)]
            cache[key] = "default" in node or any(self.has_defaults(s) for s in subs)
        return bool(cache[key])

    def default_fill(self, value: Any, node: Schema | None) -> Any:
        """Apply null-dropping, defaults and pruning to ``value`` (a new value is returned).

        Subtrees whose schema declares no default are returned as they are (not pruned): the
        defaulted view feeds capacity and findings, which read known fields only.
        """
        node = self.resolve(node)
        return value if node is None else self._fill(value, self.memo(node))

    def _fill(self, value: Any, memo: Memo) -> Any:
        """:meth:`default_fill` at a resolved node, given by its memo."""
        skip, is_object, defaults, items = memo.fill or self._fill_info(memo)
        if skip:
            return value
        if is_object and type(value) is dict:
            out: dict[str, Any] = {}
            for key, item in value.items():
                sub = memo[key]
                if sub is None:
                    continue  # pruned
                if item is None and not sub.node.get("nullable"):
                    continue
                out[key] = item if (sub.fill or self._fill_info(sub))[0] else self._fill(item, sub)
            for key, sub in defaults:
                if key not in out:
                    out[key] = self._fill(_copy(sub.node["default"]), sub)
            return out
        if items is not None and type(value) is list:
            return [self._fill(v, items) for v in value]
        return value

    def _fill_info(self, memo: Memo) -> Fill:
        """What :meth:`default_fill` does at a node, read once into its memo."""
        node = memo.node
        skip = bool(node.get("x-kubernetes-preserve-unknown-fields") and "properties" not in node) \
            or not self.has_defaults(node)
        defaults = []
        for key in node.get("properties") or {}:
            sub = memo[key]
            if sub is not None and "default" in sub.node:
                defaults.append((key, sub))
        memo.fill = (skip, node.get("type", "object") == "object", tuple(defaults), memo[None])
        return memo.fill


_UNSET: Any = object()
_OTHER_KEYS = 64  # undeclared keys a memo keeps as entries (cpu, memory, nvidia.com/gpu, ...)


class Memo(dict[Any, "Memo | None"]):
    """One resolved schema node (``node``) and the answers the walks need from it, each read once:
    ``memo[field]`` is the memo of the field's schema (``None``: an unknown field, pruned),
    ``memo[None]`` the items'; ``checks`` (:func:`validate`) and ``fill`` (:meth:`default_fill`)
    are filled on first use. See :meth:`SchemaSet.memo`.

    Every key that is not a declared property (a label, a resource name, a ``rayStartParams``
    entry, an unknown field) has one answer, ``other`` (``additionalProperties``, preserved, or
    pruned); the first ``_OTHER_KEYS`` such keys become entries too. So a memo's size is bounded
    by its schema node, whatever the inputs a long-lived process reads.
    """

    __slots__ = ("schemas", "node", "checks", "fill", "other", "others")

    def __init__(self, schemas: SchemaSet, node: Schema) -> None:
        super().__init__()
        self.schemas = schemas
        self.node = node
        self.checks: Checks | None = None  # the node's Checks, once validate asked
        self.fill: Fill | None = None  # what default_fill does here, once it asked
        self.other: Memo | None = _UNSET  # the answer for an undeclared field, once asked
        self.others = 0  # undeclared keys kept as entries

    def __missing__(self, key: Any) -> Memo | None:
        schemas = self.schemas
        declared = key is None or key in ((schemas.resolve(self.node) or {}).get("properties") or {})
        if declared or self.other is _UNSET:
            found = schemas._child(self.node, key)
            sub = None if found is None else schemas.memo(found)
            if declared:
                self[key] = sub
                return sub
            self.other = sub
        if self.others < _OTHER_KEYS:
            self.others += 1
            self[key] = self.other
        return self.other


def _copy(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_copy(v) for v in value]
    return value


_TYPE_NAMES = ((bool, "boolean"), (int, "integer"), (float, "number"), (str, "string"), (list, "array"),
               (dict, "object"))  # bool before int: a bool is an int in Python


def _type_name(value: Any) -> str:
    return next((name for typ, name in _TYPE_NAMES if isinstance(value, typ)), "null")


@lru_cache(maxsize=256)
def _pattern(text: str) -> re.Pattern[str]:
    return re.compile(text)


def validate(schemas: SchemaSet, value: Any, node: Schema | None, path: Path = (),
             errors: list[tuple[Path, str]] | None = None, limit: int = 50,
             unknown: list[Path] | None = None) -> list[tuple[Path, str]]:
    """Schema violations the API server would reject, as ``(path, message)`` pairs.

    Covers the structural subset a CRD uses: types (int-or-string included), ``required``,
    ``enum``, ``minimum``/``maximum``, string lengths, ``pattern``, integer formats, unique
    keys of ``x-kubernetes-list-type: map`` lists and unique items of ``set`` lists, and the
    stateless CEL rule of the RayService CRD (``managedBy`` values). Unknown fields are not
    errors (the server prunes them); their paths are appended to ``unknown`` when given.

    ``value`` may be the manifest as written: the check sees it as the API server does, after
    pruning nulls and applying defaults (a required field with a default is never missing; a
    list-map key falls back to its default), which is equivalent to validating the defaulted
    object and cheaper than building it.
    """
    if errors is None:
        errors = []
    node = schemas.resolve(node)
    # A null is dropped before validation (or allowed: nullable).
    if node is not None and value is not None and len(errors) < limit:
        _validate(schemas, value, schemas.memo(node), path, errors, limit, unknown)
    return errors


def _validate(schemas: SchemaSet, value: Any, memo: Memo, path: Path, errors: list[tuple[Path, str]],
              limit: int, unknown: list[Path] | None) -> None:
    """:func:`validate` below the root, at a node given by its memo: ``value`` not null, room
    left for errors."""
    node = memo.node
    c = memo.checks
    if c is None:
        c = memo.checks = compile_checks(schemas, node)
    if c.type_ok is not None and not c.type_ok(value):
        errors.append((path, f"must be {c.want}, found {_type_name(value)} {_short(value)}"))
        return
    if c.constrained:
        _value_checks(c, value, node, path, errors)
    if type(value) is dict:
        for req in c.required:
            if _missing(schemas, node, value, req):
                errors.append((path + (req,), "required field is missing"))
        for key, item in value.items():
            sub = memo[key]
            if sub is not None:
                if item is not None and len(errors) < limit:
                    _validate(schemas, item, sub, path + (key,), errors, limit, unknown)
            elif unknown is not None and len(unknown) < limit:
                unknown.append(path + (key,))
    elif type(value) is list:
        items = memo[None]
        if items is not None:
            for i, item in enumerate(value):
                if item is not None and len(errors) < limit:
                    _validate(schemas, item, items, path + (i,), errors, limit, unknown)
        if c.list_type == "map" and items is not None:
            _unique_keys(schemas, value, items.node, c.map_keys, path, errors)
        elif c.list_type == "set":
            _unique_items(value, path, errors)


def _value_checks(c: Checks, value: Any, node: Schema, path: Path, errors: list[tuple[Path, str]]) -> None:
    """enum, bounds, integer formats, string lengths, pattern and the CEL ``self in [...]``."""
    if c.enum is not None and value not in c.enum:
        errors.append((path, f"must be one of {', '.join(map(str, c.enum))}; found {value!r}"))
    if c.numeric and isinstance(value, (int, float)) and not isinstance(value, bool):
        if c.minimum is not None and value < c.minimum:
            errors.append((path, f"must be >= {c.minimum}; found {value}"))
        if c.maximum is not None and value > c.maximum:
            errors.append((path, f"must be <= {c.maximum}; found {value}"))
        if c.int_range and isinstance(value, int) and not c.int_range[0] <= value <= c.int_range[1]:
            errors.append((path, f"does not fit {node['format']}: {value}"))
    if c.textual and isinstance(value, str):
        if c.max_length is not None and len(value) > c.max_length:
            errors.append((path, f"longer than {c.max_length} characters"))
        if c.min_length is not None and len(value) < c.min_length:
            errors.append((path, f"shorter than {c.min_length} characters"))
        if c.pattern is not None and not c.pattern.search(value):
            errors.append((path, f"{value!r} does not match {node['pattern']}"))
    for allowed, message in c.one_of:
        if value not in allowed:
            errors.append((path, message or f"must be one of {allowed}"))


class Checks(Record):
    """What :func:`validate` checks at one schema node, read from the node once."""

    __slots__ = ("type_ok", "want", "enum", "numeric", "minimum", "maximum", "int_range", "textual",
                 "max_length", "min_length", "pattern", "one_of", "required", "list_type", "map_keys",
                 "constrained")

    type_ok: Any  # a predicate, or None when any type goes
    want: str
    enum: list[Any] | None
    numeric: bool
    minimum: Any
    maximum: Any
    int_range: tuple[int, int] | None
    textual: bool
    max_length: int | None
    min_length: int | None
    pattern: re.Pattern[str] | None
    one_of: tuple[tuple[list[str], str], ...]  # the stateless CEL rule: self in [...]
    required: tuple[str, ...]
    list_type: str | None
    map_keys: tuple[str, ...]
    constrained: bool  # any of enum .. one_of: the value itself is checked

    def __init__(self, type_ok: Any, want: str, enum: list[Any] | None, numeric: bool, minimum: Any,
                 maximum: Any, int_range: tuple[int, int] | None, textual: bool, max_length: int | None,
                 min_length: int | None, pattern: re.Pattern[str] | None,
                 one_of: tuple[tuple[list[str], str], ...], required: tuple[str, ...],
                 list_type: str | None, map_keys: tuple[str, ...], constrained: bool = False) -> None:
        set_field(self, "type_ok", type_ok)
        set_field(self, "want", want)
        set_field(self, "enum", enum)
        set_field(self, "numeric", numeric)
        set_field(self, "minimum", minimum)
        set_field(self, "maximum", maximum)
        set_field(self, "int_range", int_range)
        set_field(self, "textual", textual)
        set_field(self, "max_length", max_length)
        set_field(self, "min_length", min_length)
        set_field(self, "pattern", pattern)
        set_field(self, "one_of", one_of)
        set_field(self, "required", required)
        set_field(self, "list_type", list_type)
        set_field(self, "map_keys", map_keys)
        set_field(self, "constrained", constrained)


def compile_checks(schemas: SchemaSet, node: Schema) -> Checks:
    if node.get("x-kubernetes-int-or-string"):
        type_ok: Any = _INT_OR_STRING
        want = "integer or string"
    else:
        expected = node.get("type")
        type_ok = None if expected is None else _TYPE_CHECKS.get(expected, _ANY)
        want = str(expected)
    one_of = []
    for rule in node.get("x-kubernetes-validations", ()):
        m = re.fullmatch(r"self in \[(.*)\]", rule.get("rule", ""))
        if m:
            allowed = [s.strip().strip("'\"") for s in m.group(1).split(",")]
            one_of.append((allowed, rule.get("message") or ""))
    numeric = any(k in node for k in ("minimum", "maximum", "format"))
    textual = any(k in node for k in ("maxLength", "minLength", "pattern"))
    return Checks(
        type_ok=type_ok, want=want, enum=node.get("enum"),
        numeric=numeric,
        minimum=node.get("minimum"), maximum=node.get("maximum"),
        int_range=_INT_RANGES.get(node.get("format", "")),
        textual=textual,
        max_length=node.get("maxLength"), min_length=node.get("minLength"),
        pattern=_pattern(node["pattern"]) if "pattern" in node else None,
        one_of=tuple(one_of), required=tuple(node.get("required", ())),
        list_type=node.get("x-kubernetes-list-type"),
        map_keys=tuple(node.get("x-kubernetes-list-map-keys") or ()),
        constrained=bool(node.get("enum") is not None or numeric or textual or one_of))


def _INT_OR_STRING(v: Any) -> bool:  # noqa: N802 - a constant predicate
    return isinstance(v, (int, str)) and not isinstance(v, bool)


def _ANY(v: Any) -> bool:  # noqa: N802
    return True


def _missing(schemas: SchemaSet, node: Schema, value: dict[str, Any], field: str) -> bool:
    """A required field the API server finds missing: absent or a pruned null, and no default.

    The server prunes ``null`` from non-nullable fields and applies CRD defaults before it
    validates (structural schema defaulting), so ``minReplicas: null`` or no ``minReplicas``
    at all is the default ``0``, not a missing field.
    """
    child = schemas.child(node, field)
    if field in value and (value[field] is not None or (child or {}).get("nullable")):
        return False
    return child is None or "default" not in child


def _key_of(schemas: SchemaSet, item: Any, items: Schema, keys: Any) -> tuple[Any, ...] | None:
    """The list-map key of ``item`` after defaulting (``protocol`` defaults to TCP)."""
    if not isinstance(item, dict):
        return None
    out = []
    for k in keys:
        v = item.get(k)
        if v is None:
            child = schemas.child(items, k)
            v = (child or {}).get("default")
            if v is None:
                return None  # reported as a missing required field
        out.append(v)
    return tuple(out)


def _unique_keys(schemas: SchemaSet, value: list[Any], items: Schema, keys: Any, path: Path,
                 errors: list[tuple[Path, str]]) -> None:
    """``x-kubernetes-list-type: map``: no two items with the same key (after defaulting)."""
    seen: dict[tuple[Any, ...], int] = {}
    for i, item in enumerate(value):
        key = _key_of(schemas, item, items, keys)
        if key is None:
            continue
        # Equal as JSON values: a string or an int stands for itself (a string wrapped, so that
        # it cannot meet the JSON text of another type: 80 and "80" are two keys, 1 and true too).
        hashable = tuple((k,) if type(k) is str else k if type(k) is int else json.dumps(k, sort_keys=True)
                         for k in key)
        if hashable in seen:
            shown = ", ".join(f"{k}={v}" for k, v in zip(keys, key, strict=True))
            errors.append((path + (i,), f"duplicate entry ({shown}; also item {seen[hashable]}): the list "
                                        f"is keyed by {', '.join(keys)}"))
        else:
            seen[hashable] = i


def _unique_items(value: list[Any], path: Path, errors: list[tuple[Path, str]]) -> None:
    """``x-kubernetes-list-type: set``: no item twice."""
    seen: set[str] = set()
    for i, item in enumerate(value):
        text = json.dumps(item, sort_keys=True, default=str)
        if text in seen:
            errors.append((path + (i,), f"duplicate value {_short(item)} in a set-type list"))
        seen.add(text)


def transition_errors(schemas: SchemaSet, before: Any, after: Any, node: Schema | None,
                      path: Path = (), errors: list[tuple[Path, str]] | None = None
                      ) -> list[tuple[Path, str]]:
    """Violations of the CRD's transition rules (``self == oldSelf``: immutable fields)."""
    if errors is None:
        errors = []
    node = schemas.resolve(node)
    if node is None:
        return errors
    for rule in node.get("x-kubernetes-validations", ()):
        if rule.get("rule", "").replace(" ", "") == "self==oldSelf" and before is not None \
                and after is not None and before != after:
            errors.append((path, f"{rule.get('message') or 'the field is immutable'} "
                                 f"({before!r} -> {after!r})"))
    if isinstance(before, dict) and isinstance(after, dict):
        for key, value in after.items():
            if key in before:
                child = schemas.child(node, key)
                if child is not None:
                    transition_errors(schemas, before[key], value, child, path + (key,), errors)
    return errors


def version_errors(schemas: SchemaSet, api_version: str) -> list[tuple[Path, str]]:
    """A write in a version the CRD does not serve: there is no endpoint for it, the custom
    resource handler hands the request on and the API server answers 404 Not Found, nothing is
    stored (apiextensions-apiserver customresource_handler.go:313-316)."""
    if schemas.served(api_version):
        return []
    served = ", ".join(f"{api_version.split('/', 1)[0]}/{v}" for v in schemas.versions)
    return [(("apiVersion",), f"{api_version} is not served by the CRD (it serves {served}): the API "
                              f"server answers 404 Not Found and stores nothing")]


_NO_OLD: Any = object()


def ratchet(schemas: SchemaSet, errors: list[tuple[Path, str]], new: Any, old: Any, node: Schema | None,
            base: Path = ("spec",)) -> list[tuple[Path, str]]:
    """``errors`` (of :func:`validate` on ``new``, paths under ``base``) without those an update's
    validation ratchets: an error under a node that correlates with the old object and is equal
    to it there is only a warning (apiserver/validation/ratcheting.go:136-156, CRDValidationRatcheting,
    GA). A node correlates through object fields and the items of ``x-kubernetes-list-type: map``
    lists (by key); other lists only as a whole (apiserver pkg/cel/common/equality.go:91-134).

    ``old`` is the old object's value at ``base`` as read in the write's version; both sides are
    compared pruned and defaulted by ``node`` (the write's schema), as the API server holds them.
    """
    if not errors:
        return errors
    new = schemas.default_fill(schemas.prune(new, node), node)
    old = schemas.default_fill(schemas.prune(old, node), node)
    node = schemas.resolve(node)
    return [(path, message) for path, message in errors
            if path[:len(base)] != base or not _ratcheted(schemas, path[len(base):], new, old, node)]


def _ratcheted(schemas: SchemaSet, rel: Path, new: Any, old: Any, node: Schema | None) -> bool:
    for seg in rel:
        if _same_json(new, old):
            return True
        if type(seg) is str:
            if type(new) is not dict or type(old) is not dict or seg not in new or seg not in old:
                return False
            new, old = new[seg], old[seg]
        else:
            if type(new) is not list or type(old) is not list or type(seg) is not int \
                    or not 0 <= seg < len(new) or (node or {}).get("x-kubernetes-list-type") != "map":
                return False  # only a map-type list's items correlate, by key
            items = schemas.child(node, 0) or {}
            keys = (node or {}).get("x-kubernetes-list-map-keys") or ()
            key = _key_of(schemas, new[seg], items, keys) if keys else None
            if key is None:
                return False
            match = next((o for o in old if _key_of(schemas, o, items, keys) == key), _NO_OLD)
            if match is _NO_OLD:
                return False
            new, old = new[seg], match
        node = schemas.child(node, seg)
    return _same_json(new, old)


def _same_json(a: Any, b: Any) -> bool:
    """Deep equality of two JSON values with their types (Go's DeepEqual on decoded JSON: ``1``
    and ``true``, ``1`` and ``1.0`` differ)."""
    if type(a) is not type(b):
        return False
    if type(a) is dict:
        return a.keys() == b.keys() and all(_same_json(v, b[k]) for k, v in a.items())
    if type(a) is list:
        return len(a) == len(b) and all(_same_json(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def _short(value: Any) -> str:
    text = json.dumps(value, default=str)
    return text if len(text) <= 40 else text[:37] + "..."



__all__ = ["STORAGE_VERSION", "SchemaSet", "ratchet", "transition_errors", "validate", "version_errors"]
