"""The findings about a standalone RayCluster change: what the API server and KubeRay reject, the
pods it orphans or deletes, version skew, the autoscaler's fields, what is never applied.

RCC = KubeRay v1.7.0 ``ray-operator/controllers/ray/raycluster_controller.go``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

from diffing.kube import resources as cap
from diffing.kube.gojson import ABSENT
from diffing.kube.paths import Key, Path
from diffing.kube.pods import pod_problems
from diffing.kube.values import dig, mapping, seq
from diffing.raycluster.changes import GROUPS, group_item, probes_follow, real, why_unapplied
from diffing.raycluster.rules import UNIFIED_HEALTH_CHECK_SINCE
from diffing.raycluster.rules import ClusterCategory as C
from diffing.raycluster.validation_subject import first_container
from diffing.report import Finding
from diffing.vocab import Rollout

if TYPE_CHECKING:
    from diffing.raycluster.analyze import RayClusterAnalysis



def collect(a: RayClusterAnalysis) -> Iterator[Finding]:
    """Stage 5, in the order a reviewer reads them: rejections first, then what the rollout does."""
    yield from a.schema_findings()
    for code, path, message in a.problems:
        yield a.finding("error", code, path,
                        f"KubeRay freezes the RayCluster (nothing is reconciled, not even failed pods "
                        f"replaced): {message}")
    if a.after is not None and a.after.api_version == "ray.io/v1alpha1":
        yield a.finding("warning", "deprecated-api-version", ("apiVersion",),
                        "ray.io/v1alpha1 is deprecated and frozen: fields added since (upgradeStrategy, "
                        "managedBy, gcsFaultToleranceOptions, numOfHosts, ...) are pruned on write, from the "
                        "stored object too; move to ray.io/v1")
    yield from _pod_findings(a)
    yield from _shared_names(a)
    yield from _replica_findings(a)
    yield from _autoscaler_fight(a)
    yield from _pods_moved(a)
    yield from _skew(a)
    yield from _strategy_switch(a)
    yield from _spec_switches(a)
    yield from _unapplied(a)


def _pod_findings(a: RayClusterAnalysis) -> Iterator[Finding]:
    if a.after is None:
        return
    problems = pod_problems(a.a_spec, ("spec",))
    known = {(p.rule, p.path) for p in pod_problems(a.b_spec, ("spec",))} if a.before else set()
    for p in problems:
        new = (p.rule, p.path) not in known
        yield a.finding("error" if new else "warning", "pod-rejected", p.path,
                        f"the API server rejects (or can never place) the pods KubeRay builds from this "
                        f"template: {p.message}; every pod created from it fails"
                        + ("" if new else "; the running manifest has the same problem"))


def _shared_names(a: RayClusterAnalysis) -> Iterator[Finding]:
    """Two worker groups with one name (docs/semantics/raycluster.md §3.5)."""
    if a.after is None:
        return
    for i, name in cap.shared_group_names(a.a_spec):
        yield a.finding("warning", "shared-group-name", GROUPS + (i,), cap.SHARED_NAME.format(name=name))


def _replica_findings(a: RayClusterAnalysis) -> Iterator[Finding]:
    if a.after is None:
        return
    for g in seq(a.after.obj.get("spec", {}).get("workerGroupSpecs")):
        g = mapping(g)
        name = g.get("groupName")
        path = GROUPS + (Key("groupName", str(name)),)
        reps = g.get("replicas")
        lo, hi = g.get("minReplicas", 0), g.get("maxReplicas", cap.MAX_INT32)
        numbers = all(isinstance(v, int) and not isinstance(v, bool) for v in (reps, lo, hi))
        if numbers and not lo <= reps <= hi:
            yield a.finding("warning", "replicas-outside-bounds", path + ("replicas",),
                            f"replicas {reps} is outside [{lo}, {hi}]: KubeRay runs {min(max(reps, lo), hi)} "
                            "pods, while status.desiredGPU counts the raw value (utils/util.go:389-407, "
                            "479-493)")
        if seq(dig(g, "scaleStrategy").get("workersToDelete")):
            yield a.finding("warning", "workers-to-delete-in-git",
                            path + ("scaleStrategy", "workersToDelete"),
                            "workersToDelete in Git is deleted again on every sync (the operator never "
                            "clears it, RCC:1132-1153): leave it to the autoscaler and ignore the field")


def _autoscaler_fight(a: RayClusterAnalysis) -> Iterator[Finding]:
    """Git sets what the Ray autoscaler owns (docs/semantics/raycluster.md §5.4)."""
    if a.after is None or not a.autoscaling or a.before is None:
        return
    owned = [c for c in a.changes if c.category == C.AUTOSCALER_OWNED.value]
    for c in owned:
        up = isinstance(c.after, int) and isinstance(c.before, int) and c.after > c.before
        effect = ("KubeRay creates the extra pods now, and the autoscaler scales them in again once idle"
                  if up else "KubeRay deletes nothing (autoscaling is on) and the autoscaler overwrites it")
        yield a.finding("warning", "autoscaler-fight", c.path,
                        f"Git sets a field the Ray autoscaler owns: {effect}; with self-heal Argo CD "
                        "resets it again, a loop (docs/semantics/raycluster.md §5.4)")
    live = a.live
    if live is not None and live.worker_replicas and any(c not in a.unapplied for c in real(a)):
        for g in seq(a.a_spec.get("workerGroupSpecs")):
            g = mapping(g)
            name = str(g.get("groupName"))
            git, now = g.get("replicas"), live.worker_replicas.get(name)
            if isinstance(git, int) and isinstance(now, int) and git != now and not any(
                    c.path[:3] == GROUPS + (Key("groupName", name),) for c in owned):
                yield a.finding("warning", "autoscaler-fight", GROUPS + (Key("groupName", name), "replicas"),
                                f"applying this change also sends Git's replicas {git} for group {name}, "
                                f"which the autoscaler has at {now}: keep Git's replicas equal to "
                                "minReplicas (or leave it out) so a sync never resets it")


def _pods_moved(a: RayClusterAnalysis) -> Iterator[Finding]:
    """Pods the rollout orphans, deletes without draining, or restarts all at once."""
    moves, rollout = a.moves, a.rollout
    refused = bool(a.schema_errors or a.problems)
    if moves.orphaned and rollout not in (Rollout.RECREATE, Rollout.DELETE, Rollout.NOT_APPLIED) or (
            moves.orphaned and rollout == Rollout.NOT_APPLIED and not refused):
        for name, pods in moves.orphaned.items():
            how = ("its numOfHosts changed: the pods of the old layout are not reconciled any more "
                   "(inferred from common/pod.go:673-681)" if name in moves.hosts_changed else
                   "the group is no longer in the spec: KubeRay never lists or deletes its pods "
                   "(RCC:1069-1079; networkpolicy_controller.go:99-105)")
            yield a.finding("warning", "orphaned-pods", GROUPS + (Key("groupName", name),),
                            f"{pods} pod(s) of worker group {name} keep running and keep their resources: "
                            f"{how}; the Ray autoscaler may crash-loop on them (kuberay#1739)")
    if rollout == Rollout.SCALE and not a.autoscaling:
        for name, pods in moves.deleted.items():
            if pods and name not in moves.hosts_changed:
                yield a.finding("warning", "scale-in-deletes-pods", GROUPS + (Key("groupName", name),),
                                f"KubeRay deletes {pods} pod(s) of group {name} now, picked in list order "
                                "and not drained: whatever runs on them is lost (RCC:1218-1256)")
    if rollout == Rollout.RECREATE:
        yield a.finding("warning", "recreate-downtime", ("spec", "upgradeStrategy", "type"),
                        "Recreate deletes the head and every worker at once and builds them again: all Ray "
                        "tasks, actors and jobs on the cluster are lost (no surge; RCC:968-982)")


def _ray_images(spec: Mapping[str, Any]) -> dict[Path, Any]:
    """The Ray image of each worker group, then the head's (a new worker is the likelier pod)."""
    out: dict[Path, Any] = {}
    for g in seq(spec.get("workerGroupSpecs")):
        g = mapping(g)
        out[GROUPS + (Key("groupName", str(g.get("groupName"))),)] = _first_image(g)
    out[("spec", "headGroupSpec")] = _first_image(mapping(spec.get("headGroupSpec")))
    return out


