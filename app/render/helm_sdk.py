"""The Helm SDK child: renders one chart with helm-python-sdk and prints it like ``helm template``.

Run by :func:`app.render.helm.render_helm` as ``python -P -s -m app.render.helm_sdk`` with a JSON
request on stdin, so the Go library lives and dies in this process, under run_tool's time and output
limits. Prints the YAML stream on stdout and exits 0, or prints one line on stderr and exits 1.

Values are merged in the order ``helm template`` uses (helm v4.2.3 pkg/cli/values/options.go,
``MergeValues``): each values file in order, deep-merging maps with later files winning; then the
inline values documents (Argo CD hands them to Helm as one more ``--values`` file); then every
``--set``, then every ``--set-string``, each written *into* the merged values like Helm's
``strvals.ParseInto`` (a list index changes one element of an existing list).

Values YAML comes from the pull request, so it is parsed with PyYAML's safe loader only, with
scalars resolved the way Helm's Go YAML parser resolves them (see :class:`ValuesLoader`), because
the same file must mean the same values whichever engine renders it.
"""

from __future__ import annotations

import base64
import binascii
import json
import os
import re
import sys
from collections.abc import Iterable
from typing import Any

import yaml

from app.render.helm import is_inside, set_expressions

__all__ = ["ChildError", "ValuesLoader", "apply_set", "load_values", "main", "merge_maps", "render_request",
           "split_manifests"]

_Base: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

_STR = "tag:yaml.org,2002:str"
_INT = "tag:yaml.org,2002:int"
_FLOAT = "tag:yaml.org,2002:float"
_BOOL = "tag:yaml.org,2002:bool"
_NULL = "tag:yaml.org,2002:null"
_MERGE = "tag:yaml.org,2002:merge"

# The plain scalars Go's YAML v2 parser (behind sigs.k8s.io/yaml, which Helm reads values with) looks
# up in a table before trying numbers. "y"/"n" are booleans there but not in PyYAML.
_BOOLS = {
    **dict.fromkeys(("y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON"), True),
    **dict.fromkeys(("n", "N", "no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF"), False),
}
_NULLS = frozenset(("", "~", "null", "Null", "NULL"))
_SPECIAL_FLOATS = {
    **dict.fromkeys((".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF"), float("inf")),
    **dict.fromkeys(("-.inf", "-.Inf", "-.INF"), float("-inf")),
    **dict.fromkeys((".nan", ".NaN", ".NAN"), float("nan")),
}
# Go's strconv.ParseInt(s, 0, 64) / ParseUint after every "_" is removed: 0x, 0o, 0b and a leading
# 0 (octal) are bases. Numbers only when the scalar starts with a sign, a digit or a dot.
_GO_INT = re.compile(r"[-+]?(?:0[xX][0-9a-fA-F]+|0[oO][0-7]+|0[bB][01]+|0[0-7]*|[1-9][0-9]*)")
_GO_FLOAT = re.compile(r"[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?")
_DOT_FLOAT = re.compile(r"\.[0-9]+(?:[eE][-+]?[0-9]+)?")


def _go_tag(value: str) -> str:
    """The tag Go's YAML v2 gives an unquoted scalar.

    Unlike PyYAML's YAML 1.1 resolver: timestamps and ``12:30`` (sexagesimal) stay strings, ``1e3``
    and ``0o17`` are numbers, ``y``/``n`` are booleans, ``=`` is a plain string.
    """
    if value in _BOOLS:
        return _BOOL
    if value in _NULLS:
        return _NULL
    if value in _SPECIAL_FLOATS:
        return _FLOAT
    if value == "<<":
        return _MERGE
    first = value[:1]
    if first == ".":
        return _FLOAT if _DOT_FLOAT.fullmatch(value) else _STR
    if first and first in "+-0123456789":
        plain = value.replace("_", "")
        if _GO_INT.fullmatch(plain):
            return _INT
        if _GO_FLOAT.fullmatch(plain):
            return _FLOAT
    return _STR


class ValuesLoader(_Base):  # type: ignore[misc]
    """PyYAML's safe loader (C-accelerated when available) resolving plain scalars like Helm's Go parser.

    Only the resolver and a few scalar constructors change; no Python object can be built from the
    document, as with ``yaml.safe_load``.
    """

    def resolve(self, kind: Any, value: Any, implicit: Any) -> str:
        if kind is yaml.ScalarNode and implicit[0]:
            return _go_tag(value)
        resolved: str = super().resolve(kind, value, implicit)
        return resolved


