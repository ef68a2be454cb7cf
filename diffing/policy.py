"""The decision policy: what holds a change, and the operator settings a PR cannot see."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from .errors import PolicyError
from .quantity import Quantity, QuantityError

HOLD_ON_RECREATE = ("always", "gpu-only", "never")
NOT_APPLIED = ("hold", "warn")
RENDER_FAILURE = ("hold", "warn")
_KEYS = {"holdOnRecreate", "thresholds", "notApplied", "operator", "accelerators", "holdOnErrors",
         "renderFailure"}


@dataclass(frozen=True, slots=True)
class Policy:
    """Defaults are the contract's default policy.

    * ``hold_on_recreate``: ``gpu-only`` holds a new-cluster/incremental rollout whose extra
      accelerators (or a resource listed in ``thresholds``) exceed the known headroom plus
      the threshold; ``always`` holds every recreation; ``never`` none.
    * ``thresholds``: extra amount per resource tolerated beyond the headroom (default 0
      for accelerators; CPU and memory are only checked when listed).
    * ``not_applied``: ``hold`` (default) or ``warn`` when the operator will not apply a change.
    * ``feature_gates`` / ``operator_env``: the operator's own settings.
    * ``accelerators``: extra resource names to count as accelerators.
    * ``render_failure``: ``hold`` (default) or ``warn`` when a root the change touched could
      not be rendered (kustomize, Helm): its RayServices were not compared at all.
    """

    hold_on_recreate: str = "gpu-only"
    thresholds: Mapping[str, Fraction] = field(default_factory=dict)
    not_applied: str = "hold"
    feature_gates: Mapping[str, bool] = field(default_factory=dict)
    operator_env: Mapping[str, str] = field(default_factory=dict)
    accelerators: tuple[str, ...] = ()
    hold_on_errors: bool = True
    render_failure: str = "hold"

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any] | None) -> Policy:
        if data is None:
            return cls()
        if not isinstance(data, Mapping):
            raise PolicyError("must be a mapping")
        unknown = set(data) - _KEYS
        if unknown:
            raise PolicyError(f"unknown key(s) {', '.join(sorted(map(str, unknown)))}; "
                              f"known: {', '.join(sorted(_KEYS))}")
        hold = data.get("holdOnRecreate", "gpu-only")
        if hold not in HOLD_ON_RECREATE:
            raise PolicyError(f"must be one of {', '.join(HOLD_ON_RECREATE)}", key="holdOnRecreate")
        not_applied = data.get("notApplied", "hold")
        if not_applied not in NOT_APPLIED:
            raise PolicyError(f"must be one of {', '.join(NOT_APPLIED)}", key="notApplied")
        thresholds = {}
        raw = data.get("thresholds") or {}
        if not isinstance(raw, Mapping):
            raise PolicyError("must be a mapping of resource name to amount", key="thresholds")
        for name, amount in raw.items():
            try:
                thresholds[str(name)] = Quantity.parse(amount).value
            except QuantityError:
                raise PolicyError(f"{amount!r} is not an amount", key=f"thresholds.{name}") from None
        operator = data.get("operator") or {}
        if not isinstance(operator, Mapping) or set(operator) - {"featureGates", "env"}:
            raise PolicyError("must be a mapping with featureGates and/or env", key="operator")
        gates = operator.get("featureGates") or {}
        if not isinstance(gates, Mapping) or not all(isinstance(v, bool) for v in gates.values()):
            raise PolicyError("must map gate names to true/false", key="operator.featureGates")
        env = operator.get("env") or {}
        if not isinstance(env, Mapping):
            raise PolicyError("must map variable names to strings", key="operator.env")
        accel = data.get("accelerators") or []
        if not isinstance(accel, list) or not all(isinstance(a, str) for a in accel):
            raise PolicyError("must be a list of resource names", key="accelerators")
        hold_errors = data.get("holdOnErrors", True)
        if not isinstance(hold_errors, bool):
            raise PolicyError("must be true or false", key="holdOnErrors")
        render_failure = data.get("renderFailure", "hold")
        if render_failure not in RENDER_FAILURE:
            raise PolicyError(f"must be one of {', '.join(RENDER_FAILURE)}", key="renderFailure")
        return cls(hold, thresholds, not_applied, dict(gates),
                   {str(k): str(v).lower() if isinstance(v, bool) else str(v) for k, v in env.items()},
                   tuple(accel), hold_errors, render_failure)


def parse_headroom(data: Mapping[str, Any] | None) -> dict[str, Fraction] | None:
    """``{"nvidia.com/gpu": 8, "cpu": "16"}`` -> exact amounts; ``None`` = unknown."""
    if data is None:
        return None
    if not isinstance(data, Mapping):
        raise PolicyError("headroom must map resource names to amounts")
    out = {}
    for name, amount in data.items():
        try:
            out[str(name)] = Quantity.parse(amount).value
        except QuantityError:
            raise PolicyError(f"{amount!r} is not an amount", key=f"headroom.{name}") from None
    return out
