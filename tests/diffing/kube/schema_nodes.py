"""KubeRay v1.7's CRD schemas and Go types, and the nodes of them the kube unit tests start from."""

from __future__ import annotations

from diffing.engine import tables
from diffing.kube.gojson import struct

SCHEMAS, GO = tables((1, 7))
RCC_SCH = SCHEMAS.child(SCHEMAS.child(SCHEMAS.root("v1"), "spec"), "rayClusterConfig")
GROUP_SCH = SCHEMAS.child(SCHEMAS.child(RCC_SCH, "workerGroupSpecs"), 0)
CONTAINER = struct("core/v1.Container")
CONTAINER_SCH = SCHEMAS.at(RCC_SCH, ("headGroupSpec", "template", "spec", "containers", 0))


def enc(value: object, t: object = GO.root, sch: object = RCC_SCH) -> object:
    return GO.encode(value, t, SCHEMAS, sch)  # type: ignore[arg-type]
