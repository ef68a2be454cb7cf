"""What source-controller leaves out of a GitRepository's artifact (docs/flux.md, "Source
exclusions"): kustomize-controller and helm-controller build from that artifact, not from the raw
tree, so a Flux root is rendered from a hard-linked copy of the snapshot without those files.

Upstream read (fluxcd/source-controller v1.9.0, which pins fluxcd/pkg sourceignore/v0.18.0 and
artifact/v0.18.0, go.mod:27,37):

* internal/controller/gitrepository_controller.go:913-926 loads the patterns of every
  ``.sourceignore`` of the checkout, then appends ``spec.ignore``'s, and archives with
  ``SourceIgnoreFilter`` of them.
* fluxcd/pkg sourceignore/sourceignore.go:105-131 reads ``.sourceignore`` files depth first, a
  folder's own before its sub-folders' (sorted, ``.git`` not entered), each scoped to its folder
  (the pattern's domain); :78-88 skips lines starting with ``#`` and blank ones.
* artifact/storage/archive.go:68-77: with **no** pattern at all the filter is the VCS patterns plus
  the defaults (sourceignore.go:29-35, :43-51); with any pattern (from any ``.sourceignore`` or
  ``spec.ignore``) it is the VCS patterns plus those alone: the defaults are dropped.
* archive.go:106-119 asks the filter about every path it walks, folders included, and skips a
  filtered one without pruning: a file below an excluded folder is asked about on its own (a
  ``!`` pattern can bring it back; fluxcd/pkg e2cfd1a tar/untar.go:127-132 makes its folders).
* sourceignore/gitignore/matcher.go:41-49: the last pattern that matches decides.
  gitignore/pattern.go:60-174: a pattern without ``/`` matches any path element below its domain,
  one with ``/`` is anchored there, ``**`` crosses folders, a trailing ``/`` only ever stops the
  pattern matching a *file* by its last element, and every element is compared with Go's
  ``filepath.Match`` (a malformed pattern matches nothing).

* archive.go:111-114: the artifact holds regular files and folders only, so every symlink is left
  out too (:data:`SYMLINK` names why): a build that reads a file through one fails in Flux, and
  here.
"""

from __future__ import annotations

import os
import re
import threading
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from functools import lru_cache

from .kustomize import _link_or_copy
from .snapshot import Snapshot

IGNORE_FILE = ".sourceignore"
# sourceignore.go:29-34, in the order NewDefaultMatcher puts them (:45-51)
EXCLUDE_VCS = ".git/,.gitignore,.gitmodules,.gitattributes"
EXCLUDE_DEFAULT = ",".join((
    "*.jpg,*.jpeg,*.gif,*.png,*.wmv,*.flv,*.tar.gz,*.zip",
    ".github/,.circleci/,.travis.yml,.gitlab-ci.yml,appveyor.yml,.drone.yml,cloudbuild.yaml,"
    "codeship-services.yml,codeship-steps.yml",
    "**/.goreleaser.yml,**/.sops.yaml,**/.flux.yaml"))

NO_MATCH, EXCLUDE, INCLUDE = 0, 1, 2


# -- Go's filepath.Match ---------------------------------------------------------------------------

def _class_char(p: str, i: int) -> tuple[str, int] | None:
    """One character of a ``[...]`` class as Go's ``getEsc`` reads it (``-`` and ``]`` bare are bad)."""
    if i >= len(p) or p[i] in "-]":
        return None
    if p[i] == "\\":
        i += 1
        if i >= len(p):
            return None
    return p[i], i + 1


