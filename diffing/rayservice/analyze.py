"""A RayService's change through the stages (the pipeline is :mod:`diffing.pipeline`).

The operator's decision procedure (semantics §1.4) is followed literally: validation first,
then suspend, then the cluster hash (full, then "only groups appended"), then the upgrade
strategy; serveConfigV2 and muted fields are judged only when the cluster is left alone.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import Any

from diffing.engine import RCC, Engine
from diffing.holds import duplicate_findings
from diffing.kube.gojson import ABSENT
from diffing.kube.manifests import (
    Duplicate,
    Manifest,
)
from diffing.kube.paths import Path, schema_path
from diffing.kube.schema import transition_errors, validate
from diffing.kube.values import dig, seq
from diffing.live import LiveCluster
from diffing.pipeline import Analysis, Target
from diffing.rayservice import serve
from diffing.rayservice.capacity import estimate_capacity
from diffing.rayservice.checks import Context, collect_findings
from diffing.rayservice.rollout import (
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
from diffing.rayservice.rules import Category
from diffing.rayservice.validation import validate_rayservice
from diffing.rayservice.ways_out import next_steps
from diffing.report import APPROVE, HOLD, IGNORE, SEVERITY_ORDER, Change, ResourceReport


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




class RayServiceAnalysis(Analysis):
    kind = "RayService"
    holding = {
        "new-cluster": ("cluster-recreate",), "incremental": ("cluster-recreate",),
        "not-applied": ("cluster-recreate", "autoscaler-owned", "operator-ignored", "worker-group-appended"),
    }

    @classmethod
    def run(cls, t: Target) -> ResourceReport:
        return analyze_pair(t.engine, t.key, t.before, t.after, headroom=t.headroom, live=t.live,
                            argo_apps=list(t.argo_apps), duplicates=t.duplicates, replacing=t.replacing)


ANALYSIS = RayServiceAnalysis
