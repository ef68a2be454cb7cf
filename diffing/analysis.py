"""Orchestration: pair RayServices, diff, classify, predict the rollout, size it, decide.

The operator's decision procedure (semantics §1.4) is followed literally: validation first,
then suspend, then the cluster hash (full, then "only groups appended"), then the upgrade
strategy; serveConfigV2 and muted fields are judged only when the cluster is left alone.
"""

from __future__ import annotations

import gc
from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import Any

from . import serve
from .capacity import human
from .engine import RCC, Engine
from .errors import ManifestError
from .findings import Context, collect_findings, duplicate_findings
from .gojson import ABSENT
from .kuberay import Category, rules_for
from .live import LiveCluster, live_key
from .loading import Limits
from .manifests import (
    KIND_ORDER,
    Duplicate,
    Ident,
    Manifest,
    ObjectKey,
    Texts,
    changed_others,
    collect_all,
    crd_schemas,
    strip_server_fields,
)
from .nextsteps import next_steps
from .paths import Path, format_path, schema_path
from .policy import Policy, parse_headroom
from .raycluster import analyze_cluster
from .rayjob import analyze_job
from .report import APPROVE, HOLD, IGNORE, SEVERITY_ORDER, Change, Finding, Report, ResourceReport
from .rollout import (
    Pair,
    decide,
    ignore_differences_entry,
    is_true,
    lifecycle_rollout,
    mark_appended,
    predict_rollout,
    rcc_of,
    resolve_strategy,
)
from .schema import transition_errors, validate
from .sizing import estimate_capacity
from .validation import external_manager, validate_rayservice
from .values import dig, seq


