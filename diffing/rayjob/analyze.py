"""Standalone RayJob changes (raycluster-semantics.md §7; CONTRACT "Standalone RayCluster and RayJob").

A RayJob runs once: its RayCluster and its submission are built from the spec when the job
starts (or restarts after suspend/resume or a backoffLimit retry), so most edits reach only
the *next* run; the deadline, retry and cleanup settings are read on every reconcile pass and
apply now. Citations are KubeRay v1.7.0, ``ray-operator/``: RJC = ``controllers/ray/
rayjob_controller.go``, VAL = ``controllers/ray/utils/validation.go``, JOB = ``controllers/ray/
common/job.go``, RJCRD = ``config/crd/bases/ray.io_rayjobs.yaml``.

Rollout, first match wins: ``create`` · ``delete`` · ``not-applied`` (the API server or the
operator's validation rejects it) · ``suspend`` · ``resume`` · ``next-run`` · ``none``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from diffing.engine import Engine, envelope_differences
from diffing.holds import (
    OVERRIDE,
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
from diffing.kube.diff import Differ, Difference
from diffing.kube.gojson import ABSENT, TypeDesc, struct
from diffing.kube.manifests import Duplicate, Manifest
from diffing.kube.paths import Path, format_path
from diffing.kube.schema import transition_errors, validate
from diffing.kube.values import dig, mapping, seq
from diffing.live import LiveCluster
from diffing.managed import external_manager
from diffing.pipeline import Analysis, Target
from diffing.policy import Policy
from diffing.rayjob.schema import job_defaulted, job_schemas, job_spec_schema
from diffing.rayjob.validation import RCS, cel_errors, validate_rayjob
from diffing.report import APPROVE, HOLD, SEVERITY_ORDER, Capacity, Change, Finding, ResourceReport

NEXT_RUN, APPLIES_NOW, SUSPEND = "next-run", "applies-now", "suspend"
NO_OP, SERVICE_LEVEL = "no-op", "service-level"


@dataclass(frozen=True, slots=True)
class FieldRule:
    """How the RayJob controller treats an edit of ``spec.<field>`` after the job started."""

    category: str
    reason: str
    source: str


_NEXT = ("read when the cluster and the submission are built (Initializing); ignored afterwards")
JOB_FIELDS: dict[str, FieldRule] = {
    "rayClusterSpec": FieldRule(NEXT_RUN, "an existing RayCluster is never updated from the RayJob; only an "
                                "info log line (the next run builds a new one)", "RJC:988-992, 997-1041"),
    "entrypoint": FieldRule(NEXT_RUN, _NEXT, "RJC:560-584, 634-662"),
    "runtimeEnvYAML": FieldRule(NEXT_RUN, _NEXT, "RJC:560-584; JOB BuildJobSubmitCommand"),
    "metadata": FieldRule(NEXT_RUN, _NEXT, "RJC:560-584; JOB BuildJobSubmitCommand"),
    "entrypointNumCpus": FieldRule(NEXT_RUN, _NEXT, "RJC:560-584; JOB:193"),
    "entrypointNumGpus": FieldRule(NEXT_RUN, _NEXT, "RJC:560-584; JOB BuildJobSubmitCommand"),
    "entrypointResources": FieldRule(NEXT_RUN, _NEXT, "RJC:560-584; JOB:200-201"),
    "jobId": FieldRule(NEXT_RUN, "the job id is copied into the status once, at initialisation",
                       "RJC:887-902"),
    "submitterPodTemplate": FieldRule(NEXT_RUN, "the submitter Job is create-if-missing", "RJC:560-584"),
    "submitterConfig": FieldRule(NEXT_RUN, "the submitter Job is create-if-missing", "RJC:560-584, 716-757"),
    "submissionMode": FieldRule(NEXT_RUN, _NEXT, "RJC:225-236"),
    "clusterSelector": FieldRule(NEXT_RUN, "the cluster name is frozen in status.rayClusterName at "
                                 "initialisation: no retargeting", "RJC:904-910"),
    "activeDeadlineSeconds": FieldRule(APPLIES_NOW, "read on every pass, measured from status.startTime",
                                       "RJC:184, 254, 1234-1245"),
    "preRunningDeadlineSeconds": FieldRule(APPLIES_NOW, "read on every pass before Running, measured from "
                                           "status.startTime", "RJC:188, 238, 1249-1261"),
    "backoffLimit": FieldRule(APPLIES_NOW, "read when the job fails", "RJC:518-557"),
    "shutdownAfterJobFinishes": FieldRule(APPLIES_NOW, "read once the job is terminal",
                                          "RJC:420-447, 1515-1557"),
    "ttlSecondsAfterFinished": FieldRule(APPLIES_NOW, "read once the job is terminal", "RJC:1515-1534"),
    "deletionStrategy": FieldRule(APPLIES_NOW, "read once the job is terminal", "RJC:434-440, 1413-1512"),
    "managedBy": FieldRule(APPLIES_NOW, "checked first on every pass", "RJC:107-110"),
    "suspend": FieldRule(SUSPEND, "suspend deletes the cluster and the submitter; resume starts a new run",
                         "RJC:366-419, 1043-1060"),
}

# Go fields without a pointer (rayjob_types.go RayJobSpec): the zero value and absence are the same.
_ZERO: dict[str, Any] = {"entrypoint": "", "runtimeEnvYAML": "", "jobId": "", "entrypointResources": "",
                         "entrypointNumCpus": 0, "entrypointNumGpus": 0, "ttlSecondsAfterFinished": 0,
                         "shutdownAfterJobFinishes": False, "suspend": False, "metadata": {},
                         "clusterSelector": {}, "submissionMode": "K8sJobMode"}
_GO_TYPES = {"rayClusterSpec": None, "submitterPodTemplate": "core/v1.PodTemplateSpec"}

# JOB:230-246 GetDefaultSubmitterContainer: the submitter's resources when no template is given
# (K8sJobMode, JOB:215-227), also the sidecar added to the head pod in SidecarMode (RJC:1025-1038).
DEFAULT_SUBMITTER = {"name": "ray-job-submitter", "resources": {
    "requests": {"cpu": "500m", "memory": "200Mi"}, "limits": {"cpu": "1", "memory": "1Gi"}}}
_SELF_HEAL_ENV = "DELETE_RAYJOB_CR_AFTER_JOB_FINISHES"  # constant.go:275
_PERMANENT = ("ValidationFailed is permanent: no reconcile branch leaves it, even after the spec is fixed "
              "(RJC:147-161, 448-450); delete and recreate the RayJob to run it")


# -- differences -----------------------------------------------------------------------------


def _zero(key: str, value: Any) -> bool:
    if value is ABSENT or value is None:
        return True
    zero = _ZERO[key]
    if isinstance(zero, bool) or isinstance(value, bool):
        return value is zero
    if isinstance(zero, (int, float)):
        return isinstance(value, (int, float)) and value == zero  # 0 and 0.0 are the same float32
    return type(value) is type(zero) and value == zero


def job_differences(engine: Engine, b: Manifest, a: Manifest) -> list[Difference]:
    """apiVersion, metadata (name and namespace are the key) and spec differences of two RayJobs."""
    schemas = job_schemas()
    differ = Differ(schemas, engine.gotypes)
    out = envelope_differences(differ, b, a)
    bspec, aspec = mapping(b.obj.get("spec")), mapping(a.obj.get("spec"))
    sch = job_spec_schema(a.api_version)
    for key in list(bspec) + [k for k in aspec if k not in bspec]:
        bv, av = bspec.get(key, ABSENT), aspec.get(key, ABSENT)
        if type(bv) is type(av) and bv == av:
            continue
        kind = "added" if bv is ABSENT else "removed" if av is ABSENT else "modified"
        child = schemas.child(sch, key)
        if child is None:
            out.append(Difference(("spec", key), bv, av, kind, True, "unknown field, pruned"))
        elif key in _ZERO and _zero(key, bv) and _zero(key, av):
            out.append(Difference(("spec", key), bv, av, kind, True, "the zero value is the same as absent"))
        elif bv in (ABSENT, None) or av in (ABSENT, None):
            # a whole block added or removed: one change, not one per field inside it
            noop = differ.canonical(bv, child, None) == differ.canonical(av, child, None)
            out.append(Difference(("spec", key), bv, av, kind, noop))
        else:
            t: TypeDesc | None = None
            if key in _GO_TYPES:
                name = _GO_TYPES[key]
                t = engine.gotypes.root if name is None else struct(name)
            out.extend(differ.diff(bv, av, ("spec", key), child, t))
    return out


def category_of(path: Path) -> str:
    if not path or path[0] == "apiVersion":
        return NO_OP
    if path[0] == "metadata":
        return SERVICE_LEVEL  # labels/annotations reach only a RayCluster built later (RJC:998-1005)
    rule = JOB_FIELDS.get(str(path[1])) if len(path) > 1 else None
    return rule.category if rule else NO_OP


# -- capacity ----------------------------------------------------------------------------------


def job_amounts(spec: Mapping[str, Any], *, init_injection: bool = True
                ) -> tuple[cap.Amounts, dict[str, str]]:
    """Pods one run of the job adds: its RayCluster (none with clusterSelector, RJC:956-960; the
    SidecarMode submitter inside the head pod, RJC:1025-1038) and, in K8sJobMode, the submitter
    pod (JOB:215-246). HTTPMode and InteractiveMode add no submitter pod."""
    mode = spec.get("submissionMode") or "K8sJobMode"
    total: cap.Amounts = {}
    families: cap.Families = {}
    units: dict[str, str] = {}
    rcs = spec.get("rayClusterSpec")
    if not mapping(spec.get("clusterSelector")) and isinstance(rcs, Mapping):
        if mode == "SidecarMode":
            rcs = _with_sidecar(rcs)
        shape = cap.cluster_shape(rcs, init_injection=init_injection)
        total = shape.total()
        units.update(shape.units)
    if mode == "K8sJobMode":
        template = spec.get("submitterPodTemplate")
        pod = dig(template, "spec") if isinstance(template, Mapping) else {"containers": [DEFAULT_SUBMITTER]}
        total = cap.add(total, cap.pod_resources(pod, families=families))
    return total, {**cap.units_of(families), **units}


def _with_sidecar(rcs: Mapping[str, Any]) -> dict[str, Any]:
    head = dict(mapping(rcs.get("headGroupSpec")))
    template = dict(mapping(head.get("template")))
    pod = dict(mapping(template.get("spec")))
    pod["containers"] = [*seq(pod.get("containers")), DEFAULT_SUBMITTER]
    template["spec"], head["template"] = pod, template
    return {**rcs, "headGroupSpec": {**head, "template": template}}


def _capacity_holds(engine: Engine, extra: Mapping[str, Fraction], known: Mapping[str, Fraction] | None,
                    replacing: bool = False) -> list[str]:
    """Accelerators (and resources with a policy threshold) the run needs beyond a known headroom.
    Without a known headroom nothing is held, as for a new RayService (CONTRACT default policy),
    unless the job is created while the change deletes another object (``replacing``, a
    rename): both run at once, and an unknown headroom covers nothing, as for a second cluster."""
    if known is None and not replacing:
        return []
    policy = engine.policy
    if replacing and policy.hold_on_recreate != "gpu-only":
        return ["policy holdOnRecreate=always: every cluster recreation is held"] \
            if policy.hold_on_recreate == "always" else []
    out = []
    for name, amount, free in shortfalls(policy, extra, known):
        need = cap.render_amounts({name: amount}, policy.accelerators).get(name, amount)
        room = cap.render_amounts({name: free}, policy.accelerators, keep_zero=True).get(name, 0)
        where = ("no headroom is known" if known is None else
                 f"the known headroom covers {cap.human(name, room)}")
        out.append(f"the run needs {cap.human(name, need)} {name}{cap.family_note(name)}"
                   f"{' while the deleted one still runs' if replacing else ''}; {where} (without room its "
                   "pods stay Pending until a deadline fails the job)")
    return out


# -- findings ----------------------------------------------------------------------------------


@dataclass
class _Ctx:
    engine: Engine
    before: Manifest | None
    after: Manifest | None
    b_def: dict[str, Any] | None
    a_def: dict[str, Any] | None
    changes: list[Change]
    rollout: str
    argo_apps: list[Any]

    def finding(self, severity: str, code: str, path: Path, message: str) -> Finding:
        return located(self.after or self.before, severity, code, path, message)


def _self_heal(apps: list[Any]) -> bool:
    return any(dig(app, "spec", "syncPolicy", "automated").get("selfHeal") is True for app in apps)


def _delete_self(ctx: _Ctx) -> Iterator[Finding]:
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


def _upgrade_strategy(ctx: _Ctx) -> Iterator[Finding]:
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


def _applies_now(ctx: _Ctx) -> Iterator[Finding]:
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


def _cluster_selector(ctx: _Ctx) -> Iterator[Finding]:
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


def _managed_by(ctx: _Ctx) -> Iterator[Finding]:
    after = external_manager(ctx.a_def) if ctx.after is not None else None
    before = external_manager(ctx.b_def) if ctx.before is not None else None
    if after is not None:
        yield ctx.finding("warning", "managed-by-other-controller", ("spec", "managedBy"),
                          f"spec.managedBy is {after}: this KubeRay operator skips the RayJob entirely "
                          f"(no validation, no RayCluster here, RJC:107-110); {after} runs it")
    elif before is not None and ctx.after is not None:
        yield ctx.finding("info", "managed-by-other-controller", ("spec", "managedBy"),
                          f"spec.managedBy was {before}: KubeRay now reconciles the RayJob")


def _created_suspended(ctx: _Ctx) -> Iterator[Finding]:
    if ctx.rollout == "create" and dig(ctx.a_def, "spec").get("suspend") is True:
        yield ctx.finding("info", "created-suspended", ("spec", "suspend"),
                          "created with suspend: true: KubeRay builds no RayCluster and submits nothing "
                          "until suspend turns false (RJC:179-181, 1043-1060), e.g. when Kueue admits it")


# -- the analysis ------------------------------------------------------------------------------


def analyze_job(engine: Engine, key: tuple[str, str], before: Manifest | None, after: Manifest | None, *,
                headroom: Mapping[str, Fraction] | None, argo_apps: list[Any],
                duplicates: Sequence[Duplicate] = (), live: LiveCluster | None = None,
                replacing: Sequence[str] = ()) -> ResourceReport:
    """One RayJob's report. ``replacing`` names the objects the same change deletes: a job
    created next to them needs its accelerators free even without a known headroom."""
    main = after or before
    assert main is not None
    # A RayJob builds a new RayCluster per run, so nothing of it runs to compare with; the live
    # basis brings the free accelerators its pods can use, which win over the caller's figure.
    headroom = known_headroom(headroom, live)
    policy = engine.policy
    b_def = job_defaulted(before.obj, before.api_version) if before else None
    a_def = job_defaulted(after.obj, after.api_version) if after else None
    reasons: list[str] = []
    findings: list[Finding] = []

    # 1. changes
    changes: list[Change] = []
    if before and after:
        for d in job_differences(engine, before, after):
            category = NO_OP if d.noop else category_of(d.path)
            changes.append(Change(d.path, category, d.before, d.after, d.note,
                                  after.line(d.path) or before.line(d.path)))
        if engine.before_is_live:
            changes = [c for c in changes if c.category != NO_OP]
    real = {c.category for c in changes} - {NO_OP}

    # 2. validation of the new manifest: the API server first, then the operator (every pass)
    schema_errors: list[tuple[Path, str]] = []
    unknown: list[Path] = []
    op_problems: list[tuple[str, Path, str]] = []
    if after and a_def is not None and (before is None or changes):
        sch = job_spec_schema(after.api_version)
        schema_errors = validate(job_schemas(), after.obj.get("spec"), sch, ("spec",), unknown=unknown)
        schema_errors += cel_errors(after.obj.get("spec"))
        if before is not None:
            schema_errors += transition_errors(job_schemas(), before.obj.get("spec"), after.obj.get("spec"),
                                               sch, ("spec",))
        if not schema_errors:
            op_problems = validate_rayjob(a_def, engine.rules, feature_gates=policy.feature_gates)

    # 3. rollout
    a_spec, b_spec = dig(a_def, "spec"), dig(b_def, "spec")
    selector = bool(mapping(a_spec.get("clusterSelector")))
    if before is None:
        action, rollout = "created", "create"
        if selector:
            name = mapping(a_spec.get("clusterSelector")).get("ray.io/cluster")
            reasons.append(f"the RayJob is new: it runs on the existing RayCluster {name} (clusterSelector), "
                           "so only its submitter is new (RJC:904-910, 956-960)")
        elif a_spec.get("suspend") is True:
            reasons.append("the RayJob is created suspended: no RayCluster and no submission until suspend "
                           "turns false (RJC:179-181, 1043-1060)")
        else:
            reasons.append("the RayJob is new: KubeRay builds its RayCluster (the job's name plus a random "
                           "5-character suffix) and submits the job once it is ready (RJC:166-236, 997-1041)")
    elif after is None:
        action, rollout = "deleted", "delete"
        reasons.append("the RayJob is removed: its finalizer stops the Ray job if it has not finished "
                       "(RJC:112-139); the RayCluster and the submitter Job it created go with it through "
                       "their ownerReferences (RJC:1020-1023)"
                       + ("; the existing RayCluster of its clusterSelector stays"
                          if mapping(b_spec.get("clusterSelector")) else ""))
    else:
        action = "updated" if changes else "unchanged"
        b_susp, a_susp = b_spec.get("suspend") is True, a_spec.get("suspend") is True
        if not changes:
            rollout = "none"
        elif schema_errors or (op_problems and external_manager(a_def) is None):
            rollout = "not-applied"
        elif external_manager(a_def) is not None:
            rollout = "none"
            reasons.append(f"spec.managedBy is {external_manager(a_def)}: KubeRay skips this RayJob "
                           "(RJC:107-110); another controller carries out the change")
        elif not b_susp and a_susp:
            rollout = "suspend"
            reasons.append("suspend: true on a job that is Initializing or Running deletes its RayCluster "
                           "and its submitter Job (RJC:366-410, 1043-1060): the job's work so far is "
                           "lost, and resuming runs it again from the start; a finished job is left as it is")
        elif b_susp and not a_susp:
            rollout = "resume"
            reasons.append("suspend turns false: a Suspended job starts a new run, a new RayCluster from the "
                           "current rayClusterSpec and a new submission (RJC:411-417, 166-236)")
        elif NEXT_RUN in real:
            rollout = "next-run"
            reasons.append("only the next run sees this change: the running (or finished) job keeps its "
                           "RayCluster and its submission, so the running job is not affected; the next run "
                           "is a suspend → resume or a backoffLimit retry, each with a new RayCluster "
                           "(RJC:988-992, 560-584, 518-557)")
        else:
            rollout = "none"
            if APPLIES_NOW in real:
                reasons.append("deadline, retry or cleanup settings changed: the operator reads them on "
                               "every pass, so they apply to the current run now (see the findings)")
            elif SERVICE_LEVEL in real:
                reasons.append("only RayJob labels or annotations changed: they reach a RayCluster built "
                               "later (RJC:998-1005)")
            elif changes:
                reasons.append("nothing the operator reads changed (defaults, zero values or pruned fields)")
    if after is not None and before is None and (schema_errors or op_problems):
        rollout = "not-applied"
    if rollout in ("create", "delete") and external_manager(a_def if rollout == "create" else b_def):
        manager = external_manager(a_def if rollout == "create" else b_def)
        reasons[:] = [f"spec.managedBy is {manager}: this KubeRay operator never reconciles the RayJob "
                      "(RJC:107-110); it builds and deletes nothing here"]
        rollout = "none"
    if rollout == "not-applied":
        reasons.append("the API server rejects the manifest: nothing of it is stored" if schema_errors
                       else "KubeRay marks the RayJob ValidationFailed and does nothing more with it; "
                       + _PERMANENT)

    # 4. capacity
    init = policy.operator_env.get("ENABLE_INIT_CONTAINER_INJECTION", "true").lower() != "false"
    extra: cap.Amounts = {}
    units: dict[str, str] = {}
    runs = rollout == "resume" or (rollout == "create" and a_spec.get("suspend") is not True)
    if a_def is not None and runs:
        amounts, units = job_amounts(a_spec, init_injection=init)
        extra = cap.positive(amounts)
    rendered = cap.render_amounts(extra, policy.accelerators, units=units)
    capacity = Capacity(
        basis="manifest", extra=rendered, peak=dict(rendered),
        headroom=cap.render_amounts(headroom, policy.accelerators, keep_zero=True, units=units)
        if headroom is not None else None,
        phases=(("before", {}), ("after", rendered)) if extra else ())

    # 5. findings
    for path, message in schema_errors:
        findings.append(Finding("error", "schema-violation", format_path(path),
                                f"the API server rejects this manifest: {message}", main.line(path)))
    for path in unknown:
        findings.append(Finding("warning", "unknown-field", format_path(path),
                                "the CRD has no such field: kubectl's strict validation rejects it and other "
                                "clients see it silently pruned", main.line(path)))
    for code, path, message in op_problems:
        findings.append(Finding("error", code, format_path(path),
                                f"KubeRay rejects the RayJob: {message}. {_PERMANENT}", main.line(path)))
    ctx = _Ctx(engine, before, after, b_def, a_def, changes, rollout, argo_apps)
    if after is not None and after.api_version == "ray.io/v1alpha1":
        findings.append(ctx.finding("warning", "deprecated-api-version", ("apiVersion",),
                                    "ray.io/v1alpha1 is deprecated; move to ray.io/v1"))
    if after is not None and external_manager(a_def) is None:
        findings.extend(_upgrade_strategy(ctx))
        findings.extend(_delete_self(ctx))
    for check in (_applies_now, _cluster_selector, _managed_by, _created_suspended):
        findings.extend(check(ctx))
    findings.extend(duplicate_findings(duplicates))
    findings.sort(key=lambda f: SEVERITY_ORDER.get(f.severity, 3))

    # 6. decision
    hold: list[str] = []
    headline = ""
    if action != "unchanged":
        errors = [f for f in findings if f.severity == "error"]
        if rollout == "suspend":
            hold.append("suspending deletes the job's RayCluster: its work so far is lost; hold until "
                        "someone confirms it")
            headline = "suspending loses the job's work"
        if errors and policy.hold_on_errors:
            hold.append(f"{len(errors)} error finding(s): {errors[0].message}")
            headline = headline or f"{errors[0].code} at {errors[0].path}"
        if rollout == "not-applied":
            if policy.not_applied == "hold":
                hold.append("the operator will not apply what this change asks (see the reasons)")
                headline = headline or ("the API server rejects it" if schema_errors else
                                        "KubeRay rejects the RayJob for good (ValidationFailed)")
            else:
                reasons.append("policy notApplied=warn: not holding a change the operator will not apply")
        renamed = rollout == "create" and bool(replacing) and bool(extra)
        if renamed:
            reasons.append(replacement_reason("RayJob", replacing))
        if rollout in ("create", "resume"):
            capacity_holds = _capacity_holds(engine, extra, headroom, renamed)
            hold.extend(capacity_holds)
            if capacity_holds:
                headline = headline or (replacement_headline(replacing, headroom is None) if renamed else
                                        "the known headroom does not cover the job's accelerators")
    decision = HOLD if hold else APPROVE
    reasons.extend(hold)
    steps: tuple[str, ...] = ()
    if decision == HOLD:
        steps = _next_steps(rollout, bool(schema_errors), findings, rendered, policy, bool(replacing))
    return ResourceReport(
        api_version=main.api_version, namespace=key[0], name=key[1], action=action, rollout=rollout,
        decision=decision, reasons=tuple(reasons), changes=tuple(changes), capacity=capacity,
        findings=tuple(findings), kind="RayJob", source=main.where(), origin=main.source,
        headline=headline, next_steps=steps)


def _next_steps(rollout: str, schema: bool, findings: Sequence[Finding], extra: Mapping[str, Any],
                policy: Policy, replacing: bool = False) -> tuple[str, ...]:
    steps: list[str] = []
    if any(f.severity == "error" for f in findings):
        steps.append("fix the error findings below: they hold whatever else the change does")
    if rollout == "not-applied":
        steps.append("fix the manifest where the API server rejects it (the error finding names the field)"
                     if schema else
                     "fix what KubeRay rejects, then delete and recreate the RayJob: a RayJob marked "
                     "ValidationFailed never leaves that status, even once the spec is fixed")
    if rollout == "suspend":
        steps.append("confirm the job may lose its work: suspending deletes its RayCluster and submitter, "
                     "and resuming reruns it from the start")
    gpus = policy.devices(extra)
    if rollout == "create" and replacing and gpus:
        steps.extend(replacement_steps(gpus))
    elif rollout in ("create", "resume") and gpus:
        flags = " ".join(f"{k}={v}" for k, v in gpus.items())
        steps.append(f"make room for the job's accelerators and say so: `--headroom {flags}` (the Action's "
                     "`headroom:` input) or the policy's `thresholds`")
    steps.extend(unknown_device_steps(gpus, policy.accelerators))
    steps.append(OVERRIDE)
    return tuple(steps)


class RayJobAnalysis(Analysis):
    kind = "RayJob"

    @classmethod
    def run(cls, t: Target) -> ResourceReport:
        return analyze_job(t.engine, t.key, t.before, t.after, headroom=t.headroom, live=t.live,
                           argo_apps=list(t.argo_apps), duplicates=t.duplicates, replacing=t.replacing)


ANALYSIS = RayJobAnalysis
