"""app/rollout/report.py: one report per watch, throttled writes, claims, resume, accounting."""

from __future__ import annotations

import asyncio
import logging
from types import SimpleNamespace

import pytest

from app.metrics import Metrics
from app.rollout.model import Observation, Phase, Target, Watch
from app.rollout.report import RolloutReporter
from tests.app.rollout_fakes import MemoryStore, RecordingSink, ScriptedFollower

T = Target("RayService", "prod", "fruit", "new-cluster", {"nvidia.com/gpu": 16})
WATCH = Watch("github:o/r@abc", (T,), 0.0, 1800.0, {})
WAITING = (Observation(T, Phase.WAITING, "waiting"),)
PROGRESSING = (Observation(T, Phase.PROGRESSING, "pending cluster", pending_pods=2),)
DONE = (Observation(T, Phase.DONE, "ready", observed_rollout="new-cluster",
                    observed_extra={"nvidia.com/gpu": 16}),)
DONE_MORE = (Observation(T, Phase.DONE, "ready", observed_rollout="new-cluster",
                         observed_extra={"nvidia.com/gpu": 24}),)


def reporter(store: MemoryStore, follower: ScriptedFollower, sink: RecordingSink,
             **kw: object) -> RolloutReporter:
    kw.setdefault("write_interval", 0.0)
    kw.setdefault("rescan_interval", 3600.0)
    return RolloutReporter(store, follower, lambda w: sink, **kw)  # type: ignore[arg-type]


def metric(m: Metrics, name: str, **labels: str) -> float:
    return m.registry.get_sample_value(name, labels) or 0.0


def test_follows_to_the_end_and_finishes() -> None:
    async def main() -> None:
        store, sink, m = MemoryStore(), RecordingSink(), Metrics()
        r = reporter(store, ScriptedFollower([WAITING, PROGRESSING, DONE]), sink, metrics=m)
        assert await r.start(WATCH) == "started"
        await r.wait_idle()
        assert [w[1][0].phase for w in sink.writes] == [Phase.WAITING, Phase.PROGRESSING, Phase.DONE]
        assert store.finished[WATCH.key] == DONE
        assert metric(m, "rayservice_impact_rollouts_followed_total", outcome="success") == 1
        assert metric(m, "rayservice_impact_prediction_mismatch_total", kind="RayService",
                      rollout="new-cluster") == 0
        assert r.latest[WATCH.key][1] == DONE
    asyncio.run(main())


def test_redelivery_starts_nothing() -> None:
    async def main() -> None:
        store, sink = MemoryStore(), RecordingSink()
        follower = ScriptedFollower([DONE])
        r = reporter(store, follower, sink)
        assert await r.start(WATCH) == "started"
        assert await r.start(WATCH) == "duplicate"
        await r.wait_idle()
        assert follower.followed == [WATCH.key]
        assert len(sink.writes) == 1
    asyncio.run(main())


def test_throttled_writes_keep_the_newest_and_the_final() -> None:
    async def main() -> None:
        store, sink = MemoryStore(), RecordingSink()
        script = [WAITING, PROGRESSING, WAITING, PROGRESSING, DONE]
        r = reporter(store, ScriptedFollower(script), sink, write_interval=3600.0)
        await r.start(WATCH)
        await r.wait_idle()
        # the first write goes at once; the three in between fall inside the interval; the final is written
        assert [w[1] for w in sink.writes] == [WAITING, DONE]
    asyncio.run(main())


def test_a_quiet_follower_still_gets_its_pending_write() -> None:
    async def main() -> None:
        store, sink = MemoryStore(), RecordingSink()
        follower = ScriptedFollower([WAITING, PROGRESSING, DONE], block_after=2)
        r = reporter(store, follower, sink, write_interval=0.2)
        await r.start(WATCH)
        await asyncio.sleep(0.5)
        assert [w[1] for w in sink.writes] == [WAITING, PROGRESSING]
        assert WATCH.key not in store.finished
        async with r.lifespan():
            pass  # shutting down cancels the watch; it stays unfinished in the store
        assert WATCH.key in [w.key for w in await store.unfinished()]
    asyncio.run(main())


def test_mismatch_is_counted_and_logged(caplog: pytest.LogCaptureFixture) -> None:
    async def main() -> None:
        store, sink, m = MemoryStore(), RecordingSink(), Metrics()
        r = reporter(store, ScriptedFollower([DONE_MORE]), sink, metrics=m)
        await r.start(WATCH)
        await r.wait_idle()
        assert metric(m, "rayservice_impact_prediction_mismatch_total", kind="RayService",
                      rollout="new-cluster") == 1
        assert metric(m, "rayservice_impact_rollouts_followed_total", outcome="success") == 1
    with caplog.at_level(logging.WARNING, logger="app.rollout.report"):
        asyncio.run(main())
    assert any("differs from the prediction" in r.getMessage() and "24" in r.getMessage()
               for r in caplog.records)


