"""Safe YAML loading with line numbers and hard limits.

Only PyYAML's safe constructors are used (its C parser when libyaml is present). Before a
document is turned into Python values, its node graph is checked: aliases may not expand
past ``max_nodes`` (a "billion laughs" text is refused, not expanded), nesting may not pass
``max_depth``, anchors may not refer to themselves and a mapping may not repeat a key
(the Kubernetes API server refuses duplicate keys, PyYAML would keep the last one), and an
integer may not pass 64 bits (:data:`MIN_INT`..:data:`MAX_INT`). The composed nodes are kept,
so a path can be turned back into a line number.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Iterator
from contextlib import contextmanager

import yaml

from diffing.errors import ManifestError
from diffing.hints import Any
from diffing.kube.paths import Key, Path, format_path
from diffing.record import Record, set_field

_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class Limits(Record):
    """Bounds on what a single text may cost to read."""

    __slots__ = ("max_bytes", "max_nodes", "max_depth", "max_documents")

    max_bytes: int
    max_nodes: int  # after alias expansion, summed over all documents of the text
    max_depth: int
    max_documents: int

    def __init__(self, max_bytes: int = 16 * 1024 * 1024, max_nodes: int = 2_000_000, max_depth: int = 100,
                 max_documents: int = 10_000) -> None:
        set_field(self, "max_bytes", max_bytes)
        set_field(self, "max_nodes", max_nodes)
        set_field(self, "max_depth", max_depth)
        set_field(self, "max_documents", max_documents)


DEFAULT_LIMITS = Limits()
_NOTHING: Any = object()


def _json_key(key: Any) -> str:
    """JSON has only string keys; Kubernetes' YAML reader turns other keys into strings."""
    if isinstance(key, str):
        return key
    if isinstance(key, bool):
        return "true" if key else "false"
    return "null" if key is None else str(key)


_STR, _INT, _NULL = "tag:yaml.org,2002:str", "tag:yaml.org,2002:int", "tag:yaml.org,2002:null"
_MERGE = "tag:yaml.org,2002:merge"
_SEQ, _MAP = "tag:yaml.org,2002:seq", "tag:yaml.org,2002:map"
_TAGS: dict[str, str] = {}  # plain scalar -> resolved tag
_SCALAR, _SEQUENCE = yaml.ScalarNode, yaml.SequenceNode
_TAG_CACHE = 16_384


class _Constructor(_Loader):  # type: ignore[misc, valid-type]
    """The safe loader, with the values Kubernetes sees: string keys (so ``1`` and ``true``
    stay two keys, where a Python dict would merge them), timestamps and binary as strings.

    The composer asks :meth:`resolve` for the tag of every plain scalar; manifests repeat the
    same few hundred values (``cpu: "8"``, container names, ``true``), so each distinct plain
    scalar is matched against PyYAML's regular expressions once (the answer depends on its text
    alone: this class adds no implicit resolver and no path resolver); a quoted one is a string.
    """

    # PyYAML's composer (the C one too) calls these two around every node to track paths for
    # path resolvers; this class has none, so a C builtin that ignores its arguments stands in
    # for a Python call that returns at once.
    descend_resolver = staticmethod(operator.is_)  # (parent node, index) -> ignored
    ascend_resolver = staticmethod(tuple)  # () -> ignored

    def resolve(self, kind: Any, value: Any, implicit: Any) -> str:
        if kind is _SCALAR:
            if not implicit[0]:  # quoted, or tagged "!": no implicit resolver applies
                return _STR
            tag = _TAGS.get(value)
            if tag is None:  # a plain scalar's tag depends on its text alone
                tag = super().resolve(kind, value, implicit)
                if len(_TAGS) >= _TAG_CACHE:
                    _TAGS.clear()  # bounded: hostile input cannot grow it without limit
                _TAGS[value] = tag
            return tag
        return _SEQ if kind is _SEQUENCE else _MAP

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[str, Any]:
        if isinstance(node, yaml.MappingNode):
            self.flatten_mapping(node)
        mapping: dict[str, Any] = {}
        for key_node, value_node in node.value:
            key = _string_key(self.construct_object(key_node, deep=deep), node, key_node)
            if key in mapping:
                raise _duplicate(self, node, key_node, key)
            mapping[key] = self.construct_object(value_node, deep=deep)
        return mapping


