"""Orchestration: pair RayServices, diff, classify, predict the rollout, size it, decide.

The operator's decision procedure (semantics §1.4) is followed literally: validation first,
then suspend, then the cluster hash (full, then "only groups appended"), then the upgrade
strategy; serveConfigV2 and muted fields are judged only when the cluster is left alone.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from typing import Any

from . import capacity as cap
from . import serve
from .diff import Differ, Difference
from .errors import ManifestError
from .findings import Context, collect_findings
from .gojson import ABSENT, OMIT, GoTypes, TypeDesc, struct
from .kuberay import Category, VersionRules, rules_for, schema_data
from .live import LiveCluster
from .loading import Document, Limits, load_documents
from .paths import Key, Path, format_path, schema_path
from .policy import Policy, parse_headroom
from .report import APPROVE, HOLD, IGNORE, Capacity, Change, Finding, Report, ResourceReport
from .schema import Schema, SchemaSet, transition_errors, validate
from .validation import validate_rayservice
from .values import dig, mapping, seq

SERVER_METADATA = ("managedFields", "resourceVersion", "uid", "generation", "creationTimestamp",
                   "selfLink", "deletionTimestamp", "deletionGracePeriodSeconds")
SERVER_ANNOTATIONS = ("kubectl.kubernetes.io/last-applied-configuration",)
OPERATOR_FINALIZERS = ("ray.io/rayservice-finalizer",)
RCC: Path = ("spec", "rayClusterConfig")


@lru_cache(maxsize=4)
def _tables(minor: tuple[int, int]) -> tuple[SchemaSet, GoTypes]:
    schema_json, go_json = schema_data(minor)
    return SchemaSet(schema_json), GoTypes(go_json)


@dataclass(frozen=True, slots=True)
class Manifest:
    """One RayService as read from a text."""

    obj: dict[str, Any]
    doc: Document
    source: str

    @property
    def api_version(self) -> str:
        return str(self.obj.get("apiVersion", ""))

    @property
    def key(self) -> tuple[str, str]:
        meta = self.obj.get("metadata") or {}
        return str(meta.get("namespace") or "default"), str(meta["name"])

    def line(self, path: Path = ()) -> int | None:
        return self.doc.line_of(path)

    def where(self, path: Path = ()) -> str:
        line = self.line(path)
        return f"{self.source}:{line}" if line else self.source


def strip_server_fields(obj: Mapping[str, Any]) -> dict[str, Any]:
    """Drop what the API server and the operator write: status, managedFields, uid, ..."""
    out = {k: v for k, v in obj.items() if k != "status"}
    meta = dict(mapping(out.get("metadata")))
    for k in SERVER_METADATA:
        meta.pop(k, None)
    if isinstance(meta.get("annotations"), dict):
        ann = {k: v for k, v in meta["annotations"].items() if k not in SERVER_ANNOTATIONS}
        if ann:
            meta["annotations"] = ann
        else:
            meta.pop("annotations")
    if isinstance(meta.get("finalizers"), list):
        fin = [f for f in meta["finalizers"] if f not in OPERATOR_FINALIZERS]
        if fin:
            meta["finalizers"] = fin
        else:
            meta.pop("finalizers")
    out["metadata"] = meta
    return out


def is_rayservice(value: Any) -> bool:
    return (isinstance(value, dict) and value.get("kind") == "RayService"
            and str(value.get("apiVersion", "")).startswith("ray.io/"))


def collect(text: str, source: str, limits: Limits) -> tuple[dict[tuple[str, str], Manifest], list[Any]]:
    """RayServices of a text by (namespace, name), plus any Argo CD Applications in it."""
    found: dict[tuple[str, str], Manifest] = {}
    apps: list[Any] = []
    for doc in load_documents(text, source=source, limits=limits):
        values = [doc.value]
        if isinstance(doc.value, dict) and doc.value.get("kind") == "List" and isinstance(
                doc.value.get("items"), list):
            values = doc.value["items"]
        for value in values:
            if isinstance(value, dict) and value.get("kind") == "Application" and str(
                    value.get("apiVersion", "")).startswith("argoproj.io/"):
                apps.append(value)
            if not is_rayservice(value):
                continue
            meta = value.get("metadata")
            if not isinstance(meta, dict) or not isinstance(meta.get("name"), str) or not meta["name"]:
                raise ManifestError("a RayService without metadata.name", source=source,
                                    document=doc.index, line=doc.line, path="metadata.name")
            if not isinstance(value.get("spec"), dict):
                raise ManifestError("a RayService without a spec mapping", source=source,
                                    document=doc.index, line=doc.line, path="spec")
            m = Manifest(strip_server_fields(value), doc, source)
            if m.key in found:
                first = found[m.key]
                raise ManifestError(
                    f"RayService {m.key[0]}/{m.key[1]} appears twice (first in document "
                    f"{first.doc.index}, line {first.doc.line})",
                    source=source, document=doc.index, line=doc.line)
            found[m.key] = m
    return found, apps


def collect_all(texts: Texts, source: str, limits: Limits
                ) -> tuple[dict[tuple[str, str], Manifest], list[Any]]:
    pairs = [(source, texts)] if isinstance(texts, str) else list(texts)
    found: dict[tuple[str, str], Manifest] = {}
    apps: list[Any] = []
    for name, text in pairs:
        more, more_apps = collect(text or "", name, limits)
        for key, m in more.items():
            if key in found:
                raise ManifestError(
                    f"RayService {key[0]}/{key[1]} appears twice (also in {found[key].where()})",
                    source=name, document=m.doc.index, line=m.doc.line)
            found[key] = m
        apps.extend(more_apps)
    return found, apps


def rayservice_objects(texts: Texts, source: str = "after") -> dict[str, dict[str, Any]]:
    """The RayServices of ``texts`` by ``"namespace/name"`` (for a caller that looks them up live)."""
    found, _ = collect_all(texts, source, Limits())
    return {f"{ns}/{name}": m.obj for (ns, name), m in found.items()}


def crd_schemas(crd_text: str) -> SchemaSet:
    """A SchemaSet from a user-supplied RayService CRD (``--crd``)."""
    value = load_documents(crd_text, source="crd")
    crd = next((d.value for d in value if isinstance(d.value, dict)
                and d.value.get("kind") == "CustomResourceDefinition"), None)
    try:
        versions = {v["name"]: v["schema"]["openAPIV3Schema"] for v in crd["spec"]["versions"]}  # type: ignore[index]
    except (TypeError, KeyError) as exc:
        raise ManifestError(f"not a CustomResourceDefinition with versions[].schema ({exc})",
                            source="crd") from None
    return SchemaSet.from_versions(versions)


class Engine:
    """Analysis for one KubeRay version and policy."""

    def __init__(self, rules: VersionRules, policy: Policy, schemas: SchemaSet | None = None) -> None:
        self.rules = rules
        self.policy = policy
        self.schemas, self.gotypes = _tables(rules.minor)
        if schemas is not None:
            self.schemas = schemas
        self.differ = Differ(self.schemas, self.gotypes)
        self.before_is_live = False

    # -- API server view -------------------------------------------------------------------

    def schema_root(self, api_version: str) -> Schema | None:
        version = api_version.split("/", 1)[-1]
        return self.schemas.root(version) or self.schemas.root("v1")

    def spec_schema(self, m: Manifest) -> Schema | None:
        return self.schemas.child(self.schema_root(m.api_version), "spec")

    def defaulted(self, m: Manifest) -> dict[str, Any]:
        """The object as the API server stores it: pruned and defaulted spec."""
        obj = dict(m.obj)
        obj["spec"] = self.schemas.default_fill(mapping(m.obj.get("spec")), self.spec_schema(m))
        return obj

    def spec_type(self, key: str) -> TypeDesc | None:
        if key == "rayClusterConfig":
            return self.gotypes.root
        if key == "serveService":
            return struct("core/v1.Service")
        return None

    # -- the cluster hash ------------------------------------------------------------------

    def hash_input(self, m: Manifest, groups: int | None = None) -> Any:
        """The Go encoding KubeRay hashes, muted fields removed (``groups`` truncates)."""
        rcc = mapping(m.obj.get("spec")).get("rayClusterConfig", ABSENT)
        if groups is not None and isinstance(rcc, dict):
            rcc = dict(rcc)
            rcc["workerGroupSpecs"] = seq(rcc.get("workerGroupSpecs"))[:groups]
        sch = self.schemas.child(self.spec_schema(m), "rayClusterConfig")
        encoded = self.gotypes.encode(rcc, self.gotypes.root, self.schemas, sch)
        for pattern in self.rules.muted_patterns:
            _drop(encoded, pattern[2:])
        return encoded

    def hash_compare(self, b: Manifest, a: Manifest) -> tuple[bool, bool]:
        """(full, partial) equality of the operator's cluster hash, ``b`` being the running spec.

        ``partial`` is ``isClusterSpecHashEqual(..., partial=true)``: the first N worker groups
        of the new spec (N = groups running) hash-equal to the running ones. Groups whose text
        is identical are not encoded at all: equal input, equal hash.
        """
        brcc = dict(dig(b.obj, "spec", "rayClusterConfig"))
        arcc = dict(dig(a.obj, "spec", "rayClusterConfig"))
        bgroups, agroups = seq(brcc.pop("workerGroupSpecs", None)), seq(arcc.pop("workerGroupSpecs", None))
        sch = self.schemas.child(self.spec_schema(a), "rayClusterConfig")
        if not _same(brcc, arcc) and self._encode(brcc, sch) != self._encode(arcc, sch):
            return False, False
        item_sch = self.schemas.child(self.schemas.child(sch, "workerGroupSpecs"), 0)
        n = len(bgroups)
        prefix = len(agroups) >= n and all(
            _same(bgroups[i], agroups[i]) or self._encode_group(bgroups[i], item_sch)
            == self._encode_group(agroups[i], item_sch) for i in range(n))
        return prefix and len(agroups) == n, prefix

    def _encode(self, rcc: dict[str, Any], sch: Schema | None) -> Any:
        encoded = self.gotypes.encode(rcc, self.gotypes.root, self.schemas, sch)
        for pattern in self.rules.muted_patterns:
            if pattern[2] != "workerGroupSpecs":
                _drop(encoded, pattern[2:])
        return encoded

    def _encode_group(self, group: Any, sch: Schema | None) -> Any:
        encoded = self.gotypes.encode(group, struct("ray/v1.WorkerGroupSpec"), self.schemas, sch)
        for pattern in self.rules.muted_patterns:
            if pattern[2:4] == ("workerGroupSpecs", "[]"):
                _drop(encoded, pattern[4:])
        return encoded

    # -- diffing -----------------------------------------------------------------------------

    def differences(self, b: Manifest, a: Manifest) -> list[Difference]:
        out: list[Difference] = []
        if b.api_version != a.api_version:
            out.append(Difference(("apiVersion",), b.api_version, a.api_version, "modified", True,
                                  "same stored object"))
        # name and namespace are the pairing key (a missing namespace is "default").
        identity = ("name", "namespace")
        bmeta = {k: v for k, v in mapping(b.obj.get("metadata")).items() if k not in identity}
        ameta = {k: v for k, v in mapping(a.obj.get("metadata")).items() if k not in identity}
        out.extend(self.differ.diff(bmeta, ameta, ("metadata",), None, None))
        bspec, aspec = mapping(b.obj.get("spec")), mapping(a.obj.get("spec"))
        sch = self.spec_schema(a)
        for key in list(bspec) + [k for k in aspec if k not in bspec]:
            if key == "serveConfigV2":
                continue
            bv, av = bspec.get(key, ABSENT), aspec.get(key, ABSENT)
            if type(bv) is type(av) and bv == av:
                continue
            child = self.schemas.child(sch, key)
            if child is None:
                kind = "added" if bv is ABSENT else "removed" if av is ABSENT else "modified"
                out.append(Difference(("spec", key), bv, av, kind, True, "unknown field, pruned"))
                continue
            out.extend(self.differ.diff(bv, av, ("spec", key), child, self.spec_type(key)))
        return out


def _same(a: Any, b: Any) -> bool:
    return type(a) is type(b) and a == b


def _drop(value: Any, pattern: tuple[str, ...]) -> None:
    if not pattern or value is OMIT:
        return
    head, rest = pattern[0], pattern[1:]
    if head == "[]":
        if isinstance(value, list):
            for item in value:
                _drop(item, rest)
        return
    if isinstance(value, dict) and head in value:
        if rest:
            _drop(value[head], rest)
        else:
            del value[head]


# ---------------------------------------------------------------------------------------------


@dataclass
class Pair:
    """Working state for one RayService while it is analysed."""

    key: tuple[str, str]
    before: Manifest | None
    after: Manifest | None
    changes: list[Change]
    real: set[Category]
    reasons: list[str]
    findings: list[Finding]


def _rcc(obj: Mapping[str, Any] | None) -> dict[str, Any]:
    return dict(dig(obj, "spec", "rayClusterConfig"))


def _truthy(value: Any) -> bool:
    return value is True


def resolve_strategy(spec: Mapping[str, Any], policy: Policy, rules: VersionRules) -> tuple[str, str]:
    """(``new-cluster`` | ``incremental`` | ``not-applied``, how it was resolved)."""
    gate = policy.feature_gates.get("RayServiceIncrementalUpgrade", rules.incremental_gate_default)
    kind = dig(spec, "upgradeStrategy").get("type")
    if kind == "NewCluster":
        return "new-cluster", "upgradeStrategy.type NewCluster"
    if kind == "NewClusterWithIncrementalUpgrade":
        if gate:
            return "incremental", "upgradeStrategy.type NewClusterWithIncrementalUpgrade"
        return "not-applied", ("upgradeStrategy.type NewClusterWithIncrementalUpgrade with the "
                               "RayServiceIncrementalUpgrade feature gate off behaves like None")
    if kind == "None":
        return "not-applied", "upgradeStrategy.type None"
    env = policy.operator_env.get("ENABLE_ZERO_DOWNTIME", "")
    if env.lower() == "false":
        return "not-applied", "no upgradeStrategy.type and operator env ENABLE_ZERO_DOWNTIME=false"
    return "new-cluster", "default strategy NewCluster (no upgradeStrategy.type)"


def analyze_pair(engine: Engine, key: tuple[str, str], before: Manifest | None,
                 after: Manifest | None, *, headroom: Mapping[str, Fraction] | None,
                 live: LiveCluster | None, argo_apps: list[Any]) -> ResourceReport:
    rules, policy = engine.rules, engine.policy
    main = after or before
    assert main is not None
    pair = Pair(key, before, after, [], set(), [], [])
    b_def = engine.defaulted(before) if before else None
    a_def = engine.defaulted(after) if after else None
    schema_errors: list[tuple[Path, str]] = []
    unknown: list[Path] = []
    op_problems: list[tuple[str, Path, str]] = []
    strategy_note = ""

    # 1. changes ------------------------------------------------------------------------------
    b_serve = serve.parse(dig(before.obj, "spec").get("serveConfigV2", ABSENT) if before else ABSENT)
    a_serve = serve.parse(dig(after.obj, "spec").get("serveConfigV2", ABSENT) if after else ABSENT)
    full_equal = partial_equal = True
    if before and after:
        for d in engine.differences(before, after):
            rule = rules.category_of(schema_path(d.path))
            category = Category.NO_OP if d.noop else rule.category
            pair.changes.append(Change(d.path, category.value, d.before, d.after, d.note))
        for s in serve.diff(b_serve, a_serve):
            category = Category.NO_OP if s.noop else Category.SERVE_IN_PLACE
            pair.changes.append(Change(s.path, category.value, s.before, s.after, s.detail))
        full_equal, partial_equal = engine.hash_compare(before, after)
        if not full_equal and partial_equal:
            n = len(seq(_rcc(before.obj).get("workerGroupSpecs")))
            pair.changes = [_appended(c, n) for c in pair.changes]
        if engine.before_is_live:
            pair.changes = [c for c in pair.changes if c.category != Category.NO_OP.value]
        pair.real = {Category(c.category) for c in pair.changes} - {Category.NO_OP}
        if not full_equal and not (pair.real & {Category.CLUSTER_RECREATE,
                                                Category.WORKER_GROUP_APPENDED}):
            # The walk and the hash disagree only if a difference hides in a value that the
            # walk judged as a whole; report the cluster spec itself so nothing is lost.
            pair.changes.append(Change(RCC, Category.CLUSTER_RECREATE.value, None, None,
                                       "the cluster hash input differs"))
            pair.real.add(Category.CLUSTER_RECREATE)

    # 2. validation of the new manifest ------------------------------------------------------
    if after and a_def is not None and (before is None or pair.changes):
        spec_sch = engine.spec_schema(after)
        schema_errors = validate(engine.schemas, after.obj.get("spec"), spec_sch, ("spec",),
                                 unknown=unknown)
        if before is not None:
            schema_errors += transition_errors(engine.schemas, before.obj.get("spec"),
                                               after.obj.get("spec"), spec_sch, ("spec",))
        gate = policy.feature_gates.get("RayServiceIncrementalUpgrade", rules.incremental_gate_default)
        if not schema_errors:  # the API server rejects first; the operator never sees the object
            op_problems = validate_rayservice(a_def, incremental_gate=gate,
                                              feature_gates=policy.feature_gates)

    # 3. rollout ------------------------------------------------------------------------------
    a_spec = dig(a_def, "spec")
    b_spec = dig(b_def, "spec")
    autoscaling = _truthy(_rcc(a_def or b_def).get("enableInTreeAutoscaling"))
    if before is None:
        action, rollout = "created", "create"
        pair.reasons.append("the RayService is new: KubeRay builds its first RayCluster at full size")
    elif after is None:
        action, rollout = "deleted", "delete"
        pair.reasons.append("the RayService is removed: its RayClusters and Services are deleted")
    else:
        action = "updated" if pair.changes else "unchanged"
        rollout = _rollout(pair, engine, b_spec, a_spec, full_equal, partial_equal, autoscaling,
                           schema_errors, op_problems)
        if rollout in ("new-cluster", "incremental", "not-applied") and not full_equal and not partial_equal:
            strategy_note = resolve_strategy(a_spec, policy, rules)[1]
    if after and before is None and (schema_errors or op_problems):
        rollout = "not-applied"

    # 4. capacity -----------------------------------------------------------------------------
    capacity = _capacity(engine, rollout, b_def, a_def, pair, headroom, live, autoscaling,
                         (b_serve, a_serve))

    # 5. findings -----------------------------------------------------------------------------
    ctx = Context(engine=engine, before=before, after=after, b_def=b_def, a_def=a_def,
                  b_serve=b_serve, a_serve=a_serve, changes=pair.changes, real=pair.real,
                  rollout=rollout, autoscaling=autoscaling, schema_errors=schema_errors,
                  op_problems=op_problems, live=live, argo_apps=argo_apps, capacity=capacity,
                  unknown=unknown)
    pair.findings.extend(collect_findings(ctx))

    # 6. decision -----------------------------------------------------------------------------
    if action == "unchanged":
        decision, headline = APPROVE, ""  # nothing is being applied, whatever the manifest says
    else:
        decision, headline = _decide(pair, engine, rollout, capacity, headroom, live)
    ignore: tuple[dict[str, Any], ...] = ()
    if decision == IGNORE:
        ignore = (ignore_differences_entry(key),)
    if strategy_note:
        pair.reasons.insert(0, f"strategy: {strategy_note}")
    order = {"error": 0, "warning": 1, "info": 2}
    findings = tuple(sorted(pair.findings, key=lambda f: order.get(f.severity, 3)))
    return ResourceReport(
        api_version=main.api_version, namespace=key[0], name=key[1], action=action,
        rollout=rollout, decision=decision, reasons=tuple(pair.reasons), changes=tuple(pair.changes),
        capacity=capacity, findings=findings, ignore_differences=ignore,
        source=main.where(), strategy=strategy_note, headline=headline,
    )


def _appended(change: Change, n: int) -> Change:
    """Worker groups added after the first ``n`` while those stay hash-equal: appended."""
    p = change.path
    if (len(p) == 4 and p[:3] == RCC + ("workerGroupSpecs",) and change.before is ABSENT
            and change.category == Category.CLUSTER_RECREATE.value
            and (isinstance(p[3], Key) or (isinstance(p[3], int) and p[3] >= n))):
        return Change(p, Category.WORKER_GROUP_APPENDED.value, change.before, change.after,
                      change.detail)
    return change


def _rollout(pair: Pair, engine: Engine, b_spec: Mapping[str, Any], a_spec: Mapping[str, Any],
             full_equal: bool, partial_equal: bool, autoscaling: bool,
             schema_errors: list[tuple[Path, str]], op_problems: list[tuple[str, Path, str]]) -> str:
    rules, policy, real = engine.rules, engine.policy, pair.real
    if rules.has_rayservice_suspend:
        was, now = _truthy(b_spec.get("suspend")), _truthy(a_spec.get("suspend"))
        if now and not was:
            pair.reasons.append("spec.suspend turns true: every RayCluster and Service of this "
                                "RayService is deleted and serving stops")
            return "suspend"
        if was and not now:
            pair.reasons.append("spec.suspend turns false: a brand-new RayCluster is built at full size")
            return "resume"
        if now and was and real:
            pair.reasons.append("the RayService stays suspended: nothing is applied until it resumes")
            return "not-applied"
    if schema_errors:
        path, msg = schema_errors[0]
        pair.reasons.append(f"the API server rejects the new manifest ({format_path(path)} {msg}); "
                            "nothing is applied")
        return "not-applied"
    if op_problems:
        _, path, msg = op_problems[0]
        pair.reasons.append(f"KubeRay's validation fails ({format_path(path)}: {msg}): the operator marks "
                            "the RayService ValidationFailed and does nothing")
        return "not-applied"
    if not full_equal:
        if partial_equal:
            pair.reasons.append("only worker groups were appended: KubeRay updates the running "
                                "RayCluster in place (no new cluster)")
            return "cluster-in-place"
        strategy, how = resolve_strategy(a_spec, policy, rules)
        if strategy == "not-applied":
            pair.reasons.append(f"the cluster spec changed but {how}: the change is silently not "
                                "applied (only an operator log line)")
            return "not-applied"
        if strategy == "incremental":
            pair.reasons.append("the cluster spec changed: KubeRay builds a new RayCluster and shifts "
                                "capacity and traffic to it step by step through the Gateway")
            return "incremental"
        pair.reasons.append("the cluster spec changed: KubeRay builds a whole new RayCluster next to "
                            "the old one and switches traffic when its Serve apps are RUNNING")
        return "new-cluster"
    b_rc_suspend = _truthy(_rcc({"spec": b_spec}).get("suspend"))
    a_rc_suspend = _truthy(_rcc({"spec": a_spec}).get("suspend"))
    if rules.cluster_suspend_in_place and b_rc_suspend != a_rc_suspend:
        pair.reasons.append("rayClusterConfig.suspend toggled: KubeRay v1.6 updates the RayCluster in place")
        return "cluster-in-place"
    if Category.SERVE_IN_PLACE in real:
        pair.reasons.append("only serveConfigV2 changed: KubeRay re-submits it to the running "
                            "cluster and Ray Serve applies it in place")
        return "serve-in-place"
    if Category.AUTOSCALER_OWNED in real:
        if autoscaling:
            pair.reasons.append("only autoscaler-owned fields changed and in-tree autoscaling is on: "
                                "KubeRay does nothing and the autoscaler keeps sizing the cluster")
            return "none"
        pair.reasons.append("only replicas/minReplicas/maxReplicas/workersToDelete changed: KubeRay "
                            "never propagates them to the running RayCluster on their own")
        return "not-applied"
    if Category.OPERATOR_IGNORED in real:
        pair.reasons.append("only fields KubeRay leaves out of its comparison changed (tolerations, "
                            "schedulingGates, rayClusterConfig.suspend...): nothing reaches the cluster")
        return "not-applied"
    if real:
        pair.reasons.append("only RayService-level fields changed: no RayCluster is touched")
    elif pair.changes:
        pair.reasons.append("every difference vanishes under the operator's normalisation")
    else:
        pair.reasons.append("no change to this RayService")
    return "none"


def _capacity(engine: Engine, rollout: str, b_def: Mapping[str, Any] | None,
              a_def: Mapping[str, Any] | None, pair: Pair, headroom: Mapping[str, Fraction] | None,
              live: LiveCluster | None, autoscaling: bool,
              serves: tuple[serve.ServeConfig, serve.ServeConfig]) -> Capacity:
    policy = engine.policy
    init = policy.operator_env.get("ENABLE_INIT_CONTAINER_INJECTION", "true").lower() != "false"
    accel = policy.accelerators
    basis = "live" if live is not None and (live.active_cluster or live.worker_replicas) else "manifest"
    old = cap.cluster_shape(_rcc(b_def), init_injection=init) if b_def else None
    new = cap.cluster_shape(_rcc(a_def), init_injection=init) if a_def else None
    current: dict[str, int] = {}
    if old is not None:
        current = {g.name: g.replicas for g in old.groups}
        if basis == "live" and live is not None:
            current.update({k: v for k, v in live.worker_replicas.items() if k in current})
    old_total = old.total(current) if old else {}
    extra: cap.Amounts = {}
    phases: list[tuple[str, cap.Amounts]] = []
    if new is not None and rollout in ("create", "resume"):
        extra = new.total()
        phases = [("before", {}), ("after", extra)]
    elif new is not None and rollout == "new-cluster":
        reps = {}
        for g in new.groups:
            if autoscaling and basis == "live" and g.name in current:
                reps[g.name] = cap.clamp(current[g.name], g.min_replicas, g.max_replicas)
        extra = new.total(reps)
        phases = [("before", old_total), ("both clusters", cap.add(old_total, extra)), ("after", extra)]
    elif new is not None and rollout == "incremental":
        opts = dig(a_def, "spec", "upgradeStrategy", "clusterUpgradeOptions")
        surge = opts.get("maxSurgePercent", 100)
        surge = surge if isinstance(surge, int) and 0 <= surge <= 100 else 100
        reps = {g.name: cap.surge_replicas(g, current.get(g.name, g.replicas), surge) for g in new.groups}
        extra = new.total(reps)
        full = new.total({g.name: current.get(g.name, g.replicas) for g in new.groups})
        phases = [("before", old_total), (f"first step (+{surge}%)", cap.add(old_total, extra)),
                  ("after", full)]
    elif new is not None and rollout == "cluster-in-place":
        for g in new.groups:
            if g.name not in current:
                extra = cap.add(extra, g.resources())
            elif g.replicas > current[g.name]:
                extra = cap.add(extra, g.per_pod, (g.replicas - current[g.name]) * g.hosts)
        phases = [("before", old_total), ("after", cap.add(old_total, extra))]
    extra = cap.positive(extra)
    peak = cap.add(old_total, extra) if extra and rollout not in ("create", "resume") else dict(extra)
    known = known_headroom(headroom, live)
    serve_info = None
    if b_def is not None or a_def is not None:
        serve_info = _serve_gpus(pair, new, serves)
    return Capacity(
        basis=basis,
        extra=cap.render_amounts(extra, accel),
        peak=cap.render_amounts(peak, accel) if extra else {},
        headroom=cap.render_amounts(known, accel, keep_zero=True) if known is not None else None,
        phases=tuple((label, cap.render_amounts(a, accel)) for label, a in phases),
        serve=serve_info,
    )


def _serve_gpus(pair: Pair, new: cap.ClusterShape | None,
                serves: tuple[serve.ServeConfig, serve.ServeConfig]) -> dict[str, Any] | None:
    before, after = serve.gpu_demand(serves[0]), serve.gpu_demand(serves[1])
    if before.gpus == after.gpus == 0:
        return None
    out: dict[str, Any] = {"before": _num(before.gpus), "after": _num(after.gpus)}
    if new is not None:
        out["ceiling"] = _num(float(logical_gpu_ceiling(pair.after.obj if pair.after else {}, new)))
    return out


def logical_gpu_ceiling(obj: Mapping[str, Any], shape: cap.ClusterShape) -> float:
    """Ray GPUs the cluster can ever offer: head + every group at maxReplicas x numOfHosts."""
    rcc = _rcc(obj)
    total = _logical_gpus(mapping(rcc.get("headGroupSpec")))
    groups = [g for g in seq(rcc.get("workerGroupSpecs")) if isinstance(g, Mapping)]
    for g, size in zip(groups, shape.groups, strict=False):
        if size.suspended or size.max_replicas >= cap.MAX_INT32:
            if size.max_replicas >= cap.MAX_INT32 and _logical_gpus(g) > 0:
                return float("inf")
            continue
        total += _logical_gpus(g) * size.max_replicas * size.hosts
    return total


def _logical_gpus(group: Mapping[str, Any]) -> float:
    """``num-gpus`` as KubeRay passes it to ``ray start`` (rayStartParams > resources > limits)."""
    if not isinstance(group, Mapping):
        return 0.0
    params = mapping(group.get("rayStartParams"))
    if "num-gpus" in params:
        try:
            return float(params["num-gpus"])
        except (TypeError, ValueError):
            return 0.0
    res = mapping(group.get("resources"))
    if res:
        for k, v in res.items():
            if cap.is_gpu(str(k)):
                try:
                    return float(cap.Quantity.parse(v).ceil())
                except cap.QuantityError:
                    return 0.0
    containers = seq(dig(group, "template", "spec").get("containers"))
    if containers:
        limits = dig(containers[0], "resources", "limits")
        for k in sorted(limits):
            if cap.is_gpu(str(k)):
                try:
                    value = cap.Quantity.parse(limits[k]).value
                except cap.QuantityError:
                    continue
                if value > 0:
                    return float(value)
    return 0.0


def _num(value: float) -> int | float:
    if value == float("inf"):
        return -1
    return int(value) if float(value).is_integer() else round(value, 3)


def _decide(pair: Pair, engine: Engine, rollout: str, capacity: Capacity,
            headroom: Mapping[str, Fraction] | None, live: LiveCluster | None) -> tuple[str, str]:
    """(decision, a short headline of the first hold reason)."""
    policy = engine.policy
    errors = [f for f in pair.findings if f.severity == "error"]
    hold: list[str] = []
    headline = ""
    if rollout == "suspend":
        hold.append("suspending stops serving: hold until someone confirms the outage is intended")
        headline = headline or "suspending stops serving"
    if errors and policy.hold_on_errors:
        hold.append(f"{len(errors)} error finding(s): {errors[0].message}")
        headline = headline or f"{errors[0].code} at {errors[0].path}"
    if rollout == "not-applied":
        if policy.not_applied == "hold":
            hold.append("the operator will not apply what this change asks (see the reasons)")
            headline = headline or "the operator will not apply this change"
        else:
            pair.reasons.append("policy notApplied=warn: not holding a change the operator will not apply")
    if rollout in ("new-cluster", "incremental"):
        known = known_headroom(headroom, live)
        capacity_holds = _capacity_holds(engine, capacity, known)
        hold.extend(capacity_holds)
        if capacity_holds and not headline:
            headline = ("no headroom is known" if known is None else
                        f"the known headroom ({_render(known, policy) or 'none'}) does not cover it")
    if live is not None and live.upgrade_in_progress and rollout in ("new-cluster", "incremental"):
        pair.reasons.append(f"an upgrade is already in flight (pending RayCluster {live.pending_cluster}): "
                            "this change supersedes it and the superseded cluster runs until its "
                            "deletion delay ends")
    if hold:
        pair.reasons.extend(hold)
        return HOLD, headline or hold[0]
    if rollout == "none" and pair.real and pair.real <= {Category.AUTOSCALER_OWNED}:
        pair.reasons.append("Git is fighting the autoscaler: ignore these fields in Argo CD instead of "
                            "syncing them")
        return IGNORE, ""
    return APPROVE, ""


def known_headroom(headroom: Mapping[str, Fraction] | None, live: LiveCluster | None
                   ) -> Mapping[str, Fraction] | None:
    """The live basis's headroom for this RayService wins over the caller's global one."""
    if live is not None and live.headroom is not None:
        return parse_headroom(live.headroom)
    return headroom


def _render(amounts: Mapping[str, Fraction], policy: Policy) -> str:
    return ", ".join(f"{k}: {v}" for k, v in cap.render_amounts(amounts, policy.accelerators,
                                                                   keep_zero=True).items())


def _capacity_holds(engine: Engine, capacity: Capacity, known: Mapping[str, Fraction] | None) -> list[str]:
    policy = engine.policy
    if policy.hold_on_recreate == "never":
        return []
    if policy.hold_on_recreate == "always":
        return ["policy holdOnRecreate=always: every cluster recreation is held"]
    out = []
    for name, raw in capacity.extra.items():
        amount = cap.Quantity.parse(raw).value
        accelerator = cap.is_accelerator(name, policy.accelerators)
        if not accelerator and name not in policy.thresholds:
            continue
        free = (known or {}).get(name, Fraction(0))
        limit = free + policy.thresholds.get(name, Fraction(0))
        if amount > limit:
            where = (f"the known headroom covers {cap.render_amounts({name: free}, keep_zero=True)[name]}"
                     if known is not None else "no headroom is known")
            out.append(f"the rollout needs {raw} extra {name} while the old cluster still runs; {where}"
                       " (without room the new pods stay Pending and the rollout never finishes)")
    return out


def ignore_differences_entry(key: tuple[str, str]) -> dict[str, Any]:
    return {
        "group": "ray.io", "kind": "RayService", "name": key[1], "namespace": key[0],
        "jqPathExpressions": [
            ".spec.rayClusterConfig.workerGroupSpecs[]?.replicas",
            ".spec.rayClusterConfig.workerGroupSpecs[]?.scaleStrategy",
        ],
    }


Texts = str | Sequence[tuple[str, str]]


def analyze(before_text: Texts, after_text: Texts, kuberay_version: str = "1.7.0",
            headroom: Mapping[str, Any] | None = None, policy: Mapping[str, Any] | None = None, *,
            live: Mapping[str, LiveCluster] | None = None, sources: tuple[str, str] = ("before", "after"),
            limits: Limits | None = None, crd: str | None = None, before_is_live: bool = False) -> Report:
    """Analyse a change from ``before_text`` to ``after_text`` (YAML; ``""`` = nothing there).

    ``before_is_live`` says the before side was read from the API server (Argo CD's live
    state): its server defaults are then expected, and differences that vanish under the
    operator's normalisation are not listed as no-op changes.

    Either text may also be a sequence of ``(source, text)`` pairs, e.g. one per file of a
    commit: RayServices are paired across all of them by (namespace, name). ``crd`` is an
    optional RayService CRD (YAML text) whose schema replaces the version's built-in one.

    >>> report = analyze("", open_sample_text)            # doctest: +SKIP
    >>> report.to_dict()["resources"][0]["rollout"]       # doctest: +SKIP
    'create'

    Raises :class:`~diffing.errors.ManifestError` for a text that cannot be read,
    :class:`~diffing.errors.PolicyError` for a bad policy or headroom and
    :class:`~diffing.errors.UnsupportedVersionError` for an unknown KubeRay version.
    """
    try:
        return _analyze(before_text, after_text, kuberay_version, headroom, policy, live=live,
                        sources=sources, limits=limits, crd=crd, before_is_live=before_is_live)
    except RecursionError:
        raise ManifestError("the manifests nest too deeply to analyse") from None


def _analyze(before_text: Texts, after_text: Texts, kuberay_version: str,
             headroom: Mapping[str, Any] | None, policy: Mapping[str, Any] | None, *,
             live: Mapping[str, LiveCluster] | None, sources: tuple[str, str],
             limits: Limits | None, crd: str | None, before_is_live: bool) -> Report:
    rules = rules_for(kuberay_version)
    pol = Policy.from_mapping(policy)
    room = parse_headroom(headroom)
    lim = limits or Limits()
    engine = Engine(rules, pol, crd_schemas(crd) if crd else None)
    engine.before_is_live = before_is_live
    befores, _ = collect_all(before_text, sources[0], lim)
    afters, apps = collect_all(after_text, sources[1], lim)
    resources = []
    for key in sorted(set(befores) | set(afters)):
        live_state = (live or {}).get(f"{key[0]}/{key[1]}")
        resources.append(analyze_pair(engine, key, befores.get(key), afters.get(key), headroom=room,
                                      live=live_state, argo_apps=apps))
    decision = HOLD if any(r.decision == HOLD for r in resources) else \
        IGNORE if any(r.decision == IGNORE for r in resources) else APPROVE
    return Report(kuberay_version=rules.version, decision=decision, summary=summarize(decision, resources),
                  resources=tuple(resources))


def summarize(decision: str, resources: list[ResourceReport]) -> str:
    if not resources:
        return "approve: no RayService in the change"
    held = [r for r in resources if r.decision == HOLD]
    focus = held[0] if held else next((r for r in resources if r.rollout != "none"), resources[0])
    gpus = {k: v for k, v in focus.capacity.extra.items() if k not in ("cpu", "memory")
            and isinstance(v, int)}
    parts = [f"{decision}: {focus.namespace}/{focus.name} → {focus.rollout}"]
    if gpus:
        parts.append("needs " + ", ".join(f"{v} extra {k}" for k, v in gpus.items()))
    if decision == HOLD and focus.headline:
        parts.append(focus.headline)
    others = len(resources) - 1
    if others:
        parts.append(f"+{others} more RayService{'s' if others > 1 else ''}")
    return "; ".join(parts)


def cluster_divergence(rayservice: Mapping[str, Any], raycluster: Mapping[str, Any],
                       kuberay_version: str = "1.7.0") -> tuple[str, ...]:
    """Paths where a running RayCluster's spec differs from its RayService's rayClusterConfig.

    Muted fields (replicas, tolerations, ...) are ignored, as the operator ignores them; what
    is left is a change the operator has not applied (strategy None, a validation failure...).
    Both objects are plain dicts as read from the Kubernetes API.
    """
    engine = Engine(rules_for(kuberay_version), Policy())
    rs = strip_server_fields(dict(rayservice))
    rs_rcc = dig(rs, "spec", "rayClusterConfig")
    rc_spec = dig(raycluster, "spec")
    sch = engine.schemas.child(engine.schemas.child(engine.schemas.root("v1"), "spec"), "rayClusterConfig")
    out = []
    for d in engine.differ.diff(dict(rc_spec), dict(rs_rcc), RCC, sch, engine.gotypes.root):
        if not d.noop and engine.rules.category_of(schema_path(d.path)).category == Category.CLUSTER_RECREATE:
            out.append(format_path(d.path))
    return tuple(out)
