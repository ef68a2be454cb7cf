"""Hazards users hit with RayService changes, each a :class:`~diffing.report.Finding`.

Every check reads the analysis (:class:`~diffing.rayservice.analyze.RayServiceAnalysis`, after
its rollout and capacity) and yields findings; none of them changes the rollout. They run in
the order they are declared. Codes are stable: scripts and policies may match on them.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping

from diffing.engine import RCC
from diffing.hints import TYPE_CHECKING, Any
from diffing.kube import resources as cap
from diffing.kube.gojson import ABSENT
from diffing.kube.paths import Key, Path, format_path
from diffing.kube.pods import pod_problems
from diffing.kube.values import dig, mapping, seq
from diffing.managed import external_manager
from diffing.rayservice import serve
from diffing.rayservice.capacity import builds_suspended, eligible_nodes, ray_nodes
from diffing.rayservice.rollout import BOUNDS, replica_changes
from diffing.rayservice.rules import Category
from diffing.rayservice.validation import check_rayservice
from diffing.report import Change, Finding
from diffing.vocab import Rollout, Severity

if TYPE_CHECKING:
    from diffing.rayservice.analyze import RayServiceAnalysis

_TAG = re.compile(r":(?P<tag>[^/@:]+)$")
_TAG_VERSION = re.compile(r"(\d+\.\d+(?:\.\d+)?)")  # 2.52.0-py311-gpu -> 2.52.0; 2.52 -> 2.52


def changed(a: RayServiceAnalysis, *categories: Category) -> list[Change]:
    wanted = {c.value for c in categories}
    return [c for c in a.changes if c.category in wanted]


def groups(a: RayServiceAnalysis, which: str = "after") -> Iterator[tuple[Path, Mapping[str, Any]]]:
    """The worker groups of one side (defaulted), each with its path (by ``groupName``)."""
    obj = a.a_def if which == "after" else a.b_def
    for i, g in enumerate(seq(dig(obj, "spec", "rayClusterConfig").get("workerGroupSpecs"))):
        if isinstance(g, Mapping):
            name = g.get("groupName")
            seg: Any = Key("groupName", str(name)) if isinstance(name, (str, int)) and name else i
            yield RCC + ("workerGroupSpecs", seg), g


Check = Callable[["RayServiceAnalysis"], Iterator[Finding]]
CHECKS: list[Check] = []


def check(fn: Check) -> Check:
    CHECKS.append(fn)
    return fn


def collect_findings(a: RayServiceAnalysis) -> list[Finding]:
    out: list[Finding] = []
    for fn in CHECKS:
        out.extend(fn(a))
    return out


@check
def _schema(a: RayServiceAnalysis) -> Iterator[Finding]:
    yield from a.schema_findings()


@check
def _built_suspended(a: RayServiceAnalysis) -> Iterator[Finding]:
    if a.rollout in (Rollout.NEW_CLUSTER, Rollout.INCREMENTAL) and builds_suspended(a):
        yield a.finding(Severity.ERROR, "new-cluster-suspended", RCC + ("suspend",),
                        "rayClusterConfig.suspend is true: the new RayCluster is created suspended and never "
                        "gets a pod, so its Serve apps never run and the upgrade never finishes; the old "
                        "cluster keeps serving")


@check
def _shared_names(a: RayServiceAnalysis) -> Iterator[Finding]:
    """Two worker groups with one name share the cluster's pods (docs/semantics/raycluster.md §3.5)."""
    if a.after is None:
        return
    for i, name in cap.shared_group_names(a.a_spec.get("rayClusterConfig")):
        yield a.finding(Severity.WARNING, "shared-group-name", RCC + ("workerGroupSpecs", i),
                        cap.SHARED_NAME.format(name=name))


@check
def _operator_validation(a: RayServiceAnalysis) -> Iterator[Finding]:
    for code, path, message in a.problems:
        yield a.finding(Severity.ERROR, code, path,
                        f"KubeRay rejects the RayService (ValidationFailed) and does nothing: {message}")


@check
def _api_version(a: RayServiceAnalysis) -> Iterator[Finding]:
    if a.after is not None and a.after.api_version == "ray.io/v1alpha1":
        yield a.finding(Severity.WARNING, "deprecated-api-version", ("apiVersion",),
                        "ray.io/v1alpha1 is deprecated and frozen: fields added since (upgradeStrategy, "
                        "gcsFaultToleranceOptions, numOfHosts, ...) are pruned on write, from the stored "
                        "object too; move to ray.io/v1")


