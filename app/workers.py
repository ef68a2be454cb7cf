"""The bounded analysis pool: CPU-bound work off the event loop, with a time budget.

``diffing.analyze`` is pure Python and CPU-bound, so by default it runs in worker
*processes* (real parallelism on a multi-core machine; threads would share one GIL with the
event loop). Admission is bounded: at most ``workers + queue`` jobs are in flight; one more
is refused at once (503) instead of piling up. A job that outlives its time budget is
answered 503 with ``Retry-After``; its slot stays taken until the worker really finishes, so
the bound holds even for runaway inputs.

Heavy jobs never take the last worker: a request over ``HEAVY_INPUT_BYTES`` of manifests, and
every analysis of the GitHub flow (background work), wait for one of ``workers - 1`` heavy slots.
Two clients asking for 14 MB reports (1.1 s of analysis each) otherwise held both workers of a
2-worker service and small requests waited behind them (valid p99 x38 in ``bench/adversarial.py``).

A job is a plain dict and its result is a plain dict with the report already encoded as
JSON bytes (or markdown text): cheap to pickle, and the event loop does no encoding. Errors
are turned into answers inside the worker by :func:`app.errors.error_for`, because core
exceptions do not survive pickling with their fields.

A GitHub webhook job (one pull request: read, render, analyse, publish) has a deadline of its
own over all of that (:func:`with_deadline`, under which the webhook's dispatcher runs every
job): each step has its bounds, but their sum over many roots and retries had none, and a job
that ran on left its commit status pending for good.
"""

from __future__ import annotations

import asyncio
import concurrent.futures as cf
import json
import math
import multiprocessing
import os
import time
import traceback
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from typing import Any, Literal

import diffing
from diffing.operator.judge import with_upgrade_in
from diffing.versions import DEFAULT

from .errors import ServiceUnavailable, error_body, error_for
from .managed import texts_from_managed_resources

WARMUP = """\
apiVersion: ray.io/v1
kind: RayService
metadata: {name: warm-up}
spec:
  rayClusterConfig:
    headGroupSpec:
      rayStartParams: {}
      template: {spec: {containers: [{name: ray-head, image: "rayproject/ray:2.52.0"}]}}
"""

# Per request text: nodes after alias expansion (all documents together) and nesting. A real
# 645 kB RayService with 200 worker groups has 19 000 nodes; 500 000 keeps a 1 MB alias bomb
# from growing into hundreds of MB in a worker.
_LIMIT_NODES, _LIMIT_DEPTH = 500_000, 100
# An answer is never larger than this: past it the request is refused (422), not streamed.
MAX_ANSWER_BYTES = 16 * 1024 * 1024
# A request with more manifest text than this is heavy (the 5 KB pair takes 10 ms; a 645 KB
# RayService of 200 worker groups about 0.3 s): it waits for a heavy slot.
HEAVY_INPUT_BYTES = 256 * 1024
# One GitHub pull-request job, end to end. Its steps are bounded one by one (a render 60 s, the
# analysis 10 s, GitHub's retries 120 s); a pull request rendered in under a minute is far below.
JOB_DEADLINE_SECONDS = 300.0


def encode_json(value: Any) -> bytes:
    try:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate somewhere: fall back to \u escapes
        return json.dumps(value, separators=(",", ":")).encode("ascii")


def run_job(job: dict[str, Any]) -> dict[str, Any]:
    """Analyse one request inside a worker; never raises for bad input."""
    started = time.perf_counter()
    try:
        limits = diffing.Limits(max_bytes=job["max_bytes"], max_nodes=_LIMIT_NODES, max_depth=_LIMIT_DEPTH)
        if "managed" in job:
            job = {**job, **dict(zip(("before", "after"), texts_from_managed_resources(job["managed"]),
                                     strict=True))}
        report = diffing.analyze(job["before"], job["after"], job["kuberay_version"], job["headroom"],
                                 job["policy"], sources=job["sources"], limits=limits,
                                 before_is_live=job.get("before_is_live", False), live=job.get("live"))
        report = with_upgrade_in(report, job["before"], job["after"], files=job.get("operator_files"),
                                 cluster=job.get("cluster"),
                                 cluster_unread=job.get("cluster_unread", ""), policy=job["policy"],
                                 limits=limits)
    except Exception as exc:  # noqa: BLE001 - mapped to an answer; 500 only for a core bug
        status, body, _ = error_for(exc)
        out: dict[str, Any] = {"status": status, "body": encode_json(body), "media_type": "application/json",
                               "error": body["error"]["code"]}
        if status >= 500:
            out["exception"] = traceback.format_exc()[-4000:]
    else:
        if job["format"] == "markdown":
            body_bytes = diffing.render_markdown(report).encode("utf-8", "replace")
            media_type = "text/markdown; charset=utf-8"
        else:
            body_bytes, media_type = encode_json(report.to_dict()), "application/json"
        if len(body_bytes) > job.get("max_answer_bytes", MAX_ANSWER_BYTES):
            limit = job.get("max_answer_bytes", MAX_ANSWER_BYTES)
            body = error_body("answer-too-large", f"the report would be {len(body_bytes)} bytes, over the "
                                                  f"{limit}-byte limit: split the change into smaller "
                                                  "requests")
            return {"status": 422, "body": encode_json(body), "media_type": "application/json",
                    "error": "answer-too-large", "seconds": time.perf_counter() - started}
        out = {"status": 200, "body": body_bytes, "media_type": media_type, "decision": report.decision,
               "rollouts": [(r.kind, r.rollout, r.decision) for r in report.resources],
               "accelerators": _accelerators(report)}
    out["seconds"] = time.perf_counter() - started
    return out