def _construct_int(loader: Any, node: Any) -> int | float:
    text = str(loader.construct_scalar(node)).replace("_", "")
    sign = -1 if text.startswith("-") else 1
    body = text.lstrip("+-")
    try:
        if re.fullmatch(r"0[0-7]+", body):
            return sign * int(body, 8)
        return sign * int(body, 0)
    except ValueError:
        return float(text)  # an explicit !!int Go could only read as a float


def _construct_float(loader: Any, node: Any) -> float:
    text = str(loader.construct_scalar(node))
    if text in _SPECIAL_FLOATS:
        return _SPECIAL_FLOATS[text]
    return float(text.replace("_", ""))


def _construct_bool(loader: Any, node: Any) -> bool:
    text = str(loader.construct_scalar(node))
    return _BOOLS.get(text, text.lower() in ("true", "yes", "on", "y"))


def _construct_binary(loader: Any, node: Any) -> str:
    """``!!binary`` decodes to text in Go (a string), not to bytes."""
    text = "".join(str(loader.construct_scalar(node)).split())
    try:
        return base64.b64decode(text, validate=True).decode("utf-8", errors="replace")
    except (binascii.Error, ValueError) as exc:
        raise yaml.constructor.ConstructorError(None, None, f"invalid !!binary data: {exc}",
                                                node.start_mark) from None


def _construct_timestamp(loader: Any, node: Any) -> str:
    """Go keeps a timestamp as the text it was written as when it lands in an untyped map."""
    return str(loader.construct_scalar(node))


def _construct_merge_value(loader: Any, node: Any) -> str:
    """``<<`` anywhere but as a mapping key is just the text ``<<``."""
    return str(loader.construct_scalar(node))


def _construct_untagged(loader: Any, _suffix: str, node: Any) -> Any:
    """A custom tag (``!vault x``) is ignored as Go's parser ignores it: the plain text, list or map."""
    if isinstance(node, yaml.MappingNode):
        return loader.construct_mapping(node, deep=True)
    if isinstance(node, yaml.SequenceNode):
        return loader.construct_sequence(node, deep=True)
    return str(loader.construct_scalar(node))


ValuesLoader.add_multi_constructor("", _construct_untagged)
ValuesLoader.add_constructor(_MERGE, _construct_merge_value)
ValuesLoader.add_constructor(_INT, _construct_int)
ValuesLoader.add_constructor(_FLOAT, _construct_float)
ValuesLoader.add_constructor(_BOOL, _construct_bool)
ValuesLoader.add_constructor("tag:yaml.org,2002:binary", _construct_binary)
ValuesLoader.add_constructor("tag:yaml.org,2002:timestamp", _construct_timestamp)


class ChildError(Exception):
    """A failure this child reports as one line on stderr (exit 1)."""


# --- values -------------------------------------------------------------------------------------


def merge_maps(base: dict[str, Any], overlay: dict[str, Any]) -> dict[str, Any]:
    """Helm's ``MergeMaps``: ``overlay`` wins, except two maps under one key merge recursively.

    Lists are replaced whole, never merged. Neither argument is modified.
    """
    out = dict(base)
    for key, value in overlay.items():
        current = out.get(key)
        if isinstance(value, dict) and isinstance(current, dict):
            out[key] = merge_maps(current, value)
        else:
            out[key] = value
    return out


def apply_set(base: dict[str, Any], parsed: dict[str, Any]) -> dict[str, Any]:
    """Write one parsed ``--set`` expression into ``base`` the way Helm's ``strvals.ParseInto`` does.

    Helm parses ``--set`` straight into the values merged so far: ``list[1]=x`` replaces element 1 of
    an existing list and keeps the others, ``list[0].k=v`` merges into an existing element. A list
    the parser padded with ``None`` for indexes the expression did not name leaves those elements be.
    """
    out = dict(base)
    for key, value in parsed.items():
        out[key] = _apply_value(out.get(key), value)
    return out


def _apply_value(current: Any, value: Any) -> Any:
    if isinstance(value, dict) and isinstance(current, dict):
        return apply_set(current, value)
    if isinstance(value, list) and isinstance(current, list):
        merged = list(current) + [None] * (len(value) - len(current))
        for index, item in enumerate(value):
            if item is not None:
                merged[index] = _apply_value(merged[index], item)
        return merged
    return value


