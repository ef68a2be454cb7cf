"""serveConfigV2: parse, compare per application and deployment, and Serve's GPU demand.

KubeRay compares the raw string and re-submits it on any textual change; what Ray Serve then
does depends on the parsed content ("Updating Applications In-Place" in the Ray docs): some
deployment options are applied to running replicas (lightweight), everything else starts new
replicas. Applications and deployments are matched by ``name``; their order does not matter
to Serve.
"""

from __future__ import annotations

from collections.abc import Iterator

from diffing.errors import ManifestError
from diffing.hints import Any
from diffing.kube.gojson import ABSENT
from diffing.kube.loading import Limits, load_value
from diffing.kube.paths import Key, Path
from diffing.record import Record, set_field

SERVE_PATH: Path = ("spec", "serveConfigV2")

# Deployment options Ray Serve applies without restarting replicas.
LIGHTWEIGHT = frozenset({
    "num_replicas", "autoscaling_config", "user_config", "max_ongoing_requests",
    "max_queued_requests", "graceful_shutdown_wait_loop_s", "graceful_shutdown_timeout_s",
    "health_check_period_s", "health_check_timeout_s",
})
# Application options that only change routing or logging, not the replicas.
APP_LIGHTWEIGHT = frozenset({"route_prefix", "logging_config"})

# A text that changed but says the same to Ray Serve is still re-submitted: KubeRay compares the
# raw string with the one it last submitted (docs/semantics/rayservice.md §1.5).
FORMATTING_ONLY = "formatting only: KubeRay re-submits it, Ray Serve keeps every replica"
ORDER_ONLY = "order only: KubeRay re-submits it, Ray Serve keeps every replica"
SAME_CONTENT = (FORMATTING_ONLY, ORDER_ONLY)

SERVE_LIMITS = Limits(max_bytes=4 * 1024 * 1024, max_nodes=500_000, max_depth=64)


class ServeConfig(Record):
    __slots__ = ("text", "value", "error")

    text: str | None
    value: Any
    error: str

    def __init__(self, text: str | None, value: Any = None, error: str = "") -> None:
        set_field(self, "text", text)
        set_field(self, "value", value)
        set_field(self, "error", error)

    @property
    def ok(self) -> bool:
        return self.text is not None and not self.error


def parse(text: Any) -> ServeConfig:
    if text is ABSENT or text is None:
        return ServeConfig(None)
    if not isinstance(text, str):
        return ServeConfig(str(text), None, "serveConfigV2 must be a string holding YAML")
    try:
        value = load_value(text, source="serveConfigV2", limits=SERVE_LIMITS)
    except ManifestError as exc:
        where = f"line {exc.line} of the serveConfigV2 text: " if exc.line else ""
        return ServeConfig(text, None, where + exc.reason)
    if value is not None and not isinstance(value, dict):
        return ServeConfig(text, value, "serveConfigV2 must hold a YAML mapping")
    return ServeConfig(text, value or {})


def _keyed(items: Any) -> dict[str, Any] | None:
    if not isinstance(items, list):
        return None
    out: dict[str, Any] = {}
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            return None
        name = str(item.get("name", f"#{i}"))
        if name in out:
            return None
        out[name] = item
    return out


class ServeChange(Record):
    __slots__ = ("path", "before", "after", "detail", "noop")

    path: Path
    before: Any
    after: Any
    detail: str
    noop: bool

    def __init__(self, path: Path, before: Any, after: Any, detail: str, noop: bool = False) -> None:
        set_field(self, "path", path)
        set_field(self, "before", before)
        set_field(self, "after", after)
        set_field(self, "detail", detail)
        set_field(self, "noop", noop)


def diff(before: ServeConfig, after: ServeConfig) -> list[ServeChange]:
    """Changes between two serve configs, each marked with Ray Serve's effect."""
    if before.text == after.text:
        return []
    if not (before.ok and after.ok):
        return [ServeChange(SERVE_PATH, before.text, after.text, "unparsed")]
    if before.value == after.value:
        return [ServeChange(SERVE_PATH, before.text, after.text, FORMATTING_ONLY, noop=True)]
    out: list[ServeChange] = []
    _walk_config(before.value, after.value, out)
    if not out:  # only order of applications/deployments changed
        out.append(ServeChange(SERVE_PATH, before.text, after.text, ORDER_ONLY, noop=True))
    return out


def _changed_keys(b: dict[str, Any], a: dict[str, Any]) -> Iterator[tuple[str, Any, Any]]:
    for key in list(b) + [k for k in a if k not in b]:
        bv, av = b.get(key, ABSENT), a.get(key, ABSENT)
        if bv != av:
            yield key, bv, av


def _walk_config(b: dict[str, Any], a: dict[str, Any], out: list[ServeChange]) -> None:
    for key, bv, av in _changed_keys(b, a):
        path = SERVE_PATH + (key,)
        bapps, aapps = (_keyed(bv), _keyed(av)) if key == "applications" else (None, None)
        if bapps is not None and aapps is not None:
            _walk_named(bapps, aapps, path, 0, out)
        elif key in ("http_options", "grpc_options", "proxy_location"):
            out.append(ServeChange(path, bv, av, "not-applied-at-runtime"))
        else:
            out.append(ServeChange(path, bv, av, "lightweight" if key == "logging_config"
                                   else "replica-restart"))


