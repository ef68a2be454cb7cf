"""app/rollout/present.py: what the check run and the comment section say in each state."""

from __future__ import annotations

import pytest

from app.rollout.model import Observation, Phase, Target, Watch
from app.rollout.present import (
    SECTION_END,
    SECTION_START,
    check_output,
    conclusion_of,
    duration_text,
    extra_text,
    mismatches,
    replace_section,
    section,
)

T0 = 1_700_000_000.0
TARGET = Target("RayService", "prod", "fruit", "new-cluster", {"nvidia.com/gpu": 16})
JOB = Target("RayJob", "prod", "train", "new-cluster", {})
WATCH = Watch("github:o/r@abc", (TARGET, JOB), T0, 1800.0, {"github": {"owner": "o", "repo": "r"}})


def obs(target: Target, phase: Phase, **kw: object) -> Observation:
    return Observation(target, phase, kw.pop("summary", "") or phase.value, since=T0, **kw)  # type: ignore[arg-type]


@pytest.mark.parametrize(("seconds", "text"), [(0, "0 s"), (7, "7 s"), (552, "9 m 12 s"), (3725, "1 h 2 m"),
                                                (-3, "0 s")])
def test_duration_text(seconds: float, text: str) -> None:
    assert duration_text(seconds) == text


def test_extra_text() -> None:
    assert extra_text({}) == "none"
    assert extra_text({"nvidia.com/gpu": 16, "google.com/tpu": 0}) == "16 nvidia.com/gpu"


def test_in_progress_names_pending_pods_reasons_and_serve_apps() -> None:
    pending = obs(TARGET, Phase.PROGRESSING, summary="pending cluster fruit-raycluster-x2 not ready",
                  pending_pods=3, reasons=("0/4 nodes are available: 4 Insufficient nvidia.com/gpu.",),
                  serve_apps={"fruit": "DEPLOYING"})
    waiting = obs(JOB, Phase.WAITING)
    out = check_output(WATCH, (pending, waiting), T0 + 552)
    assert (out.status, out.conclusion) == ("in_progress", None)
    assert out.title == "rollout in progress: 0 of 2 done"
    assert "pending cluster fruit-raycluster-x2 not ready" in out.summary
    assert "3 pods Pending" in out.summary
    assert "reason: 0/4 nodes are available: 4 Insufficient nvidia.com/gpu." in out.summary
    assert "`fruit` DEPLOYING" in out.summary
    assert "| `RayService/prod/fruit` | new-cluster, 16 nvidia.com/gpu extra | — | progressing | 9 m 12 s |" \
        in out.summary
    assert "Ways out" not in out.summary


def test_done_as_predicted_is_success() -> None:
    done = obs(TARGET, Phase.DONE, observed_rollout="new-cluster", observed_extra={"nvidia.com/gpu": 16},
               updated=T0 + 552)
    job = obs(JOB, Phase.DONE, observed_rollout="new-cluster", updated=T0 + 60)
    out = check_output(WATCH, (done, job), T0 + 900)
    assert (out.status, out.conclusion) == ("completed", "success")
    assert ":white_check_mark: Rollout done (2 done) in 9 m 12 s." in out.summary  # to the last event
    assert out.title == "rollout done: 2 of 2, as predicted"
    assert "new cluster ready in 9 m 12 s; 16 nvidia.com/gpu extra at peak, as predicted" in out.summary
    assert "Everything went as predicted." in out.summary
    assert mismatches((done, job)) == ()


def test_done_but_different_says_so() -> None:
    done = obs(TARGET, Phase.DONE, observed_rollout="new-cluster", observed_extra={"nvidia.com/gpu": 24},
               updated=T0 + 100)
    out = check_output(WATCH, (done,), T0 + 100)
    assert out.conclusion == "success"
    assert out.title.endswith("differs from the prediction")
    assert "differs from the prediction (new-cluster, 16 nvidia.com/gpu extra)" in out.summary
    assert "What happened differs from the prediction for `RayService/prod/fruit`." in out.summary
    assert mismatches((done,)) == (done,)


