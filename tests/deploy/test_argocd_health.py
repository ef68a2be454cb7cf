"""deploy/argocd/health/*.lua run in a real Lua 5.1 against the status objects KubeRay v1.7.0 writes.

Each status below is built the way the v1.7.0 controller writes it (the function and line are
named per case, and in the .lua comments); the expected health is the one docs/argocd-health.md
gives for that state. The scripts run in tests/deploy/argocd_lua.py's sandbox: Argo CD's library
set, so a script using the string library Argo CD withholds fails here too.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from scripts.gen_argocd_health import HEALTH, KINDS, PATCH, config_key, read_scripts, render_patch
from tests.deploy.argocd_lua import ALLOWED_STATUSES, new_runtime, run_health
from tests.deploy.ray_status import (
    ACTIVE,
    PENDING,
    PROVISIONED,
    PROVISIONING,
    STATUS,
    T0,
    UP,
    apps,
    cluster,
    cluster_status,
    cond,
    initializing,
    job,
    rc,
    resource,
    rj,
    rs,
    serving,
    upgrading,
)

SCRIPTS = read_scripts()
KUBECTL = shutil.which("kubectl")


def health(kind: str, obj: dict[str, Any]) -> tuple[str, str]:
    result = run_health(SCRIPTS[kind], obj)
    return result["status"], result["message"]


# ---- RayService ------------------------------------------------------------------------------


def test_rayservice_without_status_waits_for_the_operator() -> None:
    assert health("RayService", rs(None)) == (
        "Progressing",
        "Waiting for the KubeRay operator to report status",
    )
    assert health("RayService", rs({})) == (
        "Progressing",
        "Waiting for the KubeRay operator to report status",
    )


def test_rayservice_ready_and_idle_is_healthy() -> None:
    assert health("RayService", rs(serving())) == (
        "Healthy",
        f"Serving from RayCluster {ACTIVE} with 2 serve endpoint(s)",
    )


def test_rayservice_initializing_is_progressing_and_says_whether_a_timeout_is_set() -> None:
    status, message = health("RayService", rs(initializing()))
    assert status == "Progressing"
    assert PENDING in message and "no ray.io/initializing-timeout is set" in message
    status, message = health(
        "RayService", rs(initializing(), annotations={"ray.io/initializing-timeout": "30m"})
    )
    assert status == "Progressing"
    assert "ray.io/initializing-timeout=30m" in message


def test_rayservice_initializing_timeout_is_degraded() -> None:
    # markFailedOnInitializingTimeout clears both cluster names and sets Ready=False/InitializingTimeout
    # (rayservice_controller.go:2259-2269).
    status = initializing()
    status["pendingServiceStatus"] = {}
    status["conditions"][0] = cond(
        "Ready",
        "False",
        "InitializingTimeout",
        "RayService failed to become ready within the configured timeout of 30m0s. "
        "Time spent initializing: 30m4s",
    )
    got, message = health("RayService", rs(status, annotations={"ray.io/initializing-timeout": "30m"}))
    assert got == "Degraded"
    assert "will not retry" in message and "timeout of 30m0s" in message


def test_rayservice_timeout_stays_degraded_after_a_spec_edit() -> None:
    # After the timeout the operator returns before calculateStatus (rayservice_controller.go:187-197), so
    # observedGeneration stays behind; the terminal state must still show, not "waiting".
    status = initializing()
    status["conditions"][0] = cond("Ready", "False", "InitializingTimeout", "timed out")
    assert health("RayService", rs(status, generation=4))[0] == "Degraded"


def test_rayservice_validation_failure_is_degraded_even_with_a_stale_generation() -> None:
    # validateRayService fails: Ready=False/ValidationFailed, observedGeneration untouched
    # (rayservice_controller.go:157-171).
    status = serving(generation=1)
    status["conditions"][0] = cond(
        "Ready",
        "False",
        "ValidationFailed",
        "spec.rayClusterConfig.headGroupSpec should have at least one container",
    )
    got, message = health("RayService", rs(status, generation=2))
    assert got == "Degraded"
    assert message == (
        "The KubeRay operator rejected this RayService: "
        "spec.rayClusterConfig.headGroupSpec should have at least one container"
    )


def test_rayservice_status_older_than_spec_is_progressing() -> None:
    got, message = health("RayService", rs(serving(generation=2), generation=3))
    assert got == "Progressing"
    assert message == "Waiting for the KubeRay operator to act on generation 3 (status is for generation 2)"


def test_rayservice_upgrade_in_progress_is_progressing() -> None:
    got, message = health("RayService", rs(upgrading(apps("DEPLOYING")), generation=2))
    assert got == "Progressing"
    assert message == (
        f"Upgrade in progress: new RayCluster {PENDING} is being prepared, {ACTIVE} keeps serving; "
        "Serve application llm is DEPLOYING"
    )


def test_rayservice_incremental_upgrade_reports_the_traffic_share() -> None:
    status = upgrading(apps("RUNNING"), trafficRoutedPercent=30, targetCapacity=40)
    got, message = health("RayService", rs(status, generation=2))
    assert got == "Progressing"
    assert "(30% of traffic on the new cluster)" in message


def test_rayservice_upgrade_with_a_failed_serve_app_is_degraded() -> None:
    status = upgrading(apps("DEPLOY_FAILED", "ImportError: No module named 'vllm'"))
    got, message = health("RayService", rs(status, generation=2))
    assert got == "Degraded"
    assert message == (
        f"Upgrade stuck on the new RayCluster {PENDING}: Serve application llm is DEPLOY_FAILED: "
        f"ImportError: No module named 'vllm'. {ACTIVE} keeps serving; KubeRay switches only "
        "once the new cluster is ready"
    )


def test_rayservice_upgrade_with_a_crashing_head_is_degraded() -> None:
    head = cond(
        "HeadPodReady",
        "False",
        "CrashLoopBackOff",
        "containers with unready status: [ray-head]; ray-head: back-off 5m0s restarting failed container",
    )
    status = upgrading(pending_cluster=cluster_status(head))
    got, message = health("RayService", rs(status, generation=2))
    assert got == "Degraded"
    assert f"RayCluster {PENDING}: its head pod is in CrashLoopBackOff" in message


def test_rayservice_upgrade_whose_pods_cannot_be_created_is_degraded() -> None:
    failure = cond(
        "ReplicaFailure",
        "True",
        "FailedCreateWorkerPod",
        'pods "demo-q9d4w-gpu-worker-abcde" is forbidden: exceeded quota: gpu',
    )
    status = upgrading(pending_cluster=cluster_status(failure))
    got, message = health("RayService", rs(status, generation=2))
    assert got == "Degraded"
    assert "its pods cannot be created (FailedCreateWorkerPod): " in message and "exceeded quota" in message


def test_rayservice_upgrade_waiting_for_a_head_pod_is_only_progressing() -> None:
    head = cond("HeadPodReady", "False", "ContainersNotReady", "containers with unready status: [ray-head]")
    status = upgrading(pending_cluster=cluster_status(head))
    assert health("RayService", rs(status, generation=2))[0] == "Progressing"


def test_rayservice_initialization_with_a_failed_app_is_degraded() -> None:
    status = initializing()
    status["pendingServiceStatus"]["applicationStatuses"] = apps("DEPLOY_FAILED", "bad import path")
    got, message = health("RayService", rs(status))
    assert got == "Degraded"
    assert message == (
        f"Initialization stuck on RayCluster {PENDING}: Serve application llm is DEPLOY_FAILED: "
        "bad import path"
    )


def test_rayservice_rollback_is_progressing() -> None:
    status = upgrading(apps("RUNNING"), trafficRoutedPercent=10)
    status["conditions"].append(cond("RollbackInProgress", "True", "GoalClusterChanged", "", 2))
    got, message = health("RayService", rs(status, generation=2))
    assert got == "Progressing"
    assert message.startswith(f"Rolling back the upgrade: traffic is moving back to {ACTIVE}")


def test_rayservice_serving_with_an_unhealthy_app_is_degraded() -> None:
    got, message = health("RayService", rs(serving(app_status="UNHEALTHY")))
    assert (got, message) == ("Degraded", f"Serve application llm is UNHEALTHY (RayCluster {ACTIVE})")


def test_rayservice_in_place_serve_update_is_progressing() -> None:
    # A serveConfigV2-only change is applied to the running cluster: its apps go DEPLOYING, Ready stays True.
    got, message = health("RayService", rs(serving(app_status="DEPLOYING")))
    assert (got, message) == ("Progressing", f"Serve application llm is DEPLOYING (RayCluster {ACTIVE})")


def test_rayservice_that_lost_its_endpoints_is_degraded() -> None:
    status = serving(endpoints=0)
    status["conditions"][0] = cond(
        "Ready", "False", "ZeroServeEndpoints", "Number of serve endpoints dropped to 0"
    )
    status["serviceStatus"] = ""
    assert health("RayService", rs(status))[0] == "Degraded"


def test_rayservice_suspend_lifecycle() -> None:
    # handleSuspend (rayservice_controller.go:383-462): requested, Suspending, Suspended, resumed.
    assert health("RayService", rs(serving(), generation=2, suspend=True)) == (
        "Progressing",
        "Suspend requested: waiting for the operator to start suspending",
    )
    suspending = {
        "observedGeneration": 2,
        "conditions": [
            cond(
                "Suspending",
                "True",
                "SuspendRequested",
                "Spec.Suspend is true; will delete all Kubernetes resources owned by this RayService.",
                2,
            ),
            cond("Ready", "False", "SuspendInProgress", "RayService is suspending.", 2),
        ],
    }
    assert health("RayService", rs(suspending, generation=2, suspend=True))[0] == "Progressing"
    # Suspending completes even when suspend is flipped back meanwhile.
    assert health("RayService", rs(suspending, generation=3, suspend=False))[0] == "Progressing"
    suspended = {
        "observedGeneration": 2,
        "conditions": [
            cond("Suspending", "False", "SuspendComplete", "", 2),
            cond("Suspended", "True", "SuspendComplete", "All owned resources have been deleted.", 2),
            cond("Ready", "False", "SuspendComplete", "RayService is suspended.", 2),
        ],
    }
    assert health("RayService", rs(suspended, generation=2, suspend=True)) == (
        "Suspended",
        "Suspended (spec.suspend): all RayClusters and Services of this RayService are deleted",
    )
    assert health("RayService", rs(suspended, generation=3, suspend=False))[0] == "Progressing"


def test_rayservice_without_an_active_cluster_outside_initialization_is_unknown() -> None:
    status = {
        "observedGeneration": 1,
        "conditions": [
            cond("Ready", "False", "SomethingElse"),
            cond(
                "UpgradeInProgress",
                "Unknown",
                "NoActiveCluster",
                "No active Ray cluster exists, and the RayService "
                "is not initializing. Please open a GitHub issue in the KubeRay repository.",
            ),
        ],
    }
    assert health("RayService", rs(status))[0] == "Unknown"


def test_rayservice_from_an_operator_without_conditions_uses_service_status() -> None:
    status = {"serviceStatus": "Running", "activeServiceStatus": {"rayClusterName": ACTIVE}}
    assert health("RayService", rs(status))[0] == "Healthy"


# ---- RayCluster ------------------------------------------------------------------------------


def test_raycluster_without_status_waits_for_the_operator() -> None:
    assert health("RayCluster", rc(None)) == (
        "Progressing",
        "Waiting for the KubeRay operator to report status",
    )


def test_raycluster_all_pods_ready_is_healthy() -> None:
    assert health("RayCluster", rc(cluster(UP, PROVISIONED))) == (
        "Healthy",
        "Head pod ready, 2 of 2 worker pods ready",
    )


def test_raycluster_head_not_found_is_progressing() -> None:
    status = cluster(("False", "HeadPodNotFound"), PROVISIONING, ready=0, state="")
    got, message = health("RayCluster", rc(status))
    assert got == "Progressing" and "HeadPodNotFound" in message


def test_raycluster_first_provisioning_is_progressing() -> None:
    got, message = health("RayCluster", rc(cluster(UP, PROVISIONING, ready=1, state="")))
    assert (got, message) == (
        "Progressing",
        "Pods are being provisioned for the first time (1 of 2 workers ready)",
    )


def test_raycluster_scaling_up_is_progressing() -> None:
    got, message = health("RayCluster", rc(cluster(UP, PROVISIONED, ready=2, desired=4)))
    assert (got, message) == ("Progressing", "2 of 4 worker pods ready")


@pytest.mark.parametrize("reason", ["CrashLoopBackOff", "ImagePullBackOff", "ErrImagePull", "OOMKilled"])
def test_raycluster_head_pod_failing_is_degraded(reason: str) -> None:
    # FindHeadPodReadyCondition replaces ContainersNotReady with the container's reason
    # (utils/util.go:110-121).
    status = cluster(("False", reason), PROVISIONED)
    status["conditions"][0]["message"] = "containers with unready status: [ray-head]; ray-head: "
    got, message = health("RayCluster", rc(status))
    assert got == "Degraded" and message.startswith(f"Head pod is in {reason}")


def test_raycluster_replica_failure_is_degraded() -> None:
    failure = cond(
        "ReplicaFailure", "True", "FailedCreateHeadPod", 'pods "demo-head" is forbidden: exceeded quota'
    )
    got, message = health(
        "RayCluster", rc(cluster(("False", "HeadPodNotFound"), PROVISIONING, extra=(failure,)))
    )
    assert got == "Degraded"
    assert message == (
        "The operator cannot create or delete pods (FailedCreateHeadPod): "
        'pods "demo-head" is forbidden: exceeded quota'
    )


def test_raycluster_stale_observed_generation_is_not_progressing() -> None:
    # The operator skips status writes that change only observedGeneration (utils/consistency.go:10-33).
    assert health("RayCluster", rc(cluster(UP, PROVISIONED), generation=7))[0] == "Healthy"


def test_raycluster_suspend_lifecycle() -> None:
    # calculateStatus's suspend switch (raycluster_controller.go:2064-2116).
    running = cluster(UP, PROVISIONED)
    assert health("RayCluster", rc(running, suspend=True))[0] == "Progressing"
    suspending = cluster(UP, PROVISIONED)
    suspending["conditions"][2] = cond("RayClusterSuspending", "True", "RayClusterSuspending")
    assert health("RayCluster", rc(suspending, suspend=True)) == (
        "Progressing",
        "Suspending: the operator is deleting the Ray pods",
    )
    suspended = cluster(("False", "HeadPodNotFound"), PROVISIONING, ready=0, desired=2, state="suspended")
    suspended["conditions"][3] = cond("RayClusterSuspended", "True", "RayClusterSuspended")
    assert health("RayCluster", rc(suspended, suspend=True)) == (
        "Suspended",
        "Suspended (spec.suspend): all Ray pods are deleted",
    )
    assert health("RayCluster", rc(suspended, suspend=False))[0] == "Progressing"


def test_raycluster_without_the_conditions_gate_uses_state() -> None:
    plain = {"state": "ready", "readyWorkerReplicas": 2, "desiredWorkerReplicas": 2}
    assert health("RayCluster", rc(plain))[0] == "Healthy"
    assert (
        health("RayCluster", rc({"readyWorkerReplicas": 0, "desiredWorkerReplicas": 2}))[0] == "Progressing"
    )
    assert health("RayCluster", rc({"state": "suspended"}, suspend=True))[0] == "Suspended"


# ---- RayJob ----------------------------------------------------------------------------------


def test_rayjob_new_waits_for_the_operator() -> None:
    assert health("RayJob", rj(None)) == (
        "Progressing",
        "Waiting for the KubeRay operator to start the RayJob",
    )
    assert health("RayJob", rj({"jobDeploymentStatus": ""}))[0] == "Progressing"


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        # initRayJobStatusIfNeed, then the cluster is waited for (rayjob_controller.go:179-236, 883-916)
        (
            job("Initializing", rayClusterStatus={"state": ""}),
            "Initializing: waiting for RayCluster demo-cz7m4 to be ready",
        ),
        (
            job("Waiting"),
            "Waiting for a job to be submitted to RayCluster demo-cz7m4 (InteractiveMode: set spec.jobId)",
        ),
        (job("Running", "RUNNING"), "Ray job demo-8f2kq is RUNNING on RayCluster demo-cz7m4"),
        (
            job("Running", "PENDING", message="Job has not started yet."),
            "Ray job demo-8f2kq is PENDING on RayCluster demo-cz7m4: Job has not started yet.",
        ),
        (job("Retrying", "FAILED", failed=1), "Retrying after a failed attempt (1 failed so far)"),
        (job("Suspending"), "Suspending: the operator is deleting the RayCluster and submitter"),
    ],
)
def test_rayjob_in_flight_is_progressing(status: dict[str, Any], expected: str) -> None:
    assert health("RayJob", rj(status)) == ("Progressing", expected)


def test_rayjob_succeeded_is_healthy_whatever_the_generation() -> None:
    # observedGeneration is never written by the v1.7.0 RayJob controller: generation 5 must not matter.
    status = job("Complete", "SUCCEEDED", succeeded=1, endTime=T0, message="Job finished successfully.")
    assert health("RayJob", rj(status, generation=5)) == ("Healthy", "Ray job demo-8f2kq succeeded")


def test_rayjob_stopped_is_degraded() -> None:
    got, message = health("RayJob", rj(job("Complete", "STOPPED", message="Job was intentionally stopped.")))
    assert got == "Degraded" and "ended STOPPED without succeeding" in message


@pytest.mark.parametrize(
    ("reason", "message"),
    [
        ("AppFailed", "Job entrypoint command failed with exit code 1"),
        (
            "DeadlineExceeded",
            "The RayJob has passed the activeDeadlineSeconds. StartTime: 2026-12-01 10:00:00 +0000 UTC. "
            "ActiveDeadlineSeconds: 600",
        ),
        ("PreRunningDeadlineExceeded", "The RayJob has passed the preRunningDeadlineSeconds."),
        ("SubmissionFailed", "Job submission has failed. Reason: BackoffLimitExceeded."),
    ],
)
def test_rayjob_failed_is_degraded_with_the_operators_reason(reason: str, message: str) -> None:
    status = job("Failed", "FAILED", reason=reason, message=message, failed=1)
    assert health("RayJob", rj(status)) == ("Degraded", f"RayJob failed ({reason}): {message}")


def test_rayjob_validation_failure_is_degraded() -> None:
    status = {
        "jobDeploymentStatus": "ValidationFailed",
        "reason": "ValidationFailed",
        "message": "The RayJob spec is invalid: entrypoint must be set",
    }
    assert health("RayJob", rj(status)) == (
        "Degraded",
        "The KubeRay operator rejected this RayJob: The RayJob spec is invalid: entrypoint must be set",
    )


def test_rayjob_suspended_is_suspended_until_resumed() -> None:
    status = {"jobDeploymentStatus": "Suspended", "jobStatus": "", "succeeded": 0, "failed": 0}
    assert health("RayJob", rj(status, suspend=True))[0] == "Suspended"
    assert health("RayJob", rj(status, suspend=False))[0] == "Progressing"


def test_rayjob_unknown_deployment_status_is_unknown() -> None:
    assert health("RayJob", rj(job("Exploded"))) == ("Unknown", "Unknown jobDeploymentStatus Exploded")


# ---- RayCronJob ------------------------------------------------------------------------------


def test_raycronjob_states() -> None:
    spec = {"schedule": "0 3 * * *", "jobTemplate": {"entrypoint": "python nightly.py"}}
    assert health("RayCronJob", resource("RayCronJob", None, spec)) == (
        "Healthy",
        "Schedule 0 3 * * *, no run scheduled yet",
    )
    assert health("RayCronJob", resource("RayCronJob", {"lastScheduleTime": T0}, spec)) == (
        "Healthy",
        f"Schedule 0 3 * * *, last run scheduled at {T0}",
    )
    assert (
        health("RayCronJob", resource("RayCronJob", {"lastScheduleTime": T0}, {**spec, "suspend": True}))[0]
        == "Suspended"
    )


# ---- every script, any status ---------------------------------------------------------------


@settings(max_examples=150, deadline=None)
@given(
    kind=st.sampled_from(sorted(SCRIPTS)),
    status=st.none() | STATUS,
    suspend=st.none() | st.booleans(),
    generation=st.integers(1, 4),
)
def test_every_script_returns_an_allowed_status_and_a_message(
    kind: str, status: dict[str, Any] | None, suspend: bool | None, generation: int
) -> None:
    spec: dict[str, Any] = {} if suspend is None else {"suspend": suspend}
    result = run_health(SCRIPTS[kind], resource(kind, status, spec, generation))
    assert set(result) == {"status", "message"}
    assert result["status"] in ALLOWED_STATUSES
    assert isinstance(result["message"], str) and result["message"].strip()


def test_the_sandbox_withholds_the_string_library_as_argo_cd_does() -> None:
    # What makes the runs above faithful: a script calling string functions fails here as in Argo CD.
    runtime = new_runtime()
    assert runtime.execute("return string") is None
    assert runtime.execute("return math") is None
    with pytest.raises(Exception, match="attempt to index"):
        runtime.execute('return ("ray"):upper()')
    assert runtime.execute('return table.concat({"a", tostring(2)}, "-")') == "a-2"


# ---- the ConfigMap patch ---------------------------------------------------------------------


def test_every_kind_has_a_script() -> None:
    assert sorted(p.stem for p in HEALTH.glob("*.lua")) == sorted(KINDS)


def test_the_patch_is_generated_from_the_lua_files() -> None:
    text = PATCH.read_text(encoding="utf-8")
    assert text == render_patch(read_scripts()), "run: python scripts/gen_argocd_health.py"
    patch = yaml.safe_load(text)
    assert (
        patch["apiVersion"] == "v1"
        and patch["kind"] == "ConfigMap"
        and patch["metadata"] == {"name": "argocd-cm"}
    )
    assert patch["data"] == {config_key(kind): source for kind, source in SCRIPTS.items()}


def test_render_patch_refuses_a_script_yaml_would_change() -> None:
    with pytest.raises(ValueError, match="exactly one newline"):
        render_patch({"RayJob": "return {}\n\n"})
    with pytest.raises(ValueError, match="start with whitespace"):
        render_patch({"RayJob": "  return {}\n"})


ARGOCD_CM = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: argocd-cm
  labels:
    app.kubernetes.io/name: argocd-cm
    app.kubernetes.io/part-of: argocd
data:
  url: https://argocd.example.com
  resource.customizations.health.cert-manager.io_Certificate: |
    hs = {status = "Healthy"}
    return hs
"""