def _string_key(key: Any, node: yaml.Node, key_node: yaml.Node) -> str:
    """A mapping key as Kubernetes reads it: a string (``1`` and ``true`` as text); a list or
    mapping as a key is an error."""
    if type(key) is str:
        return key
    if isinstance(key, (list, dict)):
        raise yaml.constructor.ConstructorError("while constructing a mapping", node.start_mark,
                                                "found an unhashable key", key_node.start_mark)
    return _json_key(key)


def _duplicate(loader: Any, node: yaml.Node, key_node: yaml.Node, key: str
               ) -> yaml.constructor.ConstructorError:
    """The error for a key written twice: the API server refuses duplicate keys, where PyYAML
    would silently keep the last one."""
    first = next(k.start_mark.line + 1 for k, _ in node.value if _json_key(loader.construct_object(k)) == key)
    return yaml.constructor.ConstructorError(None, None, f"duplicate key {key!r} (first on line {first})",
                                             key_node.start_mark)


def _construct_str(loader: yaml.SafeLoader, node: yaml.Node) -> str:
    return str(node.value)


def _construct_bool(loader: yaml.SafeLoader, node: yaml.Node) -> bool:
    """``!!bool maybe`` is an error (go-yaml: "cannot decode ... as a !!bool"), not a KeyError."""
    value = str(node.value).lower()
    if value not in loader.bool_values:
        raise yaml.constructor.ConstructorError(None, None, f"{node.value!r} is not a boolean",
                                                node.start_mark)
    return bool(loader.bool_values[value])


def _construct_float(loader: yaml.SafeLoader, node: yaml.Node) -> float:
    """A float JSON can carry: ``.inf``, ``.nan`` and ``1e999`` cannot reach the API server
    (sigs.k8s.io/yaml converts YAML to JSON, and JSON has no infinity)."""
    value = yaml.SafeLoader.construct_yaml_float(loader, node)
    if not math.isfinite(value):
        raise yaml.constructor.ConstructorError(None, None, f"{node.value!r} is not a number JSON can "
                                                "hold (infinite or NaN)", node.start_mark)
    return value


# Kubernetes reads YAML through go-yaml (sigs.k8s.io/yaml), whose resolver takes an integer
# as an int64, else as a uint64, and nothing wider (gopkg.in/yaml.v2 resolve.go, resolve():
# strconv.ParseInt then ParseUint, bitSize 64): a wider one is a float or a string there, never
# the integer it reads as here. Refused with its location, it also never reaches Python's
# 4 300-digit limit on printing an integer (``0x`` + 3 600 ``f`` parses, then every str() of it
# raises ValueError: a traceback, an HTTP 500). No manifest, policy or serveConfigV2 needs more.
MIN_INT, MAX_INT = -(2**63), 2**64 - 1
# Text longer than this is no 64-bit integer whatever its base (``-0b`` + 64 digits + ``_``
# separators fit), so it is refused before it is converted at all.
_MAX_INT_TEXT = 100


class IntegerOutOfRange(yaml.constructor.ConstructorError):
    """An integer scalar beyond 64 bits; ``node`` is the scalar, to find its path."""

    def __init__(self, node: yaml.Node, shown: str) -> None:
        super().__init__(None, None, f"integer {shown} is out of range: Kubernetes reads integers as "
                         f"64-bit (from {MIN_INT} to {MAX_INT})", node.start_mark)
        self.node = node


def _construct_int(loader: yaml.SafeLoader, node: yaml.Node) -> int:
    """PyYAML's integer (decimal, ``0x``, ``0o``/``0``, ``0b``, ``_``, sexagesimal), bounded to
    64 bits; the message shows at most 24 characters of the text."""
    text = str(node.value)
    shown = repr(text) if len(text) <= 24 else f"{text[:20]!r}… ({len(text)} characters)"
    if len(text) > _MAX_INT_TEXT:
        raise IntegerOutOfRange(node, shown)
    value = yaml.SafeLoader.construct_yaml_int(loader, node)
    if not MIN_INT <= value <= MAX_INT:
        raise IntegerOutOfRange(node, shown)
    return int(value)


