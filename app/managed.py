"""Argo CD ``managed-resources`` bodies -> (before, after) texts for the analysis.

Each item's ``liveState`` (BEFORE) and ``targetState`` (AFTER) are JSON *strings*;
``"null"`` or an empty string means the object is absent on that side. JSON is YAML, so the
parsed objects are handed to the core as one JSON document per item. Server-set fields
(status, managedFields, resourceVersion, uid, generation, creationTimestamp, the
last-applied annotation) are stripped by the core itself, and the CRD's defaults are
applied to both sides there too.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from diffing.manifests import KINDS

from . import jsonio


class ManagedResourcesError(ValueError):
    """A managed-resources body that does not have the documented shape."""


def _state(item: Mapping[str, Any], field: str, index: int) -> dict[str, Any] | None:
    raw = item.get(field)
    if raw in (None, "", "null"):
        return None
    if not isinstance(raw, str):
        raise ManagedResourcesError(
            f"items[{index}].{field} must be a JSON string, found {type(raw).__name__}")
    try:
        value = jsonio.loads(raw, f"items[{index}].{field}")
    except jsonio.JSONInputError as exc:
        raise ManagedResourcesError(str(exc)) from None
    if value is None:
        return None
    if not isinstance(value, dict):
        raise ManagedResourcesError(f"items[{index}].{field} must hold a JSON object")
    return value


def texts_from_managed_resources(body: Any) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """(before, after) as ``(source, text)`` pairs, one per RayService, RayCluster or RayJob item
    (group ``ray.io``; an item without kind or group is passed on: the core reads its object's
    own ``kind``, and names a RayCluster its RayService or RayJob owns as not analysed)."""
    if not isinstance(body, Mapping) or not isinstance(body.get("items", []), list):
        raise ManagedResourcesError("expected an object with an 'items' array")
    before: list[tuple[str, str]] = []
    after: list[tuple[str, str]] = []
    for i, item in enumerate(body.get("items") or []):
        if not isinstance(item, Mapping):
            raise ManagedResourcesError(f"items[{i}] must be an object")
        if item.get("kind") not in (None, *KINDS) or item.get("group") not in (None, "ray.io"):
            continue
        name = f"{item.get('namespace') or 'default'}/{item.get('name') or i}"
        live, target = _state(item, "liveState", i), _state(item, "targetState", i)
        if live is not None:
            before.append((f"live {name}", json.dumps(live)))
        if target is not None:
            after.append((f"target {name}", json.dumps(target)))
    return before, after