def analyze_pair(engine: Engine, key: tuple[str, str], before: Manifest | None,
                 after: Manifest | None, *, headroom: Mapping[str, Fraction] | None,
                 live: LiveCluster | None, argo_apps: list[Any],
                 duplicates: Sequence[Duplicate] = (), replacing: Sequence[str] = ()) -> ResourceReport:
    """One RayService's report. ``replacing`` names the objects the same change deletes
    (:func:`replaced_by`): created next to them, the RayService's needs are extra capacity."""
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
    b_text = dig(before.obj, "spec").get("serveConfigV2", ABSENT) if before else ABSENT
    a_text = dig(after.obj, "spec").get("serveConfigV2", ABSENT) if after else ABSENT
    b_serve, a_serve = engine.serve_config(b_text), engine.serve_config(a_text)
    full_equal = partial_equal = True
    if before and after:
        for d in engine.differences(before, after):
            rule = rules.category_of(schema_path(d.path))
            category = Category.NO_OP if d.noop else rule.category
            pair.changes.append(Change(d.path, category.value, d.before, d.after, d.note,
                                       after.line(d.path) or before.line(d.path)))
        for s in serve.diff(b_serve, a_serve):
            category = Category.NO_OP if s.noop else Category.SERVE_IN_PLACE
            pair.changes.append(Change(s.path, category.value, s.before, s.after, s.detail,
                                       after.line(("spec", "serveConfigV2"))))
        full_equal, partial_equal = engine.hash_compare(before, after)
        if not full_equal and partial_equal:
            n = len(seq(rcc_of(before.obj).get("workerGroupSpecs")))
            pair.changes = [mark_appended(c, n) for c in pair.changes]
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
        if not schema_errors:  # the API server rejects first; the operator never sees the object
            op_problems = validate_rayservice(a_def, rules, feature_gates=policy.feature_gates)

    # 3. rollout ------------------------------------------------------------------------------
    a_spec = dig(a_def, "spec")
    b_spec = dig(b_def, "spec")
    autoscaling = is_true(rcc_of(a_def or b_def).get("enableInTreeAutoscaling"))
    if before is None:
        action, rollout = "created", "create"
        pair.reasons.append("the RayService is new: KubeRay builds its first RayCluster at full size")
    elif after is None:
        action, rollout = "deleted", "delete"
        pair.reasons.append("the RayService is removed: its RayClusters and Services are deleted")
    else:
        action = "updated" if pair.changes else "unchanged"
        rollout = predict_rollout(pair, engine, b_spec, a_spec, full_equal, partial_equal, autoscaling,
                                  schema_errors, op_problems)
        if rollout in ("new-cluster", "incremental", "not-applied") and not full_equal and not partial_equal:
            strategy_note = resolve_strategy(a_spec, policy, rules)[1]
    if after and before is None and (schema_errors or op_problems):
        rollout = "not-applied"
    rollout = lifecycle_rollout(pair, engine, rollout, b_def, a_def)

    # 4. capacity -----------------------------------------------------------------------------
    capacity = estimate_capacity(engine, rollout, b_def, a_def, pair, headroom, live, autoscaling,
                                 (b_serve, a_serve))

    # 5. findings -----------------------------------------------------------------------------
    ctx = Context(engine=engine, before=before, after=after, b_def=b_def, a_def=a_def,
                  b_serve=b_serve, a_serve=a_serve, changes=pair.changes, real=pair.real,
                  rollout=rollout, autoscaling=autoscaling, schema_errors=schema_errors,
                  op_problems=op_problems, live=live, argo_apps=argo_apps, capacity=capacity,
                  unknown=unknown)
    pair.findings.extend(collect_findings(ctx))
    pair.findings.extend(duplicate_findings(duplicates))

    # 6. decision -----------------------------------------------------------------------------
    if action == "unchanged":
        decision, headline = APPROVE, ""  # nothing is being applied, whatever the manifest says
    else:
        decision, headline = decide(pair, engine, rollout, capacity, headroom, live, replacing)
    ignore: tuple[dict[str, Any], ...] = ()
    if decision == IGNORE:
        ignore = (ignore_differences_entry(key),)
    if strategy_note:
        pair.reasons.insert(0, f"strategy: {strategy_note}")
    findings = tuple(sorted(pair.findings, key=lambda f: SEVERITY_ORDER.get(f.severity, 3)))
    steps: tuple[str, ...] = ()
    if decision == HOLD:
        steps = next_steps(rollout=rollout, cause=pair.cause, strategy=strategy_note, changes=pair.changes,
                           findings=findings, extra=capacity.extra, is_accelerator=policy.counts,
                           replacing=bool(replacing), declared=policy.accelerators)
    return ResourceReport(
        api_version=main.api_version, namespace=key[0], name=key[1], action=action,
        rollout=rollout, decision=decision, reasons=tuple(pair.reasons), changes=tuple(pair.changes),
        capacity=capacity, findings=findings, ignore_differences=ignore,
        source=main.where(), origin=main.source, strategy=strategy_note, headline=headline,
        next_steps=steps,
    )


def analyze(before_text: Texts, after_text: Texts, kuberay_version: str = "1.7.0",
            headroom: Mapping[str, Any] | None = None, policy: Mapping[str, Any] | None = None, *,
            live: Mapping[str, LiveCluster] | None = None, sources: tuple[str, str] = ("before", "after"),
            limits: Limits | None = None, crd: str | None = None, before_is_live: bool = False,
            notes: Sequence[Finding] = ()) -> Report:
    """Analyse a change from ``before_text`` to ``after_text`` (YAML; ``""`` = nothing there).

    ``before_is_live`` says the before side was read from the API server (Argo CD's live
    state): its server defaults are then expected, and differences that vanish under the
    operator's normalisation are not listed as no-op changes.

    Either text may also be a sequence of ``(source, text)`` pairs or :class:`Source` values,
    e.g. one per file of a commit or per rendered kustomize/Helm root: RayServices are paired
    across all of them by (namespace, name); the same name from two sources of one side is a
    ``duplicate-resource`` finding. ``crd`` is an optional RayService CRD (YAML text) whose
    schema replaces the version's built-in one.

    ``notes`` are findings about the change as a whole that the caller met before the
    analysis (a root that could not be rendered: code ``render-failed``). They are reported
    under ``findings`` at the top of the report; an error among them holds the change
    (``render-failed`` weighs as the policy's ``renderFailure`` says).

    >>> report = analyze("", open_sample_text)            # doctest: +SKIP
    >>> report.to_dict()["resources"][0]["rollout"]       # doctest: +SKIP
    'create'

    Raises :class:`~diffing.errors.ManifestError` for a text that cannot be read,
    :class:`~diffing.errors.PolicyError` for a bad policy or headroom and
    :class:`~diffing.errors.UnsupportedVersionError` for an unknown KubeRay version.
    """
    # The analysis builds many small containers and leaves no reference cycle behind (loading
    # refuses recursive anchors), so the cyclic collector only costs time here: its passes over
    # the growing heap made analysis time superlinear in the number of worker groups. Reference
    # counting still frees everything; the collector resumes afterwards.
    paused = gc.isenabled()
    gc.disable()
    try:
        return _analyze(before_text, after_text, kuberay_version, headroom, policy, live=live,
                        sources=sources, limits=limits, crd=crd, before_is_live=before_is_live,
                        notes=notes)
    except RecursionError:
        raise ManifestError("the manifests nest too deeply to analyse") from None
    finally:
        if paused:
            gc.enable()


