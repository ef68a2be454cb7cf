"""What an edit of each RayJob field does (diffing/rayjob/rules.py, docs/semantics/rayjob.md §7): it
reaches only the next run, applies now, or vanishes under defaults. Ids cite KubeRay as in jobs.py.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from tests.diffing.rayjob.jobs import Edit, _codes, _head_container, _job, _one, _rcs, _spec, _text, _update

# -- §7 rows: edits that reach only the next run -----------------------------------------------

NEXT_RUN_ROWS = [
    pytest.param(lambda j: _head_container(j).update(image="rayproject/ray:2.53.0"),
                 "spec.rayClusterSpec.headGroupSpec.template.spec.containers[name=ray-head].image",
                 id="rayClusterSpec-image-RJC:988-992"),
    pytest.param(_rcs(lambda r: r["workerGroupSpecs"][0].update(replicas=3)),
                 "spec.rayClusterSpec.workerGroupSpecs[groupName=small-group].replicas",
                 id="rayClusterSpec-replicas-RJC:988-992"),
    pytest.param(_spec(entrypoint="python other.py"), "spec.entrypoint", id="entrypoint-RJC:560-584"),
    pytest.param(_spec(runtimeEnvYAML="pip:\n  - requests\n"), "spec.runtimeEnvYAML",
                 id="runtimeEnvYAML-RJC:560-584"),
    pytest.param(_spec(metadata={"team": "a"}), "spec.metadata", id="metadata-RJC:560-584"),
    pytest.param(_spec(entrypointNumCpus=2), "spec.entrypointNumCpus", id="entrypointNumCpus-JOB:193"),
    pytest.param(_spec(entrypointNumGpus=1), "spec.entrypointNumGpus", id="entrypointNumGpus-RJC:560-584"),
    pytest.param(_spec(entrypointResources='{"x": 1}'), "spec.entrypointResources",
                 id="entrypointResources-JOB:200-201"),
    pytest.param(_spec(jobId="my-id"), "spec.jobId", id="jobId-RJC:887-902"),
    pytest.param(_spec(submitterConfig={"backoffLimit": 3}), "spec.submitterConfig",
                 id="submitterConfig-RJC:560-584"),
    pytest.param(_spec(submitterPodTemplate={"spec": {"restartPolicy": "Never", "containers": [
        {"name": "submitter", "image": "rayproject/ray:2.52.0"}]}}), "spec.submitterPodTemplate",
        id="submitterPodTemplate-RJC:560-584"),
    pytest.param(_spec(submissionMode="HTTPMode"), "spec.submissionMode", id="submissionMode-RJC:225-236"),
]


@pytest.mark.parametrize(("edit", "path"), NEXT_RUN_ROWS)
def test_edit_reaches_only_the_next_run(edit: Callable[[dict[str, Any]], None], path: str) -> None:
    r = _update(edit)
    assert (r.action, r.rollout, r.decision) == ("updated", "next-run", "approve")
    assert [(c.to_dict()["path"], c.category) for c in r.changes] == [(path, "next-run")]
    assert any("running job is not affected" in reason for reason in r.reasons)
    assert r.capacity.extra == {}
    assert not [f for f in r.findings if f.severity == "error"]


# -- §7 rows: settings the operator reads on every pass (apply now) ----------------------------

APPLIES_NOW_ROWS = [
    pytest.param(_spec(activeDeadlineSeconds=600), None, "rayjob-deadline", "warning",
                 id="activeDeadline-added-RJC:1234-1245"),
    pytest.param(_spec(activeDeadlineSeconds=60), _spec(activeDeadlineSeconds=600), "rayjob-deadline",
                 "warning", id="activeDeadline-lowered-RJC:1234-1245"),
    pytest.param(_spec(activeDeadlineSeconds=6000), _spec(activeDeadlineSeconds=600), "rayjob-deadline",
                 "info", id="activeDeadline-raised-RJC:1234-1245"),
    pytest.param(_spec(preRunningDeadlineSeconds=120), None, "rayjob-deadline", "warning",
                 id="preRunningDeadline-added-RJC:1249-1261"),
    pytest.param(_spec(backoffLimit=2), None, "rayjob-retry-policy", "info", id="backoffLimit-RJC:518-557"),
    pytest.param(_spec(shutdownAfterJobFinishes=True), _spec(shutdownAfterJobFinishes=False),
                 "rayjob-cleanup-policy", "warning", id="shutdown-on-RJC:420-447,1515-1557"),
    pytest.param(_spec(shutdownAfterJobFinishes=False), None, "rayjob-cleanup-policy", "info",
                 id="shutdown-off-RJC:420-447"),
    pytest.param(_spec(ttlSecondsAfterFinished=600), None, "rayjob-cleanup-policy", "info",
                 id="ttl-raised-RJC:1515-1534"),
    pytest.param(_spec(ttlSecondsAfterFinished=10), _spec(ttlSecondsAfterFinished=600),
                 "rayjob-cleanup-policy", "warning", id="ttl-lowered-RJC:1515-1534"),
]


@pytest.mark.parametrize(("edit", "before", "code", "severity"), APPLIES_NOW_ROWS)
def test_setting_applies_now(edit: Edit, before: Edit | None, code: str, severity: str) -> None:
    r = _update(edit, before)
    assert (r.rollout, r.decision) == ("none", "approve")
    assert {c.category for c in r.changes} == {"applies-now"}
    assert _codes(r) == {code: severity}
    assert r.findings[0].line is not None


def test_deletion_strategy_change_applies_now_RJC_434_440() -> None:
    def before(j: dict[str, Any]) -> None:
        j["spec"].update(shutdownAfterJobFinishes=False, deletionStrategy={"deletionRules": [
            {"policy": "DeleteCluster", "condition": {"jobStatus": "SUCCEEDED", "ttlSeconds": 60}}]})

    def edit(j: dict[str, Any]) -> None:
        j["spec"]["deletionStrategy"]["deletionRules"][0]["condition"]["ttlSeconds"] = 30
    r = _update(edit, before)
    assert (r.rollout, r.decision) == ("none", "approve")
    assert r.changes[0].to_dict()["path"] == "spec.deletionStrategy.deletionRules[0].condition.ttlSeconds"
    assert _codes(r) == {"rayjob-cleanup-policy": "warning"}


# -- no-op and service-level ----------------------------------------------------------------------

@pytest.mark.parametrize(("edit", "path"), [
    (_spec(suspend=False), "spec.suspend"),
    (_spec(submissionMode="K8sJobMode"), "spec.submissionMode"),
    (_spec(backoffLimit=0), "spec.backoffLimit"),
    (_spec(entrypointNumCpus=0), "spec.entrypointNumCpus"),
    (_spec(unknownField=1), "spec.unknownField"),
], ids=["suspend-false", "default-mode", "default-backoff", "zero-float", "pruned"])
def test_changes_that_vanish_under_defaults_are_no_ops(edit: Edit, path: str) -> None:
    r = _update(edit)
    assert (r.action, r.rollout, r.decision) == ("updated", "none", "approve")
    assert [(c.to_dict()["path"], c.category) for c in r.changes] == [(path, "no-op")]


def test_labels_are_service_level_RJC_998_1005() -> None:
    r = _update(lambda j: j["metadata"].update(labels={"team": "ml"}))
    assert (r.rollout, r.decision) == ("none", "approve")
    assert [(c.to_dict()["path"], c.category) for c in r.changes] == [("metadata.labels", "service-level")]


def test_unchanged_is_approved_with_no_changes() -> None:
    text = _text(_job())
    r = _one(text, text)
    assert (r.action, r.rollout, r.decision, r.changes) == ("unchanged", "none", "approve", ())
