"""Safe access into manifests whose shape is not guaranteed (a schema violation must not crash)."""

from __future__ import annotations

from collections.abc import Mapping

from diffing.hints import Any

EMPTY: Mapping[str, Any] = {}


def mapping(value: Any) -> Mapping[str, Any]:
    # Manifests hold plain dicts: test that first (an ABC isinstance is several times slower).
    if type(value) is dict:
        return value
    return EMPTY if value is None or not isinstance(value, Mapping) else value


def seq(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def dig(value: Any, *keys: str) -> Mapping[str, Any]:
    """``value[k1][k2]...`` as a mapping; ``{}`` as soon as a step is not a mapping."""
    for key in keys:
        value = value.get(key) if type(value) is dict else mapping(value).get(key)
    return mapping(value)
