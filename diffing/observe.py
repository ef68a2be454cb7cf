"""What the operator did with a deployed change, judged from what the Kubernetes API shows.

Pure: object dicts (the API's own camelCase JSON) and timestamps in, an
:class:`~app.rollout.model.Observation` out. The shell (``app/rollout/tracker.py``) keeps a
:class:`Memory` per target between calls: what was seen first (the active cluster, the
generation, the accelerators already held) and the peaks since, so that one call judges one
moment without any I/O.

The status fields read are KubeRay v1.7.0's (``ray-operator/apis/ray/v1``):

* RayService: ``status.activeServiceStatus`` / ``status.pendingServiceStatus`` with
  ``rayClusterName`` and ``applicationStatuses`` (rayservice_types.go:150-185), the conditions
  ``Ready`` and ``UpgradeInProgress`` (rayservice_types.go:212-216) and the reasons
  ``ValidationFailed`` / ``InitializingTimeout`` (rayservice_types.go:225-232), which the
  controller sets at rayservice_controller.go:163 and through ``markFailedOnInitializingTimeout``
  (rayservice_controller.go:799-803); ``status.observedGeneration`` (rayservice_types.go:161).
* RayCluster: ``status.state`` (raycluster_types.go:558-575), the ``RayClusterProvisioned``
  and ``HeadPodReady`` conditions (raycluster_types.go:654-660), ``status.observedGeneration``
  (raycluster_types.go:638).
* RayJob: ``status.jobDeploymentStatus`` (rayjob_types.go:45-58, terminal states at :61-64),
  ``status.jobStatus`` (rayjob_types.go:11-23), ``status.reason`` / ``message`` / ``failed`` /
  ``rayClusterName`` (rayjob_types.go:303-340); a retry sets ``Retrying``
  (rayjob_controller.go:555).

The result is a :class:`Seen` (the shell wraps it into the app's ``Observation``); the target is
anything with the ``Target`` attributes (kind, namespace, name, predicted_rollout, predicted_extra).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from fractions import Fraction

from diffing.hints import Any
from diffing.kube import resources as cap
from diffing.kube.quantity import Quantity, QuantityError
from diffing.vocab import Rollout

Obj = Mapping[str, Any]
Target = Any  # app.rollout.model.Target (the core does not import the shell)

# The phases, as app.rollout.model.Phase spells them.
WAITING, PROGRESSING, DONE, STUCK, FAILED = "waiting", "progressing", "done", "stuck", "failed"

CLUSTER_LABEL = "ray.io/cluster"            # on every head and worker pod KubeRay creates
INITIALIZING_TIMEOUT = "ray.io/initializing-timeout"  # utils/constant.go:82
MAX_REASONS = 3
MAX_REASON_CHARS = 300


@dataclass(frozen=True, slots=True)
class Seen:
    """One target at one moment: the fields of ``app.rollout.model.Observation`` this module judges."""

    phase: str
    summary: str
    observed_rollout: str | None = None
    observed_extra: Mapping[str, int] = field(default_factory=dict)
    pending_pods: int = 0
    reasons: tuple[str, ...] = ()
    serve_apps: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Memory:
    """What one target looked like when first seen, and the peaks since."""

    first_seen: bool = False
    generation: int = 0                   # metadata.generation at first sight
    active: str = ""                      # RayService: the active cluster at first sight
    pending_seen: tuple[str, ...] = ()    # RayService: every pending cluster seen
    baseline: Mapping[str, int] = field(default_factory=dict)  # RayCluster: accelerators at first sight
    head_uid: str = ""                    # RayCluster: the head pod at first sight
    job_status_first: str = ""            # RayJob: jobDeploymentStatus at first sight
    job_cluster: str = ""                 # RayJob: its cluster
    reached: bool = False                 # the change has reached the object
    peak: Mapping[str, int] = field(default_factory=dict)
    existed: bool = False


def memory_to_json(m: Memory) -> dict[str, Any]:
    """A :class:`Memory` as JSON values, to keep beside the watch (a restart resumes from it)."""
    return {"firstSeen": m.first_seen, "generation": m.generation, "active": m.active,
            "pendingSeen": list(m.pending_seen), "baseline": dict(m.baseline), "headUid": m.head_uid,
            "jobStatusFirst": m.job_status_first, "jobCluster": m.job_cluster, "reached": m.reached,
            "peak": dict(m.peak), "existed": m.existed}


def memory_from_json(d: Any) -> Memory:
    """The inverse of :func:`memory_to_json`; anything unreadable is a fresh :class:`Memory`."""
    if not isinstance(d, Mapping):
        return Memory()
    try:
        return Memory(first_seen=bool(d.get("firstSeen")), generation=int(d.get("generation") or 0),
                      active=str(d.get("active") or ""),
                      pending_seen=tuple(str(x) for x in d.get("pendingSeen") or ()),
                      baseline={str(k): int(v) for k, v in (d.get("baseline") or {}).items()},
                      head_uid=str(d.get("headUid") or ""),
                      job_status_first=str(d.get("jobStatusFirst") or ""),
                      job_cluster=str(d.get("jobCluster") or ""), reached=bool(d.get("reached")),
                      peak={str(k): int(v) for k, v in (d.get("peak") or {}).items()},
                      existed=bool(d.get("existed")))
    except (TypeError, ValueError, AttributeError):
        return Memory()


# -- small readers ---------------------------------------------------------------------------


def _get(obj: Any, *path: str) -> Any:
    for key in path:
        if not isinstance(obj, Mapping):
            return None
        obj = obj.get(key)
    return obj


def _status(obj: Obj) -> Mapping[str, Any]:
    status = obj.get("status")
    return status if isinstance(status, Mapping) else {}


def _is_head(pod: Obj) -> bool:
    return (_get(pod, "metadata", "labels") or {}).get("ray.io/node-type") == "head"


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def condition(obj: Obj, kind: str) -> Mapping[str, Any] | None:
    for cond in _get(obj, "status", "conditions") or []:
        if isinstance(cond, Mapping) and cond.get("type") == kind:
            return cond
    return None


def _is_true(obj: Obj, kind: str) -> bool:
    cond = condition(obj, kind)
    return bool(cond) and cond.get("status") == "True"  # type: ignore[union-attr]


def duration(seconds: float) -> str:
    """``552`` → ``9 m 12 s``."""
    seconds = max(0, int(seconds))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours} h {minutes} m"
    if minutes:
        return f"{minutes} m {secs} s"
    return f"{secs} s"


def _clip(text: str) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= MAX_REASON_CHARS else text[:MAX_REASON_CHARS - 1] + "…"


def pod_accelerators(pod: Obj, extra: Iterable[str] = ()) -> dict[str, int]:
    """The accelerators a pod asks the scheduler for (containers, the largest init container,
    overhead; ``diffing/kube/resources.py``'s pod_resources), whole units."""
    spec = pod.get("spec") if isinstance(pod.get("spec"), Mapping) else {}
    total = cap.pod_resources(spec)
    for name, raw in (_get(spec, "overhead") or {}).items():
        try:
            total[name] = total.get(name, Fraction(0)) + Quantity.parse(raw).value
        except QuantityError:
            continue
    names = tuple(extra)
    out: dict[str, int] = {}
    for name, value in total.items():
        if value > 0 and cap.is_accelerator(name, names):
            out[name] = int(value) if value == int(value) else int(value) + 1
    return out


def cluster_pods(pods: Iterable[Obj], namespace: str, cluster: str) -> list[Obj]:
    return [p for p in pods if _get(p, "metadata", "namespace") == namespace
            and (_get(p, "metadata", "labels") or {}).get(CLUSTER_LABEL) == cluster
            and not _get(p, "metadata", "deletionTimestamp")]


def _live(pod: Obj) -> bool:
    return _get(pod, "status", "phase") not in ("Succeeded", "Failed")


def sum_accelerators(pods: Iterable[Obj], extra: Iterable[str] = ()) -> dict[str, int]:
    total: dict[str, int] = {}
    for pod in pods:
        if _live(pod):
            for name, n in pod_accelerators(pod, extra).items():
                total[name] = total.get(name, 0) + n
    return total


def _peak(a: Mapping[str, int], b: Mapping[str, int]) -> dict[str, int]:
    out = dict(a)
    for name, n in b.items():
        if n > out.get(name, 0):
            out[name] = n
    return {k: v for k, v in out.items() if v > 0}


def pending_facts(pods: list[Obj], events: Iterable[Obj]) -> tuple[int, tuple[str, ...]]:
    """How many of ``pods`` are Pending and why: the scheduler's ``FailedScheduling`` messages
    about them (newest first, distinct, at most three)."""
    pending = [p for p in pods if _get(p, "status", "phase") == "Pending"]
    names = {(_get(p, "metadata", "namespace"), _get(p, "metadata", "name")) for p in pending}
    found: list[tuple[str, str]] = []
    for ev in events:
        if ev.get("reason") != "FailedScheduling":
            continue
        inv = ev.get("involvedObject") or {}
        if inv.get("kind") == "Pod" and (inv.get("namespace"), inv.get("name")) in names:
            stamp = str(ev.get("lastTimestamp") or ev.get("eventTime") or "")
            found.append((stamp, _clip(ev.get("message") or "")))
    reasons: list[str] = []
    for _, message in sorted(found, reverse=True):
        if message and message not in reasons:
            reasons.append(message)
    return len(pending), tuple(reasons[:MAX_REASONS])


def render_extra(extra: Mapping[str, int]) -> str:
    parts = []
    for name, n in sorted(extra.items()):
        word = ("GPU" if n == 1 else "GPUs") if name == "nvidia.com/gpu" else name
        parts.append(f"{n} extra {word}")
    return ", ".join(parts) if parts else "no extra accelerators"


def _verdict(target: Target, rollout: str | None, extra: Mapping[str, int]) -> str:
    if rollout == target.predicted_rollout and dict(extra) == dict(target.predicted_extra):
        return "as predicted"
    if rollout != target.predicted_rollout:
        return f"predicted {target.predicted_rollout}"
    return f"predicted {render_extra(target.predicted_extra) or 'none'}"


def serve_apps(status: Any) -> dict[str, str]:
    apps = _get(status, "applicationStatuses") or {}
    if not isinstance(apps, Mapping):
        return {}
    return {str(k): str(_get(v, "status") or "?") for k, v in apps.items()}


def _app_message(status: Any, app: str) -> str:
    return str(_get(status, "activeServiceStatus", "applicationStatuses", app, "message") or "")


def _apps_text(apps: Mapping[str, str]) -> str:
    if not apps:
        return ""
    shown = ", ".join(f"{k} {v}" for k, v in sorted(apps.items())[:5])
    more = f" (+{len(apps) - 5})" if len(apps) > 5 else ""
    return f"; Serve apps: {shown}{more}"


# -- the judgement ---------------------------------------------------------------------------


def observe(target: Target, obj: Obj | None, *, clusters: Mapping[str, Obj], pods: Iterable[Obj],
            events: Iterable[Obj], memory: Memory, since: float, now: float,
            accelerators: Iterable[str] = ()) -> tuple[Seen, Memory]:
    """One target at ``now``; ``clusters`` maps RayCluster names (of the target's namespace) to
    objects, ``pods`` and ``events`` are those of its namespace."""
    pods = list(pods)
    base = Seen(phase=WAITING, summary="")
    if obj is None:
        if memory.existed:
            return replace(base, phase=FAILED, summary=f"{target.kind} {target.name} was deleted",
                           observed_extra=dict(memory.peak)), memory
        return replace(base, summary=f"{target.kind} {target.name} does not exist yet"), memory
    if not memory.first_seen:
        memory = _first(target, obj, clusters, pods, accelerators)
    memory = replace(memory, existed=True)
    if target.kind == "RayService":
        return _rayservice(target, obj, clusters, pods, events, memory, base, since, now, accelerators)
    if target.kind == "RayJob":
        return _rayjob(target, obj, clusters, pods, events, memory, base, since, now, accelerators)
    return _raycluster(target, obj, pods, events, memory, base, since, now, accelerators)


def _first(target: Target, obj: Obj, clusters: Mapping[str, Obj], pods: list[Obj],
           accelerators: Iterable[str]) -> Memory:
    generation = _int(_get(obj, "metadata", "generation"))
    if target.kind == "RayService":
        return Memory(first_seen=True, generation=generation,
                      active=str(_get(obj, "status", "activeServiceStatus", "rayClusterName") or ""))
    if target.kind == "RayJob":
        return Memory(first_seen=True, generation=generation,
                      job_status_first=str(_get(obj, "status", "jobDeploymentStatus") or ""))
    mine = cluster_pods(pods, target.namespace, target.name)
    head = next((p for p in mine if _is_head(p)), None)
    return Memory(first_seen=True, generation=generation, baseline=sum_accelerators(mine, accelerators),
                  head_uid=str(_get(head, "metadata", "uid") or ""))


def _generation_lags(obj: Obj) -> bool:
    """``status.observedGeneration`` behind ``metadata.generation``: the operator has not
    reconciled the newest spec yet."""
    observed = _int(_get(obj, "status", "observedGeneration"))
    return observed < _int(_get(obj, "metadata", "generation"))


def _rayservice(target: Target, obj: Obj, clusters: Mapping[str, Obj], pods: list[Obj],
                events: Iterable[Obj], memory: Memory, base: Seen, since: float, now: float,
                accelerators: Iterable[str]) -> tuple[Seen, Memory]:
    status = _status(obj)
    active = str(_get(status, "activeServiceStatus", "rayClusterName") or "")
    pending = str(_get(status, "pendingServiceStatus", "rayClusterName") or "")
    elapsed = duration(now - since)
    ready = condition(obj, "Ready") or {}
    if ready.get("status") == "False" and ready.get("reason") in ("ValidationFailed", "InitializingTimeout"):
        # rayservice_controller.go:163 (ValidationFailed), :799-803 (InitializingTimeout).
        why = "the operator rejected the spec" if ready.get("reason") == "ValidationFailed" else \
            f"{INITIALIZING_TIMEOUT} passed before it served"
        return replace(base, phase=FAILED, summary=f"{ready.get('reason')}: {why}",
                       reasons=(_clip(str(ready.get("message") or ready.get("reason"))),),
                       observed_extra=dict(memory.peak),
                       observed_rollout=Rollout.NOT_APPLIED), memory
    if pending and pending not in memory.pending_seen:
        memory = replace(memory, pending_seen=(*memory.pending_seen, pending))
    generation = _int(_get(obj, "metadata", "generation"))
    if pending or (active and active != memory.active) or generation > memory.generation:
        memory = replace(memory, reached=True)
    incremental = _get(obj, "spec", "upgradeStrategy", "type") == "NewClusterWithIncrementalUpgrade"
    new_kind = Rollout.INCREMENTAL if incremental else Rollout.NEW_CLUSTER
    apps_active = serve_apps(_get(status, "activeServiceStatus"))
    if pending:
        mine = cluster_pods(pods, target.namespace, pending)
        extra = sum_accelerators(mine, accelerators)
        memory = replace(memory, peak=_peak(memory.peak, extra))
        n_pending, reasons = pending_facts(mine, events)
        apps = serve_apps(_get(status, "pendingServiceStatus"))
        pods_text = (f"{n_pending} of {len(mine)} pods Pending" if n_pending else
                     f"{len(mine)} pods, none Pending" if mine else "no pods yet")
        why = f" ({reasons[0]})" if reasons else ""
        return replace(base, phase=PROGRESSING, observed_rollout=new_kind,
                       observed_extra=dict(memory.peak), pending_pods=n_pending, reasons=reasons,
                       serve_apps=apps,
                       summary=f"new cluster {pending} pending: {pods_text}{why}{_apps_text(apps)}; "
                               f"{elapsed} so far"), memory
    if not memory.reached or _generation_lags(obj):
        return replace(base, phase=WAITING, serve_apps=apps_active,
                       summary=f"waiting for the operator to see the change; {elapsed} so far"), memory
    serving = ready.get("status") == "True" or status.get("serviceStatus") == "Running"
    apps_ok = all(v == "RUNNING" for v in apps_active.values())
    failed_apps = {k: v for k, v in apps_active.items() if v in ("DEPLOY_FAILED", "UNHEALTHY")}
    if memory.pending_seen and active == memory.pending_seen[-1] and active != memory.active:
        rollout: str = new_kind
    elif memory.pending_seen:
        # The pending cluster went away without taking over: the operator dropped it (the spec
        # went back to the active cluster's, rayservice_types.go:216 RollbackInProgress).
        return replace(base, phase=DONE, observed_rollout=Rollout.NONE,
                       observed_extra=dict(memory.peak), serve_apps=apps_active,
                       summary=f"rolled back: pending cluster {memory.pending_seen[-1]} dropped, "
                               f"{active or 'no cluster'} still serves; after {elapsed}"), memory
    elif active and active != memory.active:
        rollout = new_kind
    else:
        rollout = Rollout.SERVE_IN_PLACE if target.predicted_rollout != Rollout.CLUSTER_IN_PLACE \
            else Rollout.CLUSTER_IN_PLACE
    if failed_apps:
        return replace(base, phase=FAILED, observed_rollout=rollout, observed_extra=dict(memory.peak),
                       serve_apps=apps_active,
                       reasons=tuple(_clip(f"{k}: {_app_message(status, k) or v}")
                                     for k, v in sorted(failed_apps.items()))[:MAX_REASONS],
                       summary=f"Serve apps failed on {active}: {', '.join(sorted(failed_apps))}"), memory
    if not (serving and apps_ok):
        return replace(base, phase=PROGRESSING, observed_rollout=rollout, observed_extra=dict(memory.peak),
                       serve_apps=apps_active,
                       summary=f"cluster {active or '?'} not serving yet{_apps_text(apps_active)}; "
                               f"{elapsed} so far"), memory
    verdict = _verdict(target, rollout, memory.peak)
    what = f"new cluster {active} ready" if rollout in (Rollout.NEW_CLUSTER, Rollout.INCREMENTAL) else \
        f"{rollout} update of {active} done"
    return replace(base, phase=DONE, observed_rollout=rollout, observed_extra=dict(memory.peak),
                   serve_apps=apps_active,
                   summary=f"{what} in {elapsed}; {render_extra(memory.peak)} at peak, {verdict}"), memory


def _raycluster(target: Target, obj: Obj, pods: list[Obj], events: Iterable[Obj], memory: Memory,
                base: Seen, since: float, now: float, accelerators: Iterable[str]) -> tuple[Seen, Memory]:
    mine = cluster_pods(pods, target.namespace, target.name)
    held = sum_accelerators(mine, accelerators)
    extra = {k: v - memory.baseline.get(k, 0) for k, v in held.items() if v > memory.baseline.get(k, 0)}
    memory = replace(memory, peak=_peak(memory.peak, extra))
    head = next((p for p in mine if _is_head(p)), None)
    head_uid = str(_get(head, "metadata", "uid") or "")
    generation = _int(_get(obj, "metadata", "generation"))
    recreated = bool(memory.head_uid and head_uid and head_uid != memory.head_uid)
    if recreated or generation > memory.generation:
        memory = replace(memory, reached=True)
    elapsed = duration(now - since)
    n_pending, reasons = pending_facts(mine, events)
    if _is_true(obj, "ReplicaFailure"):  # raycluster_types.go:659-660
        cond = condition(obj, "ReplicaFailure") or {}
        reasons = (*reasons, _clip(cond.get("message") or "ReplicaFailure"))[:MAX_REASONS]
    rollout = Rollout.RECREATE if recreated else (Rollout.SCALE if extra else None)
    common = dict(observed_extra=dict(memory.peak), pending_pods=n_pending, reasons=reasons,
                  observed_rollout=rollout)
    if not memory.reached or _generation_lags(obj):
        return replace(base, phase=WAITING, summary=f"waiting for the operator to see the change; "
                       f"{elapsed} so far", **common), memory  # type: ignore[arg-type]
    state = _get(obj, "status", "state")
    if state == "failed":
        return replace(base, phase=FAILED, summary=f"RayCluster {target.name} failed: "
                       f"{_get(obj, 'status', 'reason') or 'no reason given'}", **common), memory  # type: ignore[arg-type]
    ready = state == "ready" and n_pending == 0 and all(_get(p, "status", "phase") == "Running" for p in mine)
    if not ready:
        why = f" ({reasons[0]})" if reasons else ""
        return replace(base, phase=PROGRESSING,
                       summary=f"RayCluster {target.name}: {n_pending} of {len(mine)} pods Pending{why}; "
                               f"{elapsed} so far", **common), memory  # type: ignore[arg-type]
    done = rollout or (target.predicted_rollout if target.predicted_rollout in (Rollout.LATENT, Rollout.NONE)
                       else Rollout.NONE)
    common["observed_rollout"] = done
    return replace(base, phase=DONE,
                   summary=f"RayCluster {target.name} ready in {elapsed} ({done}); "
                           f"{render_extra(memory.peak)} at peak, {_verdict(target, done, memory.peak)}",
                   **common), memory  # type: ignore[arg-type]


def _rayjob(target: Target, obj: Obj, clusters: Mapping[str, Obj], pods: list[Obj], events: Iterable[Obj],
            memory: Memory, base: Seen, since: float, now: float,
            accelerators: Iterable[str]) -> tuple[Seen, Memory]:
    status = _status(obj)
    deployment = str(status.get("jobDeploymentStatus") or "")
    job_status = str(status.get("jobStatus") or "")
    cluster = str(status.get("rayClusterName") or memory.job_cluster)
    failed = _int(status.get("failed"))
    elapsed = duration(now - since)
    mine = cluster_pods(pods, target.namespace, cluster) if cluster else []
    memory = replace(memory, job_cluster=cluster,
                     peak=_peak(memory.peak, sum_accelerators(mine, accelerators)))
    # A job first seen Complete finished before the change (a guess: nothing in the status says
    # which spec a finished run used); one first seen failing is reported as it is.
    if (deployment != "Complete" or memory.job_status_first != "Complete"
            or _int(_get(obj, "metadata", "generation")) > memory.generation):
        memory = replace(memory, reached=True)
    n_pending, reasons = pending_facts(mine, events)
    retries = f"; {failed} failed attempt{'s' if failed != 1 else ''}" if failed else ""
    common = dict(observed_extra=dict(memory.peak), pending_pods=n_pending, observed_rollout=Rollout.CREATE)
    if not memory.reached:
        return replace(base, phase=WAITING, observed_extra=dict(memory.peak),
                       summary=f"RayJob {target.name} already {deployment}; waiting for the change"), memory
    reason = status.get("reason")
    if deployment == "ValidationFailed" or (deployment, reason) == ("Failed", "ValidationFailed"):
        return replace(base, phase=FAILED, reasons=(_clip(status.get("message") or deployment),),
                       observed_rollout=Rollout.NOT_APPLIED, observed_extra=dict(memory.peak),
                       summary=f"RayJob {target.name}: validation failed"), memory
    if deployment == "Failed":
        why = status.get("message") or status.get("reason") or "no reason given"
        return replace(base, phase=FAILED, reasons=(_clip(why),),
                       summary=f"RayJob {target.name} failed after {elapsed}{retries}", **common), memory  # type: ignore[arg-type]
    if deployment == "Complete":
        # rayjob_controller.go:535: Complete with SUCCEEDED is the success; Complete otherwise
        # (STOPPED, FAILED with no retry left) did not succeed.
        if job_status == "SUCCEEDED":
            return replace(base, phase=DONE,
                           summary=f"RayJob {target.name} succeeded in {elapsed}{retries}; "
                                   f"{render_extra(memory.peak)} at peak", **common), memory  # type: ignore[arg-type]
        return replace(base, phase=FAILED, reasons=(_clip(status.get("message") or job_status or "?"),),
                       summary=f"RayJob {target.name} ended {job_status or 'without a job status'}{retries}",
                       **common), memory  # type: ignore[arg-type]
    if deployment in ("Suspended", "Suspending"):
        return replace(base, phase=DONE, observed_rollout=Rollout.SUSPEND, observed_extra=dict(memory.peak),
                       summary=f"RayJob {target.name} {deployment.lower()}"), memory
    what = {"Retrying": f"retrying (attempt {failed + 1})",
            "Running": f"running ({job_status or 'no job status'})",
            "Waiting": "waiting for its cluster", "Initializing": "initializing its cluster",
            "": "not started by the operator yet"}.get(deployment, deployment)
    why = f" ({reasons[0]})" if reasons else ""
    pods_text = f"; {n_pending} of {len(mine)} pods Pending{why}" if n_pending else ""
    return replace(base, phase=PROGRESSING, reasons=reasons,
                   summary=f"RayJob {target.name} {what}{pods_text}{retries}; {elapsed} so far",
                   **common), memory  # type: ignore[arg-type]


def stuck(target: Target, obs: Seen, *, deadline_seconds: float) -> Seen:
    """``obs`` past the deadline: STUCK, with the reason and the ways out."""
    ways: list[str] = []
    if obs.pending_pods:
        names = ", ".join(sorted(target.predicted_extra) or sorted(obs.observed_extra)) or "their requests"
        ways.append(f"free capacity: {obs.pending_pods} pods wait for {names}")
    ways.append(f"revert the change (kubectl/Argo CD: sync the previous revision of {target.name})")
    if target.kind == "RayService":
        ways.append(f"annotate {target.name} with {INITIALIZING_TIMEOUT} (only acts while the RayService "
                    "has never been Ready; rayservice_controller.go:795-803)")
    if target.kind == "RayJob":
        ways.append("set spec.activeDeadlineSeconds / preRunningDeadlineSeconds on the RayJob")
    head = obs.summary if obs.phase != WAITING else "the change never reached the object"
    reasons = (*obs.reasons, *(f"way out: {w}" for w in ways))
    return replace(obs, phase=STUCK, reasons=reasons,
                   summary=f"stuck past the {duration(deadline_seconds)} deadline: {head}")