def load_values(text: str, name: str) -> dict[str, Any]:
    """The values in one YAML file: every document must be a mapping (an empty one counts as ``{}``).

    Helm v4 merges the documents of a multi-document values file in order (``loader.LoadValues``).
    """
    merged: dict[str, Any] = {}
    try:
        for document in yaml.load_all(text, Loader=ValuesLoader):
            if document is None:
                continue
            if not isinstance(document, dict):
                raise ChildError(f"{name} is not a YAML mapping (it holds a {_yaml_kind(document)})")
            merged = merge_maps(merged, document)
    except yaml.YAMLError as exc:
        raise ChildError(f"{name} is not valid YAML: {_yaml_problem(exc)}") from None
    return merged


def _yaml_kind(value: Any) -> str:
    if isinstance(value, list):
        return "list"
    if isinstance(value, str):
        return "string"
    return type(value).__name__


def _yaml_problem(exc: yaml.YAMLError) -> str:
    """PyYAML's message without the quoted source excerpt (the PR's text does not belong in errors)."""
    if isinstance(exc, yaml.MarkedYAMLError):
        mark = exc.problem_mark or exc.context_mark
        where = f"line {mark.line + 1} column {mark.column + 1}: " if mark is not None else ""
        return f"{where}{exc.problem or exc.context or 'malformed'}"
    return str(exc)


def _jsonable(value: Any) -> Any:
    """JSON for the few things a safe load can build that JSON lacks (sets, dates from explicit tags)."""
    if isinstance(value, set | frozenset):
        return dict.fromkeys(str(item) for item in value)
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    if hasattr(value, "isoformat"):
        return value.isoformat()
    raise TypeError(f"a {type(value).__name__} cannot be a Helm value")


def as_json_values(values: dict[str, Any], name: str) -> dict[str, Any]:
    """``values`` as the Go side will see them: keys turned to strings, NaN/infinity refused as Helm does."""
    try:
        converted: dict[str, Any] = json.loads(json.dumps(values, default=_jsonable, allow_nan=False))
    except TypeError as exc:
        raise ChildError(f"{name} cannot be used as Helm values: {exc}") from None
    except ValueError:
        raise ChildError(f"{name} holds .inf or .nan, which Helm values cannot carry") from None
    return converted


def _read_text(path: str, name: str) -> str:
    try:
        with open(path, "rb") as handle:
            raw = handle.read()
    except OSError as exc:
        raise ChildError(f"cannot read {name}: {exc.strerror or exc}") from None
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ChildError(f"{name} is not UTF-8 (invalid byte at offset {exc.start})") from None


def merged_values(request: dict[str, Any], snapshot: str) -> dict[str, Any]:
    """Files, then inline documents, then ``--set``, then ``--set-string`` (Helm's order)."""
    import helm_python

    values: dict[str, Any] = {}
    for path in request.get("value_files", []):
        real = os.path.realpath(path)
        name = f"values file {os.path.relpath(real, snapshot)}"
        if not is_inside(real, snapshot):  # checked by the parent already; cheap to hold to here too
            raise ChildError(f"{name} leaves the repository")
        values = merge_maps(values, as_json_values(load_values(_read_text(real, name), name), name))
    for index, document in enumerate(request.get("values", []), start=1):
        name = f"inline values #{index}"
        values = merge_maps(values, as_json_values(load_values(document, name), name))
    plain, strings = set_expressions([(str(n), str(v), bool(f)) for n, v, f in request.get("parameters", [])])
    for flag, expressions, parse in (("--set", plain, helm_python.parse_set_string),
                                     ("--set-string", strings, helm_python.parse_set_string_values)):
        for expression in expressions:
            try:
                parsed = parse(expression)
            except helm_python.HelmError as exc:
                raise ChildError(f"failed parsing {flag} data: {exc}") from None
            values = apply_set(values, parsed)
    return values


# --- output -------------------------------------------------------------------------------------

# Helm's SplitManifests separator (helm v4.2.3 pkg/release/v1/util/manifest.go:37); Go's \s is ASCII.
_SEPARATOR = re.compile(r"(?:^|[\t\n\f\r ]*\n)---[\t\n\f\r ]*")


def split_manifests(text: str) -> list[str]:
    """The documents of one rendered template, split where Helm splits them, blank ones dropped."""
    docs = _SEPARATOR.split(text.lstrip())
    return [doc.lstrip() for doc in docs if doc.strip()]


def _only_comments(doc: str) -> bool:
    return all(not line.strip() or line.lstrip().startswith("#") for line in doc.splitlines())


def _check_yaml(doc: str, path: str) -> None:
    """Helm fails ``template`` on a document that is not YAML, naming the template; so do we.

    Only the syntax is checked (nodes are composed, never constructed), so tags are no concern here.
    """
    try:
        for _ in yaml.compose_all(doc, Loader=ValuesLoader):
            pass
    except yaml.YAMLError as exc:
        raise ChildError(f"YAML parse error on {path}: {_yaml_problem(exc)}") from None


