"""Stage 1 of a standalone RayCluster: each difference's category, the Recreate hash as a whole,
the changes that are never carried out, and why.

A difference gets the category of its row in :data:`diffing.raycluster.rules.CLUSTER_RULES`,
except what the rows cannot say: worker groups added, removed or reordered, a mapping added or
removed as a whole (the strongest of its fields), in-tree autoscaling, and
``upgradeStrategy.type: Recreate``, under which every hashed field recreates. Citations are
KubeRay v1.7.0: RCC = ``ray-operator/controllers/ray/raycluster_controller.go``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from diffing import record
from diffing.engine import cluster_differences, cluster_hash_equal, cluster_view
from diffing.kube.diff import Difference
from diffing.kube.gojson import ABSENT
from diffing.kube.names import parse_generic_version, version_less
from diffing.kube.paths import Path, schema_path
from diffing.kube.resources import group_counts, shared_group_names
from diffing.kube.values import dig, mapping, seq
from diffing.raycluster.rules import READ_AS_DEFAULT, UNIFIED_HEALTH_CHECK_SINCE
from diffing.raycluster.rules import ClusterCategory as C
from diffing.raycluster.validation_subject import first_container
from diffing.report import Change

if TYPE_CHECKING:
    from diffing.raycluster.analyze import RayClusterAnalysis

GROUPS: Path = ("spec", "workerGroupSpecs")
RAY_VERSION: Path = ("spec", "rayVersion")
DROPPED = "dropped: Argo CD sends the live workerGroupSpecs (RespectIgnoreDifferences)"


def diff(a: RayClusterAnalysis) -> None:
    """Fill ``changes`` (judged field by field, then the hash as a whole), ``hash_equal`` and
    ``unapplied``."""
    before, after = a.before, a.after
    if before is None or after is None:
        return
    for d in cluster_differences(a.engine, before, after):
        if d.noop and a.engine.before_is_live:
            continue  # the API server's own defaults in the live object, not a change
        a.changes.append(classify(a, d))
    # Each side as the API server stores it (a v1alpha1 write pruned, engine.stored_view).
    bview, aview = cluster_view(a.engine, before), cluster_view(a.engine, after)
    a.hash_equal = cluster_hash_equal(a.engine, bview.obj.get("spec"), aview.obj.get("spec"),
                                      aview.api_version)
    recreating = [c for c in a.changes if c.category == C.RECREATE.value]
    if a.recreate_on and a.hash_equal and recreating:  # the walk saw a difference the hash does not
        a.changes = [record.replace(c, category=C.NO_OP.value) if c in recreating else c
                     for c in a.changes]
    elif a.recreate_on and not a.hash_equal and not recreating:
        a.changes.append(Change(("spec",), C.RECREATE.value, None, None, "the Recreate hash input differs"))
    a.unapplied = [c for c in a.changes if unapplied(a, c)]


def group_item(path: Path) -> bool:
    """``path`` is one worker group (``spec.workerGroupSpecs[name]``)."""
    return len(path) == 3 and path[:2] == GROUPS


def _group_removed(path: Path, after: Any) -> bool:
    return (group_item(path) and after is ABSENT) or (path == GROUPS and after in (ABSENT, []))


def classify(a: RayClusterAnalysis, d: Difference) -> Change:
    line = (a.after.line(d.path) if a.after else None) or (a.before.line(d.path) if a.before else None)
    if d.noop:
        return Change(d.path, C.NO_OP.value, d.before, d.after, d.note, line)
    detail = d.note
    if d.path == GROUPS and d.kind == "reordered":
        category = C.RECREATE if a.recreate_on else C.NO_OP
        detail = detail or "worker groups reordered"
    elif (group_item(d.path) or d.path == GROUPS) and d.before is ABSENT:
        category, detail = _added_groups(a, d)
    elif _group_removed(d.path, d.after):
        category = C.RECREATE if a.recreate_on else C.OPERATOR_IGNORED
        detail = detail or "worker group removed: KubeRay never deletes its pods"
    elif (default := READ_AS_DEFAULT.get(schema_path(d.path))) is not None and not a.recreate_on \
            and _as_read(default, d.before) == _as_read(default, d.after):
        category = C.NO_OP
        detail = detail or f"KubeRay reads an unset {d.path[-1]} as {default}: no pod changes"
    elif d.path == RAY_VERSION and not a.recreate_on and not probes_follow(a):
        category = C.NO_OP
        detail = detail or ("rayVersion reaches pods only through the health-check choice, which it "
                            "does not change here")
    else:
        category = category_of(a, d.path, d.after if d.before is ABSENT else d.before
                               if d.after is ABSENT else ABSENT)
    if a.dropped and d.path[:2] == GROUPS and category != C.AUTOSCALER_OWNED:
        detail = DROPPED
    return Change(d.path, category.value, d.before, d.after, detail, line)


def _added_groups(a: RayClusterAnalysis, d: Difference) -> tuple[C, str]:
    """Worker groups added: their pods are created now, or when they scale up (none to run
    yet), or they exist already (a name another group has, §3.2)."""
    if a.recreate_on:
        return C.RECREATE, d.note or "worker group added"
    added = [mapping(g) for g in (seq(d.after) if d.path == GROUPS else [d.after])]
    shared = {name for _, name in shared_group_names(a.a_spec)}
    if all(g.get("groupName") in shared for g in added):
        return C.SCALE, d.note or "worker group added under a name another group has: they share its pods"
    if all(g.get("suspend") is True for g in added):  # no pod while suspended (RCC:1083-1093)
        return C.SCALE, d.note or "worker group added suspended: no pod until its suspend is lifted"
    if not any(_runs_pods(g) for g in added):  # nothing to build until it scales up (utils/util.go:389-407)
        return C.LATENT, d.note or "worker group added with no pod to run yet: its pods come at a scale-up"
    return C.SCALE, d.note or "worker group added: its pods are created now"


def _runs_pods(group: Any) -> bool:
    """A worker group whose desired pod count is above zero (suspended: zero)."""
    group = mapping(group)
    return group.get("suspend") is not True and group_counts(group)[0] > 0


def _as_read(default: str, value: Any) -> Any:
    return default if value in (ABSENT, None, "") else value


def _unified_health_check(version: Any) -> bool:
    """KubeRay's ``supportsUnifiedHealthCheck``: an unparseable or absent version is older."""
    parsed = parse_generic_version(version) if isinstance(version, str) else None
    return parsed is not None and not version_less(parsed, UNIFIED_HEALTH_CHECK_SINCE)


