"""What Go's ``encoding/json`` makes of a RayCluster spec: the operator's hash input.

KubeRay hashes ``spec.rayClusterConfig`` after decoding it into Go structs and encoding it
again, so two manifests are "the same cluster" when their Go encodings are equal, not when
their texts are. :func:`encode` reproduces that encoding (after the API server's
defaulting and pruning, see :mod:`diffing.schema`) from the generated field table:

* omitempty scalars, slices and maps equal to their zero value are dropped;
* pointer fields keep presence (an explicit ``false`` or ``{}`` is not absence);
* maps and slices without omitempty encode absence as ``null`` and emptiness as ``{}``/``[]``;
* non-pointer structs are always encoded, so ``{}`` equals absence;
* ``resource.Quantity`` values become their canonical string, int-or-string keeps its form;
* fields Go does not know are dropped.
"""

from __future__ import annotations

import json

from diffing.hints import Any
from diffing.kube.quantity import Quantity, QuantityError
from diffing.kube.schema import Schema, SchemaSet

# A type descriptor: (kind, omit rule, element kind, element type name).
TypeDesc = tuple[str, str, "str | None", "str | None"]


class _Marker:
    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


ABSENT: Any = _Marker("ABSENT")  # the field is not in the manifest
OMIT: Any = _Marker("OMIT")  # encoding/json leaves the field out

_ZERO = {"string": "", "int": 0, "bool": False, "float": 0}


def struct(name: str) -> TypeDesc:
    return ("struct", "never", None, name)


class GoTypes:
    """The Go field table of one KubeRay version."""

    def __init__(self, types_json: str) -> None:
        doc = json.loads(types_json)
        self.root = struct(doc["root"])
        self._fields: dict[str, dict[str, TypeDesc]] = {
            name: {row[0]: (row[1], row[2], row[3], row[4]) for row in rows}
            for name, rows in doc["types"].items()
        }
        self._absent: dict[tuple[Any, int], tuple[Any, Any]] = {}

    def field(self, t: TypeDesc | None, key: str) -> TypeDesc | None:
        t = self.deref(t)
        if t is None:
            return None
        kind, _, elem_kind, elem = t
        if kind == "struct":
            return self._fields.get(elem or "", {}).get(key)
        if kind == "map":
            return self.element(t)
        return None

    def element(self, t: TypeDesc | None) -> TypeDesc | None:
        t = self.deref(t)
        if t is None or t[0] not in ("slice", "map"):
            return None
        elem_kind, elem = t[2], t[3]
        if elem_kind == "struct":
            return struct(elem or "")
        return (elem_kind or "interface", "never", None, elem)

    def deref(self, t: TypeDesc | None) -> TypeDesc | None:
        if t is not None and t[0] == "pointer":
            elem_kind, elem = t[2], t[3]
            return struct(elem or "") if elem_kind == "struct" else (elem_kind or "interface", "never",
                                                                      None, elem)
        return t

    def encode(self, value: Any, t: TypeDesc | None, schemas: SchemaSet, sch: Schema | None) -> Any:
        """The JSON value Go would emit for ``value`` of type ``t``; ``OMIT`` if left out.

        ``value`` is the manifest's value (``ABSENT`` when missing); ``sch`` its CRD schema,
        used for pruning, null-dropping and defaults exactly as the API server applies them.
        """
        if value is None and not (sch or {}).get("nullable"):
            value = ABSENT
        if value is ABSENT:
            if sch is not None and "default" in sch:
                value = sch["default"]
            else:
                # What an absent field encodes to depends only on its type and schema: most of a
                # pod spec's fields are absent, so each is worked out once (a copy is handed out,
                # callers may edit what they get).
                key = (t, id(sch))
                hit = self._absent.get(key)
                if hit is None or hit[0] is not sch:
                    hit = self._absent[key] = (sch, self._encode_absent(t, schemas, sch))
                return _fresh(hit[1])
        return self._encode(value, t, schemas, sch)

    def _encode_absent(self, t: TypeDesc | None, schemas: SchemaSet, sch: Schema | None) -> Any:
        return self._encode(ABSENT, t, schemas, sch)

    def _encode(self, value: Any, t: TypeDesc | None, schemas: SchemaSet, sch: Schema | None) -> Any:
        if t is None:
            return _plain(value)
        kind, omit, elem_kind, elem = t
        if kind == "pointer":
            if value is ABSENT:
                return OMIT if omit == "nil" else None
            return self.encode(value, self.deref(t), schemas, sch)
        if kind == "struct":
            if value is ABSENT:
                value = {}
            if not isinstance(value, dict):
                return _plain(value)
            out: dict[str, Any] = {}
            fields = self._fields.get(elem or "", {})
            memo = schemas.memo(sch) if sch is not None else None
            for key, ft in fields.items():
                sub = memo[key] if memo is not None else None
                child = None if sub is None else sub.node
                if sch is not None and child is None:
                    v = ABSENT  # the API server pruned it
                else:
                    v = value.get(key, ABSENT)
                enc = self.encode(v, ft, schemas, child)
                if enc is not OMIT:
                    out[key] = enc
            return out
        if kind in ("slice", "map"):
            # nil encodes as null unless omitempty; empty is [] / {} unless omitempty.
            if value is ABSENT:
                return OMIT if omit == "len==0" else None
            if not isinstance(value, list if kind == "slice" else dict):
                return _plain(value)
            if not value and omit == "len==0":
                return OMIT
            et = self.element(t)
            if isinstance(value, list):
                items = schemas.child(sch, 0) if sch is not None else None
                return [_not_omitted(self.encode(v, et, schemas, items)) for v in value]
            return {k: _not_omitted(self.encode(v, et, schemas, schemas.child(sch, k) if sch else None))
                    for k, v in sorted(value.items())}
        if kind == "quantity":
            if value is ABSENT:
                return "0"
            try:
                return Quantity.parse(value).canonical()
            except QuantityError:
                return _plain(value)
        if kind == "intorstring":
            return 0 if value is ABSENT else _plain(value)
        if kind in _ZERO:
            zero = _ZERO[kind]
            if value is ABSENT:
                value = zero
            if omit != "never" and type(value) is type(zero) and value == zero:
                return OMIT
            return _plain(value)
        if value is ABSENT:
            return OMIT if omit != "never" else None
        return _plain(value)