# Per level of named items: what they are, the options Serve applies in place, the child list.
_LEVELS = (("application", APP_LIGHTWEIGHT, "deployments"), ("deployment", LIGHTWEIGHT, None))


def _walk_named(b: dict[str, Any], a: dict[str, Any], path: Path, level: int,
                out: list[ServeChange]) -> None:
    what, lightweight, child = _LEVELS[level]
    for name in list(b) + [n for n in a if n not in b]:
        seg = path + (Key("name", name),)
        if name not in a:
            out.append(ServeChange(seg, b[name], ABSENT, f"{what}-removed"))
        elif name not in b:
            out.append(ServeChange(seg, ABSENT, a[name], f"{what}-added"))
        else:
            for key, bv, av in _changed_keys(b[name], a[name]):
                if key == child:
                    bk = _keyed(bv if bv is not ABSENT else [])
                    ak = _keyed(av if av is not ABSENT else [])
                    if bk is not None and ak is not None:
                        _walk_named(bk, ak, seg + (key,), level + 1, out)
                        continue
                detail = "lightweight" if key in lightweight else "replica-restart"
                out.append(ServeChange(seg + (key,), bv, av, detail))


class GpuDemand(Record):
    """Serve's GPU need at its replica ceiling: sum of replicas x ray_actor_options.num_gpus."""

    __slots__ = ("gpus", "known")

    gpus: float
    known: bool  # False when some deployment's options are not in the config (e.g. built by args)

    def __init__(self, gpus: float, known: bool) -> None:
        set_field(self, "gpus", gpus)
        set_field(self, "known", known)


def gpu_demand(config: ServeConfig) -> GpuDemand:
    if not config.ok or not isinstance(config.value, dict):
        return GpuDemand(0.0, False)
    total = 0.0
    known = True
    apps = config.value.get("applications")
    if not isinstance(apps, list):
        return GpuDemand(0.0, False)
    for app in apps:
        deps = app.get("deployments") if isinstance(app, dict) else None
        if not isinstance(deps, list) or not deps:
            known = False
            continue
        for dep in deps:
            if not isinstance(dep, dict):
                continue
            opts = dep.get("ray_actor_options") or {}
            gpus = opts.get("num_gpus", 0) if isinstance(opts, dict) else 0
            if not isinstance(gpus, (int, float)) or isinstance(gpus, bool) or gpus <= 0:
                continue
            total += gpus * _replica_ceiling(dep)
    return GpuDemand(total, known)


def _replica_ceiling(dep: dict[str, Any]) -> int:
    auto = dep.get("autoscaling_config")
    n = dep.get("num_replicas", 1)
    if isinstance(auto, dict) or n == "auto":
        auto = auto if isinstance(auto, dict) else {}
        ceiling = auto.get("max_replicas", 100 if n == "auto" else 1)
        return int(ceiling) if isinstance(ceiling, (int, float)) else 1
    return int(n) if isinstance(n, (int, float)) and not isinstance(n, bool) else 1



class ReplicaNeed(Record):
    """What one deployment asks of the cluster at its replica ceiling."""

    __slots__ = ("path", "replicas", "per_node", "cpus", "gpus")

    path: Path  # spec.serveConfigV2.applications[name=…].deployments[name=…]
    replicas: int
    per_node: int | None  # max_replicas_per_node
    cpus: float  # per replica (Serve reserves one CPU unless ray_actor_options says otherwise)
    gpus: float

    def __init__(self, path: Path, replicas: int, per_node: int | None, cpus: float, gpus: float) -> None:
        set_field(self, "path", path)
        set_field(self, "replicas", replicas)
        set_field(self, "per_node", per_node)
        set_field(self, "cpus", cpus)
        set_field(self, "gpus", gpus)


def replica_needs(config: ServeConfig) -> list[ReplicaNeed]:
    """Per deployment: the most replicas Serve may run, their per-node cap and their resources."""
    if not config.ok or not isinstance(config.value, dict):
        return []
    out = []
    for app in config.value.get("applications") or []:
        if not isinstance(app, dict) or not isinstance(app.get("deployments"), list):
            continue
        for dep in app["deployments"]:
            if not isinstance(dep, dict):
                continue
            raw = dep.get("ray_actor_options")
            opts: dict[str, Any] = raw if isinstance(raw, dict) else {}
            per_node = dep.get("max_replicas_per_node")
            out.append(ReplicaNeed(
                SERVE_PATH + ("applications", Key("name", str(app.get("name", ""))), "deployments",
                              Key("name", str(dep.get("name", "")))),
                _replica_ceiling(dep),
                per_node if isinstance(per_node, int) and not isinstance(per_node, bool) and per_node > 0
                else None,
                _number(opts.get("num_cpus"), 1.0), _number(opts.get("num_gpus"), 0.0)))
    return out


def _number(value: Any, default: float) -> float:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else default