def input_bytes(job: dict[str, Any]) -> int:
    """The manifest text a job carries. An Argo CD body that is still a body (its conversion to
    texts failed already: the worker only answers the error) counts as nothing."""
    return len(job.get("before") or "") + len(job.get("after") or "")


def _accelerators(report: diffing.Report) -> dict[str, int]:
    """Extra accelerators (integer counts, not cpu/memory) the rollouts need, summed."""
    total: dict[str, int] = {}
    for r in report.resources:
        for name, amount in r.capacity.extra.items():
            if name not in ("cpu", "memory") and isinstance(amount, int) and not isinstance(amount, bool):
                total[name] = total.get(name, 0) + amount
    return total


def _warm_up() -> int:
    run_job({"before": "", "after": WARMUP, "kuberay_version": DEFAULT, "headroom": None, "policy": None,
             "sources": ("before", "after"), "max_bytes": 1 << 20, "format": "json"})
    run_job({"before": "", "after": WARMUP, "kuberay_version": "1.6.0", "headroom": None, "policy": None,
             "sources": ("before", "after"), "max_bytes": 1 << 20, "format": "markdown"})
    return os.getpid()


class AnalysisPool:
    """``workers`` executors behind ``workers + queue`` admission slots."""

    def __init__(self, workers: int, queue: int, kind: Literal["process", "thread"] = "process") -> None:
        self.workers, self.capacity, self.kind = workers, workers + queue, kind
        self.in_flight = 0
        self.heavy_slots = max(1, workers - 1)
        self._heavy = asyncio.Semaphore(self.heavy_slots)
        self.recycled = 0  # worker pools killed because a job outran its budget
        self.is_ready = False
        self._executor: cf.Executor | None = None
        self._restarting: asyncio.Task[None] | None = None

    def _new_executor(self) -> cf.Executor:
        if self.kind == "thread":
            return cf.ThreadPoolExecutor(self.workers, thread_name_prefix="analysis")
        # forkserver: no fork of a threaded event-loop process; workers import the core once.
        ctx = multiprocessing.get_context("forkserver")
        ctx.set_forkserver_preload(["app.workers"])  # effective when the fork server first starts
        return cf.ProcessPoolExecutor(self.workers, mp_context=ctx)

    async def start(self) -> None:
        """Create the executor and run a tiny analysis on every worker; then ready."""
        self.is_ready = False
        self._executor = self._new_executor()
        loop = asyncio.get_running_loop()
        await asyncio.gather(*(loop.run_in_executor(self._executor, _warm_up) for _ in range(self.workers)))
        self.is_ready = True

    def close(self) -> None:
        self.is_ready = False
        executor, self._executor = self._executor, None
        if executor is None:
            return
        # shutdown() drops the executor's process table: take it first. A runaway job must not
        # keep its process alive after shutdown (Python < 3.14 has no terminate_workers()).
        processes = list((getattr(executor, "_processes", None) or {}).values())
        executor.shutdown(wait=False, cancel_futures=True)
        deadline = time.monotonic() + 2.0
        for proc in processes:
            proc.join(max(0.0, deadline - time.monotonic()))
            if proc.is_alive():
                proc.terminate()

    async def run(self, job: dict[str, Any], timeout: float) -> dict[str, Any]:
        """The worker's result, or ServiceUnavailable (saturated, over budget, not ready)."""
        result: dict[str, Any] = await self.call(run_job, job, timeout=timeout,
                                                 heavy=input_bytes(job) > HEAVY_INPUT_BYTES)
        return result

    async def call(self, fn: Any, *args: Any, timeout: float, heavy: bool = True) -> Any:
        """``fn(*args)`` in a worker with the same admission, budget and recycling as :meth:`run`
        (``fn`` and its arguments must pickle). The GitHub flow's analyses go through here, so a
        hostile pull request cannot keep a thread busy for minutes and time out other PRs; they are
        heavy (the default): they wait up to ``timeout`` for a heavy slot, then have their budget."""
        if self._executor is None or not self.is_ready:
            raise ServiceUnavailable("the analysis pool is starting", code="not-ready", retry_after=1)
        if self.in_flight >= self.capacity:
            raise ServiceUnavailable(f"all {self.capacity} analysis slots are busy; retry shortly",
                                     code="overloaded", retry_after=1)
        self.in_flight += 1
        lane = self._heavy if heavy and self.heavy_slots < self.workers else None
        if lane is not None:
            try:
                await asyncio.wait_for(lane.acquire(), timeout)
            except TimeoutError:
                self.in_flight -= 1
                raise ServiceUnavailable(f"all {self.heavy_slots} slots for large analyses stayed busy for "
                                         f"{timeout:g} s; retry shortly", code="overloaded",
                                         retry_after=math.ceil(timeout)) from None
            except BaseException:  # cancelled while waiting: the slot was never taken
                self.in_flight -= 1
                raise
        try:
            if self._executor is None:  # recycled while this job waited for its slot
                raise RuntimeError("the executor is gone")
            future = asyncio.get_running_loop().run_in_executor(self._executor, fn, *args)
        except RuntimeError as exc:
            self.in_flight -= 1
            if lane is not None:
                lane.release()
            self._broken(exc)
            raise ServiceUnavailable("the analysis pool is restarting", code="not-ready",
                                     retry_after=1) from None
        future.add_done_callback(lambda done: self._release(done, lane))
        try:
            return await asyncio.wait_for(asyncio.shield(future), timeout)
        except TimeoutError:
            self._recycle()
            raise ServiceUnavailable(f"the analysis took longer than its {timeout:g} s budget",
                                     code="analysis-timeout", retry_after=math.ceil(timeout)) from None
        except cf.BrokenExecutor as exc:
            self._broken(exc)
            raise ServiceUnavailable("an analysis worker died; the pool is restarting",
                                     code="not-ready", retry_after=1) from None

    def _recycle(self) -> None:
        """A job past its budget would hold its worker until it ends by itself (minutes, for a
        hostile input): kill the worker processes now and start fresh ones. Jobs running beside
        it on the same pool are answered 503 (worker died) and can be retried at once. Threads
        cannot be killed: the thread executor keeps its slot taken until the job ends."""
        if self.kind != "process" or self._executor is None or not self.is_ready:
            return
        executor, self._executor = self._executor, None
        self.is_ready = False
        for proc in list((getattr(executor, "_processes", None) or {}).values()):
            if proc.is_alive():
                proc.kill()
        executor.shutdown(wait=False, cancel_futures=True)
        self.recycled += 1
        self._restarting = asyncio.get_running_loop().create_task(self.start())

    def _release(self, future: asyncio.Future[Any], lane: asyncio.Semaphore | None = None) -> None:
        self.in_flight -= 1
        if lane is not None:
            lane.release()
        if not future.cancelled():
            future.exception()  # mark retrieved: a timed-out job's failure is not an error to log

    def _broken(self, exc: BaseException) -> None:
        if isinstance(exc, cf.BrokenExecutor) and self.is_ready:
            self.close()
            self._restarting = asyncio.get_running_loop().create_task(self.start())


