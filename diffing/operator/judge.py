"""Judge every RayService, RayCluster and RayJob under the old and the new operator.

Pure: the operator changes (:mod:`diffing.operator.detect`) and the objects the repository
deploys (texts, as the PR analysis renders them) in, an :class:`OperatorUpgrade` out. Per
object (docs/operator-upgrade.md):

1. **As stored.** The object as the old operator's API server stored it: pruned and defaulted
   with the old CRD (a field the old CRD does not know is not in etcd).
2. **First reconcile.** The new operator reads it through the new CRD (when the change upgrades
   the CRDs; else the old one) and hashes it; :data:`~diffing.operator.rules.FIRST_RECONCILE`
   says what it does with an existing cluster whose version annotation is another one.
3. **Next sync.** With the new CRDs, the next sync writes the fields the old CRD pruned: that
   write is analysed like any change (:func:`diffing.analyze` under the new version), its
   rollout and extra accelerators reported.
4. **Behaviour.** The field behaviours that differ between the two minors, for the fields the
   object sets (:data:`~diffing.operator.rules.BEHAVIOUR` and the kinds' rule tables).

A rebuild that needs accelerators holds; so does a version the tool does not model.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

from diffing.engine import Engine, _clear, cluster_schema, go_json, recreate_hash
from diffing.errors import ManifestError, UnsupportedVersionError
from diffing.hints import Any
from diffing.kinds import ORDER
from diffing.kube.loading import Limits
from diffing.kube.manifests import Manifest, Source, Texts, collect_all
from diffing.kube.schema import STORAGE_VERSION
from diffing.kube.values import mapping
from diffing.managed import external_manager
from diffing.operator import rules as R
from diffing.operator.detect import (
    ARGOCD_HELM,
    ARGOCD_SKIP_CRDS,
    CRD_FILES,
    HELM_CRDS,
    IMAGE_ONLY,
    KUSTOMIZE,
    OperatorChange,
    detect,
    release,
)
from diffing.policy import Policy
from diffing.record import Record, replace, set_field
from diffing.report import APPROVE, HOLD
from diffing.versions import SUPPORTED, VersionRules, rules_for

# First-reconcile outcomes, in the words of conformance/README.md's upgrade classification.
REBUILD = "new-cluster"          # a new RayCluster (RayService) or every pod recreated (RayCluster)
IN_PLACE = "cluster-in-place"    # the existing RayCluster's spec rewritten
REANNOTATED = "annotations-only"  # version and hash annotations rewritten, nothing else
UNTOUCHED = "untouched"
NONE = "none"                    # managedBy another controller: KubeRay does nothing with it

CRDS_UPGRADED, CRDS_NOT_UPGRADED, CRDS_DEPENDS = "upgraded", "not-upgraded", "depends-on-installer"


class ObjectVerdict(Record):
    """One object under the old and the new operator."""

    __slots__ = ("kind", "namespace", "name", "source", "first_reconcile", "hash_before", "hash_after",
                 "reasons", "behaviour", "next_sync", "extra", "decision")

    kind: str
    namespace: str
    name: str
    source: str
    first_reconcile: str
    hash_before: str | None
    hash_after: str | None
    reasons: tuple[str, ...]
    behaviour: tuple[str, ...]
    next_sync: dict[str, Any] | None
    extra: dict[str, int]
    decision: str

    def __init__(self, kind: str, namespace: str, name: str, source: str, first_reconcile: str,
                 hash_before: str | None, hash_after: str | None, reasons: tuple[str, ...],
                 behaviour: tuple[str, ...], next_sync: dict[str, Any] | None, extra: dict[str, int],
                 decision: str) -> None:
        for k, v in zip(self.__slots__, (kind, namespace, name, source, first_reconcile, hash_before,
                                         hash_after, reasons, behaviour, next_sync, extra, decision),
                        strict=True):
            set_field(self, k, v)

    @property
    def rebuilds(self) -> bool:
        return self.first_reconcile == REBUILD

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "namespace": self.namespace, "name": self.name, "source": self.source,
                "firstReconcile": self.first_reconcile, "rebuilds": self.rebuilds,
                "hashChanges": None if self.hash_before is None else self.hash_before != self.hash_after,
                "hash": None if self.hash_before is None else {"before": self.hash_before,
                                                                 "after": self.hash_after},
                "reasons": list(self.reasons), "behaviourChanges": list(self.behaviour),
                "nextSync": self.next_sync, "extraAccelerators": dict(self.extra),
                "decision": self.decision}


class OperatorUpgrade(Record):
    """What the change of the operator does to the objects the repository deploys."""

    __slots__ = ("changes", "before", "after", "supported", "crds", "crds_note", "objects", "notes",
                 "decision", "summary")

    changes: tuple[OperatorChange, ...]
    before: str | None
    after: str | None
    supported: bool
    crds: str
    crds_note: str
    objects: tuple[ObjectVerdict, ...]
    notes: tuple[str, ...]
    decision: str
    summary: str

    def __init__(self, changes: tuple[OperatorChange, ...], before: str | None, after: str | None,
                 supported: bool, crds: str, crds_note: str, objects: tuple[ObjectVerdict, ...],
                 notes: tuple[str, ...], decision: str, summary: str) -> None:
        for k, v in zip(self.__slots__, (changes, before, after, supported, crds, crds_note, objects,
                                         notes, decision, summary), strict=True):
            set_field(self, k, v)

    @property
    def extra(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for o in self.objects:
            for k, v in o.extra.items():
                out[k] = out.get(k, 0) + v
        return out

    def to_dict(self) -> dict[str, Any]:
        return {"from": self.before, "to": self.after, "supported": self.supported,
                "decision": self.decision, "summary": self.summary,
                "changes": [c.to_dict() for c in self.changes],
                "crds": {"state": self.crds, "note": self.crds_note},
                "rebuilt": sum(1 for o in self.objects if o.rebuilds),
                "extraAccelerators": self.extra, "notes": list(self.notes),
                "objects": [o.to_dict() for o in self.objects]}


def versions_of(changes: Sequence[OperatorChange]) -> tuple[str | None, str | None, str]:
    """(from, to, problem) of the changes: one exact release on each side, or why not."""
    pairs = {(c.before, c.after) for c in changes if c.via != "crd"}
    if not pairs:
        return None, None, "only the ray.io CRDs change, not the operator: the running operator reads " \
                           "the objects through the new CRDs (their new defaults apply on every read)"
    exact = {(release(b), release(a)) for b, a in pairs}
    if len(exact) > 1:
        shown = ", ".join(f"{b} → {a}" for b, a in sorted(pairs, key=str))
        return None, None, f"the change names several operator versions ({shown}): which one runs is unknown"
    b, a = next(iter(exact))
    raw_b, raw_a = next(iter(pairs))
    if b is None or a is None:
        unknown = raw_b if b is None else raw_a
        return b, a, f"{unknown or 'nothing'} is not one KubeRay release (a range, a branch or a digest): " \
                     "which operator runs is unknown"
    return b, a, ""


def crds_state(changes: Sequence[OperatorChange]) -> tuple[str, str]:
    """Whether the change upgrades the ray.io CRDs, and what to do about it."""
    ways = {c.crds for c in changes}
    if CRD_FILES in ways or ARGOCD_HELM in ways:
        note = ("the change applies the new CRDs" if CRD_FILES in ways else
                "Argo CD renders the chart with its crds/ folder and syncs the CRDs with it")
        return CRDS_UPGRADED, note + ("; KubeRay's CRDs are too large for client-side apply's "
                                      "last-applied annotation: sync them with ServerSideApply=true or "
                                      "Replace=true (helm-chart/kuberay-operator/README.md:89-130 at v1.7.0)")
    if KUSTOMIZE in ways:
        return CRDS_UPGRADED, ("a remote kustomize base of ray-operator/config that includes config/crd "
                               "brings the new CRDs (apply it server-side: the CRDs are too large for "
                               "client-side apply); a base without them leaves the installed CRDs")
    if HELM_CRDS in ways:
        return CRDS_DEPENDS, ("the CRDs sit in the chart's crds/ folder: `helm upgrade` never upgrades "
                              "them (Helm installs that folder only on first install), so apply the new "
                              "release's CRDs first, e.g. `kubectl apply --server-side -k "
                              "github.com/ray-project/kuberay/ray-operator/config/crd?ref=<tag>`; Argo CD, "
                              "which renders the chart with its CRDs, does sync them (unless skipCrds)")
    if ARGOCD_SKIP_CRDS in ways:
        return CRDS_NOT_UPGRADED, ("helm.skipCrds is set: this Application leaves the CRDs as they are; "
                                   "upgrade them with the Application or step that installs them")
    assert ways <= {IMAGE_ONLY}
    return CRDS_NOT_UPGRADED, ("only the operator image moves: the installed CRDs stay as they are, so the "
                               "new operator reads the objects through the old CRDs; fields new in its "
                               "version stay pruned until the CRDs are upgraded")


def judge(changes: Sequence[OperatorChange], objects: Texts, policy: Mapping[str, Any] | None = None,
          limits: Limits | None = None) -> OperatorUpgrade:
    """Every object of ``objects`` (the texts the repository deploys, before the change) under the
    old and the new operator of ``changes``.

    >>> up = judge(detect([("Chart.yaml", chart_1_6_2, chart_1_7_0)]), [("svc.yaml", text)])  # doctest: +SKIP
    >>> up.to_dict()["objects"][0]["firstReconcile"]                                      # doctest: +SKIP
    'annotations-only'

    Raises :class:`~diffing.errors.ManifestError` for a text that cannot be read and
    :class:`~diffing.errors.PolicyError` for a bad policy.
    """
    pol = Policy.from_mapping(policy)
    found, _, _ = collect_all(objects, "repository", limits or Limits())
    manifests = [found[i] for i in sorted(found, key=lambda i: (ORDER[i[0]], i[1], i[2]))]
    changes = tuple(changes)
    before, after, problem = versions_of(changes)
    crds, crds_note = crds_state(changes)
    old = new = None
    if not problem:
        try:
            old, new = rules_for(before or ""), rules_for(after or "")
        except UnsupportedVersionError:
            known = ", ".join(f"{v}.x" for v in SUPPORTED)
            bad = before if _unsupported(before) else after
            problem = (f"KubeRay {bad} is not a version this tool models (it knows {known}): what the "
                       f"new operator does with these objects is not predicted")
    if old is None or new is None:
        n = len(manifests)
        summary = f"hold: operator {before or '?'} → {after or '?'}: {problem}; {n} object" \
                  f"{'' if n == 1 else 's'} not judged"
        return OperatorUpgrade(changes, before, after, False, crds, crds_note, (), (problem,), HOLD, summary)
    verdicts = tuple(_judge_one(m, old, new, pol, policy, crds) for m in manifests)
    notes = tuple(f"{b.text} ({b.source})" for b in R.GENERAL if _crosses(b.since, old.minor, new.minor))
    decision = HOLD if any(v.decision == HOLD for v in verdicts) else APPROVE
    return OperatorUpgrade(changes, before, after, True, crds, crds_note, verdicts, notes, decision,
                           _summary(decision, before, after, verdicts, crds))


def _unsupported(version: str | None) -> bool:
    try:
        rules_for(version or "")
    except UnsupportedVersionError:
        return True
    return False


def _crosses(since: tuple[int, int], a: tuple[int, int], b: tuple[int, int]) -> bool:
    """A behaviour that arrived in ``since`` differs between minors ``a`` and ``b``."""
    return min(a, b) < since <= max(a, b)


def _summary(decision: str, before: str | None, after: str | None, verdicts: Sequence[ObjectVerdict],
             crds: str) -> str:
    counts: dict[str, int] = {}
    for v in verdicts:
        counts[v.first_reconcile] = counts.get(v.first_reconcile, 0) + 1
    n = len(verdicts)
    parts = [f"{decision}: operator {before} → {after}: {n} object{'' if n == 1 else 's'}"]
    rebuilt = counts.get(REBUILD, 0)
    parts.append(f"{rebuilt or 'none'} rebuilt on the first reconcile")
    later = [v for v in verdicts if v.next_sync]
    if later:
        parts.append(f"{len(later)} change{'' if len(later) == 1 else 's'} on the next sync")
    extra: dict[str, int] = {}
    for v in verdicts:
        for k, n in v.extra.items():
            extra[k] = extra.get(k, 0) + n
    if extra:
        parts.append("needs " + ", ".join(f"{n} extra {k}" for k, n in sorted(extra.items())))
    parts.append(f"CRDs {crds}")
    return "; ".join(parts)


# -- one object --------------------------------------------------------------------------------

def _judge_one(m: Manifest, old: VersionRules, new: VersionRules, pol: Policy,
               policy: Mapping[str, Any] | None, crds: str) -> ObjectVerdict:
    upgraded = crds != CRDS_NOT_UPGRADED
    old_engine = Engine(old, pol)
    new_engine = Engine(new, pol) if upgraded else Engine(new, pol, old_engine.schemas)
    stored = stored_object(old_engine, m) if m.kind in ("RayService", "RayCluster") else dict(m.obj)
    first = R.first_reconcile_rules(new.minor)
    reasons: list[str] = []
    h_old = h_new = None
    outcome = UNTOUCHED
    manager = external_manager(stored)
    if manager is not None:
        outcome = NONE
        reasons.append(f"spec.managedBy is {manager}: this operator does nothing with it")
    elif m.kind == "RayService":
        h_old, h_new = service_hash(old_engine, stored), service_hash(new_engine, stored)
        outcome = _service(stored, old, new, pol, first, h_old != h_new, reasons)
    elif m.kind == "RayCluster":
        h_old, h_new = (recreate_hash(e, stored.get("spec") or {}) for e in (old_engine, new_engine))
        outcome = _cluster(stored, first, h_old != h_new, reasons)
    else:
        rule = first.get(R.JOB_CLUSTER_UNCOMPARED)
        if rule is not None:
            reasons.append(f"{rule.text} ({rule.source})")
    behaviour = _behaviour(m.kind, stored, old, new, pol) if outcome != NONE else []
    # Only the RayService and RayCluster schemas are read here: a RayJob's next sync is left out.
    next_sync = _next_sync(m, stored, new, policy) if upgraded and outcome != NONE \
        and m.kind in ("RayService", "RayCluster") else None
    extra = dict(next_sync["extraAccelerators"]) if next_sync else {}
    decision = HOLD if outcome == REBUILD or next_sync and next_sync["decision"] == HOLD else APPROVE
    if outcome == REBUILD and not extra:
        reasons.append("the rebuild needs the object's whole accelerator request at once beside the old one")
    return ObjectVerdict(m.kind, m.key[0], m.key[1], m.where(), outcome, h_old, h_new, tuple(reasons),
                         tuple(behaviour), next_sync, extra, decision)


def _service(stored: Mapping[str, Any], old: VersionRules, new: VersionRules, pol: Policy,
             first: Mapping[str, R.UpgradeRule], differs: bool, reasons: list[str]) -> str:
    if _at(stored, "spec", "suspend") is True and old.has_rayservice_suspend:
        reasons.append("suspended: no RayCluster runs")
        return UNTOUCHED
    serve = first.get(R.SERVE_RESUBMITTED)
    in_place = first.get(R.SERVICE_ACTIVE_IN_PLACE)
    if in_place is None:  # an operator without the version path compares hashes only
        reasons.append("the new operator's hash of the unchanged spec differs: a new RayCluster"
                       if differs else "the new operator's hash of the spec is the same: nothing changes")
        return REBUILD if differs else UNTOUCHED
    reasons.append(f"{in_place.text} ({in_place.source})")
    if differs:
        reasons.append(f"the hash of the unchanged spec differs under {new.version} (new CRD defaults or "
                       f"Go encoding), which the in-place rewrite absorbs")
    if serve is not None:
        reasons.append(f"{serve.text} ({serve.source})")
    pending = first.get(R.SERVICE_PENDING_BY_HASH)
    if differs and pending is not None:
        reasons.append(f"if a zero-downtime upgrade is in progress when the operator changes: {pending.text} "
                       f"({pending.source}); with the live basis this is known, from Git alone it is not")
    strategy = _at(stored, "spec", "upgradeStrategy", "type")
    gate_on = new.gates(pol.feature_gates).get("RayServiceIncrementalUpgrade", False)
    was_on = old.gates(pol.feature_gates).get("RayServiceIncrementalUpgrade", False)
    if strategy == R.INCREMENTAL and gate_on and not was_on:
        return IN_PLACE
    return REANNOTATED


def _cluster(stored: Mapping[str, Any], first: Mapping[str, R.UpgradeRule], differs: bool,
             reasons: list[str]) -> str:
    recreate = _at(stored, "spec", "upgradeStrategy", "type") == "Recreate"
    if not recreate:
        reasons.append("no upgradeStrategy Recreate: running pods are never compared with the spec")
        return UNTOUCHED
    if _at(stored, "spec", "suspend") is True:
        reasons.append("suspended: no head pod to compare")
        return UNTOUCHED
    guard = first.get(R.CLUSTER_RECREATE_GUARD)
    if guard is not None:
        reasons.append(f"{guard.text} ({guard.source})")
        return REANNOTATED
    reasons.append("the head pod's hash differs under the new operator: every pod is recreated"
                   if differs else "the head pod's hash is the same under the new operator")
    return REBUILD if differs else UNTOUCHED


def _behaviour(kind: str, stored: Mapping[str, Any], old: VersionRules, new: VersionRules,
               pol: Policy) -> list[str]:
    out: list[str] = []
    for b in R.BEHAVIOUR:
        if b.kind != kind or not _crosses(b.since, old.minor, new.minor):
            continue
        if b.path and (not _has(stored, b.path) or b.equals is not None and _at(stored, *b.path) != b.equals):
            continue
        gates = (old.gates(pol.feature_gates), new.gates(pol.feature_gates))
        if b.gate is not None and gates[0].get(b.gate) == gates[1].get(b.gate):
            continue  # the policy pins the gate: nothing changes
        verb = "new in" if new.minor >= b.since else "gone when going back from"
        out.append(f"{verb} v{b.since[0]}.{b.since[1]}: {b.text} ({b.source})")
    # The kind's own field table: a row whose treatment differs between the two minors.
    table_old, table_new = (_table(kind, r) for r in (old, new))
    for pattern in sorted(set(table_old) ^ set(table_new) | {p for p in table_old if p in table_new
                                                             and table_old[p] != table_new[p]}):
        if not _has(stored, pattern):
            continue
        was, now = table_old.get(pattern), table_new.get(pattern)
        field = ".".join(pattern).replace(".[]", "[]")
        if was is None:
            out.append(f"{field}: {now} under {new.version} (a field {old.version} does not have)")
        elif now is None:
            out.append(f"{field}: {was} under {old.version}; {new.version} does not have the field")
        else:
            out.append(f"{field}: under {old.version} {was}; under {new.version} {now}")
    return out


def _table(kind: str, rules: VersionRules) -> dict[tuple[str, ...], str]:
    """The version-bounded rows of a kind's field table: pattern → "category: reason (source)"."""
    if kind == "RayService":
        return {r.pattern: f"{r.category}: {r.reason} ({r.source})" for r in rules.rules
                if r.since != (1, 0) or r.until is not None}
    if kind == "RayCluster":
        return {r.pattern: f"{r.category}: {r.reason} ({r.source})" for r in rules.cluster_rules
                if r.since != (1, 0) or r.until is not None}
    return {}


