"""Argo CD ``managed-resources`` bodies -> (before, after) texts for the analysis.

Each item's ``liveState`` (BEFORE) and ``targetState`` (AFTER) are JSON *strings*;
``"null"`` or an empty string means the object is absent on that side. JSON is YAML, so the
parsed objects are handed to the core as one JSON document per item. Server-set fields
(status, managedFields, resourceVersion, uid, generation, creationTimestamp, the
last-applied annotation) are stripped by the core itself, and the CRD's defaults are
applied to both sides there too.

A body that is not such an answer is refused, never read as "no resources" (which approves):
one without ``items``, Argo CD's error answer (``{"error", "code", "message"}``, the
``runtimeError`` of its swagger), or an item with neither state. The HTTP route asks for the
``items`` key itself (:func:`check_managed_body`); the PreSync hook, which reads Argo CD's own
200 answer, takes a missing ``items`` as none, since Argo CD's JSON leaves an empty list out
(``json:"items,omitempty"`` on ``ManagedResourcesResponse``, pkg/apiclient/application/
application.pb.go).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from diffing.kube.manifests import KINDS

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


_ABSENT = (None, "", "null")  # a state Argo CD sends for an object missing on that side
_ERROR_KEYS = ("error", "code", "message")  # runtimeError (swagger.json): a failed call's body


def check_managed_body(body: Any, *, require_items: bool = True) -> list[Any]:
    """The ``items`` of a managed-resources answer, or :class:`ManagedResourcesError` naming what
    is wrong: not an object, Argo CD's error answer, no ``items`` list (when ``require_items``;
    ``{"items": []}`` is an application without resources), an item that is not an object or
    that has neither ``targetState`` nor ``liveState``."""
    if not isinstance(body, Mapping):
        raise ManagedResourcesError(f"expected Argo CD's managed-resources answer, an object with an 'items' "
                                    f"array; found a JSON {_json_type(body)}")
    if "error" in body or ("items" not in body and any(k in body for k in _ERROR_KEYS)):
        raise ManagedResourcesError("this is Argo CD's error answer, not its managed resources: "
                                    + _error(body))
    items = body.get("items")
    if items is None and require_items:
        found = ", ".join(sorted(map(str, body))[:5]) or "none"
        raise ManagedResourcesError(
            "no 'items' array: expected Argo CD's managed-resources answer {\"items\": [...]} "
            f"(keys found: {found}); an application without managed resources is {{\"items\": []}}")
    if items is None:
        return []
    if not isinstance(items, list):
        raise ManagedResourcesError(f"'items' must be an array, found a JSON {_json_type(items)}")
    for i, item in enumerate(items):
        if not isinstance(item, Mapping):
            raise ManagedResourcesError(f"items[{i}] must be an object, found a JSON {_json_type(item)}")
        if item.get("targetState") in _ABSENT and item.get("liveState") in _ABSENT:
            raise ManagedResourcesError(f"items[{i}]{_named(item)}: neither targetState nor liveState (an "
                                        "object is missing on at most one side)")
    return items


def _json_type(value: Any) -> str:
    names = {dict: "object", list: "array", str: "string", bool: "boolean", int: "number", float: "number"}
    return "null" if value is None else next((n for t, n in names.items() if isinstance(value, t)), "value")


def _error(body: Mapping[str, Any]) -> str:
    """Argo CD's own words, shortened: ``permission denied (code 7)``."""
    text = str(body.get("message") or body.get("error") or "no message")[:200]
    code = body.get("code")
    return f"{text} (code {code})" if isinstance(code, int) and not isinstance(code, bool) else text


def _named(item: Mapping[str, Any]) -> str:
    parts = [str(item.get(k))[:100] for k in ("kind", "name") if isinstance(item.get(k), str) and item.get(k)]
    return f" ({' '.join(parts)})" if parts else ""


def texts_from_managed_resources(body: Any, *, require_items: bool = False
                                 ) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """(before, after) as ``(source, text)`` pairs, one per RayService, RayCluster or RayJob item
    (group ``ray.io``; an item without kind or group is passed on: the core reads its object's
    own ``kind``, and names a RayCluster its RayService or RayJob owns as not analysed).

    The body is checked first (:func:`check_managed_body`); ``require_items`` as there.
    """
    before: list[tuple[str, str]] = []
    after: list[tuple[str, str]] = []
    for i, item in enumerate(check_managed_body(body, require_items=require_items)):
        if item.get("kind") not in (None, *KINDS) or item.get("group") not in (None, "ray.io"):
            continue
        name = f"{item.get('namespace') or 'default'}/{item.get('name') or i}"
        live, target = _state(item, "liveState", i), _state(item, "targetState", i)
        if live is not None:
            before.append((f"live {name}", json.dumps(live)))
        if target is not None:
            after.append((f"target {name}", json.dumps(target)))
    return before, after


# What an operator upgrade shows in an Argo CD diff (docs/operator-upgrade.md): its Deployment's
# image and the ray.io CRDs. Each Argo CD filter names one group and kind.
OPERATOR_KINDS = (("apps", "Deployment"), ("apiextensions.k8s.io", "CustomResourceDefinition"))


def operator_files_from_managed_resources(body: Any) -> list[tuple[str, str | None, str | None]]:
    """``(name, live text, target text)`` per Deployment or CustomResourceDefinition item: where
    :func:`diffing.operator.judge.upgrade_in` looks for an operator change. ``None`` for a side
    the item does not have."""
    out: list[tuple[str, str | None, str | None]] = []
    for i, item in enumerate(check_managed_body(body, require_items=False)):
        if (item.get("group"), item.get("kind")) not in OPERATOR_KINDS:
            continue
        if item.get("modified") is False:
            continue  # Argo CD compared it and found nothing to apply: server defaults are not a change
        # What Argo CD's own diff shows (normalizedLiveState vs predictedLiveState, ignoreDifferences
        # applied); liveState/targetState where an older Argo CD sends only those.
        live = _state(item, "normalizedLiveState", i) or _state(item, "liveState", i)
        target = _state(item, "predictedLiveState", i) or _state(item, "targetState", i)
        name = f"{item['kind']} {item.get('namespace') or ''}/{item.get('name') or i}".replace(" /", " ")
        out.append((name, None if live is None else json.dumps(live),
                    None if target is None else json.dumps(target)))
    return out
