"""Follow deployed changes and report what happens: one task per watch, writes throttled.

:class:`RolloutReporter` ties the seam of :mod:`.model` together. ``start(watch)`` records the
watch in the :class:`Store` (a redelivered event finds it there and starts nothing), then a task
claims it (``store.claim``; a second replica that loses the claim leaves it to the winner and
looks again later, so a replica that dies is taken over once its claim expires), follows it
(:class:`Follower`) and hands each tuple of observations to the watch's :class:`Sink`: at most one
write per ``write_interval`` seconds, the newest one, and always the final one. On the final
tuple the watch is marked finished in the store, the outcome and every mismatch with the
prediction are counted (``rayservice_impact_rollouts_followed_total``,
``rayservice_impact_prediction_mismatch_total``) and the mismatches logged. ``resume()``, at
start-up and every ``rescan_interval`` seconds, takes ``store.unfinished()``: a restarted replica
loses nothing. At most ``max_watches`` watches are followed at once; the others wait for a slot.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable
from typing import Any, Protocol

from .model import Follower, Observation, Store, Watch
from .present import conclusion_of, is_final, mismatches

log = logging.getLogger(__name__)

LATEST_KEPT = 1000  # watches whose newest observations GET /v1/rollouts shows


class Sink(Protocol):
    """Where one watch's observations are written (a check run and comment, the logs)."""

    async def write(self, watch: Watch, observations: tuple[Observation, ...], now: float) -> None: ...


SinkFactory = Callable[[Watch], Sink]


class LogSink:
    """The sink of a watch with nowhere else to report: one log line per write."""

    async def write(self, watch: Watch, observations: tuple[Observation, ...], now: float) -> None:
        status, conclusion = conclusion_of(observations)
        phases = ", ".join(f"{o.target.key} {o.phase.value}" for o in observations)
        log.info("rollout %s: %s%s: %s", watch.key, status, f" ({conclusion})" if conclusion else "", phases)


def default_holder() -> str:
    """This replica's name in claims: the pod (``POD_NAME`` from the downward API, else the
    hostname, which Kubernetes sets to it) and the process id."""
    return f"{os.environ.get('POD_NAME') or socket.gethostname()}:{os.getpid()}"