def _at(value: Any, *keys: str) -> Any:
    """``value[k1][k2]...`` as it is (None as soon as a step is missing or not a mapping)."""
    for key in keys:
        value = value.get(key) if isinstance(value, dict) else None
    return value


def _has(value: Any, path: tuple[str, ...]) -> bool:
    if not path:
        return True
    head, rest = path[0], path[1:]
    if head == "[]":
        return isinstance(value, list) and any(_has(v, rest) for v in value)
    return isinstance(value, dict) and head in value and _has(value[head], rest)


def _next_sync(m: Manifest, stored: dict[str, Any], new: VersionRules,
               policy: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The next sync of the same manifest once the new CRDs are in: it writes what the old CRD
    pruned. Analysed as a change from the stored object (read live) to the manifest."""
    from diffing.pipeline import analyze  # the pipeline does not import this module

    live = json.dumps(stored)
    report = analyze([Source(m.source, live, False, m.namespace)],
                     [Source(m.source, json.dumps(m.obj), False, m.namespace)],
                     new.version, policy=policy, before_is_live=True)
    res = next((r for r in report.resources if r.kind == m.kind and (r.namespace, r.name) == m.key), None)
    if res is None or not res.changes:
        return None
    extra = {k: v for k, v in res.capacity.extra.items()
             if k not in ("cpu", "memory") and isinstance(v, int) and v > 0}
    return {"rollout": str(res.rollout), "decision": str(res.decision),
            "changes": [str(c.to_dict()["path"]) for c in res.changes],
            "reasons": list(res.reasons), "extraAccelerators": extra}


def stored_object(engine: Engine, m: Manifest) -> dict[str, Any]:
    """``m`` as the API server of ``engine``'s version stores it: in the storage version, its spec
    pruned and defaulted by that version's CRD, ``status`` left out."""
    obj = {k: v for k, v in m.obj.items() if k != "status"}
    meta = dict(mapping(obj.get("metadata")))
    meta.setdefault("namespace", m.namespace)
    obj["metadata"] = meta
    if m.kind == "RayCluster":
        write = cluster_schema(engine, m.api_version)
        storage = cluster_schema(engine, f"ray.io/{STORAGE_VERSION}")
    else:
        write = engine.schemas.child(engine.schema_root(m.api_version), "spec")
        storage = engine.schemas.child(engine.schemas.root(STORAGE_VERSION), "spec")
    schemas = engine.schemas
    spec = schemas.prune(mapping(obj.get("spec")), write)
    spec = schemas.default_fill(spec, write)
    if storage is not write:
        spec = schemas.default_fill(schemas.prune(spec, storage), storage)
    obj["spec"] = spec
    obj["apiVersion"] = f"ray.io/{STORAGE_VERSION}"
    return obj


def service_hash(engine: Engine, stored: Mapping[str, Any]) -> str:
    """The RayCluster hash the RayService controller of ``engine``'s version computes for a stored
    RayService (``rayClusterSpecForHashing``: ``rayClusterConfig`` without ``suspend``, muted
    fields cleared; rayservice_controller.go:1498-1502 at v1.7.0), base32 of its SHA-1."""
    import base64
    import hashlib

    rcc = {k: v for k, v in mapping(_at(stored, "spec", "rayClusterConfig")).items() if k != "suspend"}
    types = engine.gotypes
    schema = cluster_schema(engine, f"ray.io/{STORAGE_VERSION}")
    encoded = types.encode(rcc, types.root, engine.schemas, schema)
    for pattern in engine.cluster_muted:
        _clear(types, engine.schemas, encoded, types.root, pattern)
    digest = hashlib.sha1(go_json(encoded), usedforsecurity=False).digest()
    return base64.b32hexencode(digest).decode("ascii")


def with_operator_upgrade(report: Any, upgrade: OperatorUpgrade) -> Any:
    """``report`` (a :class:`~diffing.report.Report`) with ``upgrade`` under ``operatorUpgrade``:
    a hold of the upgrade holds the whole change, and the summary says so."""
    from diffing.record import replace

    decision = HOLD if upgrade.decision == HOLD else report.decision
    summary = report.summary if decision == report.decision else f"{decision}: {upgrade.summary}"
    if decision == report.decision:
        summary = f"{report.summary}; operator upgrade: {upgrade.summary}"
    return replace(report, decision=decision, summary=summary, operator_upgrade=upgrade)


# -- a change given as texts (two files, the HTTP API, an Argo CD diff) -------------------------

_OWNERS = frozenset({"RayService", "RayJob"})  # a RayCluster they own is judged through them
_LIVE_ONLY = ("status", "managedFields", "resourceVersion", "uid", "generation", "creationTimestamp")


def _paired(before: Texts, after: Texts) -> list[tuple[str, str | None, str | None]]:
    """``(name, before text, after text)`` per source, matched by name; two single texts under
    different names (``analyze before.yaml after.yaml``) are one file's two sides."""
    def sources(texts: Texts, side: str) -> list[Source]:
        if isinstance(texts, str):
            return [Source(side, texts)]
        return [t if isinstance(t, Source) else Source(t[0], t[1]) for t in texts]

    b, a = sources(before, "before"), sources(after, "after")
    if len(b) == 1 and len(a) == 1:
        pairs: list[tuple[str, str | None, str | None]] = [(a[0].name, b[0].text, a[0].text)]
    else:
        bt, at = {s.name: s.text for s in b}, {s.name: s.text for s in a}
        pairs = [(n, bt.get(n), at.get(n)) for n in sorted(set(bt) | set(at))]
    return [p for p in pairs if _may_name_operator(p[1]) or _may_name_operator(p[2])]


def _may_name_operator(text: str | None) -> bool:
    """Whether a text can hold anything :func:`detect` finds (every operator reference names
    ``kuberay``; a CRD says what it is): the texts of an ordinary change are not parsed twice."""
    return text is not None and ("kuberay" in text or "CustomResourceDefinition" in text)


def _stored_text(obj: Mapping[str, Any]) -> str | None:
    """A live object as a text the analysis reads (JSON is YAML), without what only the API server
    writes; ``None`` for a RayCluster a RayService or RayJob owns (judged through its owner)."""
    meta = obj.get("metadata") if isinstance(obj.get("metadata"), Mapping) else {}
    assert isinstance(meta, Mapping)
    owners = meta.get("ownerReferences")
    if obj.get("kind") == "RayCluster" and isinstance(owners, list) and any(
            isinstance(o, Mapping) and o.get("kind") in _OWNERS for o in owners):
        return None
    kept = {k: v for k, v in obj.items() if k not in _LIVE_ONLY}
    kept["metadata"] = {k: v for k, v in meta.items() if k not in _LIVE_ONLY}
    return json.dumps(kept, sort_keys=True)


Files = Sequence[tuple[str, str | None, str | None]]


def moves_operator(before: Texts, after: Texts, files: Files | None = None) -> bool:
    """Whether the change moves the KubeRay operator (cheap enough to decide whether the cluster's
    objects must be read first). A text that cannot be read moves nothing here: the analysis
    itself names it."""
    try:
        return bool(detect(_paired(before, after) if files is None else files))
    except ManifestError:
        return False


def upgrade_in(before: Texts, after: Texts, *, files: Files | None = None,
               cluster: Sequence[Mapping[str, Any]] | None = None,
               cluster_unread: str = "", policy: Mapping[str, Any] | None = None,
               limits: Limits | None = None) -> OperatorUpgrade | None:
    """The operator upgrade a change given as texts makes, or ``None`` when it moves no operator.

    ``files`` are the ``(name, before, after)`` texts the operator change is looked for in, when
    they are not ``before`` and ``after`` themselves (an Argo CD diff: the operator's Deployment
    and CRDs beside the ray.io objects). The objects judged are the change's own (its before
    side) and, with a live basis, ``cluster``: every RayService, standalone RayCluster and RayJob
    the cluster holds (an object in both is judged as the change has it). ``cluster_unread``
    says why the cluster was asked but could not be read: then the upgrade holds, since what it
    rebuilds is not known
    (docs/operator-upgrade.md, "From an Argo CD diff or the HTTP API").
    """
    changes = detect(_paired(before, after) if files is None else files)
    if not changes:
        return None
    objects: list[Source] = [t if isinstance(t, Source) else Source(t[0], t[1])
                             for t in ([("before", before)] if isinstance(before, str) else before)]
    for obj in cluster or ():
        text = _stored_text(obj)
        meta = obj.get("metadata") if isinstance(obj.get("metadata"), Mapping) else {}
        assert isinstance(meta, Mapping)
        if text is not None:
            objects.append(Source(f"cluster: {obj.get('kind')} {meta.get('namespace')}/{meta.get('name')}",
                                  text, lines=False))
    upgrade = judge(changes, objects, policy=policy, limits=limits)
    n = len(upgrade.objects)
    if cluster_unread:
        note = (f"the cluster's RayServices, RayClusters and RayJobs could not be read ({cluster_unread}): "
                f"only the {n} object{'' if n == 1 else 's'} in the change were judged")
        return replace(upgrade, decision=HOLD, notes=upgrade.notes + (note,),
                       summary=f"hold: {note}; {upgrade.summary}")
    if cluster is None:
        note = (f"only the {n} object{'' if n == 1 else 's'} in the change were judged; with the live basis "
                "on, every RayService, RayCluster and RayJob in the cluster is")
        return replace(upgrade, notes=upgrade.notes + (note,))
    return upgrade


def with_upgrade_in(report: Any, before: Texts, after: Texts, **kwargs: Any) -> Any:
    """``report`` with the operator upgrade of ``before`` → ``after`` (:func:`upgrade_in`), if any."""
    upgrade = upgrade_in(before, after, **kwargs)
    return report if upgrade is None else with_operator_upgrade(report, upgrade)