def _chart_path_of(filename: str) -> str:
    """``parent/charts/sub/crds/x.yaml`` -> ``parent/charts/sub``: the (sub)chart a CRD file belongs to."""
    parts = filename.split("/")
    index = 1
    while index + 1 < len(parts) and parts[index] == "charts":
        index += 2
    return "/".join(parts[:index])


def assemble(chart_name: str, crds: Iterable[dict[str, str]], manifests: dict[str, str]) -> str:
    """The stream ``helm template --include-crds`` prints, ordered by template path.

    CRDs come first, as Helm prints them; a subchart's CRDs only when the subchart rendered (Helm
    drops disabled subcharts, CRDs included, before rendering; the SDK lists every subchart's). Then
    every document of every template, skipping partials, NOTES.txt and documents that are only
    whitespace or comments.
    """
    parts: list[str] = []
    for crd in crds:
        filename = crd.get("filename") or crd.get("name", "")
        owner = _chart_path_of(filename)
        if owner != chart_name and not any(key.startswith(owner + "/") for key in manifests):
            continue
        parts.append(f"---\n# Source: {filename}\n{crd.get('data', '').rstrip()}\n")
    for path in sorted(manifests):
        base = path.rsplit("/", 1)[-1]
        if path.endswith("NOTES.txt") or base.startswith("_"):
            continue
        for doc in split_manifests(manifests[path]):
            if _only_comments(doc):
                continue
            _check_yaml(doc, path)
            parts.append(f"---\n# Source: {path}\n{doc.rstrip()}\n")
    return "".join(parts)


# --- the request --------------------------------------------------------------------------------


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


def render_request(request: dict[str, Any]) -> str:
    """Merge the values, load and check the chart, render it; :class:`ChildError` on any failure."""
    import helm_python

    snapshot = os.path.realpath(str(request["snapshot"]))
    chart_dir = os.path.realpath(str(request["chart_dir"]))
    if not is_inside(chart_dir, snapshot):
        raise ChildError("the chart folder leaves the repository")
    release = str(request["release_name"])
    namespace = request.get("namespace") or None
    try:
        helm_python.validate_release_name(release)
    except helm_python.HelmError as exc:
        raise ChildError(f"release name {release!r}: {_one_line(exc)}") from None
    values = merged_values(request, snapshot)
    try:
        chart = helm_python.Chart.load(chart_dir)
    except helm_python.HelmError as exc:
        raise ChildError(f"cannot load the chart: {_one_line(exc)}") from None
    with chart:
        # Helm's CheckDependencies (helm v4.2.3 pkg/action/install.go): every dependency Chart.yaml
        # declares must be loaded from charts/, matched by name. The SDK renders without them.
        declared = [str(dep.get("name", "")) for dep in chart.metadata.get("dependencies") or []]
        loaded = {str(dep.get("name", "")) for dep in chart.dependencies}
        missing = [name for name in declared if name not in loaded]
        if missing:
            raise ChildError("chart dependencies are not vendored (they are never downloaded): found in "
                             f"Chart.yaml, but missing in charts/ directory: {', '.join(missing)}")
        try:
            manifests = chart.render(values, name=release, namespace=namespace)
            crds = chart.crds
            chart_name = chart.name
        except helm_python.HelmRenderError as exc:
            raise ChildError(f"template error: {_one_line(exc)}") from None
        except helm_python.HelmValuesError as exc:
            raise ChildError(f"values error: {_one_line(exc)}") from None
        except helm_python.HelmError as exc:
            raise ChildError(_one_line(exc)) from None
    return assemble(chart_name, crds, manifests)


def main() -> int:
    """Read the request, print the stream; one line on stderr and exit 1 on failure."""
    try:
        request = json.loads(sys.stdin.buffer.read())
        if not isinstance(request, dict):
            raise ChildError("the request is not a JSON object")
        text = render_request(request)
    except ChildError as exc:
        print(_one_line(exc), file=sys.stderr)
        return 1
    except Exception as exc:  # any other failure still gets one clear line
        print(f"helm SDK child failed: {type(exc).__name__}: {_one_line(exc)}", file=sys.stderr)
        return 1
    try:
        sys.stdout.buffer.write(text.encode("utf-8", errors="replace"))
        sys.stdout.flush()
    except BrokenPipeError:  # the parent stopped reading (output cap): it reports that
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