def _first_image(group: Mapping[str, Any]) -> Any:
    return first_container(group).get("image")


def _skew(a: RayClusterAnalysis) -> Iterator[Finding]:
    """A Ray version change that reaches only new pods: new workers next to an old head."""
    if a.before is None or a.after is None or a.rollout not in (Rollout.LATENT, Rollout.SCALE, Rollout.NONE):
        return
    if a.b_spec.get("suspend") is True:
        return
    old, new = _ray_images(a.b_spec), _ray_images(a.a_spec)
    for path, image in new.items():
        if path in old and old[path] != image and image is not None and not _same_ray(old[path], image):
            yield a.finding("warning", "version-skew", path + ("template", "spec", "containers"),
                            f"the Ray image {old[path]} → {image} reaches only pods created later: the group "
                            "runs both images, and new workers may fail to join the old head; restart the "
                            "cluster (upgradeStrategy Recreate) or roll it deliberately")
            return
    if a.b_spec.get("rayVersion") != a.a_spec.get("rayVersion") and probes_follow(a):
        yield a.finding("warning", "version-skew", ("spec", "rayVersion"),
                        f"rayVersion {a.b_spec.get('rayVersion')} → {a.a_spec.get('rayVersion')} changes the "
                        "health-check probes KubeRay gives pods created later (one HTTP endpoint from Ray "
                        f"{'.'.join(map(str, UNIFIED_HEALTH_CHECK_SINCE))} on): new workers next to the old "
                        "head, and a probe only an image running that Ray or later answers")


