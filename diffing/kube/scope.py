"""What a file deploys, decided by a parser and never by a pattern.

A gate that picks the files to analyse with a text pattern (a ``kind: RayService`` line) can be
walked around: a comment after the kind, a tag (``!!str``), a quoted key, flow style, JSON, a
list item, another encoding or a list wrapper all deploy the same object and match no pattern.
So every flow decides with the functions here:

* :func:`decode` reads bytes the way the Go readers behind ``kubectl``, kustomize and Argo CD
  do: a byte-order mark selects UTF-8, UTF-16 or UTF-32 (go-yaml's reader honours the UTF-16
  and UTF-8 marks, ``yaml_parser_determine_encoding``), anything else must be UTF-8. Taking
  UTF-32 too is the fail-closed side: a text the product reads and the tools refuse is
  analysed for nothing, never the reverse.
* :func:`may_hold` is the only shortcut, and it is exact: a text can hold an object of an API
  group only if the group's name appears in it, unless an escape sequence (``\\``) or a tag
  (``!``) could spell it otherwise. It looks for the name in every encoding :func:`decode`
  accepts, so a file in another encoding is never skipped.
* :func:`expand_lists` unwraps list kinds as the API machinery does: any object whose
  ``items`` is a list is a list (``unstructured.Unstructured.IsList``), whatever its kind
  (``List``, ``RayServiceList``, ``ConfigMapList``), nested lists included.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from diffing.errors import ManifestError
from diffing.hints import Any

# (mark, codec); the UTF-32 marks first: UTF-32-LE's begins with UTF-16-LE's.
_BOMS = (
    (b"\x00\x00\xfe\xff", "utf-32-be"),
    (b"\xff\xfe\x00\x00", "utf-32-le"),
    (b"\xef\xbb\xbf", "utf-8-sig"),
    (b"\xfe\xff", "utf-16-be"),
    (b"\xff\xfe", "utf-16-le"),
)
_CODEC_NAMES = {"utf-32-be": "UTF-32 (big-endian)", "utf-32-le": "UTF-32 (little-endian)",
                "utf-8-sig": "UTF-8", "utf-16-be": "UTF-16 (big-endian)",
                "utf-16-le": "UTF-16 (little-endian)"}
_ENCODINGS = ("utf-8", "utf-16-le", "utf-16-be", "utf-32-le", "utf-32-be")

# The API groups whose objects the product reads: KubeRay's and Argo CD's.
RAY_GROUP = "ray.io"
ARGOCD_GROUP = "argoproj.io"
# What lets a YAML or JSON text spell a string without its letters: an escape in a quoted
# scalar ("ray\x2eio", "ray\u002eio") or a tag (!!binary holds base64).
_SPELLERS = ("\\", "!")
MAX_LIST_DEPTH = 16  # kubectl flattens nested lists; deeper than this is refused, not skipped


def _markers(words: Iterable[str]) -> tuple[bytes, ...]:
    return tuple(w.encode(enc) for w in words for enc in _ENCODINGS)


_MARKERS: dict[tuple[str, ...], tuple[bytes, ...]] = {}


def may_hold(data: bytes | str, *groups: str) -> bool:
    """False only when ``data`` cannot hold an object of any of ``groups`` (exact, see the module
    docstring). Bytes are searched in every encoding :func:`decode` accepts."""
    if isinstance(data, str):
        return any(g in data for g in groups) or any(s in data for s in _SPELLERS)
    key = tuple(groups)
    markers = _MARKERS.get(key)
    if markers is None:
        markers = _MARKERS.setdefault(key, _markers((*groups, *_SPELLERS)))
    return any(m in data for m in markers)


def decode(data: bytes, source: str = "") -> str:
    """``data`` as text, as the Go readers decode it (see the module docstring); a text that
    cannot be decoded is a :class:`ManifestError` naming the byte, never an empty file (which
    would read as "every object deleted")."""
    for mark, codec in _BOMS:
        if data.startswith(mark):
            try:
                text = data.decode(codec)
            except UnicodeDecodeError as exc:
                raise ManifestError(f"starts with a {_CODEC_NAMES[codec]} byte-order mark but is not "
                                    f"{_CODEC_NAMES[codec]} text (invalid bytes at offset {exc.start})",
                                    source=source) from None
            text = text.removeprefix("\ufeff")
            if text and not any(c < "\x80" for c in text):
                # A manifest is mostly ASCII (keys, colons, line breaks): UTF-8 bytes behind a stray
                # mark decode into code units none of which is ASCII, and into one YAML string that
                # kubectl refuses ("cannot unmarshal string"). Refused here too, never read as nothing.
                raise ManifestError(f"starts with a {_CODEC_NAMES[codec]} byte-order mark but is not "
                                    f"{_CODEC_NAMES[codec]} text (not one character of it is ASCII)",
                                    source=source)
            return text
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise ManifestError(f"not UTF-8 text (invalid byte at offset {exc.start}) and no byte-order "
                            "mark says otherwise", source=source, line=line) from None


def expand_lists(value: Any, depth: int = 0) -> Iterator[Any]:
    """``value`` itself, or the items of a list object, recursively (see the module docstring)."""
    items = value.get("items") if isinstance(value, dict) else None
    if not isinstance(items, list):
        yield value
        return
    if depth >= MAX_LIST_DEPTH:
        raise ManifestError(f"lists nested more than {MAX_LIST_DEPTH} deep")
    for item in items:
        yield from expand_lists(item, depth + 1)


def api_group(value: Any) -> str:
    """The API group of an object's ``apiVersion`` ("" for the core group or no object)."""
    api = value.get("apiVersion") if isinstance(value, dict) else None
    if not isinstance(api, str) or "/" not in api:
        return ""
    return api.split("/", 1)[0]
