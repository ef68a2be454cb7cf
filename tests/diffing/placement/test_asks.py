"""The pods a rollout asks for and what each requests, as the scheduler computes it."""

from __future__ import annotations

from diffing.placement import pod_requests, rollout_asks

from .helpers import cluster, worker


def test_pod_requests_sum_containers_and_take_the_larger_init() -> None:
    # PodRequests (component-helpers resource/helpers.go): app containers 1 + 2 cpu = 3; the
    # sidecar init (restartPolicy Always) runs beside them: 3 + 1 = 4; the plain init container
    # runs after the sidecar started: 4 + 1 = 5 > 4, so 5; then the overhead: 5.25 cpu.
    spec = {
        "containers": [{"resources": {"requests": {"cpu": "1"}}}, {"resources": {"requests": {"cpu": "2"}}}],
        "initContainers": [
            {"name": "proxy", "restartPolicy": "Always",
             "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}},
            {"name": "fetch", "resources": {"requests": {"cpu": "4"}}},
        ],
        "overhead": {"cpu": "250m"},
    }
    assert pod_requests(spec) == {"cpu": 5250, "memory": 1024**3 * 1000}


def test_pod_requests_init_before_the_sidecar_does_not_add_it() -> None:
    # The plain init container runs before the sidecar starts: max(4, 3 + 1) = 4.
    spec = {
        "containers": [{"resources": {"requests": {"cpu": "3"}}}],
        "initContainers": [
            {"name": "fetch", "resources": {"requests": {"cpu": "4"}}},
            {"name": "proxy", "restartPolicy": "Always", "resources": {"requests": {"cpu": "1"}}},
        ],
    }
    assert pod_requests(spec) == {"cpu": 4000}


def test_limit_stands_for_a_missing_request() -> None:
    spec = {"containers": [{"resources": {"limits": {"nvidia.com/gpu": "2", "cpu": "4"},
                                          "requests": {"cpu": "1"}}}]}
    assert pod_requests(spec) == {"cpu": 1000, "nvidia.com/gpu": 2000}


def test_rollout_asks_head_sidecar_wait_gcs_hosts_and_suspend() -> None:
    rcc = cluster({"cpu": "2", "memory": "8Gi"},
                  worker("tiny", {"cpu": "100m", "memory": "128Mi"}, replicas=3),
                  worker("tpu", {"google.com/tpu": "4", "cpu": "8"}, replicas=2, hosts=4),
                  {**worker("off", {"cpu": "1"}, replicas=5), "suspend": True},
                  autoscaling=True)
    asks = {a.group: a for a in rollout_asks(rcc, namespace="ml")}
    assert set(asks) == {"head", "tiny", "tpu"}  # a suspended group makes no pod
    # The head carries the autoscaler container: 500m / 512Mi (kuberay v1.7.0 common/pod.go:989-996).
    assert asks["head"].requests == {"cpu": 2500, "memory": (8 * 1024 + 512) * 1024**2 * 1000}
    # wait-gcs-ready (200m / 256Mi, pod.go:644-657) is larger than the tiny container: it wins.
    assert asks["tiny"].requests == {"cpu": 200, "memory": 256 * 1024**2 * 1000}
    assert asks["tiny"].count == 3 and asks["tiny"].pods == 3
    assert asks["tpu"].count == 2 and asks["tpu"].hosts == 4 and asks["tpu"].pods == 8
    assert asks["tpu"].labels["ray.io/group"] == "tpu" and asks["tpu"].namespace == "ml"


def test_rollout_asks_for_a_step_without_head() -> None:
    rcc = cluster({"cpu": "2"}, worker("gpu", {"nvidia.com/gpu": "1"}, replicas=10))
    asks = rollout_asks(rcc, {"gpu": 3}, head=False, init_injection=False)
    assert [(a.group, a.pods) for a in asks] == [("gpu", 3)]
    assert asks[0].requests == {"nvidia.com/gpu": 1000}


def test_custom_autoscaler_resources_replace_the_default() -> None:
    rcc = cluster({"cpu": "1"}, autoscaling=True)
    rcc["autoscalerOptions"] = {"resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}
    (head,) = rollout_asks(rcc)
    assert head.requests == {"cpu": 2000, "memory": 1024**3 * 1000}
