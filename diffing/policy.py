"""The decision policy: what holds a change, and the operator settings a PR cannot see."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from fractions import Fraction

from diffing.errors import HeadroomError, PolicyError
from diffing.hints import Any
from diffing.kube.quantity import Quantity, QuantityError
from diffing.kube.resources import family, is_accelerator, is_extended, is_known_accelerator
from diffing.record import Record, set_field

HOLD_ON_RECREATE = ("always", "gpu-only", "never")
NOT_APPLIED = ("hold", "warn")
RENDER_FAILURE = ("hold", "warn")
HOLD_ON_LATENT = ("version-skew", "always", "never")
UNKNOWN_SOURCES = ("hold", "warn")
_KEYS = {"holdOnRecreate", "thresholds", "notApplied", "operator", "accelerators", "notAccelerators",
         "holdOnErrors", "renderFailure", "raycluster", "unknownSources", "environments", "cost"}
# A source named in an unknown-source finding: a URL, an scp-like git address, a host path.
_SOURCE = re.compile(r"(?:[a-z][a-z0-9+.-]*://|git@)[^\s'\"(),;]+|\b(?:github|gitlab|bitbucket)\.(?:com|org)/[^\s'\"(),;]+")


class Policy(Record):
    """Defaults are the contract's default policy.

    * ``hold_on_recreate``: ``gpu-only`` holds a new-cluster/incremental rollout whose extra
      accelerators (or a resource listed in ``thresholds``) exceed the known headroom plus
      the threshold; ``always`` holds every recreation; ``never`` none.
    * ``thresholds``: extra amount per resource tolerated beyond the headroom (default 0
      for accelerators; CPU and memory are only checked when listed).
    * ``not_applied``: ``hold`` (default) or ``warn`` when the operator will not apply a change.
    * ``feature_gates`` / ``operator_env``: the operator's own settings.
    * ``accelerators``: extra resource names to count as accelerators (every extended
      resource already counts, see :func:`diffing.kube.resources.is_accelerator`).
    * ``not_accelerators`` (``notAccelerators``): extended resources that are not scarce
      devices (``example.com/foo``); a known accelerator family cannot be listed.
    * ``render_failure``: ``hold`` (default) or ``warn`` when a root the change touched could
      not be rendered (kustomize, Helm): its RayServices were not compared at all.
    * ``cluster_hold_on_recreate`` (``raycluster.holdOnRecreate``, default true): hold a
      standalone RayCluster change that Recreate turns into a full restart (downtime).
    * ``cluster_hold_on_latent`` (``raycluster.holdOnLatent``): ``version-skew`` (default) holds
      a latent change only when it changes the Ray version; ``always`` every latent change;
      ``never`` none.
    * ``unknown_sources`` / ``allowed_sources`` (``unknownSources: {default, allow}``): what
      GitOps deploys from outside what the tool can read (a remote base, a submodule, a chart
      of another repository, an ApplicationSet) holds by default; ``warn`` makes it a warning,
      and ``allow`` lists sources (URL prefixes) known to deploy no KubeRay object.
    * ``environments``: the order in which a report lists the environments a change reaches
      (words of a root, file or namespace: ``[prod, canary, staging]``); by default production
      first (:mod:`diffing.environments`). It decides nothing.
    """

    __slots__ = ("hold_on_recreate", "thresholds", "not_applied", "feature_gates", "operator_env",
                 "accelerators", "hold_on_errors", "render_failure", "cluster_hold_on_recreate",
                 "cluster_hold_on_latent", "not_accelerators", "unknown_sources", "allowed_sources",
                 "environments", "prices", "currency", "cost_hold_per_hour")

    hold_on_recreate: str
    thresholds: Mapping[str, Fraction]
    not_applied: str
    feature_gates: Mapping[str, bool]
    operator_env: Mapping[str, str]
    accelerators: tuple[str, ...]
    hold_on_errors: bool
    render_failure: str
    cluster_hold_on_recreate: bool
    cluster_hold_on_latent: str
    not_accelerators: tuple[str, ...]
    unknown_sources: str
    allowed_sources: tuple[str, ...]
    environments: tuple[str, ...]
    prices: Mapping[str, Fraction]  # cost.prices: resource -> price per unit (GiB for bytes) and hour
    currency: str
    cost_hold_per_hour: Fraction | None  # cost.holdAbovePerHour: the two-cluster window's limit

    def __init__(self, hold_on_recreate: str = "gpu-only", thresholds: Mapping[str, Fraction] | None = None,
                 not_applied: str = "hold", feature_gates: Mapping[str, bool] | None = None,
                 operator_env: Mapping[str, str] | None = None, accelerators: tuple[str, ...] = (),
                 hold_on_errors: bool = True, render_failure: str = "hold",
                 cluster_hold_on_recreate: bool = True, cluster_hold_on_latent: str = "version-skew",
                 not_accelerators: tuple[str, ...] = (), unknown_sources: str = "hold",
                 allowed_sources: tuple[str, ...] = (), environments: tuple[str, ...] = (),
                 prices: Mapping[str, Fraction] | None = None, currency: str = "",
                 cost_hold_per_hour: Fraction | None = None) -> None:
        set_field(self, "hold_on_recreate", hold_on_recreate)
        set_field(self, "thresholds", {} if thresholds is None else thresholds)
        set_field(self, "not_applied", not_applied)
        set_field(self, "feature_gates", {} if feature_gates is None else feature_gates)
        set_field(self, "operator_env", {} if operator_env is None else operator_env)
        set_field(self, "accelerators", accelerators)
        set_field(self, "hold_on_errors", hold_on_errors)
        set_field(self, "render_failure", render_failure)
        set_field(self, "cluster_hold_on_recreate", cluster_hold_on_recreate)
        set_field(self, "cluster_hold_on_latent", cluster_hold_on_latent)
        set_field(self, "not_accelerators", not_accelerators)
        set_field(self, "unknown_sources", unknown_sources)
        set_field(self, "allowed_sources", allowed_sources)
        set_field(self, "environments", environments)
        set_field(self, "prices", {} if prices is None else prices)
        set_field(self, "currency", currency)
        set_field(self, "cost_hold_per_hour", cost_hold_per_hour)

    def allows(self, message: str) -> bool:
        """Whether an ``unknown-source`` finding's message names only allowed sources (a finding
        that names none, such as an ApplicationSet's, is never allowed by source)."""
        if self.unknown_sources == "warn":
            return True
        found = _SOURCE.findall(message)
        allowed = [source_key(a) for a in self.allowed_sources]
        return bool(found) and all(any(source_key(f).startswith(a) for a in allowed) for f in found)

    def counts(self, name: str) -> bool:
        """``name`` is an accelerator under this policy: extra capacity of it must be free."""
        return is_accelerator(name, self.accelerators, self.not_accelerators)

    def devices(self, amounts: Mapping[str, Any]) -> dict[str, int]:
        """The whole-unit, non-zero amounts of ``amounts`` that are accelerators under this policy."""
        return {k: v for k, v in amounts.items() if self.counts(k) and isinstance(v, int) and v}

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
        hold = _choice(data, "holdOnRecreate", HOLD_ON_RECREATE, "gpu-only")
        not_applied = _choice(data, "notApplied", NOT_APPLIED, "hold")
        thresholds = {}
        accel = _names(data, "accelerators")
        raw = data.get("thresholds") or {}
        if not isinstance(raw, Mapping):
            raise PolicyError("must be a mapping of resource name to amount", key="thresholds")
        for name, amount in raw.items():
            thresholds[str(name)] = amount_of(name, amount, "thresholds", known=accel)
        operator = data.get("operator") or {}
        if not isinstance(operator, Mapping) or set(operator) - {"featureGates", "env"}:
            raise PolicyError("must be a mapping with featureGates and/or env", key="operator")
        gates = operator.get("featureGates") or {}
        if not isinstance(gates, Mapping) or not all(isinstance(v, bool) for v in gates.values()):
            raise PolicyError("must map gate names to true/false", key="operator.featureGates")
        env = operator.get("env") or {}
        if not isinstance(env, Mapping):
            raise PolicyError("must map variable names to strings", key="operator.env")
        not_accel = _not_accelerators(data, accel)
        hold_errors = _flag(data, "holdOnErrors", True)
        render_failure = _choice(data, "renderFailure", RENDER_FAILURE, "hold")
        cluster = data.get("raycluster") or {}
        if not isinstance(cluster, Mapping) or set(cluster) - {"holdOnRecreate", "holdOnLatent"}:
            raise PolicyError("must be a mapping with holdOnRecreate and/or holdOnLatent", key="raycluster")
        cluster_recreate = _flag(cluster, "holdOnRecreate", True, "raycluster.")
        cluster_latent = _choice(cluster, "holdOnLatent", HOLD_ON_LATENT, "version-skew", "raycluster.")
        unknown_default, allowed = _unknown_sources(data.get("unknownSources"))
        prices, currency, limit = _cost(data.get("cost"), accel)
        return cls(hold, thresholds, not_applied, dict(gates),
                   {str(k): _env_value(k, v) for k, v in env.items()},
                   tuple(accel), hold_errors, render_failure, cluster_recreate, cluster_latent,
                   tuple(not_accel), unknown_default, allowed, _environments(data.get("environments")),
                   prices, currency, limit)


