"""The kinds the analysis knows: the only list of them.

One line per kind. A kind is a folder ``diffing/<package>/`` of the same shape (``rules``,
``rollout``, ``capacity``, ``checks``, ``ways_out``, ``validation``, and ``analyze``, whose
:class:`~diffing.pipeline.Analysis` subclass supplies the stages that differ); everything the
kinds share runs in :mod:`diffing.pipeline`. The order here is the order of a report.
docs/extending.md says how to add one.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the registry imports no kind: each kind's modules may read it
    from diffing.pipeline import Analysis

@dataclass(frozen=True, slots=True)
class Kind:
    name: str                 # as in ``kind:``
    package: str              # diffing/<package>/
    gate: str | None = None   # the feature gate its controller needs, if any (off: nothing runs)
    live: bool = True         # app/live.py can read its live state (the live basis)

    @property
    def analysis(self) -> type[Analysis]:
        return _analysis(self.package)


@cache
def _analysis(package: str) -> type[Analysis]:
    return importlib.import_module(f"diffing.{package}.analyze").ANALYSIS  # type: ignore[no-any-return]


KINDS: tuple[Kind, ...] = (
    Kind("RayService", "rayservice"),
    Kind("RayCluster", "raycluster"),
    Kind("RayJob", "rayjob"),
    Kind("RayCronJob", "raycronjob", gate="RayCronJob", live=False),  # alpha, off: features.go:45-50, 110
)

NAMES: tuple[str, ...] = tuple(k.name for k in KINDS)
ORDER: dict[str, int] = {k.name: i for i, k in enumerate(KINDS)}
BY_NAME: dict[str, Kind] = {k.name: k for k in KINDS}
# The kinds in prose: "RayService, RayCluster, RayJob or RayCronJob".
NAMES_TEXT = ", ".join(NAMES[:-1]) + " or " + NAMES[-1]
