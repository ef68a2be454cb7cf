"""The rollout watch against a stand-in API server speaking the real watch protocol.

Each scripted upgrade (tests/app/kube_standin.py) is replayed while a KubeFollower follows it:
success, Pending forever for lack of GPUs, validation failure, rollback, a RayJob retry. Then the
protocol itself: 410 Gone re-lists and loses nothing, a dropped connection resumes from the
resourceVersion, 200 RayServices share one watch per kind, and the hub's bounds hold.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import pytest
from kube_standin import GPU_MESSAGE, NS, KubeStandin, failed_scheduling, pod, rayjob, rayservice

from app.rollout.kubeapi import KubeAPI, KubeAPIError
from app.rollout.model import Observation, Phase, Target, Watch
from app.rollout.tracker import KubeFollower
from app.rollout.watch import HubFull, WatchHub


@pytest.fixture
def standin() -> Iterator[tuple[KubeStandin, str]]:
    server = KubeStandin(bookmark_seconds=0.2)
    with server.serving() as url:
        yield server, url


class Clock:
    def __init__(self) -> None:
        self.now = time.time()
        self.start = self.now

    def __call__(self) -> float:
        return self.now


Step = Callable[[], None]


async def replay(
    url: str,
    targets: tuple[Target, ...],
    steps: list[Step],
    *,
    clock: Clock,
    deadline: float = 3600,
    gap: float = 0.15,
) -> list[tuple[Observation, ...]]:
    api = KubeAPI(url, timeout=5)
    hub = WatchHub(api, backoff=0.05, timeout_seconds=30)
    follower = KubeFollower(hub, clock=clock)
    watch = Watch("github:o/r@abc", targets, started=clock.start, deadline_seconds=deadline, sink={})
    seen: list[tuple[Observation, ...]] = []

    async def drive() -> None:
        for step in steps:
            await asyncio.sleep(gap)
            step()

    async def follow() -> None:
        async for obs in follower.follow(watch):
            seen.append(obs)

    try:
        await asyncio.wait_for(asyncio.gather(drive(), follow()), 20)
    finally:
        await hub.close()
        await api.aclose()
    return seen


SVC = Target("RayService", NS, "svc", "new-cluster", {"nvidia.com/gpu": 8})


def test_success_new_cluster_ready_as_predicted(standin: tuple[KubeStandin, str]) -> None:
    server, url = standin
    clock = Clock()
    server.put("rayservices", rayservice(1))

    def at(seconds: float, fn: Step) -> Step:
        def step() -> None:
            clock.now = clock.start + seconds
            fn()

        return step

    steps = [
        at(5, lambda: server.put("rayservices", rayservice(2, pending="svc-b"))),
        at(30, lambda: server.put("pods", pod("b-1", "svc-b", "Pending"))),
        at(31, lambda: server.put("pods", pod("b-2", "svc-b", "Pending"))),
        at(400, lambda: server.put("pods", pod("b-1", "svc-b", "Running"))),
        at(401, lambda: server.put("pods", pod("b-2", "svc-b", "Running"))),
        at(552, lambda: server.put("rayservices", rayservice(2, active="svc-b"))),
    ]
    seen = asyncio.run(replay(url, (SVC,), steps, clock=clock))
    assert seen[0][0].phase == Phase.WAITING
    assert any(o[0].phase == Phase.PROGRESSING and o[0].pending_pods == 2 for o in seen)
    final = seen[-1][0]
    assert final.phase == Phase.DONE
    assert final.summary == "new cluster svc-b ready in 9 m 12 s; 8 extra GPUs at peak, as predicted"
    assert final.as_predicted


def test_pending_forever_for_lack_of_gpus_turns_stuck(standin: tuple[KubeStandin, str]) -> None:
    server, url = standin
    clock = Clock()
    server.put("rayservices", rayservice(2, pending="svc-b"))
    server.put("pods", pod("b-1", "svc-b", "Pending"))

    def past_deadline() -> None:
        clock.now = clock.start + 1801
        server.put("events", failed_scheduling("b-1"))

    steps = [lambda: server.put("events", failed_scheduling("b-1")), past_deadline]
    seen = asyncio.run(replay(url, (SVC,), steps, clock=clock, deadline=1800))
    assert any(o[0].phase == Phase.PROGRESSING and GPU_MESSAGE in o[0].reasons for o in seen)
    final = seen[-1][0]
    assert final.phase == Phase.STUCK and final.pending_pods == 1
    assert final.summary.startswith(
        "stuck past the 30 m 0 s deadline: new cluster svc-b pending: 1 of 1 pods"
    )
    assert GPU_MESSAGE in final.reasons
    assert any("ray.io/initializing-timeout" in r for r in final.reasons)
    assert any(r.startswith("way out: free capacity") for r in final.reasons)


def test_validation_failure_fails(standin: tuple[KubeStandin, str]) -> None:
    server, url = standin
    server.put("rayservices", rayservice(1))
    bad = rayservice(
        2,
        ready="False",
        reason="ValidationFailed",
        message="spec.rayClusterConfig.headGroupSpec.template is invalid",
    )
    seen = asyncio.run(replay(url, (SVC,), [lambda: server.put("rayservices", bad)], clock=Clock()))
    final = seen[-1][0]
    assert final.phase == Phase.FAILED and final.summary.startswith("ValidationFailed")
    assert final.reasons == ("spec.rayClusterConfig.headGroupSpec.template is invalid",)


def test_rollback_drops_the_pending_cluster(standin: tuple[KubeStandin, str]) -> None:
    server, url = standin
    server.put("rayservices", rayservice(1))
    steps = [
        lambda: server.put("rayservices", rayservice(2, pending="svc-b")),
        lambda: server.put("pods", pod("b-1", "svc-b", "Pending")),
        lambda: server.put("rayservices", rayservice(3)),
        lambda: server.delete("pods", NS, "b-1"),
    ]
    seen = asyncio.run(replay(url, (SVC,), steps, clock=Clock()))
    final = seen[-1][0]
    assert final.phase == Phase.DONE and final.observed_rollout == "none" and not final.as_predicted
    assert "rolled back: pending cluster svc-b dropped, svc-a still serves" in final.summary


def test_rayjob_retry_then_complete(standin: tuple[KubeStandin, str]) -> None:
    server, url = standin
    target = Target("RayJob", NS, "job", "create", {"nvidia.com/gpu": 4})
    steps = [
        lambda: server.put("rayjobs", rayjob("Initializing")),
        lambda: server.put("pods", pod("c-1", "job-c", "Running")),
        lambda: server.put("rayjobs", rayjob("Running", "RUNNING")),
        lambda: server.put("rayjobs", rayjob("Retrying", "FAILED", failed=1)),
        lambda: server.put("rayjobs", rayjob("Running", "RUNNING", failed=1)),
        lambda: server.put("rayjobs", rayjob("Complete", "SUCCEEDED", failed=1)),
    ]
    seen = asyncio.run(replay(url, (target,), steps, clock=Clock()))
    assert seen[0][0].phase == Phase.WAITING  # not created yet
    assert any("retrying (attempt 2)" in o[0].summary for o in seen)
    final = seen[-1][0]
    assert final.phase == Phase.DONE and "succeeded" in final.summary and "1 failed attempt" in final.summary
    assert final.as_predicted


async def until(check: Callable[[], bool], timeout: float = 10) -> None:
    end = time.monotonic() + timeout
    while not check():
        if time.monotonic() > end:
            raise AssertionError("condition not met in time")
        await asyncio.sleep(0.02)


async def with_hub(url: str, body: Callable[[WatchHub], Awaitable[None]], **kwargs: Any) -> None:
    api = KubeAPI(url, timeout=5)
    hub = WatchHub(api, backoff=0.05, **kwargs)
    try:
        await body(hub)
    finally:
        await hub.close()
        await api.aclose()


def test_410_gone_relists_and_loses_nothing(standin: tuple[KubeStandin, str]) -> None:
    server, url = standin
    server.put("rayservices", rayservice(1))

    async def body(hub: WatchHub) -> None:
        await hub.acquire([NS])
        assert await hub.wait_synced([NS], timeout=5)
        assert server.list_requests[("rayservices", NS)] == 1
        await until(lambda: server.open_watches[("rayservices", NS)] == 1)
        server.hold = True  # what happens now is not delivered to the open watch...
        server.put("rayservices", rayservice(2, pending="svc-b"))
        server.put("rayservices", rayservice(1, name="other"))
        server.compact()  # ...and is forgotten: a watch from before it gets 410
        server.kick()
        server.hold = False
        await until(lambda: hub.get("rayservices", NS, "other") is not None)
        svc = hub.get("rayservices", NS, "svc")
        assert svc is not None and svc["status"]["pendingServiceStatus"]["rayClusterName"] == "svc-b"
        assert server.list_requests[("rayservices", NS)] == 2  # listed again after the 410

        # The watch after the new list starts from the list's resourceVersion, not the old one.
        def versions() -> list[int]:
            return [int(w["resourceVersion"]) for w in server.watch_requests if w["plural"] == "rayservices"]

        await until(lambda: versions()[-1] >= server.oldest)
        assert versions()[-2] < server.oldest  # the stale one, answered with the 410 ERROR event

    asyncio.run(with_hub(url, body))


def test_dropped_connection_resumes_from_resource_version(standin: tuple[KubeStandin, str]) -> None:
    server, url = standin
    server.put("rayservices", rayservice(1))

    async def body(hub: WatchHub) -> None:
        await hub.acquire([NS])
        assert await hub.wait_synced([NS], timeout=5)
        await until(lambda: server.open_watches[("rayservices", NS)] == 1)
        before = len([w for w in server.watch_requests if w["plural"] == "rayservices"])
        server.hold = True
        changed = server.put("rayservices", rayservice(2, pending="svc-b"))
        server.drop()
        server.hold = False
        await until(
            lambda: (
                (hub.get("rayservices", NS, "svc") or {}).get("metadata", {}).get("resourceVersion")
                == changed["metadata"]["resourceVersion"]
            )
        )
        watches = [w for w in server.watch_requests if w["plural"] == "rayservices"]
        assert len(watches) > before
        assert server.list_requests[("rayservices", NS)] == 1  # no new list: resumed
        assert int(watches[-1]["resourceVersion"]) < int(changed["metadata"]["resourceVersion"])
        assert watches[-1]["allowWatchBookmarks"] == "true" and "timeoutSeconds" in watches[-1]

    asyncio.run(with_hub(url, body))


def test_bookmarks_advance_the_resource_version(standin: tuple[KubeStandin, str]) -> None:
    server, url = standin
    server.put("rayservices", rayservice(1))

    async def body(hub: WatchHub) -> None:
        await hub.acquire([NS])
        assert await hub.wait_synced([NS], timeout=5)
        informer = hub.informers[("rayservices", NS)]
        listed = int(informer.version)
        server.put("pods", pod("x", "other", "Running"))  # another kind moves the global version
        await until(lambda: int(informer.version) > listed)

    asyncio.run(with_hub(url, body))


def test_200_rayservices_share_one_watch_per_kind(standin: tuple[KubeStandin, str]) -> None:
    server, url = standin
    for i in range(200):
        server.put("rayservices", rayservice(1, name=f"svc-{i}"))

    async def body(hub: WatchHub) -> None:
        follower = KubeFollower(hub)
        firsts: list[Observation] = []

        async def one(i: int) -> None:
            target = Target("RayService", NS, f"svc-{i}", "serve-in-place", {})
            watch = Watch(f"k{i}", (target,), started=time.time(), deadline_seconds=3600, sink={})
            async for obs in follower.follow(watch):
                firsts.append(obs[0])

        tasks = [asyncio.create_task(one(i)) for i in range(200)]
        await until(lambda: len(firsts) >= 200)
        await until(lambda: sum(server.open_watches.values()) == 5)
        kinds = ("rayservices", "rayclusters", "rayjobs", "pods", "events")
        assert {k: server.open_watches[(k, NS)] for k in kinds} == dict.fromkeys(kinds, 1)
        assert len(server.watch_requests) == 5
        assert all(o.phase == Phase.WAITING for o in firsts)
        # A change to one of them reaches its follower; they finish and release the watches.
        for i in range(200):
            server.put("rayservices", rayservice(2, name=f"svc-{i}"))
        await asyncio.wait_for(asyncio.gather(*tasks), 20)
        await until(lambda: sum(server.open_watches.values()) == 0)
        assert hub.informers == {} and hub.cached == 0

    asyncio.run(with_hub(url, body, timeout_seconds=30))


def test_cluster_wide_uses_one_watch_per_kind_for_every_namespace(standin: tuple[KubeStandin, str]) -> None:
    server, url = standin
    server.put("rayservices", rayservice(1, ns="a"))
    server.put("rayservices", rayservice(1, ns="b"))

    async def body(hub: WatchHub) -> None:
        await hub.acquire(["a", "b"])
        assert await hub.wait_synced(["a", "b"], timeout=5)
        await until(lambda: sum(server.open_watches.values()) == 5)
        assert {(w["plural"], w["ns"]) for w in server.watch_requests} == {
            (k, "") for k in ("rayservices", "rayclusters", "rayjobs", "pods", "events")
        }
        assert len(server.watch_requests) == 5
        assert hub.get("rayservices", "b", "svc") is not None
        assert [o["metadata"]["namespace"] for o in hub.in_namespace("rayservices", "a")] == ["a"]

    asyncio.run(with_hub(url, body, cluster_wide=True))


def test_bounds_watches_and_objects(standin: tuple[KubeStandin, str]) -> None:
    server, url = standin
    for i in range(20):
        server.put("rayservices", rayservice(1, name=f"svc-{i}"))

    async def body(hub: WatchHub) -> None:
        await hub.acquire([NS])
        with pytest.raises(HubFull, match="rollout_max_watches"):
            await hub.acquire(["elsewhere"])
        assert await hub.wait_synced([NS], timeout=5)
        assert hub.cached == 10 and hub.dropped == 10

    asyncio.run(with_hub(url, body, max_watches=5, max_objects=10))


def test_an_oversized_watch_event_is_refused(standin: tuple[KubeStandin, str]) -> None:
    server, url = standin
    server.put("rayservices", rayservice(1))

    async def body() -> None:
        api = KubeAPI(url, timeout=5, max_event_bytes=200)
        try:
            items, version = await api.list("/apis/ray.io/v1/namespaces/serving/rayservices", page=1)
            assert len(items) == 1
            server.put("rayservices", rayservice(2, message="x" * 1000))
            with pytest.raises(KubeAPIError, match="larger than 200 bytes"):
                async for _ in api.watch(
                    "/apis/ray.io/v1/namespaces/serving/rayservices", version, timeout_seconds=5
                ):
                    pass
        finally:
            await api.aclose()

    asyncio.run(body())


def test_a_forbidden_watch_is_said_and_ends_stuck(standin: tuple[KubeStandin, str]) -> None:
    server, url = standin
    server.deny = {"rayservices"}
    clock = Clock()

    def past_deadline() -> None:
        clock.now = clock.start + 3
        server.put("pods", pod("x", "other", "Running"))  # any change wakes the follower

    # The follower waits for the first list at most until the deadline (1.5 s), then says why it sees nothing.
    seen = asyncio.run(replay(url, (SVC,), [past_deadline], clock=clock, deadline=1.5, gap=2.5))
    assert seen[0][0].phase == Phase.WAITING
    assert "the watch fails" in seen[0][0].summary and "forbidden" in seen[0][0].summary
    final = seen[-1][0]
    assert final.phase == Phase.STUCK and "the change never reached the object" in final.summary


def test_lists_are_read_page_by_page(standin: tuple[KubeStandin, str]) -> None:
    server, url = standin
    for i in range(20):
        server.put("rayservices", rayservice(1, name=f"svc-{i:02}"))

    async def body() -> None:
        api = KubeAPI(url, timeout=5, max_items=15)
        try:
            path = "/apis/ray.io/v1/namespaces/serving/rayservices"
            with pytest.raises(KubeAPIError, match="more than 15 objects"):
                await api.list(path, page=7)
            api.max_items = 100
            items, version = await api.list(path, page=7)
            assert [i["metadata"]["name"] for i in items] == [f"svc-{i:02}" for i in range(20)]
            assert version == str(server.version)
        finally:
            await api.aclose()

    asyncio.run(body())
    assert (
        server.list_requests[("rayservices", NS)] == 3 + 3
    )  # 7 + 7 + 6 twice (the first refused at 20 > 15)


def test_junk_and_error_events_in_a_stream_are_survived(standin: tuple[KubeStandin, str]) -> None:
    server, url = standin
    server.put("rayservices", rayservice(1))

    async def body(hub: WatchHub) -> None:
        await hub.acquire([NS])
        assert await hub.wait_synced([NS], timeout=5)
        await until(lambda: server.open_watches[("rayservices", NS)] == 1)
        informer = hub.informers[("rayservices", NS)]
        # A line that is not JSON: the stream is given up and watched again from the version.
        server.inject["rayservices"] = [b"this is not json\n"]
        server.kick()
        await until(lambda: "not JSON" in informer.error)
        changed = server.put("rayservices", rayservice(2, pending="svc-b"))
        await until(
            lambda: (
                (hub.get("rayservices", NS, "svc") or {}).get("metadata", {}).get("resourceVersion")
                == changed["metadata"]["resourceVersion"]
            )
        )
        assert server.list_requests[("rayservices", NS)] == 1
        # An ERROR event that is not 410 (an internal error): listed again, after a backoff.
        server.inject["rayservices"] = [
            b'{"type":"ERROR","object":{"kind":"Status","code":500,"reason":"InternalError"}}\n'
        ]
        server.kick()
        await until(lambda: server.list_requests[("rayservices", NS)] == 2)
        assert hub.get("rayservices", NS, "svc") is not None

    asyncio.run(with_hub(url, body))
