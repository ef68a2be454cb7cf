"""The RayCronJob CRD's structural schema (KubeRay v1.7.0), from the generated data module.

The CRD is vendored unchanged as ``scripts/crds/ray.io_raycronjobs.v1.7.0.yaml`` (KubeRay
``ray-operator/config/crd/bases/ray.io_raycronjobs.yaml`` at v1.7.0) and compiled into
:mod:`diffing.data.raycronjob_1_7_0` the way the RayJob CRD is (``crd_schema_doc`` of
``scripts/gen_kuberay_data.py``); ``tests/diffing/test_raycronjob.py`` regenerates the module and
compares. Only ``ray.io/v1`` is served. ``spec.jobTemplate`` is the RayJob spec type
(raycronjob_types.go:12), so its subtree is the RayJob CRD's ``spec``.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from diffing.data.raycronjob_1_7_0 import SCHEMA_JSON, TIME_ZONES
from diffing.kube.schema import Schema, SchemaSet

ZONES: frozenset[str] = frozenset(TIME_ZONES)


@lru_cache(maxsize=1)
def cron_schemas() -> SchemaSet:
    """The RayCronJob CRD's schemas per served API version (``v1``), parsed once."""
    return SchemaSet(SCHEMA_JSON)


def cron_spec_schema(api_version: str) -> Schema | None:
    """The RayCronJob ``spec`` schema (``ray.io/v1``, also for an unknown version)."""
    schemas = cron_schemas()
    return schemas.child(schemas.served_root(api_version), "spec")


def cron_defaulted(obj: Mapping[str, Any], api_version: str) -> dict[str, Any]:
    """A RayCronJob as the API server stores it: nulls dropped, CRD defaults filled (inside
    ``jobTemplate`` too), unknown fields pruned."""
    return cron_schemas().stored(obj, cron_spec_schema(api_version))