@check
def _replicas(a: RayServiceAnalysis) -> Iterator[Finding]:
    # The manifest's own groups, indexed once (a lookup per group by name was quadratic in groups).
    raw = seq(dig(a.after.obj, "spec", "rayClusterConfig").get("workerGroupSpecs")) if a.after else []
    by_name: dict[str, Any] = {}
    for item in raw:
        if isinstance(item, Mapping):
            by_name.setdefault(str(item.get("groupName")), item)  # the first, as a path lookup finds
    for path, g in groups(a):
        reps, lo, hi = g.get("replicas"), g.get("minReplicas", 0), g.get("maxReplicas", cap.MAX_INT32)
        if not all(isinstance(v, int) and not isinstance(v, bool) for v in (reps, lo, hi)):
            continue
        seg = path[-1]
        own = by_name.get(seg.value) if isinstance(seg, Key) else (
            raw[seg] if isinstance(seg, int) and seg < len(raw) else None)
        explicit = isinstance(mapping(own).get("replicas"), int)
        if explicit and not lo <= reps <= hi:
            yield a.finding(Severity.WARNING, "replicas-outside-bounds", path + ("replicas",),
                            f"replicas {reps} is outside [{lo}, {hi}]: KubeRay silently runs "
                            f"{min(max(reps, lo), hi)} pods")
        if explicit and a.autoscaling:
            yield a.finding(Severity.INFO, "replicas-with-autoscaling", path + ("replicas",),
                            "replicas is set in Git while in-tree autoscaling is on: the autoscaler "
                            "owns it, and a GitOps tool may keep resetting it")


@check
def _managed_by(a: RayServiceAnalysis) -> Iterator[Finding]:
    """``managedBy`` another controller: KubeRay skips the object (rayservice_controller.go:121-124)."""
    after = external_manager(a.a_def) if a.after is not None else None
    before = external_manager(a.b_def) if a.before is not None else None
    if after is not None:
        left = ("; the RayClusters KubeRay runs for it now stay as they are, no longer updated or cleaned "
                "up by KubeRay" if a.before is not None and before is None else "")
        yield a.finding(Severity.WARNING, "managed-by-other-controller", ("spec", "managedBy"),
                        f"spec.managedBy is {after}: this KubeRay operator does not reconcile the "
                        f"RayService at all (no validation, no RayCluster, no extra capacity here); "
                        f"{after} carries out its changes{left}")
    elif before is not None:
        yield a.finding(Severity.INFO, "managed-by-other-controller", ("spec", "managedBy"),
                        f"spec.managedBy was {before}" + (
                            ": KubeRay takes the RayService over and builds its first RayCluster"
                            if a.after is not None else ": KubeRay had nothing running for it here"))


@check
def _created_suspended(a: RayServiceAnalysis) -> Iterator[Finding]:
    if a.rollout == Rollout.CREATE and a.rules.has_rayservice_suspend and \
            dig(a.a_def, "spec").get("suspend") is True:
        yield a.finding(Severity.INFO, "created-suspended", ("spec", "suspend"),
                        "created with spec.suspend: true: KubeRay builds no RayCluster (no capacity now); "
                        "turning it false later builds one at full size")


@check
def _pods_rejected(a: RayServiceAnalysis) -> Iterator[Finding]:
    """Templates whose pods the API server rejects (Pod validation, see :mod:`diffing.kube.pods`)."""
    if a.a_def is None:
        return
    problems = pod_problems(dig(a.a_def, "spec", "rayClusterConfig"), RCC)
    if not problems:
        return
    known = set()
    if a.b_def is not None:
        known = {(p.rule, p.path) for p in pod_problems(dig(a.b_def, "spec", "rayClusterConfig"), RCC)}
    if a.rollout in (Rollout.NEW_CLUSTER, Rollout.INCREMENTAL):
        effect = "the new RayCluster never becomes ready, so the rollout never finishes"
    elif a.rollout in (Rollout.CREATE, Rollout.RESUME):
        effect = "the RayService never serves"
    else:
        effect = "every pod created from it later (a scale-up, the next recreation) fails"
    for p in problems:
        new = (p.rule, p.path) not in known
        if p.rule == "quantity-out-of-range":  # accepted by the API server, never placed
            what = f"the pods KubeRay builds from this template can never be scheduled: {p.message}"
        else:
            what = (f"the API server rejects the pods KubeRay builds from this template: {p.message} "
                    f"(Kubernetes {p.rule.split('/')[0]}); they are never created")
        known_too = "" if new else "; the running manifest has the same problem"
        yield a.finding(Severity.ERROR if new else Severity.WARNING, "pod-rejected", p.path,
                        f"{what} and {effect}{known_too}")


