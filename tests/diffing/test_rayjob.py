"""Standalone RayJob changes (raycluster-semantics.md §7), end to end through ``diffing.analyze``.

Each case of the §7 table that a manifest diff can decide is one row below, with the KubeRay
v1.7.0 source it follows in its id (RJC = ray-operator/controllers/ray/rayjob_controller.go,
VAL = .../utils/validation.go, RJCRD = config/crd/bases/ray.io_rayjobs.yaml, JOB =
.../common/job.go). The RayJob samples under ``tests/data/kuberay-rayjob`` are KubeRay's files
at v1.7.0, unchanged.
"""

from __future__ import annotations

import copy
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

import diffing
from diffing.rayjob.schema import job_schemas, job_spec_schema
from diffing.rayjob.validation import cel_errors, check_rayjob
from diffing.report import SEVERITY_ORDER, ResourceReport

DATA = Path(__file__).resolve().parents[1] / "data" / "kuberay-rayjob"
VENDORED = sorted(DATA.glob("*.yaml"))
MIRROR = Path("/work/.mirror/ray-project+kuberay/repo")
Edit = Callable[[dict[str, Any]], None]


def _sample() -> dict[str, Any]:
    text = (DATA / "ray-job.sample.yaml").read_text()
    return next(d for d in yaml.safe_load_all(text) if isinstance(d, dict) and d.get("kind") == "RayJob")


BASE = _sample()  # ray-job.sample.yaml: K8sJobMode, one head (1 CPU, 2Gi) and one worker (200m CPU)


def _job(edit: Callable[[dict[str, Any]], None] | None = None) -> dict[str, Any]:
    job = copy.deepcopy(BASE)
    job["spec"]["shutdownAfterJobFinishes"] = True
    if edit is not None:
        edit(job)
    return job


def _text(*objs: dict[str, Any]) -> str:
    return "---\n".join(yaml.safe_dump(o, sort_keys=False) for o in objs)


def _one(before: str, after: str, **kw: Any) -> ResourceReport:
    report = diffing.analyze(before, after, **kw)
    jobs = [r for r in report.resources if r.kind == "RayJob"]
    assert len(jobs) == 1
    return jobs[0]


def _update(edit: Callable[[dict[str, Any]], None], before: Callable[[dict[str, Any]], None] | None = None,
            **kw: Any) -> ResourceReport:
    b = _job(before)
    a = copy.deepcopy(b)
    edit(a)
    return _one(_text(b), _text(a), **kw)


def _codes(r: ResourceReport) -> dict[str, str]:
    return {f.code: f.severity for f in r.findings}


def _spec(**values: Any) -> Callable[[dict[str, Any]], None]:
    return lambda job: job["spec"].update(values)


def _rcs(edit: Callable[[dict[str, Any]], None]) -> Callable[[dict[str, Any]], None]:
    return lambda job: edit(job["spec"]["rayClusterSpec"])


def _head_container(job: dict[str, Any]) -> dict[str, Any]:
    return job["spec"]["rayClusterSpec"]["headGroupSpec"]["template"]["spec"]["containers"][0]


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


def test_cluster_selector_added_to_an_own_cluster_leaks_it_RJC_904_910() -> None:
    r = _update(_spec(clusterSelector={"ray.io/cluster": "shared"}))
    assert r.rollout == "next-run" and r.decision == "approve"
    assert _codes(r) == {"rayjob-cluster-selector-leak": "warning"}
    assert "904-910" in r.findings[0].message and "429-432" in r.findings[0].message


def test_cluster_selector_removed_warns_about_the_shared_cluster_RJC_801_829() -> None:
    def before(j: dict[str, Any]) -> None:
        j["spec"]["clusterSelector"] = {"ray.io/cluster": "shared"}
    r = _update(lambda j: j["spec"].pop("clusterSelector"), before)
    assert r.rollout == "next-run"
    assert _codes(r) == {"rayjob-cluster-selector-removed": "warning"}
    assert "inferred" in r.findings[0].message


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


# -- suspend and resume (RJC:366-419, 1043-1060) ------------------------------------------------


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


# -- the traps ---------------------------------------------------------------------------------


def test_upgrade_strategy_in_rayClusterSpec_never_gets_pods_VAL_49_55() -> None:
    r = _update(_rcs(lambda r: r.update(upgradeStrategy={"type": "Recreate"})))
    assert r.rollout == "next-run" and r.decision == "hold"  # the RayJob itself is accepted (VAL:605-612)
    assert _codes(r) == {"rayjob-upgrade-strategy": "error"}
    assert r.findings[0].path == "spec.rayClusterSpec.upgradeStrategy.type"
    created = _one("", _text(_job(_rcs(lambda r: r.update(upgradeStrategy={"type": "Recreate"})))))
    assert (created.rollout, created.decision) == ("create", "hold")


