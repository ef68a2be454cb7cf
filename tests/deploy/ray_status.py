"""Ray status objects as KubeRay v1.7.0 writes them, for the Argo CD health check tests.

Each builder names the controller function (and line, at v1.7.0) that writes that status; the
hypothesis strategies at the end draw statuses from the same vocabulary.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

T0 = "2026-12-01T10:00:00Z"


def cond(ctype: str, status: str, reason: str, message: str = "", generation: int = 1) -> dict[str, Any]:
    """A metav1.Condition as meta.SetStatusCondition stores it."""
    c = {
        "type": ctype,
        "status": status,
        "reason": reason,
        "lastTransitionTime": T0,
        "observedGeneration": generation,
    }
    if message:
        c["message"] = message
    return c


def resource(
    kind: str,
    status: dict[str, Any] | None,
    spec: dict[str, Any] | None = None,
    generation: int = 1,
    annotations: dict[str, str] | None = None,
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "demo", "namespace": "ray", "generation": generation, "uid": "u-1"}
    if annotations:
        meta["annotations"] = annotations
    obj: dict[str, Any] = {"apiVersion": "ray.io/v1", "kind": kind, "metadata": meta, "spec": spec or {}}
    if status is not None:
        obj["status"] = status
    return obj


ACTIVE = "demo-7xk2p"


PENDING = "demo-q9d4w"


def apps(status: str, message: str = "") -> dict[str, Any]:
    app: dict[str, Any] = {
        "status": status,
        "serveDeploymentStatuses": {"Model": {"status": "HEALTHY" if status == "RUNNING" else "UPDATING"}},
    }
    if message:
        app["message"] = message
    return {"llm": app}


def cluster_status(*conditions: dict[str, Any], state: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {
        "conditions": list(conditions),
        "desiredWorkerReplicas": 2,
        "readyWorkerReplicas": 0,
    }
    if state:
        out["state"] = state
    return out


def serving(generation: int = 1, endpoints: int = 2, app_status: str = "RUNNING") -> dict[str, Any]:
    """Ready and idle: calculateConditions with endpoints > 0 and no pending cluster
    (rayservice_controller.go:795-810), ServiceStatus Running (:777-780)."""
    return {
        "observedGeneration": generation,
        "conditions": [
            cond(
                "Ready",
                "True",
                "NonZeroServeEndpoints",
                "Number of serve endpoints is greater than 0",
                generation,
            ),
            cond(
                "UpgradeInProgress",
                "False",
                "NoPendingCluster",
                "Active Ray cluster exists and no pending Ray cluster",
                generation,
            ),
        ],
        "serviceStatus": "Running",
        "numServeEndpoints": endpoints,
        "activeServiceStatus": {
            "rayClusterName": ACTIVE,
            "applicationStatuses": apps(app_status),
            "rayClusterStatus": cluster_status(state="ready"),
        },
        "pendingServiceStatus": {},
        "lastUpdateTime": T0,
    }


def upgrading(
    pending_apps: dict[str, Any] | None = None,
    pending_cluster: dict[str, Any] | None = None,
    generation: int = 2,
    **pending: Any,
) -> dict[str, Any]:
    """A spec change being rolled out on a new cluster: UpgradeInProgress=True/BothActivePendingClustersExist
    (rayservice_controller.go:806-808); Ready stays True while the old cluster serves."""
    status = serving(generation)
    status["conditions"][1] = cond(
        "UpgradeInProgress",
        "True",
        "BothActivePendingClustersExist",
        "Both active and pending Ray clusters exist",
        generation,
    )
    status["pendingServiceStatus"] = {"rayClusterName": PENDING, **pending}
    if pending_apps is not None:
        status["pendingServiceStatus"]["applicationStatuses"] = pending_apps
    if pending_cluster is not None:
        status["pendingServiceStatus"]["rayClusterStatus"] = pending_cluster
    return status


def initializing(generation: int = 1) -> dict[str, Any]:
    """First reconcile of a new RayService: no conditions yet, so both start as Initializing
    (rayservice_controller.go:789-792); the first cluster is the pending one."""
    return {
        "observedGeneration": generation,
        "conditions": [
            cond("Ready", "False", "Initializing", "RayService is initializing", generation),
            cond("UpgradeInProgress", "False", "Initializing", "RayService is initializing", generation),
        ],
        "pendingServiceStatus": {"rayClusterName": PENDING},
        "activeServiceStatus": {},
    }


def rs(
    status: dict[str, Any] | None,
    generation: int = 1,
    suspend: bool | None = None,
    annotations: dict[str, str] | None = None,
) -> dict[str, Any]:
    spec: dict[str, Any] = {"rayClusterConfig": {"headGroupSpec": {}}}
    if suspend is not None:
        spec["suspend"] = suspend
    return resource("RayService", status, spec, generation, annotations)


def rc(status: dict[str, Any] | None, suspend: bool | None = None, generation: int = 1) -> dict[str, Any]:
    spec: dict[str, Any] = {"headGroupSpec": {}, "workerGroupSpecs": [{"groupName": "gpu", "replicas": 2}]}
    if suspend is not None:
        spec["suspend"] = suspend
    return resource("RayCluster", status, spec, generation)


def cluster(
    head: tuple[str, str],
    provisioned: tuple[str, str],
    ready: int = 2,
    desired: int = 2,
    state: str = "ready",
    extra: tuple[dict[str, Any], ...] = (),
) -> dict[str, Any]:
    """calculateStatus with the RayClusterStatusConditions gate on (raycluster_controller.go:1970-2137)."""
    status: dict[str, Any] = {
        "conditions": [
            cond("HeadPodReady", head[0], head[1]),
            cond("RayClusterProvisioned", provisioned[0], provisioned[1]),
            cond("RayClusterSuspending", "False", "RayClusterSuspending"),
            cond("RayClusterSuspended", "False", "RayClusterSuspended"),
            *extra,
        ],
        "readyWorkerReplicas": ready,
        "availableWorkerReplicas": ready,
        "desiredWorkerReplicas": desired,
        "minWorkerReplicas": 0,
        "maxWorkerReplicas": 4,
        "observedGeneration": 1,
        "lastUpdateTime": T0,
        "desiredCPU": "9",
        "desiredGPU": "2",
        "desiredMemory": "36Gi",
        "desiredTPU": "0",
        "endpoints": {"dashboard": "8265", "gcs-server": "6379"},
        "head": {"podIP": "10.0.0.7"},
    }
    if state:
        status["state"] = state
    return status


UP = ("True", "HeadPodRunningAndReady")


PROVISIONED = ("True", "AllPodRunningAndReadyFirstTime")


PROVISIONING = ("False", "RayClusterPodsProvisioning")


def rj(status: dict[str, Any] | None, suspend: bool = False, generation: int = 1) -> dict[str, Any]:
    spec: dict[str, Any] = {"entrypoint": "python train.py", "rayClusterSpec": {}, "suspend": suspend}
    return resource("RayJob", status, spec, generation)


def job(deployment: str, job_status: str = "", **extra: Any) -> dict[str, Any]:
    status: dict[str, Any] = {
        "jobDeploymentStatus": deployment,
        "jobId": "demo-8f2kq",
        "rayClusterName": "demo-cz7m4",
        "startTime": T0,
        "succeeded": 0,
        "failed": 0,
    }
    if job_status:
        status["jobStatus"] = job_status
    status.update(extra)
    return status


CONDITION_TYPES = [
    "Ready",
    "UpgradeInProgress",
    "RollbackInProgress",
    "Suspending",
    "Suspended",
    "HeadPodReady",
    "RayClusterProvisioned",
    "ReplicaFailure",
    "RayClusterSuspending",
    "RayClusterSuspended",
]


REASONS = [
    "Initializing",
    "InitializingTimeout",
    "ValidationFailed",
    "ZeroServeEndpoints",
    "NonZeroServeEndpoints",
    "NoActiveCluster",
    "CrashLoopBackOff",
    "HeadPodNotFound",
    "FailedCreateWorkerPod",
    "SuspendComplete",
    "",
]


WORDS = st.sampled_from(
    [
        "",
        "ready",
        "suspended",
        "Running",
        "RUNNING",
        "DEPLOY_FAILED",
        "UNHEALTHY",
        "SUCCEEDED",
        "STOPPED",
        "Failed",
        "Complete",
        "Initializing",
        "Suspended",
        "x",
    ]
)


CONDITION = st.fixed_dictionaries(
    {
        "type": st.sampled_from(CONDITION_TYPES),
        "status": st.sampled_from(["True", "False", "Unknown"]),
        "reason": st.sampled_from(REASONS),
    },
    optional={"message": st.text(max_size=20)},
)


SERVICE_STATUS = st.fixed_dictionaries(
    {},
    optional={
        "rayClusterName": st.sampled_from(["", "c-1"]),
        "trafficRoutedPercent": st.integers(0, 100),
        "applicationStatuses": st.dictionaries(
            st.sampled_from(["a", "b"]),
            st.fixed_dictionaries({}, optional={"status": WORDS, "message": WORDS}),
        ),
        "rayClusterStatus": st.fixed_dictionaries(
            {}, optional={"conditions": st.lists(CONDITION, max_size=3)}
        ),
    },
)


STATUS = st.fixed_dictionaries(
    {},
    optional={
        "conditions": st.lists(CONDITION, max_size=6),
        "observedGeneration": st.integers(0, 4),
        "state": WORDS,
        "serviceStatus": WORDS,
        "jobDeploymentStatus": WORDS,
        "jobStatus": WORDS,
        "reason": WORDS,
        "message": WORDS,
        "numServeEndpoints": st.integers(0, 3),
        "readyWorkerReplicas": st.integers(0, 4),
        "desiredWorkerReplicas": st.integers(0, 4),
        "activeServiceStatus": SERVICE_STATUS,
        "pendingServiceStatus": SERVICE_STATUS,
        "lastScheduleTime": st.just(T0),
        "failed": st.integers(0, 3),
    },
)
