"""Amounts callers give (headroom, thresholds) are checked (issue 9, point 8).

A negative, non-numeric or absurd value is an input error naming the value: ``PolicyError``
from the core, exit 2 from the CLI (``--headroom``), 422 from the HTTP API (the shell maps
every ``DiffingError`` there), never an internal error.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import pytest

import diffing
from app import cli
from app.errors import error_for
from tests.builders import dump, edited, sample, set_images

LLM = sample("llm-serve")
BUMP = edited(LLM, lambda o: set_images(o, "rayproject/ray-llm:2.53.0-py311-cu128"))

BAD = [
    ("nvidia.com/gpu", -1, "negative"),
    ("nvidia.com/gpu", "-1", "negative"),
    ("cpu", "-500m", "negative"),
    ("nvidia.com/gpu", "lots", "not an amount"),
    ("nvidia.com/gpu", "", "not an amount"),
    ("nvidia.com/gpu", True, "not an amount"),
    ("nvidia.com/gpu", None, "not an amount"),
    ("nvidia.com/gpu", [8], "not an amount"),
    ("nvidia.com/gpu", float("nan"), "not"),
    ("nvidia.com/gpu", float("inf"), "not"),
    ("nvidia.com/gpu", 0.5, "whole number"),
    ("google.com/tpu", "1500m", "whole number"),
    ("memory", "1e400", "out of range|not a plausible amount"),
    ("cpu", "1e999999999", "not a plausible amount"),
    ("cpu", 10**19, "out of range|not a plausible amount"),
]


@pytest.mark.parametrize(("name", "value", "message"), BAD, ids=[f"{n}={v!r}" for n, v, _ in BAD])
def test_bad_headroom_is_a_policy_error_naming_the_value(name: str, value: Any, message: str) -> None:
    with pytest.raises(diffing.PolicyError, match=message) as exc:
        diffing.analyze(dump(LLM), dump(BUMP), headroom={name: value})
    assert f"headroom.{name}" in str(exc.value)
    assert repr(value) in str(exc.value) or str(value) in str(exc.value)


@pytest.mark.parametrize(("name", "value", "message"), BAD[:7], ids=[f"{n}={v!r}" for n, v, _ in BAD[:7]])
def test_bad_threshold_is_a_policy_error(name: str, value: Any, message: str) -> None:
    with pytest.raises(diffing.PolicyError, match=message):
        diffing.analyze("", dump(LLM), policy={"thresholds": {name: value}})


GOOD = [({"nvidia.com/gpu": 0}, "hold"), ({"nvidia.com/gpu": "4"}, "approve"), ({"nvidia.com/gpu": 4.0},
    "approve"),
        ({"cpu": "1.5", "memory": "64Gi", "nvidia.com/gpu": 8}, "approve")]


@pytest.mark.parametrize(("headroom", "decision"), GOOD)
def test_good_headroom_is_used(headroom: dict[str, Any], decision: str) -> None:
    assert diffing.analyze(dump(LLM), dump(BUMP), headroom=headroom).decision == decision


CLI_BAD = ["nvidia.com/gpu=-1", "nvidia.com/gpu=lots", "nvidia.com/gpu=0.5", "cpu=1e30", "memory=-1Gi"]


@pytest.mark.parametrize("item", CLI_BAD)
def test_cli_bad_headroom_exits_2_naming_the_value(item: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["analyze", "/dev/null", "/dev/null", "--headroom", item]) == 2
    err = capsys.readouterr().err
    assert f"--headroom {item!r}" in err and "internal error" not in err


def test_http_api_answers_422_for_the_same_error() -> None:
    with pytest.raises(diffing.PolicyError) as exc:
        diffing.analyze("", "", headroom={"nvidia.com/gpu": -1})
    status, body, _ = error_for(exc.value)
    assert status == 422
    assert body["error"]["code"] == "invalid-policy"
    assert "'-1'" in body["error"]["message"] or "-1 is negative" in body["error"]["message"]


def test_measured_headroom_is_lenient() -> None:
    """A live measurement below zero (an over-committed node) is 0 free, not an input error."""
    from diffing.policy import parse_headroom

    assert parse_headroom({"nvidia.com/gpu": -2, "cpu": "x"},
        measured=True) == {"nvidia.com/gpu": Fraction(0)}
    live = {"default/ray-serve-llm": diffing.LiveCluster(active_cluster="a", headroom={"nvidia.com/gpu": -2})}
    report = diffing.analyze(dump(LLM), dump(BUMP), live=live)
    assert report.decision == "hold"
    assert "the known headroom covers 0" in " ".join(report.resources[0].reasons)