@lru_cache(maxsize=4096)
def go_glob(p: str) -> re.Pattern[str] | None:
    """Go's ``filepath.Match`` pattern as a regular expression, or None when Go calls it malformed:
    ``*`` and ``?`` never cross ``/``, ``[^...]`` negates a class, ``\\`` escapes."""
    out: list[str] = []
    i, n = 0, len(p)
    while i < n:
        c = p[i]
        if c == "*":
            out.append("[^/]*")
            i += 1
        elif c == "?":
            out.append("[^/]")
            i += 1
        elif c == "\\":
            if i + 1 >= n:
                return None
            out.append(re.escape(p[i + 1]))
            i += 2
        elif c == "[":
            i += 1
            negate = i < n and p[i] == "^"
            i += negate
            ranges: list[str] = []
            while True:
                if i < n and p[i] == "]" and ranges:
                    i += 1
                    break
                lo = _class_char(p, i)
                if lo is None:
                    return None
                hi, i = lo
                low = hi
                if i < n and p[i] == "-":
                    got = _class_char(p, i + 1)
                    if got is None:
                        return None
                    hi, i = got
                # an empty range (z-a) matches nothing, as in Go; "" keeps the class valid
                ranges.append(f"{re.escape(low)}-{re.escape(hi)}" if low <= hi else "")
            body = "".join(ranges)
            out.append(f"[^{body}]" if negate and body else "." if negate else
                       f"[{body}]" if body else "(?!)")
        else:
            out.append(re.escape(c))
            i += 1
    return re.compile("".join(out), re.DOTALL)


def _go_match(p: str, name: str) -> bool | None:
    rx = go_glob(p)
    return None if rx is None else rx.fullmatch(name) is not None


def _any_element(p: str, elements: tuple[str, ...]) -> bool | None:
    """Whether one of ``elements`` matches ``p`` (None: ``p`` is malformed, so nothing does)."""
    rx = go_glob(p)
    return None if rx is None else any(rx.fullmatch(e) is not None for e in elements)


# -- patterns --------------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Pattern:
    """One gitignore line scoped to ``domain`` (the folder it applies below), as pattern.go:51-57
    holds it; ``origin`` says where it was written, for messages."""

    domain: tuple[str, ...]
    parts: tuple[str, ...]
    inclusion: bool
    dir_only: bool
    is_glob: bool
    text: str
    origin: str

    def match(self, path: tuple[str, ...], is_dir: bool) -> int:
        """pattern.go:87-109."""
        d = len(self.domain)
        if len(path) <= d or path[:d] != self.domain:
            return NO_MATCH
        rest = path[d:]
        if not (self._glob(rest, is_dir) if self.is_glob else self._simple(rest, is_dir)):
            return NO_MATCH
        return INCLUDE if self.inclusion else EXCLUDE

    def _simple(self, path: tuple[str, ...], is_dir: bool) -> bool:
        """pattern.go:111-124: the first element that matches decides."""
        for i, name in enumerate(path):
            m = _go_match(self.parts[0], name)
            if m is None:
                return False
            if not m:
                continue
            return not (self.dir_only and not is_dir and i == len(path) - 1)
        return False

    def _glob(self, path: tuple[str, ...], is_dir: bool) -> bool:
        """pattern.go:126-174, step for step (a match may leave elements over: a folder's files)."""
        matched = traverse = False
        rest = list(path)
        for i, part in enumerate(self.parts):
            if part == "":
                traverse = False
                continue
            if part == "**":
                if i == len(self.parts) - 1:
                    break
                traverse = True
                continue
            if "**" in part or not rest:
                return False
            if traverse:
                traverse = False
                while rest:
                    m = _go_match(part, rest.pop(0))
                    if m is None:
                        return False
                    if m:
                        matched = True
                        break
                    if not rest:
                        matched = False
            else:
                if not _go_match(part, rest[0]):
                    return False
                matched = True
                rest.pop(0)
        return not (matched and self.dir_only and not is_dir and not rest) and matched


def parse_pattern(line: str, domain: tuple[str, ...], origin: str) -> Pattern:
    """pattern.go:60-85: ``!`` includes, trailing spaces go (unless escaped), a trailing ``/`` means
    folders only, any other ``/`` anchors the pattern to its domain."""
    text, p = line, line
    inclusion = p.startswith("!")
    if inclusion:
        p = p[1:]
    if not p.endswith("\\ "):
        p = p.rstrip(" ")
    dir_only = p.endswith("/")
    if dir_only:
        p = p[:-1]
    return Pattern(domain, tuple(p.split("/")), inclusion, dir_only, "/" in p, text, origin)