def _construct_set(loader: yaml.SafeLoader, node: yaml.Node) -> dict[str, None]:
    """``!!set`` is a mapping of keys to null once converted to JSON, as Kubernetes reads it."""
    return {_json_key(k): None for k in loader.construct_mapping(node)}  # type: ignore[arg-type]


def _construct_pairs(loader: yaml.SafeLoader, node: yaml.Node) -> list[Any]:
    """``!!omap`` / ``!!pairs``: the sequence of one-key mappings it is written as, as in JSON
    (PyYAML would build a list of tuples)."""
    if not isinstance(node, yaml.SequenceNode):
        raise yaml.constructor.ConstructorError(None, None, "an ordered map must be a sequence",
                                                node.start_mark)
    return loader.construct_sequence(node, deep=True)


_Constructor.add_constructor("tag:yaml.org,2002:timestamp", _construct_str)
_Constructor.add_constructor("tag:yaml.org,2002:binary", _construct_str)
_Constructor.add_constructor("tag:yaml.org,2002:bool", _construct_bool)
_Constructor.add_constructor("tag:yaml.org,2002:float", _construct_float)
_Constructor.add_constructor(_INT, _construct_int)
_Constructor.add_constructor("tag:yaml.org,2002:set", _construct_set)
_Constructor.add_constructor("tag:yaml.org,2002:omap", _construct_pairs)
_Constructor.add_constructor("tag:yaml.org,2002:pairs", _construct_pairs)


class Document(Record):
    """One YAML document: its 1-based ``index`` in the text, its value, and what turns a path
    back into a line: the line index of :func:`_build`, or (for a document read the general
    way, with anchors) its nodes."""

    __slots__ = ("index", "value", "node", "lines", "start", "one_line")
    _compared = ("index", "value")  # the others: field(compare=False, repr=False)

    index: int
    value: Any
    node: yaml.Node | None
    lines: Any
    start: int | None  # 1-based first line
    one_line: bool

    def __init__(self, index: int, value: Any, node: yaml.Node | None = None, lines: Any = None,
                 start: int | None = None, one_line: bool = False) -> None:
        set_field(self, "index", index)
        set_field(self, "value", value)
        set_field(self, "node", node)
        set_field(self, "lines", lines)
        set_field(self, "start", start)
        set_field(self, "one_line", one_line)

    @property
    def line(self) -> int | None:
        if self.node is not None:
            return self.node.start_mark.line + 1
        return self.start

    def line_of(self, path: Path) -> int | None:
        """The 1-based line of the deepest key or item along ``path`` that exists.

        ``None`` for a document written on one line (JSON from an API): a line says nothing there.
        """
        node = self.node
        if node is not None:
            if node.start_mark.line == node.end_mark.line:
                return None
            best = node.start_mark.line + 1
            for seg in path:
                found = _child(node, seg)
                if found is None:
                    break
                best, node = found
            return best
        if self.start is None or self.one_line:
            return None
        best, value, lines = self.start, self.value, self.lines
        for seg in path:
            step = _step(value, lines, seg)
            if step is None:
                break
            best, value, lines = step
        return best


def _step(value: Any, lines: Any, seg: Any) -> tuple[int, Any, Any] | None:
    """(line, child value, child index) for one path segment in a line index."""
    if isinstance(seg, str):
        if not isinstance(lines, dict) or seg not in lines or not isinstance(value, dict):
            return None
        entry, child = lines[seg], value.get(seg)
    else:
        if not isinstance(lines, list) or not isinstance(value, list):
            return None
        if isinstance(seg, Key):
            i = next((i for i, item in enumerate(value) if isinstance(item, dict)
                      and isinstance(item.get(seg.field), (str, int, float, bool))
                      and _scalar_text(item[seg.field]) == seg.value), None)
            if i is None:
                return None
        elif isinstance(seg, int) and 0 <= seg < len(lines):
            i = seg
        else:
            return None
        entry, child = lines[i], value[i]
    if isinstance(entry, tuple):
        return entry[0], child, entry[1]
    return entry, child, None


