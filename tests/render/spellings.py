"""Spellings of one manifest that deploy the same objects: what kubectl, kustomize and Argo CD
read the same, and a text pattern does not. Each takes the YAML text of one or more objects and
returns the bytes of a file (and the suffix it needs)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

import yaml

Spelling = Callable[[str], tuple[bytes, str]]


def _docs(text: str) -> list[Any]:
    return [d for d in yaml.safe_load_all(text) if d is not None]


def _yaml(text: str) -> tuple[bytes, str]:
    return text.encode(), ".yaml"


def _kind_comment(text: str) -> tuple[bytes, str]:
    return re.sub(r"^(kind: *\w+)$", r"\1  # deployed by the llm team", text, flags=re.M).encode(), ".yaml"


def _kind_tag(text: str) -> tuple[bytes, str]:
    return re.sub(r"^kind: *(\w+)$", r"kind: !!str \1", text, flags=re.M).encode(), ".yaml"


def _quoted_keys(text: str) -> tuple[bytes, str]:
    return re.sub(r"^(kind|apiVersion):", r'"\1":', text, flags=re.M).encode(), ".yaml"


def _escaped_group(text: str) -> tuple[bytes, str]:
    """The API group spelled with an escape: the bytes ``ray.io`` are not in the file."""
    return re.sub(r"^apiVersion: *ray\.io/(\w+)$", r'apiVersion: "ray\\x2eio/\1"', text,
                  flags=re.M).encode(), ".yaml"


def _flow(text: str) -> tuple[bytes, str]:
    return "---\n".join(yaml.safe_dump(d, default_flow_style=True, width=10_000)
                        for d in _docs(text)).encode(), ".yaml"


def _json_file(text: str) -> tuple[bytes, str]:
    docs = _docs(text)
    value = docs[0] if len(docs) == 1 else {"apiVersion": "v1", "kind": "List", "items": docs}
    return json.dumps(value, indent=1).encode(), ".json"


def _json_in_yaml(text: str) -> tuple[bytes, str]:
    return "\n---\n".join(json.dumps(d) for d in _docs(text)).encode(), ".yaml"


def _list(kind: str) -> Spelling:
    def spell(text: str) -> tuple[bytes, str]:
        wrapper = {"apiVersion": "v1" if kind in ("List", "ConfigMapList") else "ray.io/v1", "kind": kind,
                   "items": _docs(text)}
        return yaml.safe_dump(wrapper, sort_keys=False).encode(), ".yaml"
    return spell


def _nested_list(text: str) -> tuple[bytes, str]:
    inner = {"apiVersion": "v1", "kind": "List", "items": _docs(text)}
    return yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": [inner]}).encode(), ".yaml"


def _reordered(text: str) -> tuple[bytes, str]:
    return "---\n".join(yaml.safe_dump(_reverse(d)) for d in _docs(text)).encode(), ".yaml"


def _reverse(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _reverse(value[k]) for k in reversed(list(value))}
    if isinstance(value, list):
        return [_reverse(v) for v in value]
    return value


def _anchors(text: str) -> tuple[bytes, str]:
    """The metadata under an anchor (the general, slower reading path of the loader)."""
    out = []
    for d in _docs(text):
        meta = d.pop("metadata")
        body = yaml.safe_dump(d, sort_keys=False)
        out.append("metadata: &meta\n" + _indent(yaml.safe_dump(meta)) + body)
    return "---\n".join(out).encode(), ".yaml"


def _merge_key(text: str) -> tuple[bytes, str]:
    """Every metadata key but the name merged in from an anchor (``<<:``)."""
    out = []
    for d in _docs(text):
        meta = d.pop("metadata")
        name = meta.pop("name")
        body = yaml.safe_dump(d, sort_keys=False)
        out.append("metadata:\n  <<: &rest\n" + _indent(yaml.safe_dump(meta) if meta else "{}\n", 4)
                   + f"  name: {name}\n" + body)
    return "---\n".join(out).encode(), ".yaml"


def _indent(text: str, n: int = 2) -> str:
    return "".join(" " * n + line + "\n" for line in text.splitlines())


def _encoded(codec: str) -> Spelling:
    def spell(text: str) -> tuple[bytes, str]:
        data = text.encode(codec)
        if codec in ("utf-16-be", "utf-32-le"):  # without a mark of their own: add it
            data = ("\ufeff" + text).encode(codec)
        return data, ".yaml"
    return spell


SPELLINGS: dict[str, Spelling] = {
    "plain": _yaml,
    "kind-comment": _kind_comment,
    "kind-tag": _kind_tag,
    "quoted-keys": _quoted_keys,
    "escaped-group": _escaped_group,
    "flow-style": _flow,
    "json-file": _json_file,
    "json-in-yaml": _json_in_yaml,
    "List": _list("List"),
    "RayServiceList": _list("RayServiceList"),
    "ConfigMapList": _list("ConfigMapList"),
    "nested-List": _nested_list,
    "key-order": _reordered,
    "anchor": _anchors,
    "merge-key": _merge_key,
    "utf-8-bom": _encoded("utf-8-sig"),
    "utf-16": _encoded("utf-16"),
    "utf-16-be": _encoded("utf-16-be"),
    "utf-32": _encoded("utf-32"),
    "utf-32-le": _encoded("utf-32-le"),
}
