"""Generate diffing/data/kuberay_<version>.py from the KubeRay CRDs and Go field table.

The analysis core must not read files at run time, so the operator's schema facts are
compiled into a Python module once, here, and committed. Run it again when a new KubeRay
version is added:

    python scripts/gen_kuberay_data.py ../shared 1.7.0
    python scripts/gen_kuberay_data.py ../shared 1.6.2 KUBERAY_1_6_2/config/crd/bases 1.7.0

What is kept: the RayService ``openAPIV3Schema`` (both served versions, ``status`` dropped),
with repeated subtrees (the pod template appears for the head and every container list)
stored once under ``defs`` and referenced as ``{"$ref": "dN"}``; and the Go
``encoding/json`` facts of every struct reachable from ``RayClusterSpec``, flattened so
that embedded ``inline`` structs appear in their parent.

The same run writes diffing/data/rayjob_<version>.py from the RayJob CRD vendored unchanged
under scripts/crds/ (KubeRay ``ray-operator/config/crd/bases/ray.io_rayjobs.yaml`` at that
tag): its ``openAPIV3Schema`` per served version, ``status`` dropped, trimmed and shared the
same way, so ``diffing.kube.schema.SchemaSet`` reads it. The RayService module is not affected.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import yaml

KEEP_SCHEMA_KEYS = {
    "type", "properties", "items", "additionalProperties", "required", "default", "enum",
    "minimum", "maximum", "minLength", "maxLength", "pattern", "format", "nullable",
    "anyOf", "allOf", "oneOf", "x-kubernetes-int-or-string", "x-kubernetes-preserve-unknown-fields",
    "x-kubernetes-list-type", "x-kubernetes-list-map-keys", "x-kubernetes-map-type",
    "x-kubernetes-validations", "x-kubernetes-embedded-resource", "minItems", "maxItems",
}
MIN_SHARED = 400  # characters of JSON below which a repeated subtree is left inline


def trim(node):
    if isinstance(node, dict):
        out = {}
        for key, value in node.items():
            if key not in KEEP_SCHEMA_KEYS:
                continue
            if key == "properties":
                out[key] = {k: trim(v) for k, v in value.items()}
            elif key in ("items", "additionalProperties") and isinstance(value, dict):
                out[key] = trim(value)
            elif key in ("anyOf", "allOf", "oneOf"):
                out[key] = [trim(v) for v in value]
            else:
                out[key] = value
        return out
    return node


def share(roots):
    """Replace subtrees that occur more than once by references into a defs table."""
    counts: dict[str, int] = {}

    def key_of(node):
        return hashlib.sha1(json.dumps(node, sort_keys=True).encode()).hexdigest()

    def count(node):
        if isinstance(node, dict):
            k = key_of(node)
            counts[k] = counts.get(k, 0) + 1
            for v in node.get("properties", {}).values():
                count(v)
            for sub in ("items", "additionalProperties"):
                if isinstance(node.get(sub), dict):
                    count(node[sub])

    for root in roots:
        count(root)
    defs: dict[str, dict] = {}
    names: dict[str, str] = {}

    def rewrite(node, top=False):
        if not isinstance(node, dict):
            return node
        k = key_of(node)
        node = dict(node)
        if "properties" in node:
            node["properties"] = {p: rewrite(v) for p, v in node["properties"].items()}
        for sub in ("items", "additionalProperties"):
            if isinstance(node.get(sub), dict):
                node[sub] = rewrite(node[sub])
        if not top and counts.get(k, 0) > 1 and len(json.dumps(node)) >= MIN_SHARED:
            if k not in names:
                names[k] = f"d{len(names)}"
                defs[names[k]] = node
            return {"$ref": names[k]}
        return node

    return [rewrite(r, top=True) for r in roots], defs


def go_types(table):
    types = table["types"]
    out = {}

    def fields_of(name):
        rows = []
        for f in types[name]["fields"]:
            if f["json"] == "inline":
                rows.extend(fields_of(f["inline_type"]))
                continue
            elem = f.get("ref") or f.get("elem_special") or f.get("elem") or f.get("special")
            rows.append([f["json"], f["kind"], f["omit_if"], f.get("elem_kind"), elem])
        return rows

    for name in types:
        out[name] = fields_of(name)
    return out


def crd_schema_doc(crd: dict) -> tuple[dict, dict]:
    """The trimmed, shared ``{"versions": ..., "defs": ...}`` document of a CRD, and its defs."""
    schemas = {}
    for v in crd["spec"]["versions"]:
        schema = trim(v["schema"]["openAPIV3Schema"])
        schema["properties"].pop("status", None)
        schemas[v["name"]] = schema
    names = list(schemas)
    shared_roots, defs = share([schemas[n] for n in names])
    return {"versions": dict(zip(names, shared_roots, strict=True)), "defs": defs}, defs


def write_rayjob(version: str) -> None:
    """diffing/data/rayjob_<version>.py from scripts/crds/ray.io_rayjobs.v<version>.yaml."""
    here = Path(__file__).resolve().parent
    crd = yaml.load((here / "crds" / f"ray.io_rayjobs.v{version}.yaml").read_text(), Loader=yaml.CSafeLoader)
    schema_doc, defs = crd_schema_doc(crd)
    ident = version.replace(".", "_")
    out = here.parent / "diffing" / "data" / f"rayjob_{ident}.py"
    out.write_text(
        f'"""KubeRay v{version} RayJob schema, generated by scripts/gen_kuberay_data.py; do not edit.\n\n'
        f"SCHEMA: the RayJob CRD openAPIV3Schema per served API version (status dropped), shared\n"
        f'subtrees under defs (read by diffing.kube.schema.SchemaSet).\n"""\n\n'
        f"SCHEMA_JSON = {json.dumps(json.dumps(schema_doc, separators=(',', ':'), sort_keys=True))}\n"
    )
    print(f"wrote {out} ({out.stat().st_size} bytes, {len(defs)} shared subtrees)")


