"""Kubernetes and Go syntax checks that KubeRay's validation calls, reimplemented.

Each function returns ``None`` when the value is accepted, else a short reason. They follow
k8s.io/apimachinery v0.36.0 (the version KubeRay v1.7.0 builds with): ``util/validation``
(DNS labels, port names), ``api/validate/content`` (label keys and values) and
``util/version.ParseGeneric``; and Go's ``time.ParseDuration`` / ``strconv.Atoi``.
"""

from __future__ import annotations

import re

_DNS1123_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_DNS1035_LABEL = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")
_LABEL_NAME = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
_PORT_CHARS = re.compile(r"[-a-z0-9]+")
# util/version: versionMatchRE; the "extra" part after the numbers is ignored by ParseGeneric.
_VERSION = re.compile(r"\s*v?([0-9]+(?:\.[0-9]+)*)(.*)", re.DOTALL)
_DURATION_UNITS = {"ns": 1, "us": 10**3, "µs": 10**3, "μs": 10**3, "ms": 10**6, "s": 10**9,
                   "m": 60 * 10**9, "h": 3600 * 10**9}
_DURATION_PART = re.compile(r"([0-9]*)(?:\.([0-9]*))?(ns|us|µs|μs|ms|s|m|h)")


def dns1123_label(value: str) -> str | None:
    """``validation.IsDNS1123Label``: lower-case alphanumerics and '-', at most 63 characters."""
    if len(value) > 63:
        return "must be no more than 63 characters"
    if not _DNS1123_LABEL.fullmatch(value):
        return "must be a DNS-1123 label (lower-case alphanumerics and '-', alphanumeric at both ends)"
    return None


def dns1035_label(value: str) -> str | None:
    """``validation.IsDNS1035Label``: a DNS-1123 label that starts with a letter."""
    if len(value) > 63:
        return "must be no more than 63 characters"
    if not _DNS1035_LABEL.fullmatch(value):
        return ("must be a DNS-1035 label (lower-case alphanumerics and '-', starting with a letter "
                "and ending with an alphanumeric)")
    return None


def dns1123_subdomain(value: str) -> str | None:
    if len(value) > 253:
        return "must be no more than 253 characters"
    if not all(_DNS1123_LABEL.fullmatch(part) for part in value.split(".")):
        return "must be a DNS-1123 subdomain"
    return None


def label_key(key: str) -> str | None:
    """``content.IsLabelKey`` (``validation.IsQualifiedName``): ``[prefix/]name``."""
    parts = key.split("/")
    if len(parts) > 2:
        return "a label key has at most one '/'"
    name = parts[-1]
    if len(parts) == 2:
        if not parts[0]:
            return "the prefix part must not be empty"
        bad = dns1123_subdomain(parts[0])
        if bad:
            return f"the prefix part {bad}"
    if not name:
        return "the name part must not be empty"
    if len(name) > 63:
        return "the name part must be no more than 63 characters"
    if not _LABEL_NAME.fullmatch(name):
        return ("the name part must consist of alphanumerics, '-', '_' or '.', and start and end with "
                "an alphanumeric")
    return None


def label_value(value: str) -> str | None:
    """``content.IsLabelValue``: empty, or like a label key's name part (at most 63 characters)."""
    if len(value) > 63:
        return "must be no more than 63 characters"
    if value and not _LABEL_NAME.fullmatch(value):
        return ("must be empty or consist of alphanumerics, '-', '_' or '.', and start and end with "
                "an alphanumeric")
    return None


def port_name(value: str) -> str | None:
    """``validation.IsValidPortName`` (IANA service name): what Pod validation asks of a port name."""
    if len(value) > 15:
        return "must be no more than 15 characters"
    if not _PORT_CHARS.fullmatch(value):
        return "must contain only a-z, 0-9 and '-'"
    if not any("a" <= ch <= "z" for ch in value):
        return "must contain at least one letter"
    if "--" in value:
        return "must not contain consecutive hyphens"
    if value.startswith("-") or value.endswith("-"):
        return "must not begin or end with a hyphen"
    return None


def parse_generic_version(text: str) -> tuple[int, ...] | None:
    """``version.ParseGeneric``: at least two numeric components, anything after them ignored.

    ``None`` when Go fails to parse it ("could not parse", "illegal version string", a
    zero-prefixed first component).
    """
    m = _VERSION.match(text)
    if not m:
        return None
    parts = m.group(1).split(".")
    if len(parts) < 2 or (parts[0].startswith("0") and parts[0] != "0"):
        return None
    return tuple(int(p) for p in parts)


def version_less(have: tuple[int, ...], want: tuple[int, ...]) -> bool:
    """``Version.LessThan`` for generic versions: missing components count as 0."""
    n = max(len(have), len(want))
    return have + (0,) * (n - len(have)) < want + (0,) * (n - len(want))


def go_duration_ns(text: str) -> int | None:
    """``time.ParseDuration`` in nanoseconds (rounded down), ``None`` when Go rejects it."""
    s = text
    sign = 1
    if s[:1] in ("-", "+"):
        sign = -1 if s[0] == "-" else 1
        s = s[1:]
    if s == "0":
        return 0
    if not s:
        return None
    total = 0
    pos = 0
    while pos < len(s):
        m = _DURATION_PART.match(s, pos)
        if not m or not (m.group(1) or m.group(2)):
            return None
        whole, frac, unit = m.group(1) or "0", m.group(2) or "", m.group(3)
        scale = _DURATION_UNITS[unit]
        total += int(whole) * scale + (int(frac) * scale // 10 ** len(frac) if frac else 0)
        pos = m.end()
    return sign * total


def go_atoi(text: str) -> int | None:
    """``strconv.Atoi``: an optional sign and decimal digits, nothing else."""
    return int(text) if re.fullmatch(r"[+-]?[0-9]+", text) else None