def same_encoding(types: GoTypes, before: Any, after: Any, t: TypeDesc | None, schemas: SchemaSet,
                  sch: Schema | None, muted: frozenset[tuple[str, ...]], path: tuple[str, ...] = ()) -> bool:
    """Whether ``before`` and ``after`` encode alike once the ``muted`` paths are cleared, without
    encoding what is equal on both sides.

    Encoding is compositional: a struct's JSON is its fields' in a fixed order, so two structs
    encode alike exactly when each field does, and equal inputs give equal outputs. The walk
    goes down both values together and encodes only where they differ (an image bump encodes
    two strings, not two pod templates); ``muted`` paths (``("workerGroupSpecs", "[]",
    "replicas")``, list items as ``"[]"``) count as equal, as the operator clears them first.
    """
    if type(before) is type(after) and before == after:
        return True
    if path in muted:
        return True
    d = types.deref(t)
    if d is not None and type(before) is dict and type(after) is dict:
        if d[0] == "struct":
            memo = schemas.memo(sch) if sch is not None else None
            for key, ft in types._fields.get(d[3] or "", {}).items():
                sub = memo[key] if memo is not None else None
                child = None if sub is None else sub.node
                if sch is not None and child is None:
                    continue  # pruned on both sides
                if not same_encoding(types, before.get(key, ABSENT), after.get(key, ABSENT), ft, schemas,
                                     child, muted, path + (key,)):
                    return False
            return True
    if d is not None and d[0] == "slice" and type(before) is list and type(after) is list \
            and len(before) == len(after) and before and not (sch is not None and "default" in sch):
        et = types.element(d)
        items = schemas.child(sch, 0) if sch is not None else None
        return all(same_encoding(types, b, a, et, schemas, items, muted, path + ("[]",))
                   for b, a in zip(before, after, strict=True))
    enc_b, enc_a = types.encode(before, t, schemas, sch), types.encode(after, t, schemas, sch)
    for pattern in muted:
        if pattern[: len(path)] == path and len(pattern) > len(path):
            drop_path(enc_b, pattern[len(path):])
            drop_path(enc_a, pattern[len(path):])
    return bool(enc_b == enc_a)


def drop_path(value: Any, pattern: tuple[str, ...]) -> None:
    """Remove ``pattern`` (keys, ``"[]"`` for every list item) from an encoded value."""
    if not pattern or value is OMIT:
        return
    head, rest = pattern[0], pattern[1:]
    if head == "[]":
        if isinstance(value, list):
            for item in value:
                drop_path(item, rest)
        return
    if isinstance(value, dict) and head in value:
        if rest:
            drop_path(value[head], rest)
        else:
            del value[head]


def _fresh(value: Any) -> Any:
    """A copy of an encoded value that shares no container with ``value``."""
    if type(value) is dict:
        return {k: _fresh(v) for k, v in value.items()}
    if type(value) is list:
        return [_fresh(v) for v in value]
    return value


def _not_omitted(value: Any) -> Any:
    return None if value is OMIT else value


def _plain(value: Any) -> Any:
    return OMIT if value is ABSENT else value
