"""KubeStore on the stand-in API: watches kept in ConfigMaps, claims as Leases, restarts resume."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from typing import Any

import pytest
from kube_standin import NS, KubeStandin, pod, rayservice

from app.rollout.kube import kube_parts
from app.rollout.kubeapi import KubeAPI
from app.rollout.model import Observation, Phase, Target, Watch
from app.rollout.store import KubeStore, object_name, watch_from_json, watch_json
from app.rollout.tracker import KubeFollower
from app.rollout.watch import WatchHub
from app.settings import load_settings

HOME = "rayservice-impact"
TARGET = Target("RayService", NS, "svc", "new-cluster", {"nvidia.com/gpu": 4})


@pytest.fixture
def standin() -> Iterator[tuple[KubeStandin, str]]:
    server = KubeStandin(bookmark_seconds=0.2)
    with server.serving() as url:
        yield server, url


def a_watch(key: str = "github:octo/repo@0123abcd", deadline: float = 3600) -> Watch:
    return Watch(
        key,
        (TARGET,),
        started=time.time(),
        deadline_seconds=deadline,
        sink={"github": {"owner": "octo", "repo": "repo", "sha": "0123abcd", "pr": 7}},
    )


def test_watch_round_trips_through_json() -> None:
    w = a_watch()
    assert watch_from_json(watch_json(w)) == w
    assert object_name("argocd:my app@HEAD/../x") == object_name("argocd:my app@HEAD/../x")
    assert len(object_name("x" * 5000)) <= 63 and object_name("a").startswith("rollout-")


def test_add_is_idempotent_and_labelled(standin: tuple[KubeStandin, str]) -> None:
    server, url = standin

    async def body() -> None:
        api = KubeAPI(url)
        store = KubeStore(api, HOME)
        try:
            w = a_watch()
            assert await store.add(w) is True
            assert await store.add(w) is False  # a redelivery
            assert [x.key for x in await store.unfinished()] == [w.key]
        finally:
            await api.aclose()

    asyncio.run(body())
    cm = server.get("configmaps", HOME, object_name("github:octo/repo@0123abcd"))
    assert cm is not None and cm["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "rayservice-impact"
    assert cm["metadata"]["annotations"]["rayservice-impact/watch-key"] == "github:octo/repo@0123abcd"


def test_two_replicas_racing_for_a_claim_one_wins(standin: tuple[KubeStandin, str]) -> None:
    _, url = standin

    async def body() -> None:
        apis = [KubeAPI(url) for _ in range(4)]
        stores = [KubeStore(api, HOME) for api in apis]
        try:
            for attempt in range(5):
                key = f"k{attempt}"
                won = await asyncio.gather(*(s.claim(key, f"replica-{i}", 30) for i, s in enumerate(stores)))
                assert sum(won) == 1, won
                winner = won.index(True)
                assert await stores[winner].claim(key, f"replica-{winner}", 30) is True  # renew
                other = (winner + 1) % len(stores)
                assert await stores[other].claim(key, f"replica-{other}", 30) is False
        finally:
            for api in apis:
                await api.aclose()

    asyncio.run(body())


def test_an_expired_lease_is_taken_over(standin: tuple[KubeStandin, str]) -> None:
    server, url = standin
    now = [time.time()]

    async def body() -> None:
        api = KubeAPI(url)
        first = KubeStore(api, HOME, clock=lambda: now[0])
        second = KubeStore(api, HOME, clock=lambda: now[0])
        try:
            assert await first.claim("k", "pod-a", 10)
            now[0] += 5
            assert not await second.claim("k", "pod-b", 10)
            now[0] += 6  # 11 s after the last renewal: expired
            assert await second.claim("k", "pod-b", 10)
            assert not await first.claim("k", "pod-a", 10)
        finally:
            await api.aclose()

    asyncio.run(body())
    lease = server.get("leases", HOME, object_name("k"))
    assert lease is not None and lease["spec"]["holderIdentity"] == "pod-b"
    assert lease["spec"]["leaseTransitions"] == 1


def test_a_restart_mid_rollout_resumes_and_finishes(standin: tuple[KubeStandin, str]) -> None:
    server, url = standin
    server.put("rayservices", rayservice(1))

    async def first_life() -> None:
        api = KubeAPI(url)
        hub = WatchHub(api, backoff=0.05)
        store, follower = KubeStore(api, HOME), KubeFollower(hub)
        try:
            w = a_watch()
            assert await store.add(w)
            assert await store.claim(w.key, "pod-a", 1)
            server.put("rayservices", rayservice(2, pending="svc-b"))
            async for obs in follower.follow(w):
                if obs[0].phase == Phase.PROGRESSING:
                    break  # the pod dies here: nothing finished
        finally:
            await hub.close()
            await api.aclose()

    asyncio.run(first_life())
    server.put("pods", pod("b-1", "svc-b", "Running"))

    async def second_life() -> tuple[Observation, ...]:
        api = KubeAPI(url)
        hub = WatchHub(api, backoff=0.05)
        store, follower = KubeStore(api, HOME), KubeFollower(hub)
        try:
            pending = await store.unfinished()
            assert [w.key for w in pending] == ["github:octo/repo@0123abcd"]
            w = pending[0]
            await asyncio.sleep(1.1)  # the dead pod's lease runs out
            assert await store.claim(w.key, "pod-b", 30)
            last: tuple[Observation, ...] = ()

            async def follow() -> None:
                nonlocal last
                async for obs in follower.follow(w):
                    last = obs

            async def finish_rollout() -> None:
                await asyncio.sleep(0.3)
                server.put("rayservices", rayservice(2, active="svc-b"))

            await asyncio.wait_for(asyncio.gather(follow(), finish_rollout()), 20)
            await store.finish(w.key, last)
            assert await store.unfinished() == []
            final = await store.final(w.key)
            assert final == last
            return last
        finally:
            await hub.close()
            await api.aclose()

    last = asyncio.run(second_life())
    assert last[0].phase == Phase.DONE and last[0].summary.startswith("new cluster svc-b ready in")
    assert dict(last[0].observed_extra) == {"nvidia.com/gpu": 4} and last[0].as_predicted


def test_kube_parts_is_none_without_configuration(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "missing"))
    assert kube_parts(load_settings()) is None


def _kubeconfig(tmp_path: Any, token: str) -> Any:
    """A kubeconfig naming an API server nobody answers on (kube_parts only builds its clients)."""
    config = tmp_path / "config"
    config.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
        "clusters: [{name: k, cluster: {server: 'http://127.0.0.1:1'}}]\n"
        f"users: [{{name: u, user: {{token: {token}}}}}]\n"
        "contexts: [{name: c, context: {cluster: k, user: u}}]\n"
    )
    return config


def test_kube_parts_from_a_kubeconfig(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    config = _kubeconfig(tmp_path, "secret-token")
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    monkeypatch.setenv("KUBECONFIG", str(config))
    monkeypatch.setenv("POD_NAMESPACE", "ops")
    parts = kube_parts(load_settings(rollout_cluster_wide=True, rollout_max_watches=10))
    assert parts is not None
    store, follower = parts
    assert isinstance(store, KubeStore) and store.namespace == "ops"
    assert isinstance(follower, KubeFollower) and follower.hub.cluster_wide and follower.hub.max_watches == 10
    assert store.api._headers()["Authorization"] == "Bearer secret-token"
    asyncio.run(store.api.aclose())


def test_a_restart_after_the_switch_remembers_the_first_sight(standin: tuple[KubeStandin, str]) -> None:
    """The pod dies while the new cluster is pending; the switch happens before another replica
    takes the watch over. What the first follower remembered (the old active cluster, the pending
    one, the peak) is in the watch's ConfigMap, so the second one still reports the new cluster."""
    server, url = standin
    server.put("rayservices", rayservice(1))

    async def life(until_phase: Phase | None) -> tuple[Observation, ...]:
        api = KubeAPI(url)
        hub = WatchHub(api, backoff=0.05)
        store = KubeStore(api, HOME)
        follower = KubeFollower(hub, memo=store)
        last: tuple[Observation, ...] = ()
        try:
            w = (await store.unfinished())[0]

            async def follow() -> None:
                nonlocal last
                async for obs in follower.follow(w):
                    last = obs
                    if obs[0].phase == until_phase:
                        break

            await asyncio.wait_for(follow(), 10)
            return last
        finally:
            await hub.close()
            await api.aclose()

    async def start() -> None:
        api = KubeAPI(url)
        try:
            assert await KubeStore(api, HOME).add(a_watch())
        finally:
            await api.aclose()

    asyncio.run(start())
    server.put("rayservices", rayservice(2, pending="svc-b"))
    server.put("pods", pod("b-1", "svc-b", "Pending"))
    first = asyncio.run(life(Phase.PROGRESSING))
    assert first[0].pending_pods == 1
    server.put("rayservices", rayservice(2, active="svc-b"))  # while no replica follows
    server.delete("pods", NS, "b-1")
    last = asyncio.run(life(None))
    assert last[0].phase == Phase.DONE and last[0].observed_rollout == "new-cluster"
    assert dict(last[0].observed_extra) == {"nvidia.com/gpu": 4} and last[0].as_predicted