class RolloutReporter:
    def __init__(self, store: Store, follower: Follower, sink_factory: SinkFactory, *,
                 metrics: Any = None, clock: Callable[[], float] = time.time, holder: str | None = None,
                 max_watches: int = 16, write_interval: float = 10.0, claim_ttl: float = 60.0,
                 rescan_interval: float = 60.0) -> None:
        self.store, self.follower, self.sink_factory = store, follower, sink_factory
        self.metrics, self.clock = metrics, clock
        self.holder = holder or default_holder()
        self.write_interval, self.claim_ttl, self.rescan_interval = write_interval, claim_ttl, rescan_interval
        self.max_watches = max_watches
        self._slots = asyncio.Semaphore(max_watches)
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self._rescan: asyncio.Task[None] | None = None
        self.latest: OrderedDict[str, tuple[Watch, tuple[Observation, ...]]] = OrderedDict()
        self.finished: set[str] = set()

    # -- starting --------------------------------------------------------------------------------
    async def start(self, watch: Watch) -> str:
        """``"started"``, or ``"duplicate"`` when the store holds a watch with this key already
        (a redelivered push or notification: it is followed once)."""
        if not await self.store.add(watch):
            log.info("rollout %s: already recorded; not started again", watch.key)
            return "duplicate"
        self._spawn(watch)
        return "started"

    async def resume(self) -> int:
        """Follow every unfinished watch of the store not followed here yet; how many were taken up."""
        taken = 0
        for watch in await self.store.unfinished():
            if watch.key not in self._tasks and watch.key not in self.finished:
                self._spawn(watch)
                taken += 1
        return taken

    def _spawn(self, watch: Watch) -> None:
        if watch.key in self._tasks:
            return
        self.latest.setdefault(watch.key, (watch, ()))
        task = asyncio.create_task(self._run(watch), name=f"rollout {watch.key}")
        self._tasks[watch.key] = task
        task.add_done_callback(self._forget(watch.key))

    def _forget(self, key: str) -> Callable[[asyncio.Task[None]], None]:
        def done(_task: asyncio.Task[None]) -> None:
            self._tasks.pop(key, None)
        return done

    @property
    def running(self) -> tuple[str, ...]:
        return tuple(self._tasks)

    async def wait_idle(self) -> None:
        """Until every watch followed here has ended (tests)."""
        while self._tasks:
            await asyncio.gather(*self._tasks.values(), return_exceptions=True)

    # -- one watch -------------------------------------------------------------------------------
    async def _run(self, watch: Watch) -> None:
        async with self._slots:
            if not await self._claim(watch.key):
                log.info("rollout %s: another replica reports it", watch.key)
                return
            renew = asyncio.create_task(self._renew(watch.key))
            try:
                await self._follow(watch, renew)
            except asyncio.CancelledError:
                raise
            except Exception:  # noqa: BLE001 - a follower or sink bug: the next rescan retries
                log.exception("rollout %s: following failed; retried at the next rescan", watch.key)
            finally:
                renew.cancel()

    async def _claim(self, key: str) -> bool:
        try:
            return await self.store.claim(key, self.holder, self.claim_ttl)
        except Exception:  # noqa: BLE001 - the store unreachable: not ours for now
            log.exception("rollout %s: cannot claim it", key)
            return False

    async def _renew(self, key: str) -> None:
        """Keep the claim while following; stop following when another replica holds it."""
        me = asyncio.current_task()
        while True:
            await asyncio.sleep(self.claim_ttl / 3)
            if not await self._claim(key):
                log.warning("rollout %s: the claim was lost; leaving it to its new holder", key)
                task = self._tasks.get(key)
                if task is not None and task is not me:
                    task.cancel()
                return

    async def _follow(self, watch: Watch, renew: asyncio.Task[None]) -> None:
        sink = self.sink_factory(watch)
        writer = _Throttled(sink, watch, self.write_interval, self.clock)
        last: tuple[Observation, ...] = ()
        stream = self.follower.follow(watch)
        try:
            async for observations in stream:
                last = tuple(observations)
                self._remember(watch, last)
                if is_final(last):
                    break
                await writer.offer(last)
        finally:
            await writer.close()
            close = getattr(stream, "aclose", None)
            if close is not None:
                await close()
        if not last or not is_final(last):
            log.warning("rollout %s: the follower ended before every object was final", watch.key)
            return
        renew.cancel()
        await writer.write(last)
        await self.store.finish(watch.key, last)
        self.finished.add(watch.key)
        self._account(watch, last)

    def _remember(self, watch: Watch, observations: tuple[Observation, ...]) -> None:
        self.latest[watch.key] = (watch, observations)
        self.latest.move_to_end(watch.key)
        while len(self.latest) > LATEST_KEPT:
            self.latest.popitem(last=False)

    def _account(self, watch: Watch, final: tuple[Observation, ...]) -> None:
        _, conclusion = conclusion_of(final)
        differ = mismatches(final)
        for o in differ:
            log.warning("rollout %s: %s differs from the prediction: predicted %s with %s extra, observed %s "
                        "with %s extra", watch.key, o.target.key, o.target.predicted_rollout,
                        dict(o.target.predicted_extra), o.observed_rollout, dict(o.observed_extra))
        log.info("rollout %s: %s (%d objects, %d as predicted)", watch.key, conclusion, len(final),
                 len(final) - len(differ))
        if self.metrics is not None:
            self.metrics.observe_rollout(conclusion or "unknown",
                                         [(o.target.kind, o.target.predicted_rollout) for o in differ])

    # -- lifespan --------------------------------------------------------------------------------
    @contextlib.asynccontextmanager
    async def lifespan(self, app: Any = None) -> AsyncIterator[None]:
        self._rescan = asyncio.create_task(self._rescan_loop(), name="rollout rescan")
        try:
            yield
        finally:
            self._rescan.cancel()
            tasks = list(self._tasks.values())
            for task in tasks:
                task.cancel()
            await asyncio.gather(self._rescan, *tasks, return_exceptions=True)
            for part in (self.follower, self.store):  # the watch streams and HTTP clients behind them
                close = getattr(part, "aclose", None)
                if close is not None:
                    with contextlib.suppress(Exception):
                        await close()

    async def _rescan_loop(self) -> None:
        while True:
            try:
                taken = await self.resume()
                if taken:
                    log.info("rollout: resumed %d unfinished watches", taken)
                prune = getattr(self.store, "prune", None)  # finished records past their retention
                if prune is not None and (gone := await prune()):
                    log.info("rollout: deleted %d finished watch records", gone)
            except asyncio.CancelledError:
                raise
            except Exception:  # noqa: BLE001 - the store unreachable: try again later
                log.exception("rollout: cannot list the unfinished watches")
            await asyncio.sleep(self.rescan_interval)


class _Throttled:
    """At most one write per ``interval`` seconds: the newest observations, written when the
    interval has passed (by a timer when nothing newer comes)."""

    def __init__(self, sink: Sink, watch: Watch, interval: float, clock: Callable[[], float]) -> None:
        self.sink, self.watch, self.interval, self.clock = sink, watch, interval, clock
        self._last_write = float("-inf")
        self._pending: tuple[Observation, ...] | None = None
        self._timer: asyncio.Task[None] | None = None
        self._lock = asyncio.Lock()

    async def offer(self, observations: tuple[Observation, ...]) -> None:
        self._pending = observations
        due = self._last_write + self.interval - self.clock()
        if due <= 0:
            await self._flush()
        elif self._timer is None or self._timer.done():
            self._timer = asyncio.create_task(self._later(due))

    async def _later(self, delay: float) -> None:
        await asyncio.sleep(delay)
        await self._flush()

    async def _flush(self) -> None:
        async with self._lock:
            pending, self._pending = self._pending, None
            if pending is not None:
                await self._write(pending)

    async def write(self, observations: tuple[Observation, ...]) -> None:
        """The final write: now, whatever the interval."""
        async with self._lock:
            self._pending = None
            await self._write(observations)

    async def _write(self, observations: tuple[Observation, ...]) -> None:
        self._last_write = self.clock()
        try:
            await self.sink.write(self.watch, observations, self.clock())
        except asyncio.CancelledError:
            raise
        except Exception:  # noqa: BLE001 - GitHub down: the next write says it all again
            log.exception("rollout %s: report not written", self.watch.key)

    async def close(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._timer