def _scalar_text(value: Any) -> str:
    """How the scalar was most likely written: a path's ``[name=…]`` carries the text."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _child(node: yaml.Node, seg: Any) -> tuple[int, yaml.Node] | None:
    """(line of the key or item, value node) for one path segment."""
    if isinstance(node, yaml.MappingNode) and isinstance(seg, str):
        for key_node, value_node in node.value:
            if isinstance(key_node, yaml.ScalarNode) and key_node.value == seg:
                return key_node.start_mark.line + 1, value_node
        return None
    if isinstance(node, yaml.SequenceNode):
        if isinstance(seg, int):
            if 0 <= seg < len(node.value):
                return node.value[seg].start_mark.line + 1, node.value[seg]
            return None
        if isinstance(seg, Key):
            for item in node.value:
                if isinstance(item, yaml.MappingNode):
                    for key_node, value_node in item.value:
                        if (key_node.value == seg.field and isinstance(value_node, yaml.ScalarNode)
                                and str(value_node.value) == seg.value):
                            return item.start_mark.line + 1, item
    return None


class _Slow(Exception):
    """The fast builder met something only PyYAML's constructors handle (a merge key)."""


def _build(loader: _Constructor, node: yaml.Node, limits: Limits, where: dict[str, Any]
           ) -> tuple[Any, Any]:
    """The value of an anchor-free document straight from its nodes, and its line index;
    depth checked on the way.

    Without anchors no node is shared and no cycle exists, so PyYAML's bookkeeping (the
    constructed-objects table, generators for two-step construction, ``deep`` recursion) buys
    nothing. Strings and plain decimal integers, nearly every scalar of a manifest, are built
    here; every other tag goes to the loader's own constructor, so values are exactly what
    :meth:`_Constructor.construct_document` would give. A merge key (``<<``) raises
    :class:`_Slow` and the caller takes the general path.

    The line index mirrors the value: a mapping's index maps each key to the line of the key,
    a list's index holds the line of each item; where the child is itself a mapping or list
    the entry is ``(line, its index)``. Nodes weigh four times their values (two marks each),
    so the index lets the document drop them and still name the line of any path.
    """
    scalar, sequence = yaml.ScalarNode, yaml.SequenceNode
    max_depth = limits.max_depth
    construct = loader.construct_object

    def value_of(n: yaml.Node) -> Any:
        tag = n.tag
        if tag == _STR:
            return n.value
        if tag == _INT:
            v = n.value
            # YAML 1.1: 010 is octal; 19 digits always fit in 64 bits (longer ones are checked)
            if v.isdigit() and (v[0] != "0" or len(v) == 1) and len(v) <= 19:
                return int(v)
        return construct(n)

    def build(n: yaml.Node, depth: int) -> tuple[Any, Any]:
        if depth > max_depth:
            raise ManifestError(f"nesting deeper than {max_depth} levels", line=n.start_mark.line + 1,
                                **where)
        t = type(n)
        if n.tag != (_SEQ if t is sequence else _MAP):  # !!set, !!omap, or a refused python tag
            return construct(n, deep=True), None
        if t is sequence:
            items: list[Any] = []
            item_lines: list[Any] = []
            for item in n.value:
                line = item.start_mark.line + 1
                if type(item) is scalar:
                    items.append(value_of(item))
                    item_lines.append(line)
                else:
                    v, sub = build(item, depth + 1)
                    items.append(v)
                    item_lines.append((line, sub))
            return items, item_lines
        out: dict[str, Any] = {}
        lines: dict[str, Any] = {}
        for key_node, value_node in n.value:
            if type(key_node) is scalar and key_node.tag == _STR:
                key = key_node.value
            elif key_node.tag == _MERGE:
                raise _Slow
            else:
                raw = value_of(key_node) if type(key_node) is scalar else build(key_node, depth + 1)[0]
                key = _string_key(raw, n, key_node)
            if key in out:
                raise _duplicate(loader, n, key_node, key)
            line = key_node.start_mark.line + 1
            if type(value_node) is scalar:
                out[key] = value_of(value_node)
                lines[key] = line
            else:
                v, sub = build(value_node, depth + 1)
                out[key] = v
                lines[key] = (line, sub)
        return out, lines

    if type(node) is scalar:
        return value_of(node), None
    return build(node, 0)


