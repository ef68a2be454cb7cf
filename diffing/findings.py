"""Hazards users hit with RayService changes, each a :class:`~diffing.report.Finding`.

Every check reads the analysed pair (:class:`Context`) and returns findings; none of them
changes the rollout. Codes are stable: scripts and policies may match on them.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from . import capacity as cap
from . import serve
from .gojson import ABSENT
from .kuberay import Category
from .paths import Key, Path, format_path
from .report import Capacity, Change, Finding
from .values import dig, mapping, seq

if TYPE_CHECKING:
    from .engine import Engine
    from .live import LiveCluster
    from .manifests import Manifest

RCC: Path = ("spec", "rayClusterConfig")
_TAG = re.compile(r":(?P<tag>[^/@:]+)$")


@dataclass(frozen=True)
class Context:
    engine: Engine
    before: Manifest | None
    after: Manifest | None
    b_def: dict[str, Any] | None
    a_def: dict[str, Any] | None
    b_serve: serve.ServeConfig
    a_serve: serve.ServeConfig
    changes: list[Change]
    real: set[Category]
    rollout: str
    autoscaling: bool
    schema_errors: list[tuple[Path, str]]
    op_problems: list[tuple[str, Path, str]]
    live: LiveCluster | None
    argo_apps: list[Any]
    capacity: Capacity
    unknown: list[Path]

    def finding(self, severity: str, code: str, path: Path | str, message: str) -> Finding:
        text = path if isinstance(path, str) else format_path(path)
        line = None
        m = self.after or self.before
        if m is not None and not isinstance(path, str):
            line = m.line(path)
        return Finding(severity, code, text, message, line)

    def changed(self, *categories: Category) -> list[Change]:
        wanted = {c.value for c in categories}
        return [c for c in self.changes if c.category in wanted]

    def groups(self, which: str = "after") -> Iterator[tuple[Path, Mapping[str, Any]]]:
        obj = self.a_def if which == "after" else self.b_def
        for i, g in enumerate(seq(dig(obj, "spec", "rayClusterConfig").get("workerGroupSpecs"))):
            if isinstance(g, Mapping):
                name = g.get("groupName")
                seg: Any = Key("groupName", str(name)) if isinstance(name, (str, int)) and name else i
                yield RCC + ("workerGroupSpecs", seg), g


Check = Callable[[Context], Iterator[Finding]]
CHECKS: list[Check] = []


def check(fn: Check) -> Check:
    CHECKS.append(fn)
    return fn


def collect_findings(ctx: Context) -> list[Finding]:
    out: list[Finding] = []
    for fn in CHECKS:
        out.extend(fn(ctx))
    return out


@check
def _schema(ctx: Context) -> Iterator[Finding]:
    for path, message in ctx.schema_errors:
        yield ctx.finding("error", "schema-violation", path,
                          f"the API server rejects this manifest: {message}")
    for path in ctx.unknown:
        yield ctx.finding("warning", "unknown-field", path,
                          "the CRD has no such field: kubectl's strict validation rejects it and "
                          "other clients see it silently pruned")


@check
def _operator_validation(ctx: Context) -> Iterator[Finding]:
    for code, path, message in ctx.op_problems:
        yield ctx.finding("error", code, path,
                          f"KubeRay rejects the RayService (ValidationFailed) and does nothing: {message}")


@check
def _api_version(ctx: Context) -> Iterator[Finding]:
    if ctx.after is not None and ctx.after.api_version == "ray.io/v1alpha1":
        yield ctx.finding("warning", "deprecated-api-version", ("apiVersion",),
                          "ray.io/v1alpha1 is deprecated; move to ray.io/v1 (the stored object is the same)")


@check
def _replicas(ctx: Context) -> Iterator[Finding]:
    for path, g in ctx.groups():
        reps, lo, hi = g.get("replicas"), g.get("minReplicas", 0), g.get("maxReplicas", cap.MAX_INT32)
        if not all(isinstance(v, int) and not isinstance(v, bool) for v in (reps, lo, hi)):
            continue
        explicit = ctx.after is not None and isinstance(
            _get(ctx.after.obj, path + ("replicas",)), int)
        if explicit and not lo <= reps <= hi:
            yield ctx.finding("warning", "replicas-outside-bounds", path + ("replicas",),
                              f"replicas {reps} is outside [{lo}, {hi}]: KubeRay silently runs "
                              f"{min(max(reps, lo), hi)} pods")
        if explicit and ctx.autoscaling:
            yield ctx.finding("info", "replicas-with-autoscaling", path + ("replicas",),
                              "replicas is set in Git while in-tree autoscaling is on: the autoscaler "
                              "owns it, and a GitOps tool may keep resetting it")


@check
def _autoscaler_owned(ctx: Context) -> Iterator[Finding]:
    owned = ctx.changed(Category.AUTOSCALER_OWNED)
    if not owned or ctx.rollout in ("new-cluster", "incremental", "cluster-in-place", "create", "resume"):
        return
    fields = sorted({format_path(c.path) for c in owned})
    yield ctx.finding(
        "warning", "autoscaler-owned-not-propagated", owned[0].path,
        f"{', '.join(fields[:3])}{' …' if len(fields) > 3 else ''} will not reach the running "
        "RayCluster: KubeRay mutes them in its comparison and only copies them at the next cluster "
        "creation or in-place update (kuberay#2331, #4568)")


@check
def _append_resets(ctx: Context) -> Iterator[Finding]:
    if ctx.rollout != "cluster-in-place" or not ctx.changed(Category.WORKER_GROUP_APPENDED):
        return
    yield ctx.finding(
        "warning", "append-resets-replicas", RCC + ("workerGroupSpecs",),
        "the in-place update rewrites every worker group's replicas/minReplicas/maxReplicas from the "
        "RayService, resetting what the autoscaler chose for the existing groups (kuberay#1769)")


@check
def _ignored_alongside(ctx: Context) -> Iterator[Finding]:
    """A change that will not take effect although something else rolls out."""
    if ctx.rollout not in ("serve-in-place", "none"):
        return  # a recreation or in-place update carries these fields along
    ignored = ctx.changed(Category.OPERATOR_IGNORED)
    if ctx.rollout == "serve-in-place" and not ctx.autoscaling:
        ignored += ctx.changed(Category.AUTOSCALER_OWNED)
    for c in ignored:
        yield ctx.finding("warning", "not-applied", c.path,
                          f"{format_path(c.path)} will not take effect now: KubeRay leaves it out of "
                          "its comparison; it reaches a RayCluster only when one is recreated or "
                          "updated in place")


@check
def _cluster_upgrade_strategy(ctx: Context) -> Iterator[Finding]:
    if dig(ctx.a_def, "spec", "rayClusterConfig").get("upgradeStrategy") is not None:
        yield ctx.finding("error", "cluster-upgrade-strategy-set", RCC + ("upgradeStrategy",),
                          "rayClusterConfig.upgradeStrategy must not be set for a RayService: every "
                          "RayCluster built from it fails validation and gets no pods")


@check
def _serve_service(ctx: Context) -> Iterator[Finding]:
    changed = [c for c in ctx.changes if c.path[:2] == ("spec", "serveService")
               and c.category != Category.NO_OP.value]
    if not changed:
        return
    meta = [c for c in changed if c.path[2:3] == ("metadata",)]
    if meta and ctx.before is not None:
        yield ctx.finding("warning", "serve-service-metadata-ignored", meta[0].path,
                          "KubeRay never updates the labels/annotations of an existing serve Service; "
                          "this takes effect only when the Service is recreated")
    spec_changes = [c for c in changed if c.path[2:3] != ("metadata",)]
    if spec_changes and ctx.rollout not in ("new-cluster", "create", "resume"):
        yield ctx.finding("warning", "serve-service-deferred", spec_changes[0].path,
                          "the serve Service spec is only rewritten when traffic switches to another "
                          "RayCluster: this change waits for the next cluster recreation")


@check
def _incremental(ctx: Context) -> Iterator[Finding]:
    if ctx.rollout != "incremental" or ctx.a_def is None:
        return
    opts = dig(ctx.a_def, "spec", "upgradeStrategy", "clusterUpgradeOptions")
    cls = opts.get("gatewayClassName", "?")
    yield ctx.finding("info", "incremental-prerequisites", ("spec", "upgradeStrategy"),
                      f"an incremental upgrade needs the Gateway API CRDs and a controller serving "
                      f"GatewayClass {cls!r}; without them the upgrade stalls at 0 % with the old "
                      "cluster serving")
    if opts.get("stepSizePercent") == 0:
        yield ctx.finding("error", "incremental-never-progresses",
                          ("spec", "upgradeStrategy", "clusterUpgradeOptions", "stepSizePercent"),
                          "stepSizePercent 0 passes validation but traffic never moves: the upgrade "
                          "never completes")


@check
def _ray_version(ctx: Context) -> Iterator[Finding]:
    rcc = dig(ctx.a_def, "spec", "rayClusterConfig")
    version = str(rcc.get("rayVersion") or "")
    if not version:
        return
    head = [("headGroupSpec",)]
    for path, g in [(RCC + p, mapping(rcc.get(p[0]))) for p in head] + list(ctx.groups()):
        for c in seq(dig(g, "template", "spec").get("containers"))[:1]:
            image = str(mapping(c).get("image", ""))
            name = mapping(c).get("name")
            seg: Any = Key("name", str(name)) if isinstance(name, str) and name else 0
            m = _TAG.search(image.split("@")[0])
            if not m:
                continue
            tag = m.group("tag")
            tag_version = re.match(r"^(\d+\.\d+\.\d+)", tag) or re.match(r"^(\d+\.\d+)", tag)
            if tag_version and not (version.startswith(tag_version.group(1))
                                    or tag_version.group(1).startswith(version)):
                yield ctx.finding("warning", "ray-version-mismatch",
                                  path + ("template", "spec", "containers", seg, "image"),
                                  f"image tag {tag} does not match rayVersion {version}: the autoscaler "
                                  "and KubeRay's feature checks use rayVersion")
                return


@check
def _gpu_scheduling(ctx: Context) -> Iterator[Finding]:
    if ctx.after is None:
        return
    for path, g in ctx.groups():
        spec = dig(g, "template", "spec")
        gpus = [k for c in seq(spec.get("containers")) for k in cap.container_resources(c)
                if cap.is_accelerator(k)]
        if gpus and not spec.get("tolerations") and not spec.get("nodeSelector") and not spec.get("affinity"):
            yield ctx.finding("info", "gpu-without-toleration", path + ("template", "spec"),
                              f"pods request {gpus[0]} but have no toleration, nodeSelector or affinity: "
                              "on tainted GPU nodes they stay Pending")


@check
def _serve_config(ctx: Context) -> Iterator[Finding]:
    if ctx.a_serve.error:
        yield ctx.finding("error", "serve-config-invalid", ("spec", "serveConfigV2"),
                          f"serveConfigV2 cannot be read ({ctx.a_serve.error}); KubeRay accepts it but "
                          "every submission to Ray Serve fails")
    if ctx.after is not None and ctx.before is not None:
        noop = [c for c in ctx.changes if c.path == serve.SERVE_PATH and c.category == Category.NO_OP.value]
        if noop:
            yield ctx.finding("info", "serve-config-resubmitted", ("spec", "serveConfigV2"),
                              "the serveConfigV2 text changed but not its content: KubeRay re-submits it "
                              "and Ray Serve changes nothing")
        for c in ctx.changes:
            if c.detail == "not-applied-at-runtime":
                yield ctx.finding("warning", "serve-option-not-applied", c.path,
                                  f"Ray Serve does not apply {c.path[-1]} to a running instance; it takes "
                                  "effect only on a new RayCluster")
    info = ctx.capacity.serve
    if info and info.get("ceiling") is not None and info["ceiling"] >= 0 and info["after"] > info["ceiling"]:
        yield ctx.finding("warning", "serve-gpu-demand-exceeds-supply", ("spec", "serveConfigV2"),
                          f"Serve deployments ask for up to {info['after']} GPUs but the worker groups "
                          f"can offer at most {info['ceiling']} at maxReplicas: replicas stay pending")


@check
def _suspend(ctx: Context) -> Iterator[Finding]:
    if ctx.rollout == "suspend":
        yield ctx.finding("warning", "suspend-stops-serving", ("spec", "suspend"),
                          "every RayCluster and Service of this RayService is deleted: serving stops "
                          "until spec.suspend is false again, which builds a new cluster from scratch")


@check
def _latent(ctx: Context) -> Iterator[Finding]:
    if ctx.rollout == "not-applied" and Category.CLUSTER_RECREATE in ctx.real and not ctx.schema_errors \
            and not ctx.op_problems:
        yield ctx.finding("info", "latent-cluster-change", RCC,
                          "the RayService now differs from its running RayCluster; the difference is "
                          "applied later by surprise: at the next operator upgrade (in place), a strategy "
                          "switch, or a cluster recreation")
        if Category.SERVE_IN_PLACE in ctx.real:
            yield ctx.finding("info", "serve-applied-anyway", ("spec", "serveConfigV2"),
                              "the serveConfigV2 part of this change is still applied to the running cluster")


@check
def _live(ctx: Context) -> Iterator[Finding]:
    live = ctx.live
    if live is None:
        return
    for path in live.divergence[:5]:
        yield ctx.finding("warning", "latent-divergence", path,
                          f"the running RayCluster {live.active_cluster or ''} differs from the live "
                          "RayService here: an earlier change was never applied and will ride along "
                          "with the next recreation")
    if live.upgrade_in_progress:
        yield ctx.finding("warning", "upgrade-in-progress", ("status", "pendingServiceStatus"),
                          f"RayCluster {live.pending_cluster} is still being prepared; a new cluster "
                          "change replaces it and both keep running until the deletion delay ends")


@check
def _argo(ctx: Context) -> Iterator[Finding]:
    for app in ctx.argo_apps:
        spec = dig(app, "spec")
        options = seq(dig(spec, "syncPolicy").get("syncOptions"))
        if "RespectIgnoreDifferences=true" not in options:
            continue
        rules = [r for r in seq(spec.get("ignoreDifferences")) if isinstance(r, Mapping)
                 and r.get("kind") in ("RayService", "RayCluster", "*")]
        paths = [p for r in rules for p in seq(r.get("jqPathExpressions")) + seq(r.get("jsonPointers"))]
        if any("workerGroupSpecs" in str(p) for p in paths):
            name = dig(app, "metadata").get("name", "?")
            yield ctx.finding(
                "warning", "respect-ignore-differences-atomic", f"Application {name}",
                "RespectIgnoreDifferences=true with an ignore rule inside workerGroupSpecs copies the "
                "whole live workerGroupSpecs list into every sync (the CRD list is atomic): Git edits "
                "to worker groups are silently not applied (argo-cd#27480)")


def _get(obj: Any, path: Path) -> Any:
    for seg in path:
        if isinstance(seg, Key):
            obj = next((x for x in seq(obj) if isinstance(x, Mapping)
                        and str(x.get(seg.field)) == seg.value), ABSENT)
        elif isinstance(seg, int):
            obj = obj[seg] if isinstance(obj, list) and seg < len(obj) else ABSENT
        else:
            obj = obj.get(seg, ABSENT) if isinstance(obj, Mapping) else ABSENT
        if obj is ABSENT:
            return ABSENT
    return obj