def read_patterns(text: str, domain: tuple[str, ...], origin: str) -> list[Pattern]:
    """sourceignore.go:78-88: one pattern a line (bufio's lines: ``\\n``, a ``\\r`` before it
    dropped), ``#`` lines and blank lines skipped."""
    out = []
    for line in text.split("\n"):
        line = line.removesuffix("\r")
        if not line.startswith("#") and line.strip():
            out.append(parse_pattern(line, domain, origin))
    return out


def _split(csv: str, origin: str) -> tuple[Pattern, ...]:
    return tuple(parse_pattern(p, (), origin) for p in csv.split(","))


VCS_PATTERNS = _split(EXCLUDE_VCS, "source-controller's default exclusions")
DEFAULT_PATTERNS = _split(EXCLUDE_DEFAULT, "source-controller's default exclusions")


# -- the artifact's rules --------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class ArtifactRules:
    """What decides a GitRepository artifact's content, as found in the snapshot: every
    ``.sourceignore`` (its folder, its text; see :func:`ignore_files` on their order), and the
    GitRepository's ``spec.ignore`` (None when it has none). Part of a render's cache key."""

    repository: str
    ignore_files: tuple[tuple[str, str], ...] = ()
    spec_ignore: str | None = None


def ignore_files(files: Iterable[str]) -> list[str]:
    """The ``.sourceignore`` files among ``files`` (repo paths), none under ``.git``
    (sourceignore.go:119-120). Their order does not matter: only a path's own folders' files can
    match it, and :class:`Filter` asks those from the deepest up, as the load order would."""
    return sorted(f for f in files if f.rsplit("/", 1)[-1] == IGNORE_FILE and ".git" not in f.split("/")[:-1])


class Filter:
    """archive.go:68-77's filter for one artifact: ``excluded(path, is_dir)`` for a repo path.
    Patterns are indexed by their domain, so a path is checked only against the ``.sourceignore``
    files of its own folders (the others cannot match it: pattern.go:88-95)."""

    def __init__(self, rules: ArtifactRules) -> None:
        self.by_domain: dict[tuple[str, ...], list[Pattern]] = {}
        for folder, text in rules.ignore_files:
            domain = tuple(folder.split("/")) if folder else ()
            origin = f"{folder}/{IGNORE_FILE}" if folder else IGNORE_FILE
            self.by_domain.setdefault(domain, []).extend(read_patterns(text, domain, origin))
        self.spec = read_patterns(rules.spec_ignore, (), f"spec.ignore of {rules.repository}") \
            if rules.spec_ignore else []
        found = self.spec or any(self.by_domain.values())
        self.base = list(VCS_PATTERNS) if found else [*VCS_PATTERNS, *DEFAULT_PATTERNS]
        self._by_folder: dict[tuple[str, ...], list[tuple[Pattern, bool | None]]] = {}

    def decide(self, path: tuple[str, ...], is_dir: bool) -> Pattern | None:
        """The pattern that decides ``path`` (matcher.go:41-49: the last one that matches), or None."""
        name = path[-1]
        for p, hit in self._candidates(path[:-1]):
            if p.is_glob:
                if p.match(path, is_dir) != NO_MATCH:
                    return p
            elif hit:  # an element of the folder matched: pattern.go:111-121 returns there
                return p
            elif hit is False and _go_match(p.parts[0], name) and not (p.dir_only and not is_dir):
                return p
        return None

    def _candidates(self, folder: tuple[str, ...]) -> list[tuple[Pattern, bool | None]]:
        """The patterns that may match a path in ``folder``, last first; with each simple one,
        whether an element of ``folder`` below its domain already matches it (None: malformed).
        Computed once per folder: the files of one folder differ only in their last element."""
        found = self._by_folder.get(folder)
        if found is None:
            lists = [self.base]
            lists += [self.by_domain[folder[:i]] for i in range(len(folder) + 1)
                      if folder[:i] in self.by_domain]
            lists.append(self.spec)
            found = [(p, None if p.is_glob else _any_element(p.parts[0], folder[len(p.domain):]))
                     for patterns in reversed(lists) for p in reversed(patterns)]
            self._by_folder[folder] = found
        return found

    def excluded(self, rel: str, is_dir: bool) -> Pattern | None:
        """The pattern that leaves ``rel`` out of the artifact, or None when it is in."""
        p = self.decide(tuple(rel.split("/")), is_dir)
        return p if p is not None and not p.inclusion else None