_APP = {"apiVersion": "argoproj.io/v1alpha1", "kind": "Application", "metadata": {"name": "jobs"},
        "spec": {"syncPolicy": {"automated": {"prune": True, "selfHeal": True}}}}


def _delete_self(j: dict[str, Any]) -> None:
    j["spec"].update(shutdownAfterJobFinishes=False, deletionStrategy={"deletionRules": [
        {"policy": "DeleteSelf", "condition": {"jobStatus": "SUCCEEDED", "ttlSeconds": 60}}]})


def test_delete_self_with_self_heal_reruns_the_job_RJC_1560_1587() -> None:
    job = _job(_delete_self)
    r = _one("", _text(job, _APP))
    assert _codes(r) == {"rayjob-deleteself-selfheal": "error"}
    assert r.decision == "hold"
    assert r.findings[0].path == "spec.deletionStrategy.deletionRules[0].policy"
    unknown = _one("", _text(job))  # no Application in sight: self-heal is not known
    assert _codes(unknown) == {"rayjob-deleteself-selfheal": "warning"}
    assert unknown.decision == "approve"


def test_delete_self_through_the_operator_env_RJC_1537_1542() -> None:
    policy = {"operator": {"env": {"DELETE_RAYJOB_CR_AFTER_JOB_FINISHES": "true"}}}
    r = _one("", _text(_job()), policy=policy)
    assert _codes(r) == {"rayjob-deleteself-selfheal": "warning"}
    assert r.findings[0].path == "spec.shutdownAfterJobFinishes"
    assert _codes(_one("", _text(_job()))) == {}


def test_legacy_delete_self_policy_is_the_same_trap() -> None:
    def edit(j: dict[str, Any]) -> None:
        j["spec"]["deletionStrategy"] = {"onSuccess": {"policy": "DeleteSelf"},
                                         "onFailure": {"policy": "DeleteCluster"}}
    r = _one("", _text(_job(edit), _APP))
    assert ("rayjob-deleteself-selfheal", "spec.deletionStrategy.onSuccess.policy") in [
        (f.code, f.path) for f in r.findings]


# -- create and delete ---------------------------------------------------------------------------


def test_create_reports_the_cluster_and_the_submitter_JOB_230_246() -> None:
    r = _one("", _text(_job()))
    assert (r.action, r.rollout, r.decision) == ("created", "create", "approve")
    assert r.capacity.extra == {"cpu": "1700m", "memory": "2504Mi"}
    assert r.capacity.headroom is None
    d = r.to_dict()
    assert d["kind"] == "RayJob" and d["capacity"]["extra"] == r.capacity.extra


@pytest.mark.parametrize(("mode", "cpu", "memory"), [
    ("K8sJobMode", "1700m", "2504Mi"),
    ("SidecarMode", "1700m", "2504Mi"),  # the submitter sits in the head pod instead (RJC:1025-1038)
    ("HTTPMode", "1200m", "2304Mi"),
    ("InteractiveMode", "1200m", "2304Mi"),
], ids=["k8s-job-JOB:215-227", "sidecar-RJC:1025-1038", "http", "interactive"])
def test_create_capacity_by_submission_mode(mode: str, cpu: str, memory: str) -> None:
    r = _one("", _text(_job(_spec(submissionMode=mode))))
    assert r.rollout == "create"
    assert r.capacity.extra == {"cpu": cpu, "memory": memory}


def test_create_with_a_submitter_template_counts_its_pod() -> None:
    template = {"spec": {"restartPolicy": "Never", "containers": [
        {"name": "s", "image": "x", "resources": {"requests": {"cpu": "2", "memory": "1Gi"}}}]}}
    r = _one("", _text(_job(_spec(submitterPodTemplate=template))))
    assert r.capacity.extra == {"cpu": "3200m", "memory": "3328Mi"}


def test_create_on_an_existing_cluster_adds_only_the_submitter_RJC_956_960() -> None:
    r = _one("", (DATA / "ray-job.use-existing-raycluster.yaml").read_text())
    assert r.rollout == "create"
    assert r.capacity.extra == {"cpu": "500m", "memory": "200Mi"}


def test_create_suspended_builds_nothing_RJC_179_181() -> None:
    r = _one("", _text(_job(_spec(suspend=True))))
    assert (r.rollout, r.decision) == ("create", "approve")
    assert r.capacity.extra == {}
    assert _codes(r) == {"created-suspended": "info"}


def test_create_holds_when_the_known_headroom_lacks_accelerators() -> None:
    text = (DATA / "ray-job.tpu-v6e-singlehost.yaml").read_text()
    r = _one("", text)
    assert r.capacity.extra["google.com/tpu"] == 4
    assert r.decision == "approve"  # no headroom known: reported, not held
    short = _one("", text, headroom={"google.com/tpu": 2})
    assert short.decision == "hold" and "headroom" in short.headline
    assert any("--headroom google.com/tpu=4" in s for s in short.next_steps)
    assert _one("", text, headroom={"google.com/tpu": 4}).decision == "approve"


