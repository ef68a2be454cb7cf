"""The kinds the analysis knows: the only list of them.

One line per kind. A kind is a folder ``diffing/<package>/`` of the same shape (``rules``,
``rollout``, ``capacity``, ``checks``, ``ways_out``, ``validation``, and ``analyze``, whose
:class:`~diffing.pipeline.Analysis` subclass supplies the stages that differ); everything the
kinds share runs in :mod:`diffing.pipeline`. The order here is the order of a report.
docs/extending.md says how to add one.
"""

from __future__ import annotations

import importlib
from functools import cache

from diffing.hints import TYPE_CHECKING
from diffing.record import Record, set_field

if TYPE_CHECKING:  # the registry imports no kind: each kind's modules may read it
    from diffing.pipeline import Analysis

class Kind(Record):
    __slots__ = ("name", "package", "gate", "live")

    name: str                 # as in ``kind:``
    package: str              # diffing/<package>/
    gate: str | None   # the feature gate its controller needs, if any (off: nothing runs)
    live: bool         # app/live.py can read its live state (the live basis)

    def __init__(self, name: str, package: str, gate: str | None = None, live: bool = True) -> None:
        set_field(self, "name", name)
        set_field(self, "package", package)
        set_field(self, "gate", gate)
        set_field(self, "live", live)

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