def _entries(top: str) -> Iterator[tuple[str, str, str, bool, bool]]:
    """Every folder, file and symlink below ``top`` (``.git`` not entered, as sourceignore.go:120;
    a snapshot has none): (its folder, repo path, full path, is a folder, is a symlink). The
    directory entries' own types, with no further system call, and a stack, not recursion."""
    stack = [("", top)]
    while stack:
        rel_top, folder = stack.pop()
        try:
            with os.scandir(folder) as listing:
                entries = list(listing)
        except OSError:
            continue
        for entry in entries:
            rel = f"{rel_top}/{entry.name}" if rel_top else entry.name
            is_link = entry.is_symlink()
            is_dir = not is_link and entry.is_dir(follow_symlinks=False)
            yield rel_top, rel, entry.path, is_dir, is_link
            if is_dir and entry.name != ".git":
                stack.append((rel, entry.path))


# What leaves a symlink out: no pattern, the archive's walk (archive.go:111-114 keeps regular files
# and folders only; filepath.Walk does not follow links).
SYMLINK = Pattern((), (), False, False, False, "a symlink",
                  "source-controller archives regular files and folders only, fluxcd/pkg "
                  "artifact/storage/archive.go:111-114")


def scan(top: str, rules: ArtifactRules) -> dict[str, Pattern]:
    """The repo paths of the tree ``top`` that the artifact leaves out, each with the pattern that
    does (folders too; a path below a left-out folder is decided on its own: archive.go:116-119),
    and every symlink (:data:`SYMLINK`)."""
    filt = Filter(rules)
    out: dict[str, Pattern] = {}
    for _, rel, _, is_dir, is_link in _entries(top):
        if is_link:
            out[rel] = SYMLINK
        elif (why := filt.excluded(rel, is_dir)) is not None:
            out[rel] = why
    return out


_SCANS: OrderedDict[tuple[str, str, int, int, ArtifactRules], dict[str, Pattern]] = OrderedDict()
_SCANS_LOCK = threading.Lock()


def excluded_paths(snapshot: Snapshot, rules: ArtifactRules) -> dict[str, Pattern]:
    """:func:`scan` of a snapshot, once for all the Flux roots of one revision and one GitRepository
    (a snapshot is never changed while it exists; a few are kept). The folder's inode and change
    time are in the key, so a later snapshot unpacked to a reused temp name is scanned afresh."""
    st = os.stat(snapshot.root)
    key = (snapshot.root, snapshot.revision, st.st_ino, st.st_ctime_ns, rules)
    with _SCANS_LOCK:
        found = _SCANS.get(key)
    if found is None:
        found = scan(snapshot.root, rules)
        with _SCANS_LOCK:
            _SCANS[key] = found
            while len(_SCANS) > 8:
                _SCANS.popitem(last=False)
    return found


def artifact_copy(top: str, dest: str, excluded: Mapping[str, Pattern]) -> None:
    """Lay out in ``dest`` what the artifact holds of the tree ``top``: its files hard-linked (copied
    where linking fails) and its symlinks as they are, but for the ``excluded`` paths. One walk, as
    the plain copy it replaces."""
    os.makedirs(dest, exist_ok=True)
    made = {""}
    for rel_top, rel, full, is_dir, is_link in _entries(top):
        if rel in excluded:
            continue
        _ensure(dest, rel_top, made)
        if is_link:
            os.symlink(os.readlink(full), os.path.join(dest, rel))
        elif is_dir:
            os.makedirs(os.path.join(dest, rel), exist_ok=True)
            made.add(rel)
        else:
            _link_or_copy(full, os.path.join(dest, rel))


def _ensure(dest: str, rel: str, made: set[str]) -> None:
    """The folders of an included path exist, even when the folder itself was excluded (the
    artifact holds the file; tar/untar.go:127-132 makes its folders on unpacking)."""
    if rel not in made:
        os.makedirs(os.path.join(dest, rel), exist_ok=True)
        made.add(rel)