def main(shared: str, version: str, crd_dir: str | None = None, go_version: str | None = None) -> None:
    """``crd_dir``: KubeRay's ``ray-operator/config/crd/bases`` at that tag, for a version whose
    CRDs are not under ``shared``; ``go_version``: the version whose Go field table to use (an
    older KubeRay lacks fields, and its CRD prunes them before anything is encoded)."""
    shared_dir = Path(shared)
    crd_file = (Path(crd_dir) / "ray.io_rayservices.yaml" if crd_dir
                else shared_dir / "crds" / f"ray.io_rayservices.v{version}.yaml")
    crd = yaml.load(crd_file.read_text(), Loader=yaml.CSafeLoader)
    schema_doc, defs = crd_schema_doc(crd)
    go_file = shared_dir / "kuberay" / f"go-json-fields.v{go_version or version}.json"
    gofields = json.loads(go_file.read_text())
    go_doc = {"root": "ray/v1.RayClusterSpec", "types": go_types(gofields)}
    ident = version.replace(".", "_")
    out = Path(__file__).resolve().parent.parent / "diffing" / "data" / f"kuberay_{ident}.py"
    out.write_text(
        f'"""KubeRay v{version} schema facts, generated by scripts/gen_kuberay_data.py; do not edit.\n\n'
        f"SCHEMA: the RayService CRD openAPIV3Schema per served API version (status dropped),\n"
        f"shared subtrees under defs. GO_TYPES: encoding/json facts per Go struct reachable from\n"
        f'RayClusterSpec: [json name, kind, omit rule, element kind, element type].\n"""\n\n'
        f"SCHEMA_JSON = {json.dumps(json.dumps(schema_doc, separators=(',', ':'), sort_keys=True))}\n\n"
        f"GO_TYPES_JSON = {json.dumps(json.dumps(go_doc, separators=(',', ':'), sort_keys=True))}\n"
    )
    print(f"wrote {out} ({out.stat().st_size} bytes, {len(defs)} shared subtrees)")
    if (Path(__file__).resolve().parent / "crds" / f"ray.io_rayjobs.v{version}.yaml").exists():
        write_rayjob(version)


if __name__ == "__main__":
    args = sys.argv[1:] + [None] * 4
    main(args[0] or "../shared", args[1] or "1.7.0", args[2], args[3])