def _cost(value: Any, accel: list[str]) -> tuple[dict[str, Fraction], str, Fraction | None]:
    """``cost: {prices: {resource: price per hour}, currency: USD, holdAbovePerHour: 50}``."""
    if value is None:
        return {}, "", None
    if not isinstance(value, Mapping) or set(value) - {"prices", "currency", "holdAbovePerHour"}:
        raise PolicyError("must be a mapping with prices, currency and/or holdAbovePerHour", key="cost")
    raw = value.get("prices") or {}
    if not isinstance(raw, Mapping):
        raise PolicyError("must map resource names to prices per hour", key="cost.prices")
    prices = {str(k): _price(v, f"cost.prices.{k}") for k, v in raw.items()}
    for name in prices:
        amount_of(name, 0, "cost.prices", known=accel)  # a name no pod can request is refused
    currency = value.get("currency", "")
    if not isinstance(currency, str) or len(currency) > 8:
        raise PolicyError("must be a short currency label such as USD", key="cost.currency")
    limit = value.get("holdAbovePerHour")
    return prices, currency, None if limit is None else _price(limit, "cost.holdAbovePerHour")


def _price(raw: Any, key: str) -> Fraction:
    if isinstance(raw, bool) or not isinstance(raw, (int, float)) or raw < 0 or raw > 10**9:
        raise PolicyError(f"{_shown(raw)} is not a price (a number from 0 to 10^9)", key=key)
    return Fraction(str(raw))


