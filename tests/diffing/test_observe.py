"""diffing/observe.py: each state a followed object can be in, judged from API objects."""

from __future__ import annotations

from typing import Any

from app.rollout.model import Target
from diffing.observe import (
    Memory,
    Seen,
    duration,
    memory_from_json,
    memory_to_json,
    observe,
    pod_accelerators,
    stuck,
)

T0 = 1_000_000.0


def rs(*, gen: int = 2, observed: int | None = None, active: str = "svc-a", pending: str = "",
       ready: str = "True", reason: str = "NonZeroServeEndpoints", message: str = "",
       apps: dict[str, str] | None = None,
       pending_apps: dict[str, str] | None = None) -> dict[str, Any]:
    status: dict[str, Any] = {"observedGeneration": gen if observed is None else observed,
                              "conditions": [{"type": "Ready", "status": ready, "reason": reason,
                                              "message": message}],
                              "activeServiceStatus": {"rayClusterName": active, "applicationStatuses": {
                                  k: {"status": v} for k, v in (apps or {"app": "RUNNING"}).items()}}}
    if pending:
        status["pendingServiceStatus"] = {"rayClusterName": pending, "applicationStatuses": {
            k: {"status": v} for k, v in (pending_apps or {}).items()}}
    return {"apiVersion": "ray.io/v1", "kind": "RayService",
            "metadata": {"name": "svc", "namespace": "ns", "generation": gen}, "status": status}


def pod(name: str, cluster: str, phase: str = "Running", gpus: int = 4, head: bool = False,
        uid: str = "") -> dict[str, Any]:
    limits = {"nvidia.com/gpu": str(gpus)} if gpus else {}
    return {"metadata": {"name": name, "namespace": "ns", "uid": uid or name,
                         "labels": {"ray.io/cluster": cluster,
                                    "ray.io/node-type": "head" if head else "worker"}},
            "spec": {"containers": [{"name": "ray",
                                     "resources": {"limits": limits, "requests": {"cpu": "1"}}}]},
            "status": {"phase": phase}}


def failed_scheduling(pod_name: str, message: str = "0/4 nodes are available: 4 Insufficient nvidia.com/gpu.",
                      stamp: str = "2026-01-01T00:00:00Z") -> dict[str, Any]:
    return {"reason": "FailedScheduling", "type": "Warning", "message": message, "lastTimestamp": stamp,
            "involvedObject": {"kind": "Pod", "namespace": "ns", "name": pod_name}}


SVC = Target("RayService", "ns", "svc", "new-cluster", {"nvidia.com/gpu": 16})


def run(target: Target, obj: Any, memory: Memory, *, pods: list[Any] = (), events: list[Any] = (),  # type: ignore[assignment]
        now: float = T0 + 10) -> tuple[Seen, Memory]:
    return observe(target, obj, clusters={}, pods=pods, events=events, memory=memory, since=T0, now=now)


def test_waiting_until_the_operator_shows_the_change() -> None:
    seen, mem = run(SVC, rs(), Memory())
    assert seen.phase == "waiting" and "waiting for the operator" in seen.summary
    assert mem.active == "svc-a" and not mem.reached
    lagging, _ = run(SVC, rs(gen=3, observed=2), mem)
    assert lagging.phase == "waiting"


def test_pending_cluster_with_pods_pending_for_lack_of_gpus() -> None:
    pods = [pod("b-head", "svc-b", head=True, gpus=0), pod("b-w1", "svc-b", "Pending"),
            pod("b-w2", "svc-b", "Pending"), pod("a-w1", "svc-a")]
    seen, mem = run(SVC, rs(gen=3, pending="svc-b", pending_apps={"app": "DEPLOYING"}), Memory(), pods=pods,
                    events=[failed_scheduling("b-w1"), failed_scheduling("other-pod", "unrelated")],
                    now=T0 + 130)
    assert seen.phase == "progressing" and seen.observed_rollout == "new-cluster"
    assert seen.pending_pods == 2
    assert seen.reasons == ("0/4 nodes are available: 4 Insufficient nvidia.com/gpu.",)
    assert seen.serve_apps == {"app": "DEPLOYING"}
    assert "new cluster svc-b pending: 2 of 3 pods Pending" in seen.summary
    assert "2 m 10 s so far" in seen.summary
    assert dict(seen.observed_extra) == {"nvidia.com/gpu": 8}  # requests of the new cluster's pods only
    assert mem.pending_seen == ("svc-b",)


