"""The policy's price table: the two-cluster window per hour, the monthly change, the hold on it."""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path

import jsonschema_rs
import pytest

import diffing
from diffing.errors import PolicyError
from diffing.placement.cost import per_hour, rollout_cost
from diffing.policy import Policy

SAMPLE = Path(__file__).resolve().parents[3] / "samples" / "gpu-image-bump"
PRICES = {"nvidia.com/gpu": 2.5, "cpu": 0.04, "memory": 0.005}


def test_per_hour_prices_bytes_per_gib() -> None:
    amounts = {"nvidia.com/gpu": Fraction(4), "cpu": Fraction(34), "memory": Fraction(36 * 2**30),
               "ephemeral-storage": Fraction(10**9)}  # no price: free
    prices = {k: Fraction(str(v)) for k, v in PRICES.items()}
    assert per_hour(amounts, prices) == Fraction(4 * 25, 10) + Fraction(34 * 4, 100) + Fraction(36 * 5, 1000)


def test_monthly_change_is_after_minus_before_over_730_hours() -> None:
    prices = {"nvidia.com/gpu": Fraction(2)}
    got = rollout_cost({"nvidia.com/gpu": Fraction(8)}, {"nvidia.com/gpu": Fraction(8)},
                       {"nvidia.com/gpu": Fraction(12)}, prices, "EUR", overlap=True)
    assert got == {"currency": "EUR", "overlapPerHour": 16.0, "monthlyChange": 5840.0}
    assert "overlapPerHour" not in rollout_cost({}, {}, {}, prices, "", overlap=False)


def test_new_cluster_over_the_hourly_limit_is_held() -> None:
    # gpu-image-bump: a new cluster beside the old one adds 4 GPUs, 34 cpu, 36Gi: 10 + 1.36 + 0.18.
    before, after = (SAMPLE / "before.yaml").read_text(), (SAMPLE / "after.yaml").read_text()
    policy = {"holdOnRecreate": "never",
              "cost": {"prices": PRICES, "currency": "USD", "holdAbovePerHour": 11}}
    report = diffing.analyze(before, after, policy=policy).to_dict()
    schema = json.loads((SAMPLE.parents[1] / "docs" / "report.schema.json").read_text())
    assert list(jsonschema_rs.validator_for(schema).iter_errors(report)) == []
    r = report["resources"][0]
    assert r["capacity"]["cost"] == {"currency": "USD", "overlapPerHour": 11.54, "monthlyChange": 0.0}
    assert r["decision"] == "hold"
    assert ("while both clusters run the new one costs 11.54 USD per hour, above the policy's "
            "cost.holdAbovePerHour (11 USD)") in r["reasons"]
    policy["cost"]["holdAbovePerHour"] = 12  # type: ignore[index]
    assert diffing.analyze(before, after, policy=policy).to_dict()["resources"][0]["decision"] == "approve"


def test_without_prices_the_report_has_no_cost() -> None:
    before, after = (SAMPLE / "before.yaml").read_text(), (SAMPLE / "after.yaml").read_text()
    assert "cost" not in diffing.analyze(before, after).to_dict()["resources"][0]["capacity"]


@pytest.mark.parametrize(("cost", "says"), [
    ({"prices": {"gpu": 1}}, "did you mean nvidia.com/gpu"),
    ({"prices": {"cpu": -1}}, "is not a price"),
    ({"prices": {"cpu": "cheap"}}, "is not a price"),
    ({"per": 1}, "must be a mapping with prices"),
    ({"currency": ["USD"]}, "short currency label"),
])
def test_bad_cost_policy_is_a_clear_error(cost: dict, says: str) -> None:
    with pytest.raises(PolicyError, match=says):
        Policy.from_mapping({"cost": cost})
