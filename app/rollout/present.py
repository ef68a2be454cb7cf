"""What the rollout report says: observations in, check-run output and comment section out.

Pure rendering (no I/O, no clock: ``now`` is passed in). One deployed change (a :class:`Watch`)
is shown two ways, from the same tuple of :class:`Observation` values:

* the ``rayservice-impact/rollout`` check run on the deployed commit: ``in_progress`` while any
  object is not final, then ``completed`` with ``success`` (every object done) or ``failure``
  (any object stuck past the deadline, or failed);
* a ``## Rollout`` section of the sticky comment, between two hidden markers so that it can be
  replaced without touching the rest of the comment (:func:`replace_section`).

Both carry one table (object, predicted rollout and extra accelerators, observed ones, phase,
time so far), the reasons behind a pending or failed object, the ways out of a stuck one, and
whether what happened is what the analysis predicted (docs/rollout.md).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from diffing.observe import duration

from .model import Observation, Phase, Watch

CHECK_NAME = "rayservice-impact/rollout"
SECTION_START = "<!-- rayservice-impact:rollout -->"
SECTION_END = "<!-- rayservice-impact:rollout-end -->"
HEADING = "## Rollout"
MAX_REASONS = 5       # per object: the rest are counted, not shown
MAX_REASON_CHARS = 300

# Ways out of a rollout stuck past the deadline (docs/rollout.md).
FREE_CAPACITY = ("free capacity: the pending pods wait for nodes (see the reasons above); add nodes or scale "
                 "other workloads down and the operator carries on by itself")
# What a revert does mid-upgrade (docs/semantics/rayservice.md, the rows on reverting mid-upgrade):
# a NewCluster upgrade is not cancelled, a further cluster is built from the reverted spec and the
# pending one dropped after the deletion delay; an incremental upgrade rolls back.
REVERT = "revert the change"
REVERT_NEW_CLUSTER = ("revert the change, knowing that KubeRay does not cancel a new-cluster upgrade: it "
                      "builds yet another cluster from the reverted spec (which needs the same room) and "
                      "deletes the pending one after its deletion delay; the old cluster keeps serving")
REVERT_INCREMENTAL = ("revert the change: an incremental upgrade rolls back, traffic returns to the active "
                      "cluster step by step and the pending one is scaled to zero and dropped")
# KubeRay's ray.io/initializing-timeout only covers a RayService's first start or a resume from
# suspend, and ends in the terminal InitializingTimeout state (clusters deleted; the RayService
# must be recreated): docs/semantics/rayservice.md, the annotation's row.
TIMEOUT_FIRST_START = ("set the `ray.io/initializing-timeout` annotation on the RayService (e.g. `30m`): "
                       "past it a RayService still initializing stops in the terminal "
                       "`InitializingTimeout` state, its clusters deleted, and must be deleted and recreated")
TIMEOUT_NOT_FOR_UPGRADES = ("`ray.io/initializing-timeout` does not apply here: KubeRay uses it only for "
                            "a RayService's first start or a resume from suspend, never for an upgrade's "
                            "pending cluster")
FIRST_START = frozenset({"create", "resume"})


def ways_out(observations: Iterable[Observation]) -> tuple[str, ...]:
    """What can be done about the stuck objects among ``observations``."""
    stuck = [o for o in observations if o.phase is Phase.STUCK]
    if not stuck:
        return ()
    rollouts = {o.target.predicted_rollout for o in stuck}
    out = [FREE_CAPACITY]
    if "new-cluster" in rollouts:
        out.append(REVERT_NEW_CLUSTER)
    if "incremental" in rollouts:
        out.append(REVERT_INCREMENTAL)
    if rollouts - {"new-cluster", "incremental"}:
        out.append(REVERT)
    services = [o for o in stuck if o.target.kind == "RayService"]
    if any(o.target.predicted_rollout in FIRST_START for o in services):
        out.append(TIMEOUT_FIRST_START)
    if any(o.target.predicted_rollout not in FIRST_START for o in services):
        out.append(TIMEOUT_NOT_FOR_UPGRADES)
    return tuple(out)


@dataclass(frozen=True, slots=True)
class CheckOutput:
    """The check run as the Checks API takes it."""

    status: str               # "in_progress" | "completed"
    conclusion: str | None    # None while in progress; "success" | "failure"
    title: str
    summary: str


def duration_text(seconds: float) -> str:
    """``552`` -> ``"9 m 12 s"``; ``3725`` -> ``"1 h 2 m"``; ``7`` -> ``"7 s"`` (the same words as the
    observation's summary)."""
    return duration(seconds)


def extra_text(extra: Mapping[str, int]) -> str:
    """``{"nvidia.com/gpu": 16}`` -> ``"16 nvidia.com/gpu"``; nothing -> ``"none"``."""
    parts = [f"{amount} {name}" for name, amount in sorted(extra.items()) if amount]
    return ", ".join(parts) if parts else "none"


def conclusion_of(observations: Iterable[Observation]) -> tuple[str, str | None]:
    """(status, conclusion): in progress while any object is not final; else failure when any is
    stuck or failed, success when every one is done."""
    obs = tuple(observations)
    if not obs or not all(o.phase.final for o in obs):
        return "in_progress", None
    if any(o.phase in (Phase.STUCK, Phase.FAILED) for o in obs):
        return "completed", "failure"
    return "completed", "success"


def is_final(observations: Iterable[Observation]) -> bool:
    return conclusion_of(observations)[0] == "completed"


def mismatches(observations: Iterable[Observation]) -> tuple[Observation, ...]:
    """The final observations whose rollout or extra accelerators differ from the prediction."""
    return tuple(o for o in observations if o.phase.final and o.observed_rollout is not None
                 and not o.as_predicted)


def elapsed(obs: Observation, watch: Watch, now: float) -> float:
    """Time so far: from the watch's start to ``now``, or to the newest event once final."""
    start = obs.since or watch.started
    end = obs.updated if obs.phase.final and obs.updated else now
    return max(0.0, end - start)


def _rollout_text(rollout: str | None) -> str:
    return rollout if rollout else "—"


def _done_line(obs: Observation, watch: Watch, now: float) -> str:
    took = duration_text(elapsed(obs, watch, now))
    what = "new cluster ready" if obs.observed_rollout == "new-cluster" else "done"
    extra = sum(obs.observed_extra.values())
    peak = (f"{extra_text(obs.observed_extra)} extra at peak" if extra else "no extra accelerators")
    verdict = "as predicted" if obs.as_predicted else (
        f"differs from the prediction ({_rollout_text(obs.target.predicted_rollout)}, "
        f"{extra_text(obs.target.predicted_extra)} extra)")
    return f"{what} in {took}; {peak}, {verdict}"


def _detail_lines(obs: Observation, watch: Watch, now: float) -> list[str]:
    lines: list[str] = []
    if obs.phase is Phase.DONE:
        lines.append(_done_line(obs, watch, now))
    elif obs.summary:
        lines.append(obs.summary)
    if obs.pending_pods:
        lines.append(f"{obs.pending_pods} pod{'s' if obs.pending_pods != 1 else ''} Pending")
    if obs.serve_apps:
        apps = ", ".join(f"`{name}` {status}" for name, status in sorted(obs.serve_apps.items()))
        lines.append(f"Serve applications: {apps}")
    for reason in obs.reasons[:MAX_REASONS]:
        text = " ".join(reason.split())
        lines.append(f"reason: {text[:MAX_REASON_CHARS]}")
    if len(obs.reasons) > MAX_REASONS:
        lines.append(f"… and {len(obs.reasons) - MAX_REASONS} more reasons")
    return lines


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def table(watch: Watch, observations: tuple[Observation, ...], now: float) -> str:
    rows = ["| object | predicted | observed | phase | time so far |", "|---|---|---|---|---|"]
    for o in observations:
        t = o.target
        predicted = f"{t.predicted_rollout}, {extra_text(t.predicted_extra)} extra"
        observed = (f"{_rollout_text(o.observed_rollout)}, {extra_text(o.observed_extra)} extra"
                    if o.observed_rollout or o.observed_extra else "—")
        rows.append(f"| `{_cell(t.key)}` | {_cell(predicted)} | {_cell(observed)} | {o.phase.value} | "
                    f"{duration_text(elapsed(o, watch, now))} |")
    return "\n".join(rows)


def body(watch: Watch, observations: tuple[Observation, ...], now: float) -> str:
    """The markdown shared by the check run's summary and the comment section (no heading)."""
    status, conclusion = conclusion_of(observations)
    parts = [headline(watch, observations, now), "", table(watch, observations, now)]
    for o in observations:
        lines = _detail_lines(o, watch, now)
        if lines:
            parts += ["", f"**{o.target.key}** ({o.phase.value})", *[f"- {line}" for line in lines]]
    way = ways_out(observations)
    if way:
        parts += ["", f"Still progressing past the deadline ({duration_text(watch.deadline_seconds)}). "
                  "Ways out:", *[f"- {w}" for w in way]]
    if status == "completed":
        differ = mismatches(observations)
        if differ:
            names = ", ".join(f"`{o.target.key}`" for o in differ)
            parts += ["", f"What happened differs from the prediction for {names}."]
        elif conclusion == "success":
            parts += ["", "Everything went as predicted."]
    return "\n".join(parts)


def headline(watch: Watch, observations: tuple[Observation, ...], now: float) -> str:
    status, conclusion = conclusion_of(observations)
    counts: dict[Phase, int] = {}
    for o in observations:
        counts[o.phase] = counts.get(o.phase, 0) + 1
    said = ", ".join(f"{n} {phase.value}" for phase, n in counts.items())
    took = duration_text(max(0.0, now - watch.started))
    if status == "completed" and observations:
        took = duration_text(max(elapsed(o, watch, now) for o in observations))
    if status == "in_progress":
        return f":hourglass: Rollout in progress ({said}), {took} so far."
    if conclusion == "success":
        return f":white_check_mark: Rollout done ({said}) in {took}."
    return f":x: Rollout did not finish ({said}) after {took}."


def check_output(watch: Watch, observations: tuple[Observation, ...], now: float) -> CheckOutput:
    status, conclusion = conclusion_of(observations)
    done = sum(o.phase is Phase.DONE for o in observations)
    if status == "in_progress":
        title = f"rollout in progress: {done} of {len(observations)} done"
    elif conclusion == "success":
        differ = mismatches(observations)
        title = f"rollout done: {done} of {len(observations)}" + (
            ", as predicted" if not differ else ", differs from the prediction")
    else:
        bad = sum(o.phase in (Phase.STUCK, Phase.FAILED) for o in observations)
        title = f"rollout failed: {bad} of {len(observations)} stuck or failed"
    return CheckOutput(status, conclusion, title[:255], body(watch, observations, now)[:65000])


def section(watch: Watch, observations: tuple[Observation, ...], now: float) -> str:
    """The comment section, markers included."""
    return f"{SECTION_START}\n{HEADING}\n\n{body(watch, observations, now)}\n{SECTION_END}"


def replace_section(comment: str, new_section: str) -> str:
    """``comment`` with its rollout section replaced by ``new_section`` (everything else kept
    byte for byte), or with ``new_section`` appended after a blank line when it has none."""
    start = comment.find(SECTION_START)
    end = comment.find(SECTION_END, start + 1) if start >= 0 else -1
    if start >= 0 and end >= 0:
        return comment[:start] + new_section + comment[end + len(SECTION_END):]
    sep = "" if comment.endswith("\n\n") else "\n" if comment.endswith("\n") else "\n\n"
    return comment + sep + new_section + "\n"