def _environments(value: Any) -> tuple[str, ...]:
    """``environments``: names (words of a root, file or namespace), most important first."""
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str) and re.fullmatch(r"[A-Za-z0-9]+", v)
                                              for v in value):
        raise PolicyError("must be a list of environment names (letters and digits: prod, staging)",
                          key="environments")
    return tuple(v.lower() for v in value)


def _unknown_sources(value: Any) -> tuple[str, tuple[str, ...]]:
    """``unknownSources``: ``hold`` / ``warn``, or ``{default: hold|warn, allow: [prefix, ...]}``."""
    if value is None:
        return "hold", ()
    if isinstance(value, str):
        return _choice({"unknownSources": value}, "unknownSources", UNKNOWN_SOURCES, "hold"), ()
    if not isinstance(value, Mapping) or set(value) - {"default", "allow"}:
        raise PolicyError("must be hold, warn, or a mapping with default and/or allow", key="unknownSources")
    default = _choice(value, "default", UNKNOWN_SOURCES, "hold", "unknownSources.")
    allow = value.get("allow") or []
    if not isinstance(allow, list) or not all(isinstance(a, str) and source_key(a) for a in allow):
        raise PolicyError("must be a list of repository or chart URLs (prefixes)", key="unknownSources.allow")
    return default, tuple(allow)


def source_key(url: str) -> str:
    """A source as compared: ``git@github.com:org/repo.git`` and ``https://github.com/org/repo``
    are both ``github.com/org/repo``."""
    u = url.strip().lower()
    if u.startswith("git@") and ":" in u:
        u = u[4:].replace(":", "/", 1)
    u = re.sub(r"^[a-z][a-z0-9+.-]*::", "", u)
    u = re.sub(r"^[a-z][a-z0-9+.-]*://", "", u)
    u = re.sub(r"^[^@/]+@", "", u)
    u = u.rstrip("/")
    return u[:-4] if u.endswith(".git") else u


def _names(data: Mapping[str, Any], key: str) -> list[str]:
    """``data[key]``, a list of resource names."""
    names = data.get(key) or []
    if not isinstance(names, list) or not all(isinstance(a, str) and a for a in names):
        raise PolicyError("must be a list of resource names", key=key)
    return names


