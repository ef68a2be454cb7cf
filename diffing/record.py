"""Frozen value classes that cost nothing at import (issue 24).

``@dataclass(frozen=True, slots=True)`` writes its methods as source text and compiles it when
the class is defined (``exec``, once per method), then builds the class a second time for the
slots: about half a millisecond per class, and the ``dataclasses`` import (``inspect``, ``ast``,
``dis``, ``tokenize``) on top. The command line's path defined 33 of them, a third of its start
beyond the floor (bench/bench_cli_start.py). A :class:`Record` behaves as such a dataclass does:

* its fields are its ``__slots__``, in order, and its ``__init__`` is written out in the class
  (compiled into the .pyc once, as fast as a dataclass's);
* frozen: assigning or deleting a field raises ``dataclasses.FrozenInstanceError``;
* ``==`` compares the same class's fields as a tuple (``NotImplemented`` for any other class),
  ``hash`` is the hash of that tuple, ``repr`` is ``Name(field=value, ...)``;
* ``_compared`` (default: every field) limits what ``==``, ``hash`` and ``repr`` read, as
  ``field(compare=False, repr=False)`` does;
* it pickles and copies (``__getstate__`` / ``__setstate__``, as a slotted frozen dataclass);
* :func:`replace` is ``dataclasses.replace``.
"""

from __future__ import annotations

from operator import attrgetter

from diffing.hints import TYPE_CHECKING, Any, ClassVar

__all__ = ["Record", "replace", "set_field"]

if TYPE_CHECKING:
    from typing import TypeVar

    R = TypeVar("R", bound="Record")

set_field = object.__setattr__  # how a Record's __init__ writes its fields


def _frozen(name: str) -> AttributeError:
    from dataclasses import FrozenInstanceError  # only on the error path: the import is the cost

    return FrozenInstanceError(f"cannot assign to field {name!r}")


class Record:
    """Base of the core's frozen values; a subclass declares ``__slots__`` and ``__init__``."""

    __slots__ = ()
    _fields: ClassVar[tuple[str, ...]] = ()
    _compared: ClassVar[tuple[str, ...]] = ()
    _key: ClassVar[Any]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        slots = cls.__dict__.get("__slots__")
        fields = tuple(slots) if isinstance(slots, (tuple, list)) else cls._fields
        compared = cls.__dict__.get("_compared") or fields
        cls._fields, cls._compared = fields, tuple(compared)
        getter = attrgetter(*compared) if compared else (lambda _: ())
        cls._key = staticmethod(getter if len(compared) != 1 else (lambda o: (getter(o),)))
        setattr(cls, "__match_args__", fields)  # noqa: B010 - mypy refuses the plain assignment

    def __setattr__(self, name: str, value: Any) -> None:
        raise _frozen(name)

    def __delattr__(self, name: str) -> None:
        raise _frozen(name)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is self.__class__:
            return bool(self._key(self) == self._key(other))
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._key(self))

    def __repr__(self) -> str:
        shown = ", ".join(f"{f}={getattr(self, f)!r}" for f in self._compared)
        return f"{self.__class__.__qualname__}({shown})"

    def __getstate__(self) -> list[Any]:
        return [getattr(self, f) for f in self._fields]

    def __setstate__(self, state: list[Any]) -> None:
        for f, v in zip(self._fields, state, strict=True):
            set_field(self, f, v)


def replace(obj: R, /, **changes: Any) -> R:
    """A copy of ``obj`` with ``changes`` (field names) applied, as ``dataclasses.replace``."""
    unknown = set(changes) - set(obj._fields)
    if unknown:
        raise TypeError(f"{type(obj).__name__} has no field {sorted(unknown)[0]!r}")
    return type(obj)(**{f: changes[f] if f in changes else getattr(obj, f) for f in obj._fields})
