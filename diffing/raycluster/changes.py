"""Stage 1 of a standalone RayCluster: each difference's category, the Recreate hash as a whole,
the changes that are never carried out, and why.

A difference gets the category of its row in :data:`diffing.raycluster.rules.CLUSTER_RULES`,
except what the rows cannot say: worker groups added, removed or reordered, a mapping added or
removed as a whole (the strongest of its fields), in-tree autoscaling, and
``upgradeStrategy.type: Recreate``, under which every hashed field recreates. Citations are
KubeRay v1.7.0: RCC = ``ray-operator/controllers/ray/raycluster_controller.go``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from diffing.engine import cluster_differences, cluster_hash_equal
from diffing.kube.diff import Difference
from diffing.kube.gojson import ABSENT
from diffing.kube.paths import Path, schema_path
from diffing.kube.values import dig, mapping, seq
from diffing.raycluster.rules import ClusterCategory as C
from diffing.report import Change

if TYPE_CHECKING:
    from diffing.raycluster.analyze import RayClusterAnalysis

GROUPS: Path = ("spec", "workerGroupSpecs")
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
    a.hash_equal = cluster_hash_equal(a.engine, before.obj.get("spec"), after.obj.get("spec"),
                                      after.api_version)
    recreating = [c for c in a.changes if c.category == C.RECREATE.value]
    if a.recreate_on and a.hash_equal and recreating:  # the walk saw a difference the hash does not
        a.changes = [dataclasses.replace(c, category=C.NO_OP.value) if c in recreating else c
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
        category = C.RECREATE if a.recreate_on else C.SCALE
        detail = detail or "worker group added: its pods are created now"
    elif _group_removed(d.path, d.after):
        category = C.RECREATE if a.recreate_on else C.OPERATOR_IGNORED
        detail = detail or "worker group removed: KubeRay never deletes its pods"
    else:
        category = category_of(a, d.path, d.after if d.before is ABSENT else d.before
                               if d.after is ABSENT else ABSENT)
    if a.dropped and d.path[:2] == GROUPS and category != C.AUTOSCALER_OWNED:
        detail = DROPPED
    return Change(d.path, category.value, d.before, d.after, detail, line)


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