@check
def _serve_placement(a: RayServiceAnalysis) -> Iterator[Finding]:
    """A deployment whose replicas ``max_replicas_per_node`` and the node count can never place."""
    needs = [n for n in serve.replica_needs(a.a_serve) if n.per_node is not None]
    if not needs or a.a_def is None:
        return
    nodes = ray_nodes(dig(a.a_def, "spec", "rayClusterConfig"), a.autoscaling)
    where = "at maxReplicas" if a.autoscaling else "at the fixed replicas (autoscaling is off)"
    for need in needs:
        eligible = eligible_nodes(nodes, need.cpus, need.gpus)
        assert need.per_node is not None
        if eligible is not None and need.replicas > need.per_node * eligible:
            yield a.finding(Severity.WARNING, "serve-replicas-unplaceable", need.path,
                            f"{need.path[-1]!s} asks for up to {need.replicas} replicas but "
                            f"max_replicas_per_node {need.per_node} on the {eligible} Ray node(s) that "
                            f"can hold one {where} places at most {need.per_node * eligible}: "
                            "the rest stay pending")


@check
def _autoscaler_owned(a: RayServiceAnalysis) -> Iterator[Finding]:
    """Replica fields that never reach the running RayCluster. Without autoscaling nothing owns them:
    the finding is ``not-applied`` (which :func:`_ignored_alongside` gives beside a Serve update)."""
    owned = replica_changes(a)
    if not owned or a.rollout in (Rollout.NEW_CLUSTER, Rollout.INCREMENTAL, Rollout.CLUSTER_IN_PLACE,
                                 Rollout.CREATE, Rollout.RESUME) \
            or external_manager(a.a_def) is not None:
        return
    if not a.autoscaling and a.rollout in (Rollout.SERVE_IN_PLACE, Rollout.NONE):
        return
    fields = sorted({format_path(c.path) for c in owned})
    code = "autoscaler-owned-not-propagated" if a.autoscaling else "not-applied"
    yield a.finding(
        Severity.WARNING, code, owned[0].path,
        f"{', '.join(fields[:3])}{' …' if len(fields) > 3 else ''} will not reach the running "
        "RayCluster: KubeRay mutes them in its comparison and only copies them at the next cluster "
        "creation or in-place update (kuberay#2331, #4568)")


@check
def _append_resets(a: RayServiceAnalysis) -> Iterator[Finding]:
    """Only with autoscaling: without it the running groups already have the RayService's replicas."""
    if a.rollout != Rollout.CLUSTER_IN_PLACE or not a.autoscaling \
            or not changed(a, Category.WORKER_GROUP_APPENDED):
        return
    yield a.finding(
        Severity.WARNING, "append-resets-replicas", RCC + ("workerGroupSpecs",),
        "the in-place update rewrites every worker group's replicas/minReplicas/maxReplicas from the "
        "RayService, resetting what the autoscaler chose for the existing groups (kuberay#1769)")


@check
def _ignored_alongside(a: RayServiceAnalysis) -> Iterator[Finding]:
    """A change that will not take effect although something else rolls out."""
    if a.rollout not in (Rollout.SERVE_IN_PLACE, Rollout.NONE) or external_manager(a.a_def) is not None:
        return  # a recreation or in-place update carries these fields along
    ignored = changed(a, Category.OPERATOR_IGNORED)
    if a.rollout == Rollout.SERVE_IN_PLACE:
        # minReplicas/maxReplicas never reach the running cluster, autoscaling or not (without it
        # every replica field is operator-ignored already).
        ignored += [c for c in changed(a, Category.AUTOSCALER_OWNED) if c.path[-1] in BOUNDS]
    for c in ignored:
        yield a.finding(Severity.WARNING, "not-applied", c.path,
                        f"{format_path(c.path)} will not take effect now: KubeRay leaves it out of "
                        "its comparison; it reaches a RayCluster only when one is recreated or "
                        "updated in place")