def kustomize(directory: Path) -> dict[str, Any]:
    out = subprocess.run(
        [str(KUBECTL), "kustomize", str(directory)], capture_output=True, text=True, timeout=60, check=True
    ).stdout
    (cm,) = [d for d in yaml.safe_load_all(out) if d]
    assert isinstance(cm, dict)
    return cm


def assert_patched(cm: dict[str, Any]) -> None:
    assert cm["data"]["url"] == "https://argocd.example.com"
    assert "resource.customizations.health.cert-manager.io_Certificate" in cm["data"]
    for kind, source in SCRIPTS.items():
        assert cm["data"][config_key(kind)] == source
        # What Argo CD would run is the script itself.
        assert run_health(cm["data"][config_key(kind)], resource(kind, None))["status"] in ALLOWED_STATUSES


@pytest.mark.skipif(KUBECTL is None, reason="kubectl (with kustomize) is not installed")
def test_the_patch_applies_with_kustomize_to_argo_cds_install_layout(tmp_path: Path) -> None:
    # Argo CD's install manifests leave argocd-cm without a namespace; the kustomization sets it.
    (tmp_path / "argocd-cm.yaml").write_text(ARGOCD_CM)
    shutil.copy(PATCH, tmp_path / PATCH.name)
    (tmp_path / "kustomization.yaml").write_text(
        "namespace: argocd\nresources:\n  - argocd-cm.yaml\npatches:\n  - path: argocd-cm-patch.yaml\n"
    )
    cm = kustomize(tmp_path)
    assert cm["metadata"]["namespace"] == "argocd"
    assert_patched(cm)