def _not_accelerators(data: Mapping[str, Any], accelerators: list[str]) -> list[str]:
    """``notAccelerators``: extended resources a team declares not scarce. A known family
    (nvidia.com/gpu, habana.ai/gaudi...) always counts: excluding one would approve doubling it."""
    names = _names(data, "notAccelerators")
    for name in names:
        if not is_extended(name):
            raise PolicyError(f"{name!r} is not an extended resource (domain/name outside kubernetes.io/); "
                              "only those count as accelerators", key="notAccelerators")
        if is_known_accelerator(name):
            what = family(name) or "a GPU"
            raise PolicyError(f"{name!r} is a known accelerator ({what}) and always counts; tolerate an "
                              "amount of it with thresholds instead", key="notAccelerators")
        if name in accelerators:
            raise PolicyError(f"{name!r} is also listed under accelerators", key="notAccelerators")
    return names


def _env_value(name: Any, value: Any) -> str:
    """An operator env value as the operator reads it (a string)."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, int) and value.bit_length() > _MAX_BITS:
        raise PolicyError(f"an integer of {value.bit_length()} bits is not a setting",
                          key=f"operator.env.{name}")
    return str(value)


def _choice(data: Mapping[str, Any], key: str, choices: tuple[str, ...], default: str,
            prefix: str = "") -> str:
    """``data[key]``, one of ``choices``."""
    value = data.get(key, default)
    if value not in choices:
        raise PolicyError(f"must be one of {', '.join(choices)}", key=prefix + key)
    return str(value)


def _flag(data: Mapping[str, Any], key: str, default: bool, prefix: str = "") -> bool:
    value = data.get(key, default)
    if not isinstance(value, bool):
        raise PolicyError("must be true or false", key=prefix + key)
    return value


# No cluster has an exa of anything: a larger amount is a typo, not headroom.
MAX_AMOUNT = Fraction(10**18)
# An integer wider than 64 bits is no Kubernetes number; refused before it is printed (Python
# refuses to turn an integer of more than 4 300 digits into text: that was a 500).
_MAX_BITS = 64
_EXPONENT = re.compile(r"[eE][+-]?([0-9]+)\s*$")


def _shown(raw: Any) -> str:
    """``repr(raw)`` for a message, at most 80 characters (a list may hold anything)."""
    try:
        text = repr(raw)
    except ValueError:  # an integer beyond Python's 4 300-digit conversion limit inside it
        return f"a {type(raw).__name__} too large to show"
    return text if len(text) <= 80 else text[:79] + "…"


# What a container can request without a domain (Kubernetes' standard container resources;
# ``hugepages-<size>`` besides). Any other name without one is a typo or a nickname.
_STANDARD = ("cpu", "memory", "ephemeral-storage", "storage")
# The names people type for a resource, and the one Kubernetes knows it by.
_NICKNAMES = {
    "gpu": "nvidia.com/gpu", "gpus": "nvidia.com/gpu", "nvidia": "nvidia.com/gpu",
    "nvidia-gpu": "nvidia.com/gpu", "nvidia_gpu": "nvidia.com/gpu", "cuda": "nvidia.com/gpu",
    "amd": "amd.com/gpu", "amd-gpu": "amd.com/gpu", "rocm": "amd.com/gpu",
    "tpu": "google.com/tpu", "tpus": "google.com/tpu",
    "neuron": "aws.amazon.com/neuron", "neuroncore": "aws.amazon.com/neuroncore",
    "inferentia": "aws.amazon.com/neuron", "trainium": "aws.amazon.com/neuron",
    "gaudi": "habana.ai/gaudi", "hpu": "habana.ai/gaudi", "habana": "habana.ai/gaudi",
    "cpus": "cpu", "vcpu": "cpu", "vcpus": "cpu", "cores": "cpu",
    "mem": "memory", "ram": "memory", "disk": "ephemeral-storage",
}
# The names a likely name is picked from (with the policy's own accelerators).
_KNOWN_NAMES = (*_STANDARD, "nvidia.com/gpu", "amd.com/gpu", "google.com/tpu", "aws.amazon.com/neuron",
                "aws.amazon.com/neuroncore", "habana.ai/gaudi", "gpu.intel.com/i915", "gpu.intel.com/xe")


def likely_resource(name: str, known: Iterable[str] = ()) -> str:
    """The resource name ``name`` most likely stands for (``gpu`` → ``nvidia.com/gpu``, ``Memory``
    → ``memory``, ``requests.nvidia.com/gpu`` → ``nvidia.com/gpu``), or ``""``."""
    low = name.strip().lower()
    for prefix in ("requests.", "limits."):
        if low.startswith(prefix) and not unknown_resource(low[len(prefix):], known):
            return low[len(prefix):]
    if low in _NICKNAMES:
        return _NICKNAMES[low]
    names = [*_KNOWN_NAMES, *known]
    import difflib  # only for a name no resource has: its import is not free

    close = difflib.get_close_matches(low, names, n=1, cutoff=0.75)
    if close:
        return close[0]
    # the device part of a known name: "i915" -> gpu.intel.com/i915
    return next((n for n in names if n.rsplit("/", 1)[-1] == low), "")


def unknown_resource(name: str, known: Iterable[str] = ()) -> bool:
    """``name`` is no resource a pod can request: no domain and not a standard one (``gpu``,
    ``CPU``), or a quota name (``requests.nvidia.com/gpu``). A name the policy lists under
    ``accelerators`` is taken as it is."""
    if name in known or name in _STANDARD or name.startswith("hugepages-"):
        return False
    return "/" not in name or name.startswith(("requests.", "limits."))


def amount_of(name: Any, raw: Any, what: str, *, known: Iterable[str] = ()) -> Fraction:
    """An amount a caller gives for resource ``name`` (headroom, threshold), checked.

    Negative, non-numeric or absurd values (more than 10^18, a fraction of an accelerator)
    are a :class:`PolicyError` naming the value, so the CLI exits 2 and the API answers 422;
    so is a name no pod can request (``gpu``), with the likely one. ``known``: the policy's
    ``accelerators``, names taken as they are.
    """
    key = f"{what}.{name}"
    known = tuple(known)
    if unknown_resource(str(name), known):
        likely = likely_resource(str(name), known)
        if likely:
            raise PolicyError(f"{_shown(name)} is not a resource name a pod can request; did you mean "
                              f"{likely}?", key=key)
        raise PolicyError(f"{_shown(name)} is not a resource name a pod can request (cpu, memory, "
                          "ephemeral-storage, hugepages-<size>, or a device with its domain, e.g. "
                          "nvidia.com/gpu); list it under the policy's accelerators to count a device by "
                          "that name", key=key)
    if isinstance(raw, bool) or not isinstance(raw, (int, float, str)):
        raise PolicyError(f"{_shown(raw)} is not an amount", key=key)
    if isinstance(raw, int) and raw.bit_length() > _MAX_BITS:
        raise PolicyError(f"an integer of {raw.bit_length()} bits is not a plausible amount (more than "
                          "10^18)", key=key)
    exponent = _EXPONENT.search(raw) if isinstance(raw, str) else None
    if exponent and len(exponent.group(1)) > 3:
        raise PolicyError(f"{raw!r} is not a plausible amount", key=key)
    try:
        value = Quantity.parse(raw).value
    except QuantityError as exc:
        why = str(exc)
        if why.endswith("is not a quantity"):
            why = f"{raw!r} is not an amount"
        raise PolicyError(why, key=key) from None
    if value < 0:
        raise PolicyError(f"{raw!r} is negative; an amount of free capacity is 0 or more", key=key)
    if value > MAX_AMOUNT:
        raise PolicyError(f"{raw!r} is not a plausible amount (more than 10^18)", key=key)
    if is_accelerator(str(name)) and value.denominator != 1:
        raise PolicyError(f"{raw!r} is not a whole number; {name} is counted in whole devices", key=key)
    return value


def parse_headroom(data: Mapping[str, Any] | None, *, measured: bool = False,
                   known: Iterable[str] = ()) -> dict[str, Fraction] | None:
    """``{"nvidia.com/gpu": 8, "cpu": "16"}`` -> exact amounts; ``None`` = unknown.

    A caller's headroom must be valid amounts of resources a pod can request (:func:`amount_of`;
    ``known``: the policy's ``accelerators``), else a :class:`HeadroomError`. A ``measured`` one
    (the live basis) is taken as it comes: a negative measurement (an over-committed node) is 0
    and an unreadable one is skipped.
    """
    if data is None:
        return None
    if not isinstance(data, Mapping):
        raise HeadroomError("must map resource names to amounts")
    out: dict[str, Fraction] = {}
    for name, amount in data.items():
        if not measured:
            try:
                out[str(name)] = amount_of(name, amount, "headroom", known=known)
            except PolicyError as exc:
                raise HeadroomError(exc.reason, key=str(name)) from None
            continue
        try:
            out[str(name)] = max(Quantity.parse(amount).value, Fraction(0))
        except QuantityError:
            continue
    return out