@check
def _cluster_upgrade_strategy(a: RayServiceAnalysis) -> Iterator[Finding]:
    """Rules the RayCluster controller enforces on the cluster built from the RayService."""
    if a.a_def is None:
        return
    rules = a.rules
    for v in check_rayservice(a.a_def, rules.minor, rules.gates(a.policy.feature_gates),
                              scope="raycluster"):
        yield a.finding(Severity.ERROR, v.code, v.path, v.message)


@check
def _serve_service(a: RayServiceAnalysis) -> Iterator[Finding]:
    changed = [c for c in a.changes if c.path[:2] == ("spec", "serveService")
               and c.category != Category.NO_OP.value]
    if not changed:
        return
    meta = [c for c in changed if c.path[2:3] == ("metadata",)]
    if meta and a.before is not None:
        yield a.finding(Severity.WARNING, "serve-service-metadata-ignored", meta[0].path,
                        "KubeRay never updates the labels/annotations of an existing serve Service; "
                        "this takes effect only when the Service is recreated")
    spec_changes = [c for c in changed if c.path[2:3] != ("metadata",)]
    if spec_changes and a.rollout not in (Rollout.NEW_CLUSTER, Rollout.CREATE, Rollout.RESUME):
        yield a.finding(Severity.WARNING, "serve-service-deferred", spec_changes[0].path,
                        "the serve Service spec is only rewritten when traffic switches to another "
                        "RayCluster: this change waits for the next cluster recreation")


@check
def _incremental(a: RayServiceAnalysis) -> Iterator[Finding]:
    if a.rollout != Rollout.INCREMENTAL or a.a_def is None:
        return
    opts = dig(a.a_def, "spec", "upgradeStrategy", "clusterUpgradeOptions")
    cls = opts.get("gatewayClassName", "?")
    yield a.finding(Severity.INFO, "incremental-prerequisites", ("spec", "upgradeStrategy"),
                    f"an incremental upgrade needs the Gateway API CRDs and a controller serving "
                    f"GatewayClass {cls!r}; without them the upgrade stalls at 0 % with the old "
                    "cluster serving")
    if opts.get("stepSizePercent") == 0:
        yield a.finding(Severity.ERROR, "incremental-never-progresses",
                        ("spec", "upgradeStrategy", "clusterUpgradeOptions", "stepSizePercent"),
                        "stepSizePercent 0 passes validation but traffic never moves: the upgrade "
                        "never completes")


@check
def _ray_version(a: RayServiceAnalysis) -> Iterator[Finding]:
    rcc = dig(a.a_def, "spec", "rayClusterConfig")
    version = str(rcc.get("rayVersion") or "")
    if not version:
        return
    head = [("headGroupSpec",)]
    for path, g in [(RCC + p, mapping(rcc.get(p[0]))) for p in head] + list(groups(a)):
        for c in seq(dig(g, "template", "spec").get("containers"))[:1]:
            image = str(mapping(c).get("image", ""))
            name = mapping(c).get("name")
            seg: Any = Key("name", str(name)) if isinstance(name, str) and name else 0
            m = _TAG.search(image.split("@")[0])
            if not m:
                continue
            tag = m.group("tag")
            tag_version = _TAG_VERSION.match(tag)
            if tag_version and not (version.startswith(tag_version.group(1))
                                    or tag_version.group(1).startswith(version)):
                yield a.finding(Severity.WARNING, "ray-version-mismatch",
                                path + ("template", "spec", "containers", seg, "image"),
                                f"image tag {tag} does not match rayVersion {version}: the autoscaler "
                                "and KubeRay's feature checks use rayVersion")
                return


@check
def _gpu_scheduling(a: RayServiceAnalysis) -> Iterator[Finding]:
    if a.after is None:
        return
    for path, g in groups(a):
        spec = dig(g, "template", "spec")
        gpus = [k for c in seq(spec.get("containers")) for k in cap.container_resources(c)
                if a.policy.counts(k)]
        if gpus and not spec.get("tolerations") and not spec.get("nodeSelector") and not spec.get("affinity"):
            yield a.finding(Severity.INFO, "gpu-without-toleration", path + ("template", "spec"),
                            f"pods request {gpus[0]} but have no toleration, nodeSelector or affinity: "
                            "on tainted GPU nodes they stay Pending")