def test_new_cluster_ready_as_predicted() -> None:
    pods = [pod(f"b-w{i}", "svc-b") for i in range(4)]
    _, mem = run(SVC, rs(gen=3, pending="svc-b"), Memory(), pods=pods)
    seen, _ = run(SVC, rs(gen=3, active="svc-b"), mem, now=T0 + 552)
    assert seen.phase == "done"
    assert seen.summary == "new cluster svc-b ready in 9 m 12 s; 16 extra GPUs at peak, as predicted"
    assert seen.observed_rollout == "new-cluster"


def test_new_cluster_with_more_gpus_than_predicted_says_so() -> None:
    pods = [pod(f"b-w{i}", "svc-b", gpus=8) for i in range(4)]
    _, mem = run(SVC, rs(gen=3, pending="svc-b"), Memory(), pods=pods)
    seen, _ = run(SVC, rs(gen=3, active="svc-b"), mem)
    assert seen.phase == "done" and "32 extra GPUs at peak, predicted 16 extra GPUs" in seen.summary


def test_validation_failure_fails() -> None:
    seen, _ = run(SVC, rs(gen=3, ready="False", reason="ValidationFailed",
                          message="spec.rayClusterConfig.headGroupSpec is invalid"), Memory())
    assert seen.phase == "failed" and seen.summary.startswith("ValidationFailed")
    assert seen.reasons == ("spec.rayClusterConfig.headGroupSpec is invalid",)


def test_rollback_drops_the_pending_cluster() -> None:
    _, mem = run(SVC, rs(gen=3, pending="svc-b"), Memory(), pods=[pod("b-w", "svc-b", "Pending")])
    seen, _ = run(SVC, rs(gen=4), mem)
    assert seen.phase == "done" and seen.observed_rollout == "none"
    assert "rolled back: pending cluster svc-b dropped, svc-a still serves" in seen.summary
    assert not seen.summary.endswith("as predicted")


def test_serve_in_place_update() -> None:
    target = Target("RayService", "ns", "svc", "serve-in-place", {})
    _, mem = run(target, rs(gen=2), Memory())
    progressing, mem = run(target, rs(gen=3, apps={"app": "DEPLOYING"}), mem)
    assert progressing.phase == "progressing" and "app DEPLOYING" in progressing.summary
    done, _ = run(target, rs(gen=3), mem)
    assert done.phase == "done" and done.observed_rollout == "serve-in-place"
    assert "as predicted" in done.summary


def test_failed_serve_app_fails() -> None:
    target = Target("RayService", "ns", "svc", "serve-in-place", {})
    _, mem = run(target, rs(gen=2), Memory())
    seen, _ = run(target, rs(gen=3, apps={"app": "DEPLOY_FAILED"}), mem)
    assert seen.phase == "failed" and "app" in seen.summary


def test_deleted_under_the_watch_fails_and_never_seen_waits() -> None:
    _, mem = run(SVC, rs(), Memory())
    assert run(SVC, None, mem)[0].phase == "failed"
    assert run(SVC, None, Memory())[0].phase == "waiting"


def job(deployment: str, job_status: str = "", failed: int = 0, gen: int = 1, **extra: Any) -> dict[str, Any]:
    return {"kind": "RayJob", "metadata": {"name": "job", "namespace": "ns", "generation": gen},
            "status": {"jobDeploymentStatus": deployment, "jobStatus": job_status, "failed": failed,
                       "rayClusterName": "job-c", **extra}}


JOB = Target("RayJob", "ns", "job", "create", {"nvidia.com/gpu": 4})