_RAY_VERSION = re.compile(r":(?:[^:@/]*?[^0-9.])?([0-9]+\.[0-9]+\.[0-9]+)(?![0-9.])")


def _same_ray(old: Any, new: Any) -> bool:
    """Both image tags name the same Ray version (``2.52.0-py311`` → ``2.52.0-py311-cu124``).
    A tag without a readable version (a digest, ``latest``) is not assumed to be the same."""
    x, y = _RAY_VERSION.search(str(old)), _RAY_VERSION.search(str(new))
    return x is not None and y is not None and x.group(1) == y.group(1)


def _strategy_switch(a: RayClusterAnalysis) -> Iterator[Finding]:
    if a.before is None or not a.recreate_on or dig(a.b_spec, "upgradeStrategy").get("type") == "Recreate":
        return
    if a.rollout == Rollout.RECREATE:
        return
    live = a.live
    if live is not None and live.head_hash:
        return  # the live comparison decided it
    yield a.finding("info", "recreate-switch", ("spec", "upgradeStrategy", "type"),
                    "switching to Recreate restarts every pod at once if the head pod was built from an "
                    "older spec (earlier changes that waited for new pods): compare the head pod's "
                    "ray.io/upgrade-strategy-recreate-hash annotation before merging (RCC:1495-1499)")


def _spec_switches(a: RayClusterAnalysis) -> Iterator[Finding]:
    """``suspend: true`` removed; in-tree autoscaling turned off."""
    if a.before is not None and a.after is not None and a.b_spec.get("suspend") is True \
            and "suspend" not in a.a_spec:
        yield a.finding("warning", "suspend-field-removed", ("spec", "suspend"),
                        "removing suspend: true never resumes the cluster: only an explicit "
                        "suspend: false does (RCC:2084-2091)")
    if a.before is not None and a.b_spec.get("enableInTreeAutoscaling") is True \
            and a.a_spec.get("enableInTreeAutoscaling") is not True and a.rollout != Rollout.RECREATE:
        yield a.finding("warning", "autoscaling-disabled", ("spec", "enableInTreeAutoscaling"),
                        "the running head keeps its autoscaler sidecar (and its Role) until the head is "
                        "recreated, while the operator starts deleting surplus pods itself: both scale "
                        "the cluster meanwhile (inferred, RCC:1222-1236)")


def _unapplied(a: RayClusterAnalysis) -> Iterator[Finding]:
    """Changes that never take effect while the rest rolls out, and edits Argo CD drops."""
    changed = real(a)
    applied = [c for c in changed if c not in a.unapplied]
    riding = [c for c in a.unapplied if c.category != C.NO_OP.value
              and not (group_item(c.path) and c.after is ABSENT)]  # orphaned-pods says it
    if riding and applied and a.rollout != Rollout.NOT_APPLIED:
        yield a.finding("warning", "not-applied", riding[0].path,
                        f"{len(riding)} change(s) will not take effect although the rest rolls out: " +
                        "; ".join(sorted({why_unapplied(a, c) for c in riding})))
    for name in a.dropped:
        if any(c.path[:2] == GROUPS and c.category != C.AUTOSCALER_OWNED.value for c in changed):
            yield a.finding("warning", "respect-ignore-differences-drops-edits", f"Application {name}",
                            "RespectIgnoreDifferences=true with an ignore rule inside workerGroupSpecs "
                            "copies the whole live workerGroupSpecs list into every sync (an atomic list): "
                            "these worker-group edits are silently dropped and the app stays OutOfSync "
                            "(argo-cd#27480)")
