"""Background runs of pull-request jobs: bounded concurrency, one run at a time per pull
request in arrival order, newer heads superseding older ones, duplicates dropped."""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict, deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from .change import PullRequest
from .flow import Outcome

log = logging.getLogger(__name__)

PrKey = tuple[str, str, int | str]               # (owner, repo, number or merge group ref)
JobKey = tuple[PrKey, str, str]                   # (PR, base SHA, head SHA)
Command = Callable[[], Awaitable[Outcome]]
Runner = Callable[[PullRequest, Callable[[], bool]], Awaitable[Outcome]]
FINAL_STATES = ("success", "failure", "error")


def job_key(pr: PullRequest) -> JobKey:
    return (pr.key, pr.base_sha, pr.head_sha)


@dataclass(slots=True)
class _Slot:
    pending: PullRequest | None = None
    running: PullRequest | None = None
    scheduled: bool = False
    commands: deque[tuple[str, Command]] = field(default_factory=deque)  # PR comment commands, in order
    busy: bool = False                                                   # a command is running


class Lru(OrderedDict[object, object]):
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
        self._slots: dict[PrKey, _Slot] = {}
        self._latest: Lru = Lru(remember)     # PR -> (updated_at, job key) of the newest event
        self._done: Lru = Lru(remember)       # job key -> final state
        self._queue: asyncio.Queue[PrKey] = asyncio.Queue()
        self._tasks: list[asyncio.Task[None]] = []
        self._idle = asyncio.Event()
        self._idle.set()
        self.outcomes: Lru = Lru(256)         # job key -> Outcome, for logs and tests
        self.command_outcomes: Lru = Lru(256)  # command label -> Outcome

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

    def submit(self, pr: PullRequest, *, force: bool = False) -> str:
        """``queued`` | ``duplicate`` (same PR, base and head already queued, running or done) |
        ``stale`` (an event newer than this one was seen) | ``busy`` (too many PRs waiting).

        ``force`` (``/rayservice-impact rerun``): analyse again even when this job already ran."""
        key = job_key(pr)
        slot = self._slots.get(pr.key)
        if not force:
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
        self._schedule(pr.key, slot)
        return "queued"

    def submit_command(self, pr_key: PrKey, label: str, command: Command) -> str:
        """Run ``command`` in the pull request's queue: after the job running now, before a queued
        analysis, never superseded (a command is not a newer head)."""
        slot = self._slots.get(pr_key)
        if slot is None:
            if len(self._slots) >= self._max_pending:
                return "busy"
            slot = self._slots[pr_key] = _Slot()
        slot.commands.append((label, command))
        self._schedule(pr_key, slot)
        return "queued"

    def _schedule(self, pr_key: PrKey, slot: _Slot) -> None:
        if not slot.scheduled and slot.running is None and not slot.busy:
            slot.scheduled = True
            self._idle.clear()
            self._queue.put_nowait(pr_key)

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
            pr = None
            if slot.commands:
                label, command = slot.commands.popleft()
                slot.busy = True
                try:
                    outcome = await command()
                    log.info("github %s: %s: %s", pr_key, label, outcome.state)
                except asyncio.CancelledError:
                    raise
                except Exception:  # noqa: BLE001 - one command's bug must not kill the worker
                    log.exception("github %s: %s failed", pr_key, label)
                    outcome = Outcome("failed")
                finally:
                    slot.busy = False
                self.command_outcomes.put(label, outcome)
            else:
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
            if slot.pending is not None or slot.commands:
                slot.scheduled = True
                self._queue.put_nowait(pr_key)
            else:
                del self._slots[pr_key]
            if not self._slots:
                self._idle.set()
