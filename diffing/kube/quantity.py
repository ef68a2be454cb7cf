"""Kubernetes resource quantities, canonicalised as apimachinery's ``Quantity`` does.

A quantity keeps the *format family* it was written in (decimal SI ``1k``, binary SI
``1Ki``, decimal exponent ``1e3``) and serialises to the canonical string of that family
with the largest exact suffix (``resource.Quantity.CanonicalizeBytes``). So ``1000m`` and
``1`` are equal, ``2048Mi`` and ``2Gi`` are equal, but ``2Gi`` and ``2147483648`` are not.
"""

from __future__ import annotations

import math
import re
from fractions import Fraction
from functools import lru_cache

from diffing.record import Record, set_field

_RE = re.compile(
    r"^(?P<num>[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))"
    r"(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E|[eE][+-]?[0-9]+)?$"
)
_DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_BINARY = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_DECIMAL_SUFFIX = {v: k for k, v in _DECIMAL.items()}
_BINARY_SUFFIX = {0: "", 1: "Ki", 2: "Mi", 3: "Gi", 4: "Ti", 5: "Pi", 6: "Ei"}
_NANO = Fraction(1, 10**9)

DECIMAL_SI, BINARY_SI, DECIMAL_EXPONENT = "DecimalSI", "BinarySI", "DecimalExponent"

# Bounds: every amount the scheduler and the kubelet compute with is an int64 (Quantity.Value(),
# MilliValue(): apimachinery pkg/api/resource/quantity.go), so a quantity beyond 2^63-1 cannot
# be scheduled as written. Refusing it here also keeps every numeric path linear: a mantissa of
# thousands of digits or an exponent like 1e200000 would otherwise cost quadratic time to
# canonicalise. The digit cap is ours (apimachinery parses any length); 64 digits is more than
# int64 plus nano precision needs.
MAX_MAGNITUDE = 2**63 - 1
MAX_DIGITS = 64


class QuantityError(ValueError):
    """A string that is not a Kubernetes quantity."""


class QuantityOutOfRange(QuantityError):
    """A well-formed quantity beyond what Kubernetes computes with (see MAX_MAGNITUDE)."""


class Quantity(Record):
    __slots__ = ("value", "format")

    value: Fraction
    format: str

    def __init__(self, value: Fraction, format: str) -> None:
        set_field(self, "value", value)
        set_field(self, "format", format)

    @classmethod
    def parse(cls, raw: object) -> Quantity:
        if isinstance(raw, (str, int, float)) and not isinstance(raw, bool):
            return _parse_cached(raw)
        return cls._parse(raw)

    @classmethod
    def _parse(cls, raw: object) -> Quantity:
        if isinstance(raw, bool) or raw is None:
            raise QuantityError(f"{raw!r} is not a quantity")
        if isinstance(raw, int):
            return cls(Fraction(raw), DECIMAL_SI)
        if isinstance(raw, float):
            if not math.isfinite(raw):
                raise QuantityError(f"{raw!r} is not a quantity")
            text = repr(raw)
            if "e" in text or "E" in text:
                text = format(raw, "f")
        else:
            text = str(raw).strip()
        if len(text) > 2 * MAX_DIGITS:
            raise QuantityOutOfRange(f"{text[:24]}… ({len(text)} characters) is out of range for a quantity")
        m = _RE.match(text)
        if not m:
            raise QuantityError(f"{raw!r} is not a quantity")
        digits = m.group("num").lstrip("+-").replace(".", "").lstrip("0")
        if len(digits) > MAX_DIGITS:
            raise QuantityOutOfRange(f"{text!r} has more than {MAX_DIGITS} digits")
        number = Fraction(m.group("num"))
        suffix = m.group("suffix") or ""
        if suffix in _BINARY:
            value, fmt = number * (2 ** _BINARY[suffix]), BINARY_SI
        elif suffix[:1] in ("e", "E"):
            exponent = int(suffix[1:])
            if exponent < -2 * MAX_DIGITS:  # far below a nano: rounds up to 1n below, or is 0
                value = Fraction(0) if number == 0 else (_NANO if number > 0 else -_NANO)
            elif exponent > 2 * MAX_DIGITS:
                raise QuantityOutOfRange(f"{text!r} is out of range: Kubernetes holds amounts as int64")
            else:
                value = number * Fraction(10) ** exponent
            fmt = DECIMAL_EXPONENT
        else:
            value, fmt = number * Fraction(10) ** _DECIMAL[suffix], DECIMAL_SI
        if fmt == BINARY_SI and abs(value) > MAX_MAGNITUDE:
            # apimachinery caps binary amounts at the int64 maximum (quantity.go, ParseQuantity).
            value = Fraction(MAX_MAGNITUDE if value > 0 else -MAX_MAGNITUDE)
        if abs(value) > MAX_MAGNITUDE:
            raise QuantityOutOfRange(f"{text!r} is out of range: Kubernetes holds amounts as int64 "
                                f"(at most {MAX_MAGNITUDE})")
        # apimachinery rounds up to nano precision when parsing.
        if value.denominator != 1 and (value / _NANO).denominator != 1:
            value = Fraction(math.ceil(value / _NANO)) * _NANO
        return cls(value, fmt)

    def canonical(self) -> str:
        v = self.value
        if v == 0:
            return "0"
        fmt = self.format
        if fmt == BINARY_SI and (-1024 < v < 1024 or v.denominator != 1):
            fmt = DECIMAL_SI
        if fmt == BINARY_SI:
            n, exp = int(v), 0
            while n % 1024 == 0 and exp < 6:
                n //= 1024
                exp += 1
            return f"{n}{_BINARY_SUFFIX[exp]}"
        # Decimal: an integer mantissa times 10**exp, exp a multiple of 3.
        exp = 0
        while v.denominator != 1:
            v *= 10
            exp -= 1
        n = int(v)
        while n != 0 and n % 10 == 0:
            n //= 10
            exp += 1
        shift = exp % 3
        n *= 10**shift
        exp -= shift
        if fmt == DECIMAL_SI and exp in _DECIMAL_SUFFIX:
            return f"{n}{_DECIMAL_SUFFIX[exp]}"
        return f"{n}e{exp}" if exp else str(n)

    @property
    def is_integer(self) -> bool:
        return self.value.denominator == 1

    def ceil(self) -> int:
        return math.ceil(self.value)


@lru_cache(maxsize=8192, typed=True)
def _parse_cached(raw: str | int | float) -> Quantity:
    return Quantity._parse(raw)


def canonical(raw: object) -> str:
    """The canonical string of a quantity, e.g. ``canonical("2048Mi") == "2Gi"``."""
    return Quantity.parse(raw).canonical()


@lru_cache(maxsize=4096)  # the same few sums are shown in every phase of a report
def format_amount(value: Fraction, binary: bool) -> str:
    """A readable canonical string for a computed sum (``Gi`` family for memory)."""
    return Quantity(value, BINARY_SI if binary else DECIMAL_SI).canonical()