def test_resume_holds_when_the_known_headroom_lacks_gpus() -> None:
    def gpu(j: dict[str, Any]) -> None:
        _head_container(j)["resources"]["limits"]["nvidia.com/gpu"] = 1
        j["spec"]["suspend"] = True
    b = _job(gpu)
    a = copy.deepcopy(b)
    a["spec"]["suspend"] = False
    r = _one(_text(b), _text(a), headroom={"nvidia.com/gpu": 0})
    assert (r.rollout, r.decision) == ("resume", "hold")
    assert r.capacity.extra["nvidia.com/gpu"] == 1


def test_delete_stops_the_job_and_gcs_the_cluster_RJC_112_139() -> None:
    r = _one(_text(_job()), "")
    assert (r.action, r.rollout, r.decision) == ("deleted", "delete", "approve")
    assert "finalizer" in r.reasons[0]
    assert r.capacity.extra == {}


def test_invalid_new_job_is_not_applied() -> None:
    r = _one("", _text(_job(_spec(activeDeadlineSeconds=-5))))
    assert (r.action, r.rollout, r.decision) == ("created", "not-applied", "hold")


def test_name_longer_than_47_is_rejected_VAL_534_536() -> None:
    r = _one("", _text(_job(lambda j: j["metadata"].update(name="x" * 48))))
    assert (r.rollout, r.decision) == ("not-applied", "hold")
    assert _codes(r) == {"name-too-long": "error"}
    assert _one("", _text(_job(lambda j: j["metadata"].update(name="x" * 47)))).rollout == "create"


def test_managed_by_kueue_is_skipped_RJC_107_110() -> None:
    r = _one("", _text(_job(_spec(managedBy="kueue.x-k8s.io/multikueue"))))
    assert (r.rollout, r.decision) == ("none", "approve")
    assert _codes(r) == {"managed-by-other-controller": "warning"}
    assert r.capacity.extra == {}


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


def test_findings_are_sorted_error_first() -> None:
    def edit(j: dict[str, Any]) -> None:
        _delete_self(j)
        j["spec"]["rayClusterSpec"]["upgradeStrategy"] = {"type": "Recreate"}
    r = _one("", _text(_job(edit)))
    ranks = [SEVERITY_ORDER[f.severity] for f in r.findings]
    assert ranks == sorted(ranks) and len(ranks) == 2


# -- the pure pieces --------------------------------------------------------------------------------


def test_rayjob_schema_is_generated_and_served_in_both_versions() -> None:
    assert set(job_schemas().versions) == {"v1", "v1alpha1"}
    spec = job_spec_schema("ray.io/v1")
    assert spec is not None and "deletionStrategy" in spec["properties"]


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


# -- KubeRay's own RayJob samples ---------------------------------------------------------------------


def _errors(text: str) -> list[tuple[str, str, str]]:
    out = []
    for before, rollout in (("", "create"), (text, "none")):
        for r in diffing.analyze(before, text).resources:
            if r.kind != "RayJob":
                continue
            assert r.rollout == rollout, (r.name, r.rollout, r.reasons)
            out += [(r.name, f.code, f.path) for f in r.findings if f.severity == "error"]
    return out


def test_vendored_samples_are_kuberays_rayjobs() -> None:
    assert 4 <= len(VENDORED) <= 6
    assert all("kind: RayJob" in p.read_text() for p in VENDORED)


@pytest.mark.parametrize("path", VENDORED, ids=[p.name for p in VENDORED])
def test_vendored_rayjob_sample_has_no_error_finding(path: Path) -> None:
    assert _errors(path.read_text()) == []


def _upstream() -> list[str]:
    if not MIRROR.exists():
        return []
    names = subprocess.run(["git", "--git-dir", str(MIRROR), "ls-tree", "-r", "--name-only", "v1.7.0",
                            "ray-operator/config/samples/"],
                           capture_output=True, text=True, check=True).stdout
    return [p for p in names.split() if p.endswith((".yaml", ".yml")) and "kind: RayJob" in _show(p)]


def _show(path: str) -> str:
    return subprocess.run(["git", "--git-dir", str(MIRROR), "show", f"v1.7.0:{path}"], capture_output=True,
                          text=True, check=True).stdout


UPSTREAM = _upstream()


@pytest.mark.skipif(not UPSTREAM, reason="KubeRay's source mirror is not on this machine")
@pytest.mark.parametrize("path", UPSTREAM,
                         ids=[p.removeprefix("ray-operator/config/samples/") for p in UPSTREAM])
def test_every_kuberay_rayjob_sample_has_no_error_finding(path: str) -> None:
    text = _show(path)
    assert _errors(text) == []
    vendored = DATA / path.rsplit("/", 1)[-1]
    if vendored.exists():
        assert vendored.read_text() == text