def _check_depth(node: yaml.Node, limits: Limits, where: dict[str, Any]) -> None:
    """Fail on nesting deeper than ``max_depth`` (iterative: no recursion on hostile input)."""
    scalar, sequence = yaml.ScalarNode, yaml.SequenceNode
    if type(node) is scalar:
        return
    stack = [(node, 0)]
    pop, push = stack.pop, stack.append
    while stack:
        n, depth = pop()
        if depth > limits.max_depth:
            raise ManifestError(f"nesting deeper than {limits.max_depth} levels",
                                line=n.start_mark.line + 1, **where)
        depth += 1
        children = n.value if type(n) is sequence else (v for _, v in n.value)
        for child in children:
            if type(child) is not scalar:
                push((child, depth))


def _check_graph(node: yaml.Node, limits: Limits, where: dict[str, Any], used: int = 0) -> int:
    """Walk the node graph once per distinct node, counting its expanded size; ``used`` nodes of
    the text's budget are already spent by earlier documents. Returns the new total."""
    sizes: dict[int, int] = {}
    active: set[int] = set()
    total = used

    def visit(n: yaml.Node, depth: int, path: tuple[Any, ...]) -> int:
        nonlocal total
        ident = id(n)
        if ident in sizes:
            size = sizes[ident]
            total += size
            if total > limits.max_nodes:
                _fail(n, f"aliases expand to more than {limits.max_nodes} nodes", path)
            return size
        if ident in active:
            _fail(n, "an anchor refers to itself (recursive alias)", path)
        if depth > limits.max_depth:
            _fail(n, f"nesting deeper than {limits.max_depth} levels", path)
        size = 1
        total += 1
        if isinstance(n, yaml.ScalarNode):
            sizes[ident] = 1
            return 1
        active.add(ident)
        if isinstance(n, yaml.SequenceNode):
            for i, item in enumerate(n.value):
                size += visit(item, depth + 1, path + (i,))
        else:
            seen: dict[Any, int] = {}
            for key_node, value_node in n.value:
                if isinstance(key_node, yaml.ScalarNode):
                    if key_node.tag != "tag:yaml.org,2002:merge":
                        if key_node.value in seen:
                            _fail(key_node, f"duplicate key {key_node.value!r} (first on line "
                                            f"{seen[key_node.value]})", path)
                        seen[key_node.value] = key_node.start_mark.line + 1
                    segment: Any = key_node.value
                else:
                    size += visit(key_node, depth + 1, path)
                    segment = "?"
                size += visit(value_node, depth + 1, path + (segment,))
        active.discard(ident)
        sizes[ident] = size
        if total > limits.max_nodes:
            _fail(n, f"aliases expand to more than {limits.max_nodes} nodes", path)
        return size

    def _fail(n: yaml.Node, reason: str, path: tuple[Any, ...]) -> None:
        raise ManifestError(reason, line=n.start_mark.line + 1, path=format_path(path), **where)

    visit(node, 0, ())
    return total


def iter_documents(text: str | bytes, *, source: str = "", limits: Limits = DEFAULT_LIMITS
                   ) -> Iterator[Document]:
    """Yield the documents of ``text``; raise :class:`ManifestError` for unreadable input."""
    text = _checked_text(text, source, limits)
    loader = _Constructor(text)
    # Without an anchor there is no alias, so values cannot expand: a cheap depth check is
    # enough (duplicate keys are caught while constructing).
    has_anchors = "&" in text
    expanded = 0  # nodes after alias expansion, over all documents so far
    index = 0
    try:
        while True:
            index += 1
            node = _next_node(loader, source, index)
            if node is _NOTHING:
                return
            if index > limits.max_documents:
                raise ManifestError(f"more than {limits.max_documents} documents", source=source)
            if node is None:
                yield Document(index, None, None)
                continue
            where: dict[str, Any] = {"source": source, "document": index}
            if has_anchors:
                expanded = _check_graph(node, limits, where, expanded)
            else:
                try:
                    with _value_errors(node, where, deep=True):
                        value, lines = _build(loader, node, limits, where)
                    yield Document(index, value, None, lines, node.start_mark.line + 1,
                                   node.start_mark.line == node.end_mark.line)
                    continue
                except _Slow:
                    _check_depth(node, limits, where)
            with _value_errors(node, where):
                value = loader.construct_document(node)
            yield Document(index, value, node)
    finally:
        loader.dispose()


