"""Exceptions of the analysis core.

Exceptions only mean "cannot analyse"; problems inside readable manifests are findings in
the report. The tree::

    DiffingError
    ├── ManifestError            a YAML text that cannot be read (syntax, limits, shape)
    ├── PolicyError              a policy mapping that is not valid
    │   └── HeadroomError        a headroom amount or resource name that is not valid
    └── UnsupportedVersionError  a KubeRay version with no rule table

Each carries structured fields and builds its own message, so the shell can map them to
exit code 2 / HTTP 4xx in one place.
"""

from __future__ import annotations


class DiffingError(Exception):
    """Root of every exception ``diffing`` raises on purpose."""

    code = "invalid-input"


class ManifestError(DiffingError):
    """A before/after text that cannot be read.

    ``source`` names the text ("before", "after" or a file name given by the caller),
    ``document`` is the 1-based index of the YAML document in that text, ``line`` the
    1-based line (``None`` when unknown) and ``path`` the dotted field path, if any.
    """

    code = "invalid-manifest"

    def __init__(
        self,
        reason: str,
        *,
        source: str = "",
        document: int | None = None,
        line: int | None = None,
        path: str = "",
    ) -> None:
        self.reason = reason
        self.source = source
        self.document = document
        self.line = line
        self.path = path
        super().__init__(self.message)

    @property
    def location(self) -> str:
        parts = []
        if self.source:
            parts.append(self.source)
        if self.document is not None:
            parts.append(f"document {self.document}")
        if self.line is not None:
            parts.append(f"line {self.line}")
        if self.path:
            parts.append(self.path)
        return ", ".join(parts)

    @property
    def message(self) -> str:
        where = self.location
        return f"{where}: {self.reason}" if where else self.reason

    def __repr__(self) -> str:
        return (f"ManifestError({self.reason!r}, source={self.source!r}, document={self.document!r}, "
                f"line={self.line!r}, path={self.path!r})")


class PolicyError(DiffingError):
    """A policy mapping with an unknown key or a value of the wrong kind."""

    code = "invalid-policy"

    def __init__(self, reason: str, *, key: str = "") -> None:
        self.reason = reason
        self.key = key
        super().__init__(f"policy {key}: {reason}" if key else f"policy: {reason}")


class HeadroomError(PolicyError):
    """A headroom the caller gave (``--headroom``, the API's ``headroom``) that is not valid: an
    amount that is none, or a name no pod can request. A :class:`PolicyError` for callers that
    catch those, with its own code and a message that says headroom, which is what was given."""

    code = "invalid-headroom"

    def __init__(self, reason: str, *, key: str = "") -> None:
        self.reason = reason
        self.key = key
        DiffingError.__init__(self, f"headroom {key}: {reason}" if key else f"headroom: {reason}")


class UnsupportedVersionError(DiffingError):
    """A KubeRay version for which no rule table exists."""

    code = "unsupported-version"

    def __init__(self, version: str, supported: tuple[str, ...]) -> None:
        self.version = version
        self.supported = supported
        super().__init__(
            f"KubeRay version {version!r} is not supported; use one of: {', '.join(supported)}"
        )