def _analyze(before_text: Texts, after_text: Texts, kuberay_version: str,
             headroom: Mapping[str, Any] | None, policy: Mapping[str, Any] | None, *,
             live: Mapping[str, LiveCluster] | None, sources: tuple[str, str],
             limits: Limits | None, crd: str | None, before_is_live: bool,
             notes: Sequence[Finding]) -> Report:
    rules = rules_for(kuberay_version)
    pol = Policy.from_mapping(policy)
    room = parse_headroom(headroom)
    lim = limits or Limits()
    engine = Engine(rules, pol, crd_schemas(crd) if crd else None, before_is_live=before_is_live)
    b_others: dict[ObjectKey, Any] = {}
    a_others: dict[ObjectKey, Any] = {}
    befores, _, b_dups = collect_all(before_text, sources[0], lim, b_others)
    afters, apps, a_dups = collect_all(after_text, sources[1], lim, a_others)
    not_analysed = changed_others(b_others, a_others)
    deleted = replaced_by(befores, afters)
    resources = []
    for ident in sorted(set(befores) | set(afters), key=lambda i: (KIND_ORDER[i[0]], i[1], i[2])):
        kind, key = ident[0], (ident[1], ident[2])
        dups = [d for d in (a_dups if ident in afters else b_dups) if d.key == ident]
        before, after = befores.get(ident), afters.get(ident)
        replacing = deleted if before is None else ()
        if kind == "RayService":
            resources.append(analyze_pair(engine, key, before, after, headroom=room,
                                          live=(live or {}).get(f"{key[0]}/{key[1]}"), argo_apps=apps,
                                          duplicates=dups, replacing=replacing))
        elif kind == "RayCluster":
            resources.append(analyze_cluster(engine, key, before, after, headroom=room,
                                             live=(live or {}).get(live_key(ident)), argo_apps=apps,
                                             duplicates=dups, replacing=replacing))
        else:
            resources.append(analyze_job(engine, key, before, after, headroom=room, argo_apps=apps,
                                         duplicates=dups, live=(live or {}).get(live_key(ident)),
                                         replacing=replacing))
    general = tuple(sorted((weigh_note(n, pol) for n in notes),
                           key=lambda f: SEVERITY_ORDER.get(f.severity, 3)))
    blocked = any(f.severity == "error" and (f.code == "render-failed" or pol.hold_on_errors)
                  for f in general)
    decision = HOLD if blocked or any(r.decision == HOLD for r in resources) else \
        IGNORE if any(r.decision == IGNORE for r in resources) else APPROVE
    return Report(kuberay_version=rules.version, decision=decision,
                  summary=summarize(decision, resources, general, not_analysed),
                  resources=tuple(resources), findings=general, not_analysed=not_analysed)


NOTHING = "no RayService, RayCluster or RayJob in the change"