def _injects_probes(spec: Any) -> bool:
    """Some pod's Ray container lacks a liveness or readiness probe, so KubeRay injects one."""
    groups = [dig(spec, "headGroupSpec")] + [mapping(g) for g in seq(mapping(spec).get("workerGroupSpecs"))]
    for group in groups:
        ray = first_container(group)
        if ray.get("livenessProbe") is None or ray.get("readinessProbe") is None:
            return True
    return False


def probes_follow(a: RayClusterAnalysis) -> bool:
    """A ``rayVersion`` change alters the pods KubeRay builds: it crosses the unified health check
    version and some probe is injected (docs/semantics/raycluster.md §3.2)."""
    b, v = a.b_spec.get("rayVersion"), a.a_spec.get("rayVersion")
    return _unified_health_check(b) != _unified_health_check(v) and _injects_probes(a.a_spec)


# When a whole mapping appears or goes, the strongest effect among its fields is the change's.
_STRENGTH = {C.RECREATE: 6, C.SCALE: 5, C.LATENT: 4, C.SIDE_OBJECT: 3, C.AUTOSCALER_OWNED: 2,
             C.OPERATOR_IGNORED: 1, C.NO_OP: 0}


def category_of(a: RayClusterAnalysis, path: Path, whole: Any) -> C:
    """The rule table's category for ``path``; for a mapping added or removed as a whole
    (``whole``), the strongest of its fields' (``autoscalerOptions: {idleTimeoutSeconds: 120}``
    is what ``idleTimeoutSeconds`` is)."""
    if isinstance(whole, dict) and whole and len(path) < 8:
        found = [category_of(a, path + (str(k),), v if isinstance(v, dict) else ABSENT)
                 for k, v in whole.items()]
        return max(found, key=lambda c: _STRENGTH[c])
    rule = a.rules.cluster_rule_of(schema_path(path))
    category = rule.autoscaled if a.autoscaling and rule.autoscaled else rule.category
    if a.recreate_on and rule.hashed and path != ("spec", "suspend"):
        category = C.RECREATE
    return category


def unapplied(a: RayClusterAnalysis, c: Change) -> bool:
    """A change the operator (or Argo CD) never carries out."""
    if c.category == C.NO_OP.value:
        return False
    if a.dropped and c.path[:2] == GROUPS and c.category != C.AUTOSCALER_OWNED.value:
        return True
    if a.recreate_on and c.category == C.RECREATE.value:
        return False
    if _group_removed(c.path, c.after):
        return True
    return a.rules.cluster_rule_of(schema_path(c.path)).unapplied


def real(a: RayClusterAnalysis) -> list[Change]:
    """The changes that are not no-ops."""
    return [c for c in a.changes if c.category != C.NO_OP.value]


def dropping_apps(apps: Sequence[Any], key: tuple[str, str]) -> list[str]:
    """Applications in the change whose RespectIgnoreDifferences copies the live worker-group
    list into every apply (argo-cd#27480; docs/semantics/raycluster.md §5.5)."""
    out = []
    for app in apps:
        spec = dig(app, "spec")
        if "RespectIgnoreDifferences=true" not in seq(dig(spec, "syncPolicy").get("syncOptions")):
            continue
        for rule in seq(spec.get("ignoreDifferences")):
            rule = mapping(rule)
            if rule.get("kind") not in ("RayCluster", "*") or rule.get("name") not in (None, key[1]):
                continue
            paths = seq(rule.get("jqPathExpressions")) + seq(rule.get("jsonPointers"))
            if any("workerGroupSpecs" in str(p) for p in paths):
                out.append(str(dig(app, "metadata").get("name", "?")))
                break
    return out


def rule_reason(a: RayClusterAnalysis, c: Change) -> str:
    """Why ``c`` moves nothing now (its rule's reason)."""
    if group_item(c.path) or c.path == GROUPS:
        return c.detail or "worker groups changed"
    if c.category == C.AUTOSCALER_OWNED.value:
        return ("with autoscaling on KubeRay deletes no pod for a lower count and the Ray autoscaler "
                "writes the field again (RCC:1218-1236)")
    return a.rules.cluster_rule_of(schema_path(c.path)).reason


def why_unapplied(a: RayClusterAnalysis, c: Change) -> str:
    """Why ``c`` is never carried out."""
    if c.detail.startswith("dropped:"):
        return "Argo CD's RespectIgnoreDifferences sends the live worker groups instead of Git's"
    return rule_reason(a, c)
