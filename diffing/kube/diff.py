"""A typed structural diff of two RayService objects.

The walk compares the manifests as written, list items matched by their identifying field
(``groupName``, ``name``, the CRD's list-map keys), so a human reads "image changed in group
gpu" rather than "item 3 changed". Each difference is then judged the operator's way: the
value on both sides goes through the API server's defaulting and Go's JSON encoding
(:mod:`diffing.gojson`), and a difference that vanishes there is marked ``noop``.
"""

from __future__ import annotations

from diffing.hints import Any
from diffing.kube.gojson import ABSENT, OMIT, GoTypes, TypeDesc
from diffing.kube.paths import Key, Path
from diffing.kube.schema import Schema, SchemaSet
from diffing.record import Record, set_field

# Lists the CRD gives no map key for, but whose items a human names.
EXTRA_LIST_KEYS = {"workerGroupSpecs": "groupName", "applications": "name", "deployments": "name"}


class Difference(Record):
    """One difference: ``kind`` is modified / added / removed / reordered."""

    __slots__ = ("path", "before", "after", "kind", "noop", "note")

    path: Path
    before: Any
    after: Any
    kind: str
    noop: bool
    note: str

    def __init__(self, path: Path, before: Any, after: Any, kind: str, noop: bool = False,
                 note: str = "") -> None:
        set_field(self, "path", path)
        set_field(self, "before", before)
        set_field(self, "after", after)
        set_field(self, "kind", kind)
        set_field(self, "noop", noop)
        set_field(self, "note", note)


def _same(a: Any, b: Any) -> bool:
    return type(a) is type(b) and a == b


def item_key(items_b: list[Any], items_a: list[Any], field: str | None) -> str | None:
    """``field`` if every item on both sides is a mapping with a unique scalar ``field``."""
    if not field:
        return None
    for items in (items_b, items_a):
        seen = set()
        for item in items:
            if not isinstance(item, dict):
                return None
            value = item.get(field)
            if value is None or isinstance(value, (dict, list)) or str(value) in seen:
                return None
            seen.add(str(value))
    return field


class Differ:
    def __init__(self, schemas: SchemaSet, gotypes: GoTypes, *, order_matters: bool = True) -> None:
        self.schemas = schemas
        self.gotypes = gotypes
        self.order_matters = order_matters

    def canonical(self, value: Any, sch: Schema | None, t: TypeDesc | None) -> Any:
        """The value as the operator sees it (API server defaults, then Go encoding)."""
        if t is not None:
            return self.gotypes.encode(value, t, self.schemas, sch)
        if value is None and not (sch or {}).get("nullable"):
            value = ABSENT
        if value is ABSENT:
            if sch is not None and "default" in sch:
                return self.schemas.default_fill(sch["default"], sch)
            return OMIT
        if sch is not None:
            return self.schemas.default_fill(value, sch)
        return value

    def diff(self, before: Any, after: Any, path: Path, sch: Schema | None, t: TypeDesc | None
             ) -> list[Difference]:
        out: list[Difference] = []
        self._pair(before, after, path, sch, t, out)
        return out

    def _pair(self, b: Any, a: Any, path: Path, sch: Schema | None, t: TypeDesc | None,
              out: list[Difference]) -> None:
        if _same(b, a):
            return
        deref = self.gotypes.deref(t) if t is not None else None
        is_struct = deref is not None and deref[0] == "struct"
        pointer = t is not None and t[0] == "pointer"
        mapping_schema = sch is not None and "properties" in sch
        if isinstance(b, dict) and isinstance(a, dict):
            self._dicts(b, a, path, sch, t, out)
            return
        if isinstance(b, list) and isinstance(a, list) and not _scalars(b) and not _scalars(a):
            self._lists(b, a, path, sch, t, out)
            return
        one_missing = b is ABSENT or b is None or a is ABSENT or a is None
        other = a if (b is ABSENT or b is None) else b
        if (one_missing and isinstance(other, dict) and not pointer
                and (is_struct or (t is None and mapping_schema))):
            # An absent non-pointer struct is its zero value: compare field by field.
            start = len(out)
            self._dicts(b if isinstance(b, dict) else {}, a if isinstance(a, dict) else {},
                        path, sch, t, out)
            if len(out) > start:
                return
        self._leaf(b, a, path, sch, t, out)

    def _leaf(self, b: Any, a: Any, path: Path, sch: Schema | None, t: TypeDesc | None,
              out: list[Difference]) -> None:
        noop = self.canonical(b, sch, t) == self.canonical(a, sch, t)
        kind = "added" if b is ABSENT else "removed" if a is ABSENT else "modified"
        out.append(Difference(path, b, a, kind, noop))

    def _dicts(self, b: dict[str, Any], a: dict[str, Any], path: Path, sch: Schema | None,
               t: TypeDesc | None, out: list[Difference]) -> None:
        memo = self.schemas.memo(sch) if sch is not None else None
        for key in list(b) + [k for k in a if k not in b]:
            bv, av = b.get(key, ABSENT), a.get(key, ABSENT)
            if _same(bv, av):
                continue
            sub = memo[key] if memo is not None else None
            child_sch = None if sub is None else sub.node
            child_t = self.gotypes.field(t, key) if t is not None else None
            if sch is not None and child_sch is None:
                kind = "added" if bv is ABSENT else "removed" if av is ABSENT else "modified"
                out.append(Difference(path + (key,), bv, av, kind, True, "unknown field, pruned"))
                continue
            deref = self.gotypes.deref(t)
            if deref is not None and child_t is None and deref[0] == "struct":
                kind = "added" if bv is ABSENT else "removed" if av is ABSENT else "modified"
                out.append(Difference(path + (key,), bv, av, kind, True, "unknown field, dropped"))
                continue
            self._pair(bv, av, path + (key,), child_sch, child_t, out)

    def _lists(self, b: list[Any], a: list[Any], path: Path, sch: Schema | None,
               t: TypeDesc | None, out: list[Difference]) -> None:
        item_sch = self.schemas.child(sch, 0) if sch is not None else None
        item_t = self.gotypes.element(t) if t is not None else None
        name = path[-1] if path and isinstance(path[-1], str) else ""
        field = EXTRA_LIST_KEYS.get(name) or (self.schemas.list_key(sch) if sch is not None else None)
        key = item_key(b, a, field)
        if key is None:
            for i in range(max(len(b), len(a))):
                bv = b[i] if i < len(b) else ABSENT
                av = a[i] if i < len(a) else ABSENT
                if bv is ABSENT or av is ABSENT:
                    self._leaf(bv, av, path + (i,), item_sch, item_t, out)
                else:
                    self._pair(bv, av, path + (i,), item_sch, item_t, out)
            return
        b_map = {str(item[key]): item for item in b}
        a_map = {str(item[key]): item for item in a}
        common_b = [k for k in b_map if k in a_map]
        common_a = [k for k in a_map if k in b_map]
        if common_b != common_a:
            out.append(Difference(path, list(b_map), list(a_map), "reordered", not self.order_matters,
                                  f"order of {key} values changed"))
        for k in a_map:
            seg = path + (Key(key, k),)
            if k in b_map:
                self._pair(b_map[k], a_map[k], seg, item_sch, item_t, out)
            else:
                out.append(Difference(seg, ABSENT, a_map[k], "added"))
        for k in b_map:
            if k not in a_map:
                out.append(Difference(path + (Key(key, k),), b_map[k], ABSENT, "removed"))


def _scalars(items: list[Any]) -> bool:
    return all(not isinstance(v, (dict, list)) for v in items)
