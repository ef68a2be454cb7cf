"""The RayJob CRD's structural schema (KubeRay v1.7.0), from the generated data module.

Only v1.7.0's RayJob CRD is vendored (``scripts/crds/ray.io_rayjobs.v1.7.0.yaml``); it is used
for every supported operator version. The RayJob validation that older operators run is the
same (docs/semantics/raycluster.md §8, "RayJob" row), but a v1.6 CRD lacks fields that 1.7 added,
so on 1.6 a new field would be pruned rather than kept: not modelled.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from diffing.data.rayjob_1_7_0 import SCHEMA_JSON
from diffing.kube.schema import STORAGE_VERSION, Schema, SchemaSet


@lru_cache(maxsize=1)
def job_schemas() -> SchemaSet:
    """The RayJob CRD's schemas per served API version (``v1``, ``v1alpha1``), parsed once."""
    return SchemaSet(SCHEMA_JSON)


def job_spec_schema(api_version: str) -> Schema | None:
    """The RayJob ``spec`` schema of ``api_version`` (``ray.io/v1`` when the version is unknown)."""
    schemas = job_schemas()
    return schemas.child(schemas.served_root(api_version), "spec")


def job_defaulted(obj: Mapping[str, Any], api_version: str) -> dict[str, Any]:
    """A RayJob as the API server stores it: nulls dropped, CRD defaults filled, unknown fields
    pruned; a v1alpha1 write as v1 stores it (:meth:`SchemaSet.stored`)."""
    storage = job_spec_schema(f"ray.io/{STORAGE_VERSION}")
    return job_schemas().stored(obj, job_spec_schema(api_version), storage)