class ResultCache:
    """A small LRU of worker results keyed by a digest of the request (route, format, body).

    Identical requests are common in practice (webhook redeliveries, every Argo CD sync of an
    unchanged app), and the analysis is a pure function of its input. Bounded in entries and
    in bytes of answers held (one answer takes at most an eighth of the byte budget).
    """

    def __init__(self, entries: int, max_bytes: int = 64 * 1024 * 1024) -> None:
        self.entries, self.max_bytes = entries, max_bytes
        self.bytes = 0
        self._items: OrderedDict[bytes, dict[str, Any]] = OrderedDict()

    def get(self, key: bytes) -> dict[str, Any] | None:
        item = self._items.get(key)
        if item is not None:
            self._items.move_to_end(key)
        return item

    def put(self, key: bytes, value: dict[str, Any]) -> None:
        size = len(value["body"])
        if self.entries <= 0 or value["status"] >= 500 or size > self.max_bytes // 8:
            return
        old = self._items.pop(key, None)
        if old is not None:
            self.bytes -= len(old["body"])
        self._items[key] = value
        self.bytes += size
        while len(self._items) > self.entries or self.bytes > self.max_bytes:
            _, dropped = self._items.popitem(last=False)
            self.bytes -= len(dropped["body"])


JobRunner = Callable[[Any, Callable[[], bool]], Awaitable[Any]]


def with_deadline(run: JobRunner, seconds: float,
                  on_timeout: Callable[[Any, Callable[[], bool]], Awaitable[Any]]) -> JobRunner:
    """``run(pr, is_current)`` cancelled after ``seconds``, then ``on_timeout(pr, is_current)``'s
    outcome in its place. A TimeoutError the job raises itself is not the deadline: it propagates."""

    async def bounded(pr: Any, is_current: Callable[[], bool]) -> Any:
        try:
            async with asyncio.timeout(seconds) as deadline:
                return await run(pr, is_current)
        except TimeoutError:
            if not deadline.expired():
                raise
        return await on_timeout(pr, is_current)

    return bounded


def job_deadline(settings: Any) -> float:
    """RAYSERVICE_IMPACT_GITHUB_JOB_DEADLINE_SECONDS once Settings declares it, else the default."""
    value = getattr(settings, "github_job_deadline_seconds", None)
    return float(value) if value else JOB_DEADLINE_SECONDS