def test_rayjob_retry_then_success() -> None:
    seen, mem = run(JOB, job("Initializing"), Memory(), pods=[pod("c-w", "job-c", "Pending")],
                    events=[failed_scheduling("c-w")])
    assert seen.phase == "progressing" and seen.pending_pods == 1 and "Insufficient" in seen.summary
    seen, mem = run(JOB, job("Retrying", "FAILED", failed=1), mem)
    assert seen.phase == "progressing" and "retrying (attempt 2)" in seen.summary
    assert "1 failed attempt" in seen.summary
    seen, mem = run(JOB, job("Running", "RUNNING", failed=1), mem, pods=[pod("c-w", "job-c")])
    assert seen.phase == "progressing"
    seen, _ = run(JOB, job("Complete", "SUCCEEDED", failed=1), mem, now=T0 + 61)
    assert seen.phase == "done" and "succeeded in 1 m 1 s; 1 failed attempt" in seen.summary
    assert seen.observed_rollout == "create" and dict(seen.observed_extra) == {"nvidia.com/gpu": 4}


def test_rayjob_failed_and_validation_failed() -> None:
    failed, _ = run(JOB, job("Failed", "FAILED", failed=3, reason="AppFailed", message="exit 1"), Memory())
    assert failed.phase == "failed" and failed.reasons == ("exit 1",)
    invalid, _ = run(JOB, job("ValidationFailed", message="entrypoint is required"), Memory())
    assert invalid.phase == "failed" and invalid.observed_rollout == "not-applied"


def test_rayjob_finished_before_the_change_waits() -> None:
    _, mem = run(JOB, job("Complete", "SUCCEEDED"), Memory())
    seen, _ = run(JOB, job("Complete", "SUCCEEDED"), mem)
    assert seen.phase == "waiting"


def rc(gen: int, state: str = "ready", observed: int | None = None) -> dict[str, Any]:
    return {"kind": "RayCluster", "metadata": {"name": "rc", "namespace": "ns", "generation": gen},
            "status": {"state": state, "observedGeneration": gen if observed is None else observed}}


def test_raycluster_recreate() -> None:
    target = Target("RayCluster", "ns", "rc", "recreate", {})
    _, mem = run(target, rc(1), Memory(), pods=[pod("h", "rc", head=True, gpus=0, uid="u1")])
    seen, mem = run(target, rc(2), mem, pods=[pod("h2", "rc", "Pending", head=True, gpus=0, uid="u2")])
    assert seen.phase == "progressing" and seen.pending_pods == 1
    seen, _ = run(target, rc(2), mem, pods=[pod("h2", "rc", head=True, gpus=0, uid="u2")])
    assert seen.phase == "done" and seen.observed_rollout == "recreate" and "as predicted" in seen.summary


def test_stuck_names_the_ways_out() -> None:
    seen = Seen(phase="progressing", summary="new cluster svc-b pending", pending_pods=2,
                reasons=("0/4 nodes are available: 4 Insufficient nvidia.com/gpu.",))
    out = stuck(SVC, seen, deadline_seconds=1800)
    assert out.phase == "stuck" and out.summary.startswith("stuck past the 30 m 0 s deadline")
    assert any("free capacity: 2 pods wait for nvidia.com/gpu" in r for r in out.reasons)
    assert any("ray.io/initializing-timeout" in r for r in out.reasons)
    assert any("revert" in r for r in out.reasons)


def test_accelerators_of_a_pod_and_durations() -> None:
    limits = {"google.com/tpu": "4", "aws.amazon.com/neuron": "1"}
    p = {"spec": {"containers": [{"resources": {"limits": limits, "requests": {"cpu": "2"}}}]}}
    assert pod_accelerators(p) == {"google.com/tpu": 4, "aws.amazon.com/neuron": 1}
    assert duration(5) == "5 s" and duration(3700) == "1 h 1 m"


def test_memory_round_trips_through_json() -> None:
    _, mem = run(SVC, rs(gen=3, pending="svc-b"), Memory(), pods=[pod("b-w", "svc-b")])
    assert memory_from_json(memory_to_json(mem)) == mem and mem.peak
    assert memory_from_json({"generation": "x"}) == Memory() and memory_from_json(None) == Memory()
