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


# An InteractiveMode job without spec.jobId waits for the user's id once its cluster is ready
# (RJC:225-228, 237-248); KubeRay submits nothing for it. Each of these was a disagreement with
# KubeRay v1.7.0's reconciler on its ray-job.interactive-mode.yaml sample (conformance/).
INTERACTIVE = _spec(submissionMode="InteractiveMode", backoffLimit=0)


def test_interactive_waiting_ignores_suspend_RJC_237_248() -> None:
    r = _update(_spec(suspend=True), INTERACTIVE)
    assert (r.rollout, r.decision) == ("none", "approve")
    assert "Waiting state never reads suspend" in r.reasons[0]


def test_interactive_running_with_a_job_id_still_suspends() -> None:
    r = _update(_spec(suspend=True), lambda j: (INTERACTIVE(j), _spec(jobId="raysubmit_1")(j)))
    assert r.rollout == "suspend"


@pytest.mark.parametrize("edit", [_spec(entrypoint="python other.py"),
                                  _spec(runtimeEnvYAML="pip: [numpy]"), _spec(entrypointNumCpus=2)],
                         ids=["entrypoint", "runtimeEnvYAML", "numCpus"])
def test_interactive_submission_fields_change_nothing_JOB_112_116(
        edit: Callable[[dict[str, Any]], None]) -> None:
    r = _update(edit, INTERACTIVE)
    assert (r.rollout, r.decision) == ("none", "approve")
    assert {c.category for c in r.changes} == {"no-op"}


def test_interactive_cluster_change_still_reaches_the_next_run() -> None:
    r = _update(lambda j: j["spec"]["rayClusterSpec"]["headGroupSpec"]["rayStartParams"].update(
        {"num-cpus": "0"}), INTERACTIVE)
    assert r.rollout == "next-run"


def test_waiting_job_leaving_interactive_mode_fails_status_validation_VAL_527_528() -> None:
    r = _update(_spec(submissionMode="HTTPMode"), INTERACTIVE)
    assert (r.rollout, r.decision) == ("not-applied", "hold")
    assert _codes(r)["rayjob-status-invalid"] == "error"


# A K8sJobMode submitter that sets its own command never runs KubeRay's submit command
# (RJC:641-647): KubeRay's light-weight-submitter sample, a disagreement with its reconciler.
OWN_COMMAND = _spec(submitterPodTemplate={"spec": {"restartPolicy": "Never", "containers": [
    {"name": "submitter", "image": "quay.io/kuberay/submitter:v1.5.1", "command": ["/submitter"]}]}})


def test_own_submitter_command_ignores_the_entrypoint() -> None:
    r = _update(_spec(entrypoint="python other.py"), OWN_COMMAND)
    assert (r.rollout, r.decision) == ("none", "approve")


def test_own_submitter_command_still_takes_a_new_submitter_template() -> None:
    r = _update(lambda j: j["spec"]["submitterPodTemplate"]["spec"]["containers"][0].update(
        image="quay.io/kuberay/submitter:v1.6.0"), OWN_COMMAND)
    assert r.rollout == "next-run"