def test_stuck_is_failure_with_ways_out() -> None:
    stuck = obs(TARGET, Phase.STUCK, summary="pending cluster not ready after 30 m", pending_pods=2,
                reasons=("0/4 nodes are available",), updated=T0 + 1800)
    job = obs(JOB, Phase.DONE, observed_rollout="new-cluster", updated=T0 + 60)
    out = check_output(WATCH, (stuck, job), T0 + 1801)
    assert (out.status, out.conclusion) == ("completed", "failure")
    assert out.title == "rollout failed: 1 of 2 stuck or failed"
    assert "free capacity" in out.summary
    assert "KubeRay does not cancel a new-cluster upgrade" in out.summary
    # an upgrade's pending cluster: KubeRay's initializing timeout does not cover it, and says so
    assert "`ray.io/initializing-timeout` does not apply here" in out.summary
    assert "terminal `InitializingTimeout`" not in out.summary
    assert "past the deadline (30 m 0 s)" in out.summary


def test_stuck_first_start_offers_the_initializing_timeout() -> None:
    new = Target("RayService", "prod", "fresh", "create", {"nvidia.com/gpu": 8})
    stuck = obs(new, Phase.STUCK, summary="not ready", updated=T0 + 1800)
    text = check_output(WATCH, (stuck,), T0 + 1800).summary
    assert "set the `ray.io/initializing-timeout` annotation" in text
    assert "terminal `InitializingTimeout` state" in text
    assert "does not apply here" not in text


def test_failed_is_failure_without_ways_out() -> None:
    failed = obs(TARGET, Phase.FAILED, summary="validation failed", reasons=("spec.x invalid",))
    status, conclusion = conclusion_of((failed,))
    assert (status, conclusion) == ("completed", "failure")
    assert "Ways out" not in check_output(WATCH, (failed,), T0).summary


def test_no_observation_yet_is_in_progress() -> None:
    assert conclusion_of(()) == ("in_progress", None)


def test_reasons_capped_and_pipes_escaped() -> None:
    many = obs(Target("RayCluster", "a|b", "c", "cluster-in-place"), Phase.PROGRESSING,
               reasons=tuple(f"r{i}" for i in range(8)))
    text = check_output(WATCH, (many,), T0).summary
    assert "reason: r4" in text and "reason: r5" not in text
    assert "… and 3 more reasons" in text
    assert "`RayCluster/a\\|b/c`" in text


def test_replace_section_keeps_the_rest_byte_identical() -> None:
    comment = "<!-- rayservice-impact -->\nreport\r\n\n<sub>footer</sub>\n"
    first = replace_section(comment, section(WATCH, (obs(TARGET, Phase.WAITING),), T0))
    assert first.startswith(comment)
    assert first.count(SECTION_START) == 1
    second = replace_section(first + "tail\n", section(WATCH, (obs(TARGET, Phase.PROGRESSING),), T0 + 5))
    assert second.startswith(comment)
    assert second.endswith(SECTION_END + "\n" + "tail\n")
    assert second.count(SECTION_START) == 1 and second.count(SECTION_END) == 1
    assert "| progressing |" in second and "| waiting |" not in second


@pytest.mark.parametrize(("text", "minutes"), [
    ("rollout:\n  deadlineMinutes: 45\n", 45.0),
    ("comment: on-hold\nrollout:\n  deadlineMinutes: 1440\n", 1440.0),
    ("rollout:\n  deadlineMinutes: 0\n", None),
    ("rollout:\n  deadlineMinutes: '45'\n", None),
    ("rollout:\n  deadlineMinutes: true\n", None),
    ("rollout: 45\n", None),
    ("comment: on-change\n", None),
])
def test_repo_config_rollout_deadline(text: str, minutes: float | None) -> None:
    from app.github.repo_config import parse_config

    config = parse_config(text)
    assert config.rollout_deadline_minutes == minutes
    assert config.problem == ""
