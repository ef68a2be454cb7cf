"""Which environment an object of a change belongs to, and in which order a reader wants them.

A GitOps pull request often reaches several environments at once (a base change renders into
every overlay: ``overlays/dev``, ``overlays/prod``). Each object's environment is the root it was
rendered from, else the file it came from (its ``origin``); the names in it and in the object's
namespace say what it is. Production comes first, then staging-like ones, then the rest, then
development and test, unless the policy lists its own order (``environments: [prod, canary,
staging]``: each object goes to the first listed name found among its words, the unlisted last).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from diffing.hints import TYPE_CHECKING

PROD = frozenset({"prod", "production", "prd", "live"})
STAGING = frozenset({"staging", "stage", "stg", "preprod", "uat", "canary"})
DEV = frozenset({"dev", "development", "test", "testing", "qa", "sandbox", "ci", "local", "preview", "demo"})
_WORD = re.compile(r"[a-z0-9]+")


if TYPE_CHECKING:
    from typing import Protocol

    class Placed(Protocol):
        @property
        def namespace(self) -> str: ...

        @property
        def origin(self) -> str: ...


def words(r: Placed) -> set[str]:
    """The lower-case words of the object's origin (root or file) and namespace."""
    return set(_WORD.findall(f"{r.origin} {r.namespace}".lower()))


def rank(r: Placed, order: Sequence[str] = ()) -> int:
    """The place of ``r``'s environment: with ``order`` (the policy's), the index of the first
    name among its words (``len(order)`` when none is); else production 0, staging-like 1,
    anything else 2, development and test 3."""
    found = words(r)
    if order:
        return next((i for i, name in enumerate(order) if name.lower() in found), len(order))
    if found & PROD:
        return 0
    if found & STAGING:
        return 1
    return 3 if found & DEV else 2


def label(origin: str) -> str:
    """The environment as a reader names it: the rendered root (``overlays/prod (kustomize)``,
    ``Application llm-prod``) or the file (a git revision's ``REV:`` prefix dropped)."""
    if " (" in origin or origin.startswith("Application "):
        return origin
    return origin.split(":", 1)[1] if ":" in origin and not origin.startswith(("/", ".")) else origin
