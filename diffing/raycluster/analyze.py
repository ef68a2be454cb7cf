"""A standalone RayCluster's change: what the RayCluster controller does with it.

The spec is ``/work/shared``'s raycluster-semantics.md (KubeRay v1.7.0, with 1.6 deltas). The
layers are the RayService's, in the same order, on the same tables: the API server's schema
(the RayCluster CRD's spec is the RayService's ``rayClusterConfig`` type), the operator's
validation (a failure *freezes* the cluster: nothing is reconciled, RCC:172-177), then the
reconcile decisions. The field rules are data (:data:`diffing.raycluster.rules.CLUSTER_RULES`).

What differs from a RayService is the controller: it never touches a running pod. A change
either moves pods now (``scale``: the desired count per group changed, RCC:1069-1257),
deletes every pod first (``recreate``: ``upgradeStrategy.type: Recreate`` and a change of
the hash, RCC:968-982), or waits for pods built later (``latent``). Pods of a group that is
no longer in the spec are never visited again (RCC:1069, 1079): they keep running, orphaned.

RCC = ray-operator/controllers/ray/raycluster_controller.go at v1.7.0.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from diffing.engine import (
    Engine,
    cluster_defaulted,
    cluster_differences,
    cluster_hash_equal,
    cluster_schema,
    recreate_hash,
)
from diffing.holds import (
    duplicate_findings,
    known_headroom,
    located,
    replacement_headline,
    replacement_reason,
    replacement_steps,
    shortfalls,
    unknown_device_steps,
)
from diffing.kube import resources as cap
from diffing.kube.diff import Difference
from diffing.kube.gojson import ABSENT
from diffing.kube.manifests import Duplicate, Manifest
from diffing.kube.paths import Key, Path, format_path, schema_path
from diffing.kube.pods import pod_problems
from diffing.kube.schema import transition_errors, validate
from diffing.kube.values import dig, mapping, seq
from diffing.live import LiveCluster
from diffing.managed import external_manager
from diffing.pipeline import Analysis, Target
from diffing.raycluster.rules import ClusterCategory as C
from diffing.raycluster.validation import validate_raycluster
from diffing.report import APPROVE, HOLD, IGNORE, SEVERITY_ORDER, Capacity, Change, Finding, ResourceReport

GROUPS: Path = ("spec", "workerGroupSpecs")
IGNORED_PATHS = (".spec.workerGroupSpecs[]?.replicas", ".spec.workerGroupSpecs[]?.scaleStrategy")
RAY_CONTAINER = 0  # the Ray container is the first one (utils/constant.go RayContainerIndex)


@dataclass
class _Work:
    """Working state of one RayCluster while it is analysed."""

    engine: Engine
    key: tuple[str, str]
    before: Manifest | None
    after: Manifest | None
    b_spec: Mapping[str, Any]
    a_spec: Mapping[str, Any]
    live: LiveCluster | None
    autoscaling: bool
    recreate_on: bool
    changes: list[Change] = field(default_factory=list)
    unapplied: list[Change] = field(default_factory=list)
    reasons: list[str] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    holds: list[str] = field(default_factory=list)
    steps: list[str] = field(default_factory=list)

    def finding(self, severity: str, code: str, path: Path | str, message: str) -> Finding:
        return located(self.after or self.before, severity, code, path, message)

    def real(self) -> list[Change]:
        return [c for c in self.changes if c.category != C.NO_OP.value]


def analyze_cluster(engine: Engine, key: tuple[str, str], before: Manifest | None, after: Manifest | None, *,
                    headroom: Mapping[str, Fraction] | None, live: LiveCluster | None, argo_apps: list[Any],
                    duplicates: Sequence[Duplicate] = (), replacing: Sequence[str] = ()) -> ResourceReport:
    """One standalone RayCluster's report. ``replacing`` names the objects the same change
    deletes: a RayCluster created next to them needs its accelerators free (a rename)."""
    rules, policy = engine.rules, engine.policy
    main = after or before
    assert main is not None
    b_def = cluster_defaulted(engine, before) if before else None
    a_def = cluster_defaulted(engine, after) if after else None
    a_spec, b_spec = dig(a_def, "spec"), dig(b_def, "spec")
    w = _Work(engine, key, before, after, b_spec, a_spec, live,
              autoscaling=(a_spec if a_def else b_spec).get("enableInTreeAutoscaling") is True,
              recreate_on=rules.has_cluster_recreate
              and dig(a_spec, "upgradeStrategy").get("type") == "Recreate")
    dropped = _dropping_apps(argo_apps, key)

    # 1. changes, judged field by field, then the hash as a whole ------------------------------
    hash_equal = True
    if before and after:
        for d in cluster_differences(engine, before, after):
            if d.noop and engine.before_is_live:
                continue  # the API server's own defaults in the live object, not a change
            w.changes.append(_classify(w, d, bool(dropped)))
        hash_equal = cluster_hash_equal(engine, before.obj.get("spec"), after.obj.get("spec"),
                                        after.api_version)
        recreating = [c for c in w.changes if c.category == C.RECREATE.value]
        if w.recreate_on and hash_equal and recreating:  # the walk saw a difference the hash does not
            w.changes = [dataclasses.replace(c, category=C.NO_OP.value) if c in recreating else c
                         for c in w.changes]
        elif w.recreate_on and not hash_equal and not recreating:
            w.changes.append(Change(("spec",), C.RECREATE.value, None, None,
                                    "the Recreate hash input differs"))
        w.unapplied = [c for c in w.changes if _unapplied(w, c, bool(dropped))]

    # 2. the API server, then the operator's validation --------------------------------------
    schema_errors: list[tuple[Path, str]] = []
    unknown: list[Path] = []
    problems: list[tuple[str, Path, str]] = []
    if after and a_def is not None and (before is None or w.changes):
        sch = cluster_schema(engine, after.api_version)
        schema_errors = validate(engine.schemas, after.obj.get("spec"), sch, ("spec",), unknown=unknown)
        if before is not None:
            schema_errors += transition_errors(engine.schemas, before.obj.get("spec"), after.obj.get("spec"),
                                               sch, ("spec",))
        if not schema_errors:
            problems = validate_raycluster(a_def, rules, feature_gates=policy.feature_gates)

    # 3. what the controller does -----------------------------------------------------------
    moves = _pod_moves(w) if before and after else _Moves()
    recreate, recreate_note = _recreate(w, hash_equal)
    if before is None:
        action, rollout = "created", "create"
        w.reasons.append("the RayCluster is new: KubeRay builds the head and every worker group at their "
                         "clamped replicas" if a_spec.get("suspend") is not True else
                         "the RayCluster is created suspended: no pod runs until spec.suspend is false")
    elif after is None:
        action, rollout = "deleted", "delete"
        w.reasons.append("the RayCluster is removed: every pod and Service of it is deleted")
    else:
        action = "updated" if w.changes else "unchanged"
        rollout = _rollout(w, schema_errors, problems, moves, recreate, recreate_note)

    # 4. capacity -----------------------------------------------------------------------------
    capacity = _capacity(w, rollout, moves, headroom)

    # 5. findings -----------------------------------------------------------------------------
    w.findings.extend(_findings(w, rollout, schema_errors, unknown, problems, moves, dropped))
    w.findings.extend(duplicate_findings(duplicates))

    # 6. decision -----------------------------------------------------------------------------
    if action == "unchanged":
        decision, headline = APPROVE, ""
    else:
        decision, headline = _decide(w, rollout, capacity, known_headroom(headroom, live), moves, replacing)
    ignore: tuple[dict[str, Any], ...] = (ignore_entry(key),) if decision == IGNORE else ()
    findings = tuple(sorted(w.findings, key=lambda f: SEVERITY_ORDER.get(f.severity, 3)))
    return ResourceReport(
        api_version=main.api_version, namespace=key[0], name=key[1], action=action, rollout=rollout,
        decision=decision, reasons=tuple(w.reasons), changes=tuple(w.changes), capacity=capacity,
        findings=findings, ignore_differences=ignore, source=main.where(), origin=main.source,
        strategy="upgradeStrategy.type Recreate" if w.recreate_on else "", headline=headline,
        next_steps=tuple(dict.fromkeys(w.steps)) if decision == HOLD else (), kind="RayCluster",
    )


def ignore_entry(key: tuple[str, str]) -> dict[str, Any]:
    """The Argo CD ignore rule for what the Ray autoscaler writes to a RayCluster
    (raycluster-semantics.md §5.1: ``replicas`` and the whole ``scaleStrategy``)."""
    return {"group": "ray.io", "kind": "RayCluster", "name": key[1], "namespace": key[0],
            "jqPathExpressions": list(IGNORED_PATHS)}


# -- 1. classifying one difference ------------------------------------------------------------


def _group_item(path: Path) -> bool:
    return len(path) == 3 and path[:2] == GROUPS


def _classify(w: _Work, d: Difference, dropped: bool) -> Change:
    line = (w.after.line(d.path) if w.after else None) or (w.before.line(d.path) if w.before else None)
    if d.noop:
        return Change(d.path, C.NO_OP.value, d.before, d.after, d.note, line)
    detail = d.note
    if d.path == GROUPS and d.kind == "reordered":
        category = C.RECREATE if w.recreate_on else C.NO_OP
        detail = detail or "worker groups reordered"
    elif (_group_item(d.path) or d.path == GROUPS) and d.before is ABSENT:
        category = C.RECREATE if w.recreate_on else C.SCALE
        detail = detail or "worker group added: its pods are created now"
    elif (_group_item(d.path) and d.after is ABSENT) or (d.path == GROUPS and d.after in (ABSENT, [])):
        category = C.RECREATE if w.recreate_on else C.OPERATOR_IGNORED
        detail = detail or "worker group removed: KubeRay never deletes its pods"
    else:
        category = _category(w, d.path, d.after if d.before is ABSENT else d.before
                             if d.after is ABSENT else ABSENT)
    if dropped and d.path[:2] == GROUPS and category != C.AUTOSCALER_OWNED:
        detail = "dropped: Argo CD sends the live workerGroupSpecs (RespectIgnoreDifferences)"
    return Change(d.path, category.value, d.before, d.after, detail, line)


# When a whole mapping appears or goes, the strongest effect among its fields is the change's.
_STRENGTH = {C.RECREATE: 6, C.SCALE: 5, C.LATENT: 4, C.SIDE_OBJECT: 3, C.AUTOSCALER_OWNED: 2,
             C.OPERATOR_IGNORED: 1, C.NO_OP: 0}


def _category(w: _Work, path: Path, whole: Any) -> C:
    """The rule table's category for ``path``; for a mapping added or removed as a whole
    (``whole``), the strongest of its fields' (``autoscalerOptions: {idleTimeoutSeconds: 120}``
    is what ``idleTimeoutSeconds`` is)."""
    if isinstance(whole, dict) and whole and len(path) < 8:
        found = [_category(w, path + (str(k),), v if isinstance(v, dict) else ABSENT)
                 for k, v in whole.items()]
        return max(found, key=lambda c: _STRENGTH[c])
    rule = w.engine.rules.cluster_rule_of(schema_path(path))
    category = rule.autoscaled if w.autoscaling and rule.autoscaled else rule.category
    if w.recreate_on and rule.hashed and path != ("spec", "suspend"):
        category = C.RECREATE
    return category


def _unapplied(w: _Work, c: Change, dropped: bool) -> bool:
    """A change the operator (or Argo CD) never carries out."""
    if c.category == C.NO_OP.value:
        return False
    if dropped and c.path[:2] == GROUPS and c.category != C.AUTOSCALER_OWNED.value:
        return True
    if w.recreate_on and c.category == C.RECREATE.value:
        return False
    if (_group_item(c.path) and c.after is ABSENT) or (c.path == GROUPS and c.after in (ABSENT, [])):
        return True
    return w.engine.rules.cluster_rule_of(schema_path(c.path)).unapplied


def _dropping_apps(apps: list[Any], key: tuple[str, str]) -> list[str]:
    """Applications in the change whose RespectIgnoreDifferences copies the live worker-group
    list into every apply (argo-cd#27480; raycluster-semantics.md §5.5)."""
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


# -- 3. pods, recreate, rollout ---------------------------------------------------------------


@dataclass
class _Moves:
    """Pods per worker group, now and after the change (head excluded)."""

    created: dict[str, int] = field(default_factory=dict)  # by group of the new spec
    deleted: dict[str, int] = field(default_factory=dict)
    orphaned: dict[str, int] = field(default_factory=dict)  # pods of groups the new spec no longer has
    hosts_changed: list[str] = field(default_factory=list)
    new_shape: cap.ClusterShape | None = None
    old_shape: cap.ClusterShape | None = None
    current: dict[str, int] = field(default_factory=dict)  # pods per group running now

    @property
    def any(self) -> bool:
        return any(self.created.values()) or any(self.deleted.values())


def _current_pods(w: _Work, old: cap.ClusterShape) -> dict[str, int]:
    """Worker pods per group running now: what the live basis counted, else what the running
    manifest asks for (clamped replicas × hosts), or live replicas × hosts."""
    current = {g.name: g.pods for g in old.groups}
    if w.live is not None:
        for g in old.groups:
            if g.name in w.live.worker_replicas:
                reps = cap.clamp(w.live.worker_replicas[g.name], g.min_replicas, g.max_replicas)
                current[g.name] = 0 if g.suspended else reps * g.hosts
        current.update(w.live.group_pods)
    return current


def _pod_moves(w: _Work) -> _Moves:
    old, new = cap.cluster_shape(w.b_spec), cap.cluster_shape(w.a_spec)
    m = _Moves(new_shape=new, old_shape=old)
    m.current = _current_pods(w, old)
    old_groups = {g.name: g for g in old.groups}
    for g in new.groups:
        running = m.current.get(g.name, 0)
        before = old_groups.get(g.name)
        if before is not None and before.hosts != g.hosts:
            # The old layout's pods are invisible to the multi-host path (common/pod.go:673-681):
            # they stay, and the new layout is built next to them (inferred, §4.3).
            m.hosts_changed.append(g.name)
            if running:
                m.orphaned[g.name] = running
            running = 0
        if g.pods > running:
            m.created[g.name] = g.pods - running
        elif g.pods < running:
            # Scale-in: the operator deletes only with autoscaling off (RCC:1218-1256); with it on,
            # a lower maxReplicas is carried out by the autoscaler, a lower replicas by nobody.
            lowered_max = before is not None and g.max_replicas < before.max_replicas
            if g.suspended or not w.autoscaling or lowered_max:
                m.deleted[g.name] = running - g.pods
        doomed = [x for x in seq(dig(_group(w.a_spec, g.name), "scaleStrategy").get("workersToDelete"))
                  if isinstance(x, str)]
        old_doomed = seq(dig(_group(w.b_spec, g.name), "scaleStrategy").get("workersToDelete"))
        if doomed and doomed != old_doomed and g.name not in m.deleted:
            m.deleted[g.name] = len(doomed)  # deleted whatever replicas says (RCC:1132-1153)
    new_names = {g.name for g in new.groups}
    for name, pods in m.current.items():
        if name not in new_names and pods:
            m.orphaned[name] = pods
    return m


def _group(spec: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    return next((mapping(g) for g in seq(spec.get("workerGroupSpecs"))
                 if mapping(g).get("groupName") == name), {})


def _recreate(w: _Work, hash_equal: bool) -> tuple[bool, str]:
    """(Recreate deletes every pod now, why) — ``shouldRecreatePodsForUpgrade`` (RCC:1463-1502).

    The reference is the head pod's hash annotation, i.e. the spec the head was built from,
    not the previous commit: with a live basis that is compared; without, the running
    manifest stands in for it.
    """
    if not w.recreate_on or w.after is None or w.before is None:
        return False, ""
    live = w.live
    if live is not None and live.head_hash:
        version = f"v{w.engine.rules.version}"
        if live.head_kuberay_version and live.head_kuberay_version != version:
            return False, (f"the head pod was built by KubeRay {live.head_kuberay_version}, not {version}: "
                           "the operator rewrites its hash instead of recreating (RCC:1481-1494), so this "
                           "change is absorbed and never applied to running pods")
        target = recreate_hash(w.engine, w.after.obj.get("spec"), w.after.api_version)
        if target == live.head_hash:
            return False, "the head pod already carries the new spec's hash: nothing is recreated"
        running = recreate_hash(w.engine, w.before.obj.get("spec"), w.before.api_version)
        if running == live.head_hash:
            return True, "the new spec's hash differs from the head pod's"
        return True, ("the head pod's hash matches neither the running nor the new spec: it was built "
                      "from an older spec (changes that waited for new pods), or this tool's hash "
                      "differs from the operator's; either way the operator sees a mismatch")
    if hash_equal:
        return False, ""
    return True, "the Recreate hash of the spec changes"


def _rollout(w: _Work, schema_errors: list[tuple[Path, str]], problems: list[tuple[str, Path, str]],
             moves: _Moves, recreate: bool, recreate_note: str) -> str:
    b_susp = w.b_spec.get("suspend") is True
    a_susp = w.a_spec.get("suspend", ABSENT)
    if schema_errors:
        path, msg = schema_errors[0]
        w.reasons.append(f"the API server rejects the new manifest ({format_path(path)} {msg}); nothing "
                         "is applied")
        return "not-applied"
    manager = external_manager({"spec": w.a_spec})
    if manager is not None and external_manager({"spec": w.b_spec}) is None:
        w.reasons.append(f"spec.managedBy hands the RayCluster to {manager}: KubeRay stops reconciling it "
                         "(RCC:158-161) and its pods stay as they are")
        return "not-applied"
    if problems:
        w.reasons.append("KubeRay's validation fails: the RayCluster is frozen (an InvalidRayClusterSpec "
                         "event, no status update; not even failed pods are replaced) until the spec is "
                         "fixed (RCC:172-177)")
        return "not-applied"
    if not b_susp and a_susp is True:
        w.reasons.append("spec.suspend turns true: every pod, head included, is deleted (RCC:940-966)")
        return "suspend"
    if b_susp and a_susp is False:
        w.reasons.append("spec.suspend turns false: the head and every worker group are created again "
                         "from the new spec (RCC:2084-2091)")
        return "resume"
    if b_susp and a_susp is ABSENT:
        w.reasons.append("the suspend: true line is removed, but only an explicit false resumes: the "
                         "cluster stays suspended (RCC:2084-2091)")
        return "not-applied"
    if b_susp:
        w.reasons.append("the cluster stays suspended: the changes reach the pods built when it resumes")
        return "none"
    if recreate:
        w.reasons.append(f"upgradeStrategy Recreate: {recreate_note}; every pod is deleted at once, then "
                         "the cluster is built again from the new spec (RCC:968-982)")
        return "recreate"
    if recreate_note:
        w.reasons.append(recreate_note)
    real = w.real()
    if moves.any:
        parts = [f"+{n} pod(s) in {g}" for g, n in moves.created.items() if n] + \
                [f"-{n} pod(s) in {g}" for g, n in moves.deleted.items() if n]
        w.reasons.append("the desired pod count changes now: " + ", ".join(parts))
        return "scale"
    if real and all(c in w.unapplied for c in real):
        w.reasons.append("nothing in the change is ever carried out: " +
                         "; ".join(sorted({_why_unapplied(w, c) for c in real})))
        return "not-applied"
    # Under Recreate a hashed change that does not recreate (the head already has the hash, or
    # an operator upgrade absorbed it) still reaches every pod built later.
    if any(c.category in (C.LATENT.value, C.RECREATE.value) for c in real):
        w.reasons.append("the change reaches only pods created later (a scale-up, a replaced pod); "
                         "running pods keep the old spec")
        return "latent"
    if real:
        w.reasons.append("nothing moves now: " + "; ".join(sorted({_rule_reason(w, c) for c in real})))
    return "none"


def _rule_reason(w: _Work, c: Change) -> str:
    if _group_item(c.path) or c.path == GROUPS:
        return c.detail or "worker groups changed"
    if c.category == C.AUTOSCALER_OWNED.value:
        return ("with autoscaling on KubeRay deletes no pod for a lower count and the Ray autoscaler "
                "writes the field again (RCC:1218-1236)")
    return w.engine.rules.cluster_rule_of(schema_path(c.path)).reason


def _why_unapplied(w: _Work, c: Change) -> str:
    if c.detail.startswith("dropped:"):
        return "Argo CD's RespectIgnoreDifferences sends the live worker groups instead of Git's"
    return _rule_reason(w, c)


# -- 4. capacity -------------------------------------------------------------------------------


def _capacity(w: _Work, rollout: str, moves: _Moves, headroom: Mapping[str, Fraction] | None) -> Capacity:
    policy = w.engine.policy
    accel = policy.accelerators
    basis = "live" if w.live is not None and (w.live.worker_replicas or w.live.group_pods) else "manifest"
    new = moves.new_shape or (cap.cluster_shape(w.a_spec) if w.after else None)
    extra: cap.Amounts = {}
    peak: cap.Amounts = {}
    if new is not None and rollout in ("create", "resume") and not (
            rollout == "create" and w.a_spec.get("suspend") is True):
        extra = peak = new.total()
    elif rollout == "scale" and new is not None:
        for g in new.groups:
            if moves.created.get(g.name):
                extra = cap.add(extra, g.per_pod, moves.created[g.name])
        old = moves.old_shape
        running = cap.add(dict(old.head), _groups_total(old, moves.current)) if old else {}
        peak = cap.add(running, extra)
    elif rollout == "recreate" and new is not None and moves.old_shape is not None:
        # No surge: the old pods go first (§6.1). The new cluster comes up at the clamped *current*
        # replicas; what must be free is its growth over what is freed.
        reps = {g.name: cap.clamp(moves.current.get(g.name, g.pods) // max(g.hosts, 1),
                                  g.min_replicas, g.max_replicas) for g in new.groups}
        peak = new.total(reps)
        old = moves.old_shape
        freed = cap.add(dict(old.head), _groups_total(old, moves.current))
        extra = cap.add(peak, freed, -1)
    extra = cap.positive(extra)
    known = known_headroom(headroom, w.live)
    units = {**(moves.old_shape.units if moves.old_shape else {}), **(new.units if new else {})}
    return Capacity(
        basis=basis,
        extra=cap.render_amounts(extra, accel, units=units),
        peak=cap.render_amounts(cap.positive(peak), accel, units=units) if peak else {},
        headroom=cap.render_amounts(known, accel, keep_zero=True, units=units) if known is not None else None,
    )


def _groups_total(shape: cap.ClusterShape, pods: Mapping[str, int]) -> cap.Amounts:
    out: cap.Amounts = {}
    for g in shape.groups:
        out = cap.add(out, g.per_pod, pods.get(g.name, g.pods))
    return out


# -- 5. findings -------------------------------------------------------------------------------


def _findings(w: _Work, rollout: str, schema_errors: list[tuple[Path, str]], unknown: list[Path],
              problems: list[tuple[str, Path, str]], moves: _Moves, dropped: list[str]) -> Iterator[Finding]:
    for path, message in schema_errors:
        yield w.finding("error", "schema-violation", path, f"the API server rejects this manifest: {message}")
    for path in unknown:
        yield w.finding("warning", "unknown-field", path,
                        "the CRD has no such field: kubectl's strict validation rejects it and other "
                        "clients see it silently pruned")
    for code, path, message in problems:
        yield w.finding("error", code, path,
                        f"KubeRay freezes the RayCluster (nothing is reconciled, not even failed pods "
                        f"replaced): {message}")
    if w.after is not None and w.after.api_version == "ray.io/v1alpha1":
        yield w.finding("warning", "deprecated-api-version", ("apiVersion",),
                        "ray.io/v1alpha1 is deprecated and frozen: fields added since (upgradeStrategy, "
                        "managedBy, gcsFaultToleranceOptions, ...) are pruned on write; move to ray.io/v1")
    yield from _pod_findings(w, rollout)
    yield from _replica_findings(w, rollout)
    if moves.orphaned and rollout not in ("recreate", "delete", "not-applied") or (
            moves.orphaned and rollout == "not-applied" and not schema_errors and not problems):
        for name, pods in moves.orphaned.items():
            how = ("its numOfHosts changed: the pods of the old layout are not reconciled any more "
                   "(inferred from common/pod.go:673-681)" if name in moves.hosts_changed else
                   "the group is no longer in the spec: KubeRay never lists or deletes its pods "
                   "(RCC:1069-1079; networkpolicy_controller.go:99-105)")
            yield w.finding("warning", "orphaned-pods", GROUPS + (Key("groupName", name),),
                            f"{pods} pod(s) of worker group {name} keep running and keep their resources: "
                            f"{how}; the Ray autoscaler may crash-loop on them (kuberay#1739)")
    if rollout == "scale" and not w.autoscaling:
        for name, pods in moves.deleted.items():
            if pods and name not in moves.hosts_changed:
                yield w.finding("warning", "scale-in-deletes-pods", GROUPS + (Key("groupName", name),),
                                f"KubeRay deletes {pods} pod(s) of group {name} now, picked in list order "
                                "and not drained: whatever runs on them is lost (RCC:1218-1256)")
    if rollout == "recreate":
        yield w.finding("warning", "recreate-downtime", ("spec", "upgradeStrategy", "type"),
                        "Recreate deletes the head and every worker at once and builds them again: all Ray "
                        "tasks, actors and jobs on the cluster are lost (no surge; RCC:968-982)")
    yield from _skew(w, rollout)
    yield from _strategy_switch(w, rollout)
    if w.before is not None and w.after is not None and w.b_spec.get("suspend") is True \
            and "suspend" not in w.a_spec:
        yield w.finding("warning", "suspend-field-removed", ("spec", "suspend"),
                        "removing suspend: true never resumes the cluster: only an explicit "
                        "suspend: false does (RCC:2084-2091)")
    if w.before is not None and w.b_spec.get("enableInTreeAutoscaling") is True \
            and w.a_spec.get("enableInTreeAutoscaling") is not True and rollout != "recreate":
        yield w.finding("warning", "autoscaling-disabled", ("spec", "enableInTreeAutoscaling"),
                        "the running head keeps its autoscaler sidecar (and its Role) until the head is "
                        "recreated, while the operator starts deleting surplus pods itself: both scale "
                        "the cluster meanwhile (inferred, RCC:1222-1236)")
    applied = [c for c in w.real() if c not in w.unapplied]
    riding = [c for c in w.unapplied if c.category != C.NO_OP.value
              and not (_group_item(c.path) and c.after is ABSENT)]  # orphaned-pods says it
    if riding and applied and rollout not in ("not-applied",):
        yield w.finding("warning", "not-applied", riding[0].path,
                        f"{len(riding)} change(s) will not take effect although the rest rolls out: " +
                        "; ".join(sorted({_why_unapplied(w, c) for c in riding})))
    for name in dropped:
        if any(c.path[:2] == GROUPS and c.category != C.AUTOSCALER_OWNED.value for c in w.real()):
            yield w.finding("warning", "respect-ignore-differences-drops-edits", f"Application {name}",
                            "RespectIgnoreDifferences=true with an ignore rule inside workerGroupSpecs "
                            "copies the whole live workerGroupSpecs list into every sync (an atomic list): "
                            "these worker-group edits are silently dropped and the app stays OutOfSync "
                            "(argo-cd#27480)")


def _pod_findings(w: _Work, rollout: str) -> Iterator[Finding]:
    if w.after is None:
        return
    problems = pod_problems(w.a_spec, ("spec",))
    known = {(p.rule, p.path) for p in pod_problems(w.b_spec, ("spec",))} if w.before else set()
    for p in problems:
        new = (p.rule, p.path) not in known
        yield w.finding("error" if new else "warning", "pod-rejected", p.path,
                        f"the API server rejects (or can never place) the pods KubeRay builds from this "
                        f"template: {p.message}; every pod created from it fails"
                        + ("" if new else "; the running manifest has the same problem"))


def _replica_findings(w: _Work, rollout: str) -> Iterator[Finding]:
    if w.after is None:
        return
    for g in seq(w.after.obj.get("spec", {}).get("workerGroupSpecs")):
        g = mapping(g)
        name = g.get("groupName")
        path = GROUPS + (Key("groupName", str(name)),)
        reps = g.get("replicas")
        lo, hi = g.get("minReplicas", 0), g.get("maxReplicas", cap.MAX_INT32)
        numbers = all(isinstance(v, int) and not isinstance(v, bool) for v in (reps, lo, hi))
        if numbers and not lo <= reps <= hi:
            yield w.finding("warning", "replicas-outside-bounds", path + ("replicas",),
                            f"replicas {reps} is outside [{lo}, {hi}]: KubeRay runs {min(max(reps, lo), hi)} "
                            "pods, while status.desiredGPU counts the raw value (utils/util.go:389-407, "
                            "479-493)")
        if seq(dig(g, "scaleStrategy").get("workersToDelete")):
            yield w.finding("warning", "workers-to-delete-in-git",
                            path + ("scaleStrategy", "workersToDelete"),
                            "workersToDelete in Git is deleted again on every sync (the operator never "
                            "clears it, RCC:1132-1153): leave it to the autoscaler and ignore the field")
    if not w.autoscaling or w.before is None:
        return
    owned = [c for c in w.changes if c.category == C.AUTOSCALER_OWNED.value]
    for c in owned:
        up = isinstance(c.after, int) and isinstance(c.before, int) and c.after > c.before
        effect = ("KubeRay creates the extra pods now, and the autoscaler scales them in again once idle"
                  if up else "KubeRay deletes nothing (autoscaling is on) and the autoscaler overwrites it")
        yield w.finding("warning", "autoscaler-fight", c.path,
                        f"Git sets a field the Ray autoscaler owns: {effect}; with self-heal Argo CD "
                        "resets it again, a loop (raycluster-semantics.md §5.4)")
    live = w.live
    if live is not None and live.worker_replicas and any(c not in w.unapplied for c in w.real()):
        for g in seq(w.a_spec.get("workerGroupSpecs")):
            g = mapping(g)
            name = str(g.get("groupName"))
            git, now = g.get("replicas"), live.worker_replicas.get(name)
            if isinstance(git, int) and isinstance(now, int) and git != now and not any(
                    c.path[:3] == GROUPS + (Key("groupName", name),) for c in owned):
                yield w.finding("warning", "autoscaler-fight", GROUPS + (Key("groupName", name), "replicas"),
                                f"applying this change also sends Git's replicas {git} for group {name}, "
                                f"which the autoscaler has at {now}: keep Git's replicas equal to "
                                "minReplicas (or leave it out) so a sync never resets it")


def _ray_images(spec: Mapping[str, Any]) -> dict[Path, Any]:
    out: dict[Path, Any] = {("spec", "headGroupSpec"): _first_image(mapping(spec.get("headGroupSpec")))}
    for g in seq(spec.get("workerGroupSpecs")):
        g = mapping(g)
        out[GROUPS + (Key("groupName", str(g.get("groupName"))),)] = _first_image(g)
    return out


def _first_image(group: Mapping[str, Any]) -> Any:
    containers = seq(dig(group, "template", "spec").get("containers"))
    return mapping(containers[RAY_CONTAINER]).get("image") if containers else None


def _skew(w: _Work, rollout: str) -> Iterator[Finding]:
    """A Ray version change that reaches only new pods: new workers next to an old head."""
    if w.before is None or w.after is None or rollout not in ("latent", "scale", "none"):
        return
    if w.b_spec.get("suspend") is True:
        return
    if w.b_spec.get("rayVersion") != w.a_spec.get("rayVersion"):
        yield w.finding("warning", "version-skew", ("spec", "rayVersion"),
                        f"rayVersion {w.b_spec.get('rayVersion')} → {w.a_spec.get('rayVersion')} reaches "
                        "only pods created later: new workers may fail to join the running head (mixed Ray "
                        "versions), for as long as the old pods run")
        return
    old, new = _ray_images(w.b_spec), _ray_images(w.a_spec)
    for path, image in new.items():
        if path in old and old[path] != image and image is not None and not _same_ray(old[path], image):
            yield w.finding("warning", "version-skew", path + ("template", "spec", "containers"),
                            f"the Ray image {old[path]} → {image} reaches only pods created later: the group "
                            "runs both images, and new workers may fail to join the old head; restart the "
                            "cluster (upgradeStrategy Recreate) or roll it deliberately")
            return


_RAY_VERSION = re.compile(r":(?:[^:@/]*?[^0-9.])?([0-9]+\.[0-9]+\.[0-9]+)(?![0-9.])")


def _same_ray(old: Any, new: Any) -> bool:
    """Both image tags name the same Ray version (``2.52.0-py311`` → ``2.52.0-py311-cu124``).
    A tag without a readable version (a digest, ``latest``) is not assumed to be the same."""
    a, b = _RAY_VERSION.search(str(old)), _RAY_VERSION.search(str(new))
    return a is not None and b is not None and a.group(1) == b.group(1)


def _strategy_switch(w: _Work, rollout: str) -> Iterator[Finding]:
    if w.before is None or not w.recreate_on or dig(w.b_spec, "upgradeStrategy").get("type") == "Recreate":
        return
    if rollout == "recreate":
        return
    live = w.live
    if live is not None and live.head_hash:
        return  # the live comparison decided it
    yield w.finding("info", "recreate-switch", ("spec", "upgradeStrategy", "type"),
                    "switching to Recreate restarts every pod at once if the head pod was built from an "
                    "older spec (earlier changes that waited for new pods): compare the head pod's "
                    "ray.io/upgrade-strategy-recreate-hash annotation before merging (RCC:1495-1499)")


# -- 6. the decision ---------------------------------------------------------------------------


def _decide(w: _Work, rollout: str, capacity: Capacity, known: Mapping[str, Fraction] | None,
            moves: _Moves, replacing: Sequence[str] = ()) -> tuple[str, str]:
    policy = w.engine.policy
    codes = {f.code for f in w.findings}
    errors = [f for f in w.findings if f.severity == "error"]
    hold: list[tuple[str, str]] = []  # (reason, headline)
    if errors and policy.hold_on_errors:
        hold.append((f"{len(errors)} error finding(s): {errors[0].message}",
                     f"{errors[0].code} at {errors[0].path}"))
        w.steps.append(f"fix {errors[0].path} so the API server and KubeRay accept the spec")
    if rollout == "not-applied" and policy.not_applied == "hold":
        hold.append(("the operator will not do what this change asks (see the reasons)",
                     "the operator will not apply this change"))
        if "suspend-field-removed" in codes:
            w.steps.append("write spec.suspend: false instead of deleting the line")
        paths = {schema_path(c.path)[:3] for c in w.unapplied}
        if paths & {("spec", "headServiceAnnotations"), ("spec", "headGroupSpec", "headService"),
                    ("spec", "headGroupSpec", "serviceType")}:
            w.steps.append("delete the head Service after the sync so KubeRay creates it again with the new "
                           "settings (clients reconnect), or drop the change")
        if external_manager({"spec": w.a_spec}) is not None:
            w.steps.append("leave spec.managedBy unset unless another controller (MultiKueue) is meant to "
                           "take the cluster over")
        if not w.steps:
            w.steps.append("drop the change, or carry it out another way (see the reasons)")
    if rollout == "suspend":
        hold.append(("suspending deletes every pod: hold until someone confirms the outage is intended",
                     "suspending deletes every pod"))
        w.steps.append("confirm the outage, or drop spec.suspend: true")
    if rollout == "recreate" and policy.cluster_hold_on_recreate:
        hold.append(("Recreate restarts the whole cluster: plan it for a maintenance window",
                     "Recreate restarts every pod (downtime)"))
        w.steps.append("merge in a maintenance window, or set policy raycluster.holdOnRecreate: false")
    if "orphaned-pods" in codes:
        hold.append(("pods of a removed or re-shaped worker group would keep running unmanaged",
                     "orphaned pods keep running"))
        w.steps.append("delete the old group's pods by hand after the sync, or use upgradeStrategy Recreate "
                       "(it deletes every pod of the cluster, orphans included)")
    latent_mode = policy.cluster_hold_on_latent
    if "version-skew" in codes and latent_mode != "never":
        hold.append(("new pods would run a different Ray version than the running head",
                     "Ray version skew between old and new pods"))
        w.steps.append("restart the cluster with the change (upgradeStrategy Recreate, or delete the pods "
                       "deliberately), or set policy raycluster.holdOnLatent: never")
    elif rollout == "latent" and latent_mode == "always":
        hold.append(("policy raycluster.holdOnLatent=always: the change waits for pods built later",
                     "the change reaches only new pods"))
    only_owned = bool(w.real()) and all(c.category == C.AUTOSCALER_OWNED.value for c in w.real())
    if rollout in ("scale", "resume", "recreate") and not only_owned:
        for name, _, _ in shortfalls(policy, capacity.extra, known):
            raw = capacity.extra[name]
            where = "no headroom is known" if known is None else \
                f"the known headroom covers {cap.human(name, known.get(name, 0))}"
            hold.append((f"the new pods need {cap.human(name, raw)} more {name}{cap.family_note(name)}; "
                         f"{where} (without room "
                         "they stay Pending)", "no headroom is known" if known is None else
                         f"the known headroom ({name}: {cap.human(name, known.get(name, 0))}) does "
                         "not cover it"))
            w.steps.append("free or add the capacity first, or pass the real headroom (--headroom)")
    if rollout == "create" and replacing and capacity.extra:
        hold.extend(_replacement_holds(w, capacity, known, replacing))
    if hold:
        counted = policy.devices(capacity.extra)
        w.steps.extend(unknown_device_steps(counted, policy.accelerators))
        w.reasons.extend(r for r, _ in hold)
        return HOLD, hold[0][1]
    if only_owned and w.autoscaling:
        w.reasons.append("Git is fighting the Ray autoscaler: ignore replicas and scaleStrategy in Argo CD "
                         "(with ApplyOutOfSyncOnly=true) instead of syncing them")
        return IGNORE, ""
    return APPROVE, ""


def _replacement_holds(w: _Work, capacity: Capacity, known: Mapping[str, Fraction] | None,
                       replacing: Sequence[str]) -> list[tuple[str, str]]:
    """A RayCluster created while the change deletes another object (a rename): both run until
    the old one is pruned, so its accelerators must be free, as for a scale-up (holdOnRecreate
    never / always weighs it like a RayService's second cluster)."""
    policy = w.engine.policy
    w.reasons.append(replacement_reason("RayCluster", replacing))
    if policy.hold_on_recreate == "never":
        return []
    headline = replacement_headline(replacing, known is None)
    if policy.hold_on_recreate == "always":
        return [("policy holdOnRecreate=always: every cluster recreation is held", headline)]
    out = []
    for name, _, _ in shortfalls(policy, capacity.extra, known):
        raw = capacity.extra[name]
        where = "no headroom is known" if known is None else \
            f"the known headroom covers {cap.human(name, known.get(name, 0))}"
        out.append((f"the new RayCluster needs {cap.human(name, raw)} extra {name}{cap.family_note(name)} "
                    f"while the deleted one still runs; {where} (without room its pods stay Pending)",
                    headline))
    if out:
        gpus = policy.devices(capacity.extra)
        w.steps.extend(replacement_steps(gpus))
    return out


class RayClusterAnalysis(Analysis):
    kind = "RayCluster"
    # What a hold of each rollout is about: the pods a scale adds (GPUs beyond headroom), the
    # changes a Recreate restarts the cluster for, those that wait for later pods (Ray version
    # skew), and for not-applied every change the controller will not carry out.
    holding = {
        "scale": ("scale",), "recreate": ("recreate",), "latent": ("latent",),
        "not-applied": ("scale", "latent", "recreate", "side-object", "autoscaler-owned", "operator-ignored"),
    }

    @classmethod
    def run(cls, t: Target) -> ResourceReport:
        return analyze_cluster(t.engine, t.key, t.before, t.after, headroom=t.headroom, live=t.live,
                               argo_apps=list(t.argo_apps), duplicates=t.duplicates, replacing=t.replacing)


ANALYSIS = RayClusterAnalysis
