"""What a rollout costs: the two-cluster window per hour and the steady-state change per month,
from the policy's price table (``cost.prices``: resource -> price per unit and hour; memory and
other byte amounts per GiB). Prices are per resource, not per node shape: a pod's share of a node
is priced, not the node (docs/placement.md)."""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction

from diffing.hints import Any
from diffing.kube.resources import is_bytes

HOURS_PER_MONTH = 730  # 8 760 hours a year / 12, the convention cloud price sheets use
GIB = 2**30


def per_hour(amounts: Mapping[str, Fraction], prices: Mapping[str, Fraction]) -> Fraction:
    total = Fraction(0)
    for name, amount in amounts.items():
        price = prices.get(name)
        if price is not None:
            total += (amount / GIB if is_bytes(name) else amount) * price
    return total


def _money(value: Fraction) -> float:
    return round(float(value), 2)


def rollout_cost(extra: Mapping[str, Fraction], before: Mapping[str, Fraction], after: Mapping[str, Fraction],
                 prices: Mapping[str, Fraction], currency: str, *, overlap: bool) -> dict[str, Any]:
    """``overlapPerHour``: what the pods the rollout adds cost while both clusters run (only when
    it runs two: ``overlap``); ``monthlyChange``: the steady state after minus before, per month."""
    out: dict[str, Any] = {"currency": currency}
    if overlap:
        out["overlapPerHour"] = _money(per_hour(extra, prices))
    out["monthlyChange"] = _money((per_hour(after, prices) - per_hour(before, prices)) * HOURS_PER_MONTH)
    return out