def _checked_text(text: str | bytes, source: str, limits: Limits) -> str:
    """``text`` as a string within the size limit, or why it cannot be read."""
    if isinstance(text, bytes):
        if len(text) > limits.max_bytes:
            raise ManifestError(f"text is {len(text)} bytes, over the {limits.max_bytes}-byte limit",
                                source=source)
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ManifestError(f"not UTF-8 text (byte {exc.start})", source=source) from None
    elif len(text) > limits.max_bytes:
        raise ManifestError(f"text is {len(text)} characters, over the {limits.max_bytes} limit",
                            source=source)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        line = text.count("\n", 0, exc.start) + 1
        raise ManifestError(f"invalid Unicode (a lone surrogate, {text[exc.start]!r}) at character "
                            f"{exc.start}", source=source, line=line) from None
    return text


def _next_node(loader: _Constructor, source: str, index: int) -> Any:
    """The next document's node (``None`` for an empty document), or ``_NOTHING`` at the end."""
    try:
        if not loader.check_node():
            return _NOTHING
        return loader.get_node()
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        raise ManifestError(_yaml_reason(exc), source=source, document=index,
                            line=mark.line + 1 if mark is not None else None) from None
    except yaml.YAMLError as exc:
        raise ManifestError(f"not valid YAML: {exc}", source=source, document=index) from None


@contextmanager
def _value_errors(node: yaml.Node, where: dict[str, Any], deep: bool = False) -> Iterator[None]:
    """Turn what constructing a document's values can raise into a :class:`ManifestError`
    naming the document and the line (``deep``: the recursive fast builder's recursion limit
    too; PyYAML's own constructor leaves that to the caller)."""
    try:
        yield
    except IntegerOutOfRange as exc:
        raise _out_of_range(exc, node, where) from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        raise ManifestError(_yaml_reason(exc), line=mark.line + 1 if mark else None, **where) from None
    except (yaml.YAMLError, ValueError, TypeError, OverflowError) as exc:
        raise ManifestError(f"cannot read a value: {exc}", line=node.start_mark.line + 1,
                            **where) from None
    except RecursionError:
        if not deep:
            raise
        raise ManifestError("the document nests too deeply to read", **where) from None


def _out_of_range(exc: IntegerOutOfRange, root: yaml.Node, where: dict[str, Any]) -> ManifestError:
    """The located error for an integer beyond 64 bits: source, document, line and path."""
    return ManifestError(str(exc.problem), line=exc.node.start_mark.line + 1,
                         path=format_path(_path_to(root, exc.node)), **where)


def _path_to(root: yaml.Node, target: yaml.Node) -> Path:
    """The path from ``root`` to ``target`` (its first occurrence; a key node's path is its
    mapping's). Only walked for an error message; iterative, shared nodes visited once."""
    stack: list[tuple[yaml.Node, Path]] = [(root, ())]
    seen: set[int] = set()
    while stack:
        node, path = stack.pop()
        if node is target:
            return path
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, yaml.SequenceNode):
            stack.extend((item, path + (i,)) for i, item in reversed(list(enumerate(node.value))))
        elif isinstance(node, yaml.MappingNode):
            for key, value in reversed(node.value):
                segment = str(key.value) if isinstance(key, yaml.ScalarNode) else "?"
                stack.append((value, path + (segment,)))
                stack.append((key, path))
    return ()


def load_documents(text: str | bytes, *, source: str = "", limits: Limits = DEFAULT_LIMITS
                   ) -> list[Document]:
    """All documents of ``text`` (empty documents included, with value ``None``)."""
    return list(iter_documents(text, source=source, limits=limits))


def load_value(text: str, *, source: str = "", limits: Limits = DEFAULT_LIMITS) -> Any:
    """The single value of a one-document text, e.g. a serveConfigV2 string or a policy."""
    docs = load_documents(text, source=source, limits=limits)
    if len(docs) > 1:
        raise ManifestError(f"expected one YAML document, found {len(docs)}", source=source,
                            document=2, line=docs[1].line)
    return docs[0].value if docs else None


def _yaml_reason(exc: yaml.MarkedYAMLError) -> str:
    if exc.context is None and exc.problem and exc.problem.startswith("duplicate key"):
        return exc.problem
    parts = [p for p in (exc.context, exc.problem) if p]
    return "not valid YAML: " + "; ".join(parts) if parts else "not valid YAML"