@pytest.mark.skipif(KUBECTL is None, reason="kubectl (with kustomize) is not installed")
def test_the_patch_applies_with_a_target_to_a_namespaced_argocd_cm(tmp_path: Path) -> None:
    (tmp_path / "argocd-cm.yaml").write_text(
        ARGOCD_CM.replace("  name: argocd-cm\n", "  name: argocd-cm\n  namespace: gitops\n")
    )
    shutil.copy(PATCH, tmp_path / PATCH.name)
    (tmp_path / "kustomization.yaml").write_text(
        "resources:\n  - argocd-cm.yaml\npatches:\n  - path: argocd-cm-patch.yaml\n"
        "    target: {kind: ConfigMap, name: argocd-cm}\n"
    )
    cm = kustomize(tmp_path)
    assert cm["metadata"]["namespace"] == "gitops"
    assert_patched(cm)


@pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed")
def test_the_patch_applies_with_kubectl_patch(tmp_path: Path) -> None:
    (tmp_path / "argocd-cm.yaml").write_text(
        ARGOCD_CM.replace("  name: argocd-cm\n", "  name: argocd-cm\n  namespace: argocd\n")
    )
    out = subprocess.run(
        [
            str(KUBECTL),
            "patch",
            "--local",
            "-f",
            str(tmp_path / "argocd-cm.yaml"),
            "--type",
            "merge",
            "--patch-file",
            str(PATCH),
            "-o",
            "yaml",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    assert_patched(yaml.safe_load(out))
