"""The findings about a RayJob change: what applies now, what a reviewer should know.

Citations are KubeRay v1.7.0, ``ray-operator/``: RJC = ``controllers/ray/rayjob_controller.go``,
VAL = ``controllers/ray/utils/validation.go``, JOB = ``controllers/ray/common/job.go``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from diffing.kube.gojson import ABSENT
from diffing.kube.paths import Path
from diffing.kube.values import dig, mapping, seq
from diffing.managed import external_manager
from diffing.pipeline import Analysis
from diffing.rayjob.rules import APPLIES_NOW, JOB_FIELDS
from diffing.rayjob.validation import RCS
from diffing.report import Finding

_SELF_HEAL_ENV = "DELETE_RAYJOB_CR_AFTER_JOB_FINISHES"  # constant.go:275


def _self_heal(apps: Sequence[Any]) -> bool:
    return any(dig(app, "spec", "syncPolicy", "automated").get("selfHeal") is True for app in apps)


def delete_self(ctx: Analysis) -> Iterator[Finding]:
    """DeleteSelf: the RayJob deletes itself once finished (RJC:1560-1587; legacy policy RJC:1471-1512),
    and so does ``shutdownAfterJobFinishes`` with the operator's DELETE_RAYJOB_CR_AFTER_JOB_FINISHES
    (RJC:1537-1542). Argo CD's self-heal puts it back: a new run, every time."""
    spec = dig(ctx.a_def, "spec")
    st = spec.get("deletionStrategy")
    gate = ctx.engine.rules.gates(ctx.engine.policy.feature_gates).get("RayJobDeletionPolicy", False)
    path: Path | None = None
    why = ""
    if isinstance(st, Mapping) and gate:
        for i, rule in enumerate(seq(st.get("deletionRules"))):
            if mapping(rule).get("policy") == "DeleteSelf":
                path = ("spec", "deletionStrategy", "deletionRules", i, "policy")
                why = "a DeleteSelf deletion rule"
                break
        for which in ("onSuccess", "onFailure"):
            if path is None and dig(st, which).get("policy") == "DeleteSelf":
                path, why = ("spec", "deletionStrategy", which, "policy"), f"{which}.policy DeleteSelf"
    elif spec.get("shutdownAfterJobFinishes") is True and not mapping(spec.get("clusterSelector")) and \
            ctx.engine.policy.operator_env.get(_SELF_HEAL_ENV, "").lower() == "true":
        path = ("spec", "shutdownAfterJobFinishes")
        why = f"shutdownAfterJobFinishes with the operator's {_SELF_HEAL_ENV}=true"
    if path is None:
        return
    heal = _self_heal(ctx.argo_apps)
    text = (f"{why}: the RayJob deletes itself once it finishes (RJC:1537-1542, 1560-1587); with Argo CD "
            "self-heal the RayJob is still in Git, so Argo CD recreates it and the job runs again, after "
            "every completion")
    if heal:
        yield ctx.finding("error", "rayjob-deleteself-selfheal", path,
                          text + ". An Application in this change has selfHeal: true: use DeleteCluster, or "
                          "exclude the RayJob from self-heal")
    else:
        yield ctx.finding("warning", "rayjob-deleteself-selfheal", path,
                          text + " (if the Application that syncs it has selfHeal: true); use DeleteCluster "
                          "for a Git-managed RayJob")


def upgrade_strategy(ctx: Analysis) -> Iterator[Finding]:
    spec = dig(ctx.a_def, "spec")
    kind = dig(spec, "rayClusterSpec", "upgradeStrategy").get("type")
    if kind is None or mapping(spec.get("clusterSelector")):
        return
    yield ctx.finding(
        "error", "rayjob-upgrade-strategy", RCS + ("upgradeStrategy", "type"),
        f"upgradeStrategy.type {kind} in the RayJob's rayClusterSpec: the RayJob is accepted, but the "
        "RayCluster it builds is labelled as created by a RayJob and the RayCluster controller rejects "
        "upgradeStrategy on it (VAL:42-55), so the cluster never gets pods; the job waits in Initializing "
        "until preRunningDeadlineSeconds or activeDeadlineSeconds fails it, or forever without one; remove "
        "it")


def _was_set(value: Any) -> bool:
    return value is not ABSENT and value is not None


