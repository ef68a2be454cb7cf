"""Background runs of pull-request jobs: bounded concurrency, one run at a time per pull
request in arrival order, newer heads superseding older ones, duplicates dropped."""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from .change import PullRequest
from .flow import Outcome

log = logging.getLogger(__name__)

JobKey = tuple[tuple[str, str, int], str, str]   # (PR, base SHA, head SHA)
Runner = Callable[[PullRequest, Callable[[], bool]], Awaitable[Outcome]]
FINAL_STATES = ("success", "failure", "error")


def job_key(pr: PullRequest) -> JobKey:
    return (pr.key, pr.base_sha, pr.head_sha)


@dataclass(slots=True)
class _Slot:
    pending: PullRequest | None = None
    running: PullRequest | None = None
    scheduled: bool = False


class _Lru(OrderedDict[object, object]):
    def __init__(self, size: int) -> None:
        super().__init__()
        self.size = size

    def put(self, key: object, value: object) -> None:
        self[key] = value
        self.move_to_end(key)
        while len(self) > self.size:
            self.popitem(last=False)


class Dispatcher:
    """``submit`` answers at once; ``workers`` tasks run the jobs."""

    def __init__(self, run: Runner, *, workers: int = 4, max_pending: int = 1000,
                 remember: int = 10_000) -> None:
        self._run, self._workers_n, self._max_pending = run, workers, max_pending
        self._slots: dict[tuple[str, str, int], _Slot] = {}
        self._latest: _Lru = _Lru(remember)     # PR -> (updated_at, job key) of the newest event
        self._done: _Lru = _Lru(remember)       # job key -> final state
        self._queue: asyncio.Queue[tuple[str, str, int]] = asyncio.Queue()
        self._tasks: list[asyncio.Task[None]] = []
        self._idle = asyncio.Event()
        self._idle.set()
        self.outcomes: _Lru = _Lru(256)         # job key -> Outcome, for logs and tests

    async def start(self) -> None:
        self._tasks = [asyncio.create_task(self._worker(), name=f"github-worker-{i}")
                       for i in range(self._workers_n)]

    async def stop(self, grace: float = 10.0) -> None:
        """Let running jobs finish for up to ``grace`` seconds, then cancel everything."""
        try:
            await asyncio.wait_for(self.join(), grace)
        except TimeoutError:
            log.warning("github: stopping with %d pull request(s) unfinished", len(self._slots))
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks = []

    async def join(self) -> None:
        """Wait until no job is queued or running."""
        await self._idle.wait()

    def submit(self, pr: PullRequest) -> str:
        """``queued`` | ``duplicate`` (same PR, base and head already queued, running or done) |
        ``stale`` (an event newer than this one was seen) | ``busy`` (too many PRs waiting)."""
        key = job_key(pr)
        slot = self._slots.get(pr.key)
        if key in self._done or (slot and key in {job_key(p) for p in (slot.pending, slot.running) if p}):
            return "duplicate"
        latest = self._latest.get(pr.key)
        if latest is not None and pr.updated_at and latest[0] > pr.updated_at:  # type: ignore[index]
            return "stale"
        if slot is None:
            if len(self._slots) >= self._max_pending:
                return "busy"
            slot = self._slots[pr.key] = _Slot()
        if slot.pending is not None:
            log.info("github %s: head %s supersedes queued %s", pr.full_name, pr.head_sha[:7],
                     slot.pending.head_sha[:7])
        slot.pending = pr
        self._latest.put(pr.key, (pr.updated_at, key))
        if not slot.scheduled and slot.running is None:
            slot.scheduled = True
            self._idle.clear()
            self._queue.put_nowait(pr.key)
        return "queued"

    def forget(self, pr: PullRequest) -> None:
        """A closed PR: drop its queued job (a running one finishes)."""
        slot = self._slots.get(pr.key)
        if slot is not None:
            slot.pending = None

    def is_current(self, pr: PullRequest) -> bool:
        latest = self._latest.get(pr.key)
        return latest is None or latest[1] == job_key(pr)  # type: ignore[index]

    async def _worker(self) -> None:
        while True:
            pr_key = await self._queue.get()
            slot = self._slots[pr_key]
            slot.scheduled = False
            pr, slot.pending = slot.pending, None
            if pr is not None:
                slot.running = pr
                try:
                    outcome = await self._run(pr, lambda pr=pr: self.is_current(pr))  # type: ignore[misc]
                except asyncio.CancelledError:
                    raise
                except Exception:  # noqa: BLE001 - one job's bug must not kill the worker
                    log.exception("github %s: job failed", pr.full_name)
                    outcome = Outcome("failed")
                finally:
                    slot.running = None
                self.outcomes.put(job_key(pr), outcome)
                if outcome.state in FINAL_STATES and not outcome.retryable:
                    self._done.put(job_key(pr), outcome.state)
                log.info("github %s head %s: %s (comment %s)", pr.full_name, pr.head_sha[:7],
                         outcome.state, outcome.comment)
            if slot.pending is not None:
                slot.scheduled = True
                self._queue.put_nowait(pr_key)
            else:
                del self._slots[pr_key]
            if not self._slots:
                self._idle.set()
