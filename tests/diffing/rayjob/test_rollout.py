"""What the RayJob controller does about a change (diffing/rayjob/rollout.py): suspend and resume
(RJC:366-419, 1043-1060), delete, another controller's RayJob. Ids cite KubeRay as in jobs.py.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from tests.diffing.rayjob.jobs import _codes, _job, _one, _spec, _text, _update


def test_suspend_deletes_the_cluster_and_holds_RJC_366_410() -> None:
    r = _update(_spec(suspend=True))
    assert (r.rollout, r.decision) == ("suspend", "hold")
    assert [(c.to_dict()["path"], c.category) for c in r.changes] == [("spec.suspend", "suspend")]
    assert "work" in r.headline and r.next_steps
    assert r.capacity.extra == {}


@pytest.mark.parametrize("resume", [_spec(suspend=False), lambda j: j["spec"].pop("suspend")],
                         ids=["false-RJC:411-417", "removed-is-false-RJT:300"])
def test_resume_builds_a_new_cluster_and_reports_it(resume: Callable[[dict[str, Any]], None]) -> None:
    r = _update(resume, _spec(suspend=True))
    assert (r.rollout, r.decision) == ("resume", "approve")
    # head 1 CPU/2Gi; worker 200m + the injected wait-gcs-ready's 256Mi; submitter 500m/200Mi (JOB:230-246)
    assert r.capacity.extra == {"cpu": "1700m", "memory": "2504Mi"}
    assert r.capacity.peak == r.capacity.extra


def test_delete_stops_the_job_and_gcs_the_cluster_RJC_112_139() -> None:
    r = _one(_text(_job()), "")
    assert (r.action, r.rollout, r.decision) == ("deleted", "delete", "approve")
    assert "finalizer" in r.reasons[0]
    assert r.capacity.extra == {}


def test_managed_by_kueue_is_skipped_RJC_107_110() -> None:
    r = _one("", _text(_job(_spec(managedBy="kueue.x-k8s.io/multikueue"))))
    assert (r.rollout, r.decision) == ("none", "approve")
    assert _codes(r) == {"managed-by-other-controller": "warning"}
    assert r.capacity.extra == {}