def applies_now(ctx: Analysis) -> Iterator[Finding]:
    if ctx.rollout in ("create", "delete", "not-applied") or ctx.before is None or ctx.after is None:
        return
    seen: set[str] = set()
    b_spec, a_spec = dig(ctx.b_def, "spec"), dig(ctx.a_def, "spec")
    for c in ctx.changes:
        if c.category != APPLIES_NOW or len(c.path) < 2 or str(c.path[1]) in seen:
            continue
        key = str(c.path[1])
        seen.add(key)
        bv, av = b_spec.get(key, ABSENT), a_spec.get(key, ABSENT)
        path: Path = ("spec", key)
        if key in ("activeDeadlineSeconds", "preRunningDeadlineSeconds"):
            lowered = _was_set(av) and (not _was_set(bv) or (isinstance(av, int) and isinstance(bv, int)
                                                             and av < bv))
            which = ("the job, whatever its state," if key == "activeDeadlineSeconds"
                     else "a job not yet Running (Initializing or Waiting)")
            src = JOB_FIELDS[key].source
            if lowered:
                yield ctx.finding("warning", "rayjob-deadline", path,
                                  f"{key} {av} applies now: it is measured from status.startTime (when the "
                                  f"run began), so {which} that has been going longer is failed on the "
                                  f"next pass ({src}); a deadline failure is not retried (RJC:543-552)")
            else:
                yield ctx.finding("info", "rayjob-deadline", path,
                                  f"{key} {'removed' if not _was_set(av) else f'raised to {av}'}: applies "
                                  f"now to the running job ({src})")
        elif key == "backoffLimit":
            yield ctx.finding("info", "rayjob-retry-policy", path,
                              f"backoffLimit {av if _was_set(av) else 0} applies now: it is read when the "
                              "job fails, and each retry deletes the RayCluster and builds a new one from "
                              "the current spec (RJC:518-557, 366-410)")
        elif key == "managedBy":
            continue  # reported by _managed_by
        else:
            turned_on = (key == "shutdownAfterJobFinishes" and av is True) or (
                key == "deletionStrategy" and _was_set(av)) or (
                key == "ttlSecondsAfterFinished" and isinstance(av, int) and (
                    not isinstance(bv, int) or av < bv))
            yield ctx.finding(
                "warning" if turned_on else "info", "rayjob-cleanup-policy", path,
                f"{key} applies now: it is read once the job has finished (RJC:420-447), so a job that "
                "already finished is cleaned up under the new setting on the next pass"
                + (" (its RayCluster, and with it the dashboard and logs, may go at once: the TTL is "
                   "measured from the job's end, RJC:1515-1534, 1413-1468)" if turned_on else ""))


def cluster_selector(ctx: Analysis) -> Iterator[Finding]:
    if ctx.before is None or ctx.after is None or ctx.rollout == "not-applied":
        return
    b_spec, a_spec = dig(ctx.b_def, "spec"), dig(ctx.a_def, "spec")
    had, has = bool(mapping(b_spec.get("clusterSelector"))), bool(mapping(a_spec.get("clusterSelector")))
    if not had and has and isinstance(b_spec.get("rayClusterSpec"), Mapping):
        yield ctx.finding(
            "warning", "rayjob-cluster-selector-leak", ("spec", "clusterSelector"),
            "clusterSelector added to a RayJob that built its own RayCluster: the job stays on that cluster "
            "(status.rayClusterName is frozen at initialisation, RJC:904-910; common/association.go:"
            "171-176), but with a selector KubeRay skips every cleanup when it ends (RJC:429-432, "
            "801-804), so that RayCluster and its pods stay until the RayJob is deleted")
    elif had and not has:
        yield ctx.finding(
            "warning", "rayjob-cluster-selector-removed", ("spec", "clusterSelector"),
            "clusterSelector removed: a job already attached keeps status.rayClusterName, the existing "
            "cluster (RJC:904-910); without a selector the cleanup no longer skips it, so "
            "shutdownAfterJobFinishes or a DeleteCluster rule deletes that shared RayCluster when the job "
            "ends (RJC:801-829; inferred)")


def managed_by(ctx: Analysis) -> Iterator[Finding]:
    after = external_manager(ctx.a_def) if ctx.after is not None else None
    before = external_manager(ctx.b_def) if ctx.before is not None else None
    if after is not None:
        yield ctx.finding("warning", "managed-by-other-controller", ("spec", "managedBy"),
                          f"spec.managedBy is {after}: this KubeRay operator skips the RayJob entirely "
                          f"(no validation, no RayCluster here, RJC:107-110); {after} runs it")
    elif before is not None and ctx.after is not None:
        yield ctx.finding("info", "managed-by-other-controller", ("spec", "managedBy"),
                          f"spec.managedBy was {before}: KubeRay now reconciles the RayJob")


def created_suspended(ctx: Analysis) -> Iterator[Finding]:
    if ctx.rollout == "create" and dig(ctx.a_def, "spec").get("suspend") is True:
        yield ctx.finding("info", "created-suspended", ("spec", "suspend"),
                          "created with suspend: true: KubeRay builds no RayCluster and submits nothing "
                          "until suspend turns false (RJC:179-181, 1043-1060), e.g. when Kueue admits it")
