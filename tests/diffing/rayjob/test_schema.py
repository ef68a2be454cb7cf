"""The RayJob CRD (diffing/rayjob/schema.py): generated, served in both versions, and what the API
server rejects with it. Ids cite KubeRay as in jobs.py.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from diffing.rayjob.schema import job_schemas, job_spec_schema
from tests.diffing.rayjob.jobs import _spec, _update

SCHEMA_ROWS = [
    pytest.param(_spec(managedBy="kueue.x-k8s.io/multikueue"), _spec(managedBy="ray.io/kuberay-operator"),
                 "spec.managedBy", id="managedBy-immutable-RJCRD:145-146"),
    pytest.param(_spec(managedBy="someone-else"), None, "spec.managedBy",
                 id="managedBy-values-RJCRD:147-149"),
    pytest.param(_spec(deletionStrategy={"onSuccess": {"policy": "DeleteCluster"}}), None,
                 "spec.deletionStrategy", id="deletionStrategy-both-RJCRD:129-131"),
    pytest.param(_spec(shutdownAfterJobFinishes=False, deletionStrategy={"deletionRules": [
        {"policy": "DeleteCluster", "condition": {"jobStatus": "FAILED", "jobDeploymentStatus": "Failed"}}]}),
        None, "spec.deletionStrategy.deletionRules[0].condition", id="condition-one-of-RJCRD:83-89"),
    pytest.param(_spec(preRunningDeadlineSeconds=0), None, "spec.preRunningDeadlineSeconds",
                 id="preRunning-minimum-RJCRD"),
]


@pytest.mark.parametrize(("edit", "before", "path"), SCHEMA_ROWS)
def test_api_server_rejects_the_manifest(edit: Callable[[dict[str, Any]], None],
                                         before: Callable[[dict[str, Any]], None] | None, path: str) -> None:
    r = _update(edit, before)
    assert (r.rollout, r.decision) == ("not-applied", "hold")
    assert ("schema-violation", path) in [(f.code, f.path) for f in r.findings]


# -- the pure pieces --------------------------------------------------------------------------------

def test_rayjob_schema_is_generated_and_served_in_both_versions() -> None:
    assert set(job_schemas().versions) == {"v1", "v1alpha1"}
    spec = job_spec_schema("ray.io/v1")
    assert spec is not None and "deletionStrategy" in spec["properties"]
