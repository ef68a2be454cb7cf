"""KubeRay's validation of a RayJob (diffing/rayjob/validation.py): a spec the operator rejects is
never run (VAL:543-630; ValidationFailed is permanent, RJC:147-161, 448-450). Ids cite KubeRay as
in jobs.py.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from diffing.rayjob.validation import cel_errors, check_rayjob
from tests.diffing.rayjob.jobs import _codes, _job, _one, _rcs, _spec, _text, _update


def test_suspend_without_shutdown_fails_validation_for_good_VAL_547_549() -> None:
    r = _update(_spec(suspend=True, shutdownAfterJobFinishes=False))
    assert (r.rollout, r.decision) == ("not-applied", "hold")
    assert _codes(r) == {"rayjob-suspend-without-shutdown": "error"}
    assert "permanent" in r.findings[0].message and "448-450" in r.findings[0].message


def test_suspend_in_cluster_selector_mode_fails_validation_VAL_560_563() -> None:
    job = {"apiVersion": "ray.io/v1", "kind": "RayJob", "metadata": {"name": "sel"},
           "spec": {"entrypoint": "python x.py", "clusterSelector": {"ray.io/cluster": "c"}}}
    after = copy.deepcopy(job)
    after["spec"].update(suspend=True, shutdownAfterJobFinishes=True)
    r = _one(_text(job), _text(after))
    assert r.rollout == "not-applied"
    assert _codes(r) == {"rayjob-suspend-without-shutdown": "error"}


# -- a spec the operator rejects (VAL:543-630; ValidationFailed is permanent, RJC:147-161, 448-450)


REJECTED_ROWS = [
    pytest.param(_spec(activeDeadlineSeconds=0), "spec.activeDeadlineSeconds",
                 id="active-deadline-VAL:619-621"),
    pytest.param(_spec(backoffLimit=-1), "spec.backoffLimit", id="backoff-negative-VAL:625-627"),
    pytest.param(_spec(runtimeEnvYAML="- a\n- b\n"), "spec.runtimeEnvYAML", id="runtime-env-VAL:614-618"),
    pytest.param(_spec(shutdownAfterJobFinishes=False, ttlSecondsAfterFinished=30),
                 "spec.ttlSecondsAfterFinished", id="ttl-without-shutdown-VAL:753-755"),
    pytest.param(_spec(submissionMode="InteractiveMode", backoffLimit=1), "spec.backoffLimit",
                 id="interactive-backoff-VAL:587-589"),
    pytest.param(_spec(submissionMode="SidecarMode", submitterConfig={"backoffLimit": 1}),
                 "spec.submitterConfig", id="sidecar-submitter-config-VAL:596-598"),
    pytest.param(_rcs(lambda r: r.update(authOptions={"enableK8sTokenAuth": True})),
                 "spec.rayClusterSpec.authOptions.enableK8sTokenAuth", id="k8s-auth-VAL:606-608"),
    pytest.param(_rcs(lambda r: r["headGroupSpec"].update(rayStartParams={"num-cpus": "1"},
                                                          resources={"CPU": "1"})),
                 "spec.rayClusterSpec.headGroupSpec.resources", id="cluster-spec-VAL:609-611,60-70"),
    pytest.param(_spec(shutdownAfterJobFinishes=False, deletionStrategy={"deletionRules": [
        {"policy": "DeleteCluster", "condition": {"jobStatus": "FAILED", "ttlSeconds": 60}},
        {"policy": "DeleteSelf", "condition": {"jobStatus": "FAILED", "ttlSeconds": 10}}]}),
        "spec.deletionStrategy.deletionRules[1].condition.ttlSeconds", id="ttl-order-VAL:892-925"),
    pytest.param(_spec(deletionStrategy={"onSuccess": {"policy": "DeleteCluster"},
                                         "onFailure": {"policy": "DeleteNone"}}),
                 "spec.deletionStrategy", id="shutdown-and-DeleteNone-VAL:961-963"),
]


@pytest.mark.parametrize(("edit", "path"), REJECTED_ROWS)
def test_operator_rejects_the_spec(edit: Callable[[dict[str, Any]], None], path: str) -> None:
    r = _update(edit)
    assert (r.rollout, r.decision) == ("not-applied", "hold")
    errors = [f for f in r.findings if f.severity == "error"]
    assert path in [f.path for f in errors]
    assert all("ValidationFailed is permanent" in f.message for f in errors)
    assert any("delete and recreate" in s for s in r.next_steps)


def test_invalid_new_job_is_not_applied() -> None:
    r = _one("", _text(_job(_spec(activeDeadlineSeconds=-5))))
    assert (r.action, r.rollout, r.decision) == ("created", "not-applied", "hold")


def test_name_longer_than_47_is_rejected_VAL_534_536() -> None:
    r = _one("", _text(_job(lambda j: j["metadata"].update(name="x" * 48))))
    assert (r.rollout, r.decision) == ("not-applied", "hold")
    assert _codes(r) == {"name-too-long": "error"}
    assert _one("", _text(_job(lambda j: j["metadata"].update(name="x" * 47)))).rollout == "create"


def test_cel_rules_and_validation_on_a_plain_dict() -> None:
    assert cel_errors({"deletionStrategy": {"deletionRules": []}})
    assert cel_errors({"deletionStrategy": {"onSuccess": {"policy": "DeleteNone"},
                                            "onFailure": {"policy": "DeleteNone"}}}) == []
    bad = {"metadata": {"name": "j"}, "spec": {"entrypoint": "x"}}  # neither cluster spec nor selector
    assert [v.rule for v in check_rayjob(bad)] == ["ValidateRayJobSpec/no-cluster"]
    gated = {"metadata": {"name": "j"}, "spec": {"clusterSelector": {"ray.io/cluster": "c"},
                                                 "deletionStrategy": {"onSuccess": {"policy": "DeleteSelf"},
                                                                      "onFailure": {"policy": "DeleteSelf"}}}}
    assert [v.rule for v in check_rayjob(gated, gates={"RayJobDeletionPolicy": False})] == [
        "validateDeletionConfiguration/feature-gate"]
    assert check_rayjob(gated, gates={"RayJobDeletionPolicy": True}) == []
