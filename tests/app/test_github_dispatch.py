"""The dispatcher: bounded concurrency, per-PR order, supersede, dedupe (no HTTP)."""

from __future__ import annotations

import asyncio

from app.github.change import PullRequest
from app.github.dispatch import Dispatcher
from app.github.flow import Outcome


def _pr(number: int = 1, head: str = "h1", at: str = "2024-01-01T00:00:01Z", base: str = "b") -> PullRequest:
    return PullRequest("o", "r", number, base, head, at)


def _run(body):
    return asyncio.run(body())


def test_dispatch_bounds_concurrency_across_pull_requests():
    active, peak, seen = 0, 0, []

    async def job(pr, is_current):
        nonlocal active, peak
        active += 1
        peak = max(peak, active)
        await asyncio.sleep(0.01)
        active -= 1
        seen.append(pr.number)
        return Outcome("success")

    async def body():
        d = Dispatcher(job, workers=3)
        await d.start()
        results = [d.submit(_pr(n)) for n in range(20)]
        await d.join()
        await d.stop()
        return results

    assert _run(body) == ["queued"] * 20
    assert peak == 3
    assert sorted(seen) == list(range(20))


def test_dispatch_runs_one_pull_request_in_order_and_supersedes_queued_heads():
    log = []

    async def job(pr, is_current):
        log.append(("start", pr.head_sha))
        await asyncio.sleep(0.02)
        log.append(("end", pr.head_sha, is_current()))
        return Outcome("success")

    async def body():
        d = Dispatcher(job, workers=4)
        await d.start()
        first = d.submit(_pr(head="h1", at="2024-01-01T00:00:01Z"))
        await asyncio.sleep(0.005)                                   # h1 is running
        rest = [d.submit(_pr(head="h2", at="2024-01-01T00:00:02Z")),  # queued ...
                d.submit(_pr(head="h3", at="2024-01-01T00:00:03Z"))]  # ... and superseded by h3
        await d.join()
        await d.stop()
        return [first, *rest]

    assert _run(body) == ["queued", "queued", "queued"]
    assert log == [("start", "h1"), ("end", "h1", False), ("start", "h3"), ("end", "h3", True)]


def test_dispatch_drops_duplicates_and_stale_events_but_retries_failures():
    runs = []

    async def job(pr, is_current):
        runs.append(pr.head_sha)
        return Outcome("failed", retryable=True) if len(runs) == 1 else Outcome("success")

    async def body():
        d = Dispatcher(job, workers=2)
        await d.start()
        answers = [d.submit(_pr(head="h1", at="2024-01-01T00:00:05Z"))]
        await d.join()
        answers.append(d.submit(_pr(head="h1", at="2024-01-01T00:00:05Z")))  # the first run failed: again
        await d.join()
        answers.append(d.submit(_pr(head="h1", at="2024-01-01T00:00:05Z")))  # done: duplicate
        answers.append(d.submit(_pr(head="h0", at="2024-01-01T00:00:01Z")))  # older than h1: stale
        answers.append(d.submit(_pr(head="h1", at="2024-01-01T00:00:06Z", base="b2")))  # new base
        await d.join()
        await d.stop()
        return answers

    assert _run(body) == ["queued", "queued", "duplicate", "stale", "queued"]
    assert runs == ["h1", "h1", "h1"]


def test_dispatch_survives_a_crashing_job_and_answers_busy_when_full():
    async def job(pr, is_current):
        if pr.number == 1:
            raise RuntimeError("bug")
        return Outcome("success")

    async def body():
        d = Dispatcher(job, workers=1, max_pending=2)
        answers = [d.submit(_pr(n)) for n in (1, 2, 3)]   # not started yet: nothing drains
        await d.start()
        await d.join()
        answers.append(d.submit(_pr(4)))
        await d.join()
        await d.stop()
        return answers, d.outcomes

    answers, outcomes = _run(body)
    assert answers == ["queued", "queued", "busy", "queued"]
    assert [o.state for o in outcomes.values()] == ["failed", "success", "success"]