def test_two_reporters_sharing_a_store_report_once() -> None:
    async def main() -> None:
        store = MemoryStore()
        a_sink, b_sink = RecordingSink(), RecordingSink()
        script = [WAITING, PROGRESSING, DONE]
        a = reporter(store, ScriptedFollower(script, gap=0.05), a_sink, holder="a")
        b = reporter(store, ScriptedFollower(script, gap=0.05), b_sink, holder="b")
        assert await a.start(WATCH) == "started"
        await asyncio.sleep(0.01)
        assert await b.resume() == 1   # b sees the unfinished watch, but a holds its claim
        await asyncio.gather(a.wait_idle(), b.wait_idle())
        assert len(a_sink.writes) == 3 and b_sink.writes == []
        assert ("github:o/r@abc", "b", False) in store.claim_calls
    asyncio.run(main())


def test_a_restarted_reporter_resumes_and_finishes() -> None:
    async def main() -> None:
        now = [0.0]
        store = MemoryStore(clock=lambda: now[0])
        first_sink, second_sink = RecordingSink(), RecordingSink()
        first = reporter(store, ScriptedFollower([WAITING, PROGRESSING, DONE], block_after=1), first_sink,
                         holder="pod-1", claim_ttl=30.0)
        async with first.lifespan():
            await first.start(WATCH)
            await asyncio.sleep(0.05)
        assert [w[1] for w in first_sink.writes] == [WAITING]
        assert WATCH.key not in store.finished
        now[0] = 31.0  # pod-1's claim has expired
        second = reporter(store, ScriptedFollower([PROGRESSING, DONE]), second_sink, holder="pod-2")
        assert await second.resume() == 1
        await second.wait_idle()
        assert [w[1] for w in second_sink.writes] == [PROGRESSING, DONE]
        assert store.finished[WATCH.key] == DONE
    asyncio.run(main())


def test_bounded_concurrency() -> None:
    async def main() -> None:
        store, sink = MemoryStore(), RecordingSink()
        follower = ScriptedFollower([WAITING, DONE], gap=0.05)
        r = reporter(store, follower, sink, max_watches=1)
        watches = [Watch(f"k{i}", (T,), 0.0, 1800.0, {}) for i in range(3)]
        for w in watches:
            await r.start(w)
        await asyncio.sleep(0.07)
        assert len(follower.followed) == 1   # one slot: the others wait
        await r.wait_idle()
        assert sorted(follower.followed) == ["k0", "k1", "k2"]
        assert sorted(store.finished) == ["k0", "k1", "k2"]
    asyncio.run(main())


def test_a_failing_sink_does_not_stop_the_watch() -> None:
    class Broken:
        calls = 0

        async def write(self, watch: Watch, observations: tuple[Observation, ...], now: float) -> None:
            Broken.calls += 1
            raise RuntimeError("GitHub is down")

    async def main() -> None:
        store = MemoryStore()
        r = RolloutReporter(store, ScriptedFollower([WAITING, DONE]), lambda w: Broken(), write_interval=0.0)
        await r.start(WATCH)
        await r.wait_idle()
        assert Broken.calls == 2 and WATCH.key in store.finished
    asyncio.run(main())


def test_rollout_parts_uses_the_factory_or_the_kubernetes_side(monkeypatch: pytest.MonkeyPatch) -> None:
    import app.live
    from app.rollout import wiring

    store, follower = MemoryStore(), ScriptedFollower()
    on = SimpleNamespace(rollout_watch=True)
    assert wiring.rollout_parts(object(), lambda s: (store, follower)) == (store, follower)
    assert wiring.rollout_parts(object(), lambda s: None) is None
    monkeypatch.setattr(app.live, "kubernetes_configured", lambda: False)
    assert wiring.rollout_parts(on) is None
    monkeypatch.setattr(app.live, "kubernetes_configured", lambda: True)
    assert wiring.rollout_parts(object()) is None  # configured, but the watch is not switched on
    import app.rollout.kube

    def broken(settings: object) -> None:
        raise RuntimeError("no API server")

    monkeypatch.setattr(app.rollout.kube, "kube_parts", broken)
    assert wiring.rollout_parts(on) is None  # logged; the service still analyses