def test_an_unreadable_watch_record_is_skipped(standin: tuple[KubeStandin, str]) -> None:
    server, url = standin
    labels = {
        "app.kubernetes.io/managed-by": "rayservice-impact",
        "rayservice-impact/rollout-watch": "true",
        "rayservice-impact/finished": "false",
    }
    server.put(
        "configmaps",
        {
            "metadata": {"name": "rollout-junk", "namespace": HOME, "labels": labels},
            "data": {"watch": "{not json"},
        },
    )

    async def body() -> None:
        api = KubeAPI(url)
        store = KubeStore(api, HOME)
        try:
            assert await store.add(a_watch())
            assert [w.key for w in await store.unfinished()] == ["github:octo/repo@0123abcd"]
            assert await store.load_memories("never-added") == {}
            await store.finish("never-added", ())  # nothing to finish: no error
        finally:
            await api.aclose()

    asyncio.run(body())


def test_kube_parts_counts_the_policys_accelerators(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    config = _kubeconfig(tmp_path, "t")
    policy = tmp_path / "policy.yaml"
    policy.write_text("accelerators: [example.com/fpga]\n")
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    monkeypatch.setenv("KUBECONFIG", str(config))
    parts = kube_parts(load_settings(policy_file=str(policy)))
    assert parts is not None
    store, follower = parts
    assert isinstance(follower, KubeFollower) and follower.accelerators == ("example.com/fpga",)
    asyncio.run(store.api.aclose())  # type: ignore[attr-defined]


def test_finished_records_are_deleted_after_their_retention(standin: tuple[KubeStandin, str]) -> None:
    server, url = standin
    now = [time.time()]
    day = 86400.0

    async def body() -> list[int]:
        api = KubeAPI(url)
        store = KubeStore(api, HOME, clock=lambda: now[0], retention_seconds=7 * day, prune_interval=3600)
        try:
            old, recent, running = (a_watch(f"github:o/r@{sha}") for sha in ("aaaa", "bbbb", "cccc"))
            for w in (old, recent, running):
                assert await store.add(w) and await store.claim(w.key, "replica-1", 60)
            await store.finish(old.key, ())
            now[0] += 3 * day
            await store.finish(recent.key, ())
            now[0] += 5 * day  # old finished 8 days ago, recent 5, running never
            first = await store.prune()
            again = await store.prune()  # within the interval: nothing is listed
            now[0] += 3 * day  # recent is past its week now
            third = await store.prune()
            return [first, again, third]
        finally:
            await api.aclose()

    assert asyncio.run(body()) == [1, 0, 1]
    names = {k[2] for k in server.objects if k[0] in ("configmaps", "leases") and k[1] == HOME}
    assert names == {object_name("github:o/r@cccc")}  # the unfinished watch keeps its ConfigMap and Lease
    assert server.list_requests  # it listed (and only finished ones: the selector names them)