def replaced_by(befores: Mapping[Ident, Manifest], afters: Mapping[Ident, Manifest]) -> tuple[str, ...]:
    """The analysed objects the change deletes while it creates others (``RayService ns/old``).

    A rename (``metadata.name`` is immutable) or a move is a delete plus a create, and Argo CD
    does not wait for the deleted object's pods to go before the new one's are built; without
    prune the old one stays. So a created object runs next to these: its accelerators are extra
    capacity. An object another controller manages (``spec.managedBy``) runs nothing here and
    frees nothing when deleted. Empty when nothing is both created and deleted.
    """
    if not any(ident not in befores for ident in afters):
        return ()
    return tuple(f"{kind} {ns}/{name}" for (kind, ns, name), m in sorted(
        befores.items(), key=lambda item: (KIND_ORDER[item[0][0]], item[0][1], item[0][2]))
        if (kind, ns, name) not in afters and external_manager(m.obj) is None)


def weigh_note(note: Finding, policy: Policy) -> Finding:
    """A caller's note as the policy weighs it: ``renderFailure: warn`` makes a render failure a
    warning, ``unknownSources`` an unknown source it allows."""
    if note.severity != "error":
        return note
    if note.code == "render-failed" and policy.render_failure == "warn" or (
            note.code == "unknown-source" and policy.allows(note.message)):
        return Finding("warning", note.code, note.path, note.message, note.line)
    return note


def not_analysed_text(counts: Mapping[str, int]) -> str:
    """``1 RayCluster, 2 RayJobs not analysed`` ("" for none)."""
    if not counts:
        return ""
    parts = [f"{n} {kind}{'' if n == 1 else 's'}" for kind, n in counts.items()]
    return ", ".join(parts) + " not analysed"


def summarize(decision: str, resources: list[ResourceReport], general: Sequence[Finding] = (),
              not_analysed: Mapping[str, int] | None = None) -> str:
    errors = [f for f in general if f.severity == "error"]
    problem = ""
    if general:
        first = errors[0] if errors else general[0]
        more = len(general) - 1
        problem = f"{first.path}: {first.code}" + (f" (+{more} more)" if more else "")
    skipped = not_analysed_text(not_analysed or {})
    if not resources:
        if problem:
            return f"{decision}: {problem}; no RayService, RayCluster or RayJob could be compared there"
        if skipped:  # silence about what was not looked at would read as a verdict on it
            return f"approve: {NOTHING}; {skipped}"
        return f"approve: {NOTHING}"
    held = [r for r in resources if r.decision == HOLD]
    focus = held[0] if held else next((r for r in resources if r.rollout != "none"), resources[0])
    gpus = {k: v for k, v in focus.capacity.extra.items() if k not in ("cpu", "memory")
            and isinstance(v, int)}
    parts = [f"{decision}: {focus.namespace}/{focus.name} → {focus.rollout}"]
    if gpus:
        parts.append("needs " + ", ".join(f"{v} extra {k}" for k, v in gpus.items()))
    elif "cpu" in focus.capacity.extra or "memory" in focus.capacity.extra:
        extra = focus.capacity.extra
        parts.append(f"needs {human('cpu', extra.get('cpu', '0'))} CPU and "
                     f"{human('memory', extra.get('memory', '0'))} memory extra, no accelerators")
    if decision == HOLD and focus.headline:
        parts.append(focus.headline)
    if focus.decision == IGNORE:
        parts.append("Git fights the autoscaler: ignore these fields in Argo CD")
    elif len(parts) == 1:
        why = next((r for r in focus.reasons if not r.startswith("strategy:")), "")
        if why:
            parts.append(why.split(":")[0])  # e.g. "only serveConfigV2 changed"
    others = len(resources) - 1
    if others:
        kinds = {r.kind for r in resources if r is not focus}
        noun = next(iter(kinds)) if len(kinds) == 1 else "resource"
        parts.append(f"+{others} more {noun}{'s' if others > 1 else ''}")
    if problem:
        parts.append(problem)
    if skipped:
        parts.append(skipped)
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
