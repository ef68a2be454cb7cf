"""diffing.record.Record behaves as the ``@dataclass(frozen=True, slots=True)`` it replaced (issue 24):
frozen, compared and hashed by its fields, the same repr, pickled and copied, ``replace``."""

from __future__ import annotations

import copy
import dataclasses
import pickle
from fractions import Fraction
from typing import Any

import pytest

from diffing.kube.loading import Document
from diffing.kube.paths import Key
from diffing.kube.resources import ClusterShape
from diffing.policy import Policy
from diffing.record import Record, replace
from diffing.report import Change, Finding


@dataclasses.dataclass(frozen=True, slots=True)
class ChangeTwin:  # Change as it was written before
    path: tuple[Any, ...]
    category: str
    before: Any
    after: Any
    detail: str = ""
    line: int | None = None


def test_repr_eq_hash_as_the_dataclass() -> None:
    args: tuple[Any, ...] = (("spec", Key("groupName", "gpu"), "replicas"), "scale", 1, 2)
    ours, twin = Change(*args, line=7), ChangeTwin(*args, line=7)
    assert repr(ours).removeprefix("Change") == repr(twin).removeprefix("ChangeTwin")
    assert repr(Key("a", "b")) == "Key(field='a', value='b')"
    assert ours == Change(*args, detail="", line=7) and hash(ours) == hash(Change(*args, line=7))
    assert ours != Change(*args, line=8)
    assert ours != twin and (ours == args) is False  # another class is never equal
    assert Change.__eq__(ours, twin) is NotImplemented
    assert len({ours, Change(*args, line=7), Change(*args)}) == 2
    assert Change.__match_args__ == ("path", "category", "before", "after", "detail", "line")


def test_frozen_as_the_dataclass() -> None:
    f = Finding("error", "code", "spec", "message")
    with pytest.raises(dataclasses.FrozenInstanceError, match="cannot assign to field 'code'"):
        f.code = "other"  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        del f.line
    with pytest.raises((AttributeError, TypeError)):
        f.extra = 1  # type: ignore[attr-defined]
    assert not hasattr(f, "__dict__")


def test_fields_left_out_of_compare_and_repr() -> None:
    a = Document(1, ("a", 1), lines={"x": 1}, start=3)
    b = Document(1, ("a", 1), lines=None, start=9, one_line=True)
    assert a == b and hash(a) == hash(b) and a != Document(2, ("a", 1))
    assert repr(a) == "Document(index=1, value=('a', 1))"
    assert a.start == 3 and b.one_line is True


def test_default_factories_give_each_object_its_own() -> None:
    p, q = Policy(), Policy()
    assert p.thresholds == {} and p.thresholds is not q.thresholds
    shape = ClusterShape({"cpu": Fraction(1)}, ())
    assert shape.units == {} and ClusterShape({}, (), {"cpu": "decimal"}).units == {"cpu": "decimal"}


@pytest.mark.parametrize("value", [
    Change(("spec", Key("name", "x")), "scale", {"a": [1]}, None, "d", 3),
    Policy(thresholds={"nvidia.com/gpu": Fraction(1, 2)}, environments=("prod",)),
    Document(2, [1, 2], start=4),
])
def test_pickles_and_copies(value: Record) -> None:
    for again in (pickle.loads(pickle.dumps(value)), copy.copy(value), copy.deepcopy(value)):
        assert again == value and type(again) is type(value)
        assert all(getattr(again, f) == getattr(value, f) for f in value._fields)


def test_replace() -> None:
    c = Change(("spec",), "scale", 1, 2, line=4)
    d = replace(c, category="noop")
    assert (d.category, d.line, c.category) == ("noop", 4, "scale")
    with pytest.raises(TypeError, match="Change has no field 'nope'"):
        replace(c, nope=1)