@check
def _serve_config(a: RayServiceAnalysis) -> Iterator[Finding]:
    if a.a_serve.error:
        yield a.finding(Severity.ERROR, "serve-config-invalid", ("spec", "serveConfigV2"),
                        f"serveConfigV2 cannot be read ({a.a_serve.error}); KubeRay accepts it but "
                        "every submission to Ray Serve fails")
    if a.after is not None and a.before is not None:
        if any(c.path == serve.SERVE_PATH and c.detail in serve.SAME_CONTENT for c in a.changes):
            yield a.finding(Severity.INFO, "serve-config-resubmitted", ("spec", "serveConfigV2"),
                            "the serveConfigV2 text changed but not its content: KubeRay re-submits it "
                            "and Ray Serve changes nothing")
        for c in a.changes:
            if c.detail == "not-applied-at-runtime":
                yield a.finding(Severity.WARNING, "serve-option-not-applied", c.path,
                                f"Ray Serve does not apply {c.path[-1]} to a running instance; it takes "
                                "effect only on a new RayCluster")
    assert a.capacity is not None
    info = a.capacity.serve
    if info and info.get("ceiling") is not None and info["ceiling"] >= 0 and info["after"] > info["ceiling"]:
        yield a.finding(Severity.WARNING, "serve-gpu-demand-exceeds-supply", ("spec", "serveConfigV2"),
                        f"Serve deployments ask for up to {info['after']} GPUs but the worker groups "
                        f"can offer at most {info['ceiling']} at maxReplicas: replicas stay pending")


@check
def _suspend(a: RayServiceAnalysis) -> Iterator[Finding]:
    if a.rollout == Rollout.SUSPEND:
        yield a.finding(Severity.WARNING, "suspend-stops-serving", ("spec", "suspend"),
                        "every RayCluster and Service of this RayService is deleted: serving stops "
                        "until spec.suspend is false again, which builds a new cluster from scratch")


@check
def _latent(a: RayServiceAnalysis) -> Iterator[Finding]:
    if a.rollout == Rollout.NOT_APPLIED and Category.CLUSTER_RECREATE in a.real and not a.schema_errors \
            and not a.problems:
        yield a.finding(Severity.INFO, "latent-cluster-change", RCC,
                        "the RayService now differs from its running RayCluster; the difference is "
                        "applied later by surprise: at the next operator upgrade (in place), a strategy "
                        "switch, or a cluster recreation")
        if Category.SERVE_IN_PLACE in a.real:
            yield a.finding(Severity.INFO, "serve-applied-anyway", ("spec", "serveConfigV2"),
                            "the serveConfigV2 part of this change is still applied to the running cluster")


@check
def _live(a: RayServiceAnalysis) -> Iterator[Finding]:
    live = a.live
    if live is None:
        return
    for path in live.divergence[:5]:
        yield a.finding(Severity.WARNING, "latent-divergence", path,
                        f"the running RayCluster {live.active_cluster or ''} differs from the live "
                        "RayService here: an earlier change was never applied and will ride along "
                        "with the next recreation")
    if live.upgrade_in_progress:
        yield a.finding(Severity.WARNING, "upgrade-in-progress", ("status", "pendingServiceStatus"),
                        f"RayCluster {live.pending_cluster} is still being prepared; a new cluster "
                        "change replaces it and both keep running until the deletion delay ends")


@check
def _argo(a: RayServiceAnalysis) -> Iterator[Finding]:
    for app in a.argo_apps:
        spec = dig(app, "spec")
        options = seq(dig(spec, "syncPolicy").get("syncOptions"))
        if "RespectIgnoreDifferences=true" not in options:
            continue
        rules = [r for r in seq(spec.get("ignoreDifferences")) if isinstance(r, Mapping)
                 and r.get("kind") in ("RayService", "RayCluster", "*")]
        paths = [p for r in rules for p in seq(r.get("jqPathExpressions")) + seq(r.get("jsonPointers"))]
        if any("workerGroupSpecs" in str(p) for p in paths):
            name = dig(app, "metadata").get("name", "?")
            yield a.finding(
                Severity.WARNING, "respect-ignore-differences-atomic", f"Application {name}",
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


