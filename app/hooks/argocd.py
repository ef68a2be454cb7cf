"""``rayservice-impact argocd-presync``: the Argo CD PreSync hook.

1. ``GET {server}/api/v1/applications/{app}/managed-resources?group=ray.io``: one call for the
   whole group (Argo CD filters on one ``kind`` or none), keeping the RayServices, RayClusters
   and RayJobs; each item's ``liveState`` is BEFORE and ``targetState`` AFTER (the core strips
   server-set fields and applies the CRD defaults to both sides).
2. Where the Kubernetes API is reachable (in-cluster or kubeconfig): the live basis of the
   RayServices and standalone RayClusters (:mod:`app.live`); with no configuration at all, the
   manifest basis, said in the output.
3. The markdown report goes to stdout (Argo CD shows the hook's log); the exit code is the
   CLI's: 3 hold (the hook fails, the sync stops), 0 approve / ignore-differences.

When Argo CD or Kubernetes cannot be used the check fails closed (exit 1) unless
``RAYSERVICE_IMPACT_FAIL_OPEN=true`` (exit 0). Notes go to stderr, so ``--format json``
keeps stdout parseable. On a hold or a failure the reason is also written to the
termination log (``/dev/termination-log``): a bare Pod hook then shows it in the Argo CD UI.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import threading
from pathlib import Path
from typing import Any

import diffing
from diffing.kinds import NAMES_TEXT
from diffing.kube.manifests import KINDS, analysed_kind
from diffing.live import live_key

from .. import jsonio
from ..clients.argocd import ArgoCDClient
from ..clients.kubernetes import KubeReader, connect
from ..clients.upstream import UpstreamError
from ..live import LIVE_KINDS, cluster_fleet, read_live_basis
from ..managed import (
    OPERATOR_KINDS,
    ManagedResourcesError,
    operator_files_from_managed_resources,
    texts_from_managed_resources,
)
from ..output import EXIT_HOLD, EXIT_INTERNAL, EXIT_OK, UsageError, write_report
from ..settings import Settings, SettingsError, load_settings

TERMINATION_LIMIT = 4000  # the kubelet keeps 4096 bytes


def _note(text: str) -> None:
    print(f"rayservice-impact: {text}", file=sys.stderr, flush=True)


def write_termination_log(path: Path, text: str) -> None:
    """Best effort: only where the file exists (inside a container) and can be written."""
    if not path.exists():
        return
    data = text.encode("utf-8")[:TERMINATION_LIMIT].decode("utf-8", "ignore")
    try:
        path.write_text(data, encoding="utf-8")
    except OSError:
        pass


def _cannot_check(settings: Settings, message: str) -> int:
    _note(message)
    if settings.fail_open:
        _note(f"RAYSERVICE_IMPACT_FAIL_OPEN=true: letting the sync go ahead unchecked (exit {EXIT_OK})")
        return EXIT_OK
    _note(f"failing closed (exit {EXIT_INTERNAL}): the sync stops. Set RAYSERVICE_IMPACT_FAIL_OPEN=true "
          "to let syncs through when the check cannot run")
    write_termination_log(settings.termination_log, f"rayservice-impact could not check the sync: {message}")
    return EXIT_INTERNAL


def _settings() -> Settings:
    try:
        settings = load_settings()
    except SettingsError as exc:
        raise UsageError(str(exc)) from None
    missing = [name for name, value in (("RAYSERVICE_IMPACT_ARGOCD_SERVER", settings.argocd_server),
                                        ("RAYSERVICE_IMPACT_ARGOCD_TOKEN", settings.argocd_token))
               if not value or (hasattr(value, "get_secret_value") and not value.get_secret_value())]
    if missing:
        raise UsageError(f"argocd-presync needs {' and '.join(missing)} (the argocd-server base URL and "
                         "an API token with 'applications, get' on the application)")
    return settings


def _state(item: dict[str, Any], field: str) -> dict[str, Any] | None:
    raw = item.get(field)
    if not isinstance(raw, str) or raw in ("", "null"):
        return None
    try:
        obj = jsonio.loads(raw, field)
    except jsonio.JSONInputError:
        return None
    return obj if isinstance(obj, dict) else None


def _targets(body: dict[str, Any]) -> tuple[dict[str, int], list[str], dict[str, dict[str, Any]]]:
    """How many objects of each analysed kind the response holds, the live keys of those whose
    live state is read (RayServices, standalone RayClusters: :func:`diffing.live.live_key`), and
    their target objects (for node matching). A RayCluster that a RayService or RayJob owns is
    the owner's (:func:`diffing.kube.manifests.analysed_kind`)."""
    counts: dict[str, int] = {}
    keys: list[str] = []
    targets: dict[str, dict[str, Any]] = {}
    for item in body.get("items") or []:
        if not isinstance(item, dict) or item.get("group") not in (None, "ray.io"):
            continue
        target, live = _state(item, "targetState"), _state(item, "liveState")
        obj = target or live
        kind = analysed_kind(obj) if obj is not None else item.get("kind") or "RayService"
        if kind not in KINDS or item.get("kind") not in (None, kind):
            continue
        counts[kind] = counts.get(kind, 0) + 1
        if kind not in LIVE_KINDS:
            continue
        key = live_key((kind, item.get("namespace") or "default", str(item.get("name"))))
        keys.append(key)
        if target is not None:
            targets[key] = target
    return counts, keys, targets


def _counted(counts: dict[str, int]) -> str:
    return (", ".join(f"{counts[k]} {k}(s)" for k in KINDS if counts.get(k))
            or f"no {NAMES_TEXT}")


def _describe(key: str, live: diffing.LiveCluster) -> str:
    if key.startswith("RayCluster/"):
        return _describe_cluster(key, live)
    if key.startswith("RayJob/"):  # a new RayCluster per run: only the room for its pods is read
        free = ", ".join(f"{k}={v}" for k, v in (live.headroom or {}).items()) or "none"
        return f"{key}; free where its pods fit: {free}"
    parts = [key]
    if live.active_cluster:
        reps = ", ".join(f"{g}={n}" for g, n in sorted(live.worker_replicas.items())) or "no worker groups"
        parts.append(f"active RayCluster {live.active_cluster} (replicas {reps})")
    else:
        parts.append("no running RayCluster")
    if live.pending_cluster:
        parts.append(f"upgrade in flight: pending RayCluster {live.pending_cluster}")
    if live.headroom:
        parts.append("free where its pods fit: " + ", ".join(f"{k}={v}" for k, v in live.headroom.items()))
    if live.divergence:
        parts.append(f"{len(live.divergence)} path(s) where the running cluster differs from the live spec")
    return "; ".join(parts)


def _describe_cluster(key: str, live: diffing.LiveCluster) -> str:
    parts = [key]
    if live.cluster_spec is None:
        parts.append("not running")
    else:
        reps = ", ".join(f"{g}={n}" for g, n in sorted(live.worker_replicas.items())) or "no worker groups"
        pods = ", ".join(f"{g}={n}" for g, n in sorted(live.group_pods.items())) or "none"
        parts.append(f"running (replicas {reps}; worker pods {pods})")
        if live.head_hash or live.head_kuberay_version:
            parts.append(f"head pod hash {live.head_hash or 'none'}, "
                         f"KubeRay {live.head_kuberay_version or 'unknown'}")
        else:
            parts.append("no head pod")
    if live.headroom:
        parts.append("free where its pods fit: " + ", ".join(f"{k}={v}" for k, v in live.headroom.items()))
    return "; ".join(parts)


log = logging.getLogger("rayservice_impact.hook")


def _watchdog(settings: Settings) -> threading.Timer:
    """End the hook before the Pod's own deadline, with the fail-open/closed answer and a reason.

    Each Argo CD and Kubernetes call has its timeout and retries; this bounds their sum. Without
    it a slow API made the hook run past ``activeDeadlineSeconds`` and Argo CD showed only
    "DeadlineExceeded".
    """
    limit = settings.hook_deadline_seconds

    def expire() -> None:
        code = _cannot_check(settings, f"the check did not finish within {limit:g} s "
                                       "(RAYSERVICE_IMPACT_HOOK_DEADLINE_SECONDS)")
        sys.stdout.flush()
        os._exit(code)

    timer = threading.Timer(limit, expire)
    timer.daemon = True
    timer.start()
    return timer


def run_presync(args: argparse.Namespace, kwargs: dict[str, Any]) -> int:
    settings = _settings()
    timer = _watchdog(settings)
    try:
        return _run_presync(args, kwargs, settings)
    except (diffing.DiffingError, UsageError):
        raise
    except Exception as exc:  # noqa: BLE001 - a bug must still answer as the policy says
        log.exception("argocd-presync failed unexpectedly")
        return _cannot_check(settings, f"internal error ({type(exc).__name__}: {str(exc)[:200]})")
    finally:
        timer.cancel()


def _read_live(settings: Settings, kwargs: dict[str, Any], keys: list[str],
               targets: dict[str, dict[str, Any]]) -> dict[str, diffing.LiveCluster] | None:
    """The live basis of ``keys`` from the Kubernetes API, described on stderr; ``None`` (the
    manifest basis) with no Kubernetes configuration. Raises :class:`UpstreamError` when the API
    cannot be read."""
    accelerators = tuple((kwargs.get("policy") or {}).get("accelerators") or ())
    conn = connect(timeout=settings.kubernetes_timeout_seconds)
    if conn is None:
        _note("capacity basis: manifest (no in-cluster service account and no kubeconfig: "
              "replicas come from the manifests and free accelerators are unknown)")
        return None
    try:
        live = read_live_basis(
            KubeReader(conn, timeout=settings.kubernetes_timeout_seconds), keys,
            targets=targets, kuberay_version=kwargs["kuberay_version"],
            accelerators=accelerators, headroom=kwargs.get("headroom"))
    finally:
        conn.api.close()
    _note(f"capacity basis: live (Kubernetes API via {conn.source})")
    for key, state in sorted(live.items()):
        _note("  " + _describe(key, state))
    return live


def _operator_upgrade(settings: Settings, kwargs: dict[str, Any], report: diffing.Report, before: Any,
                      after: Any, files: list[tuple[str, str | None, str | None]]) -> diffing.Report:
    """The report with the operator upgrade this sync makes, if any: every RayService, RayCluster and
    RayJob of the cluster judged under the old and the new operator (docs/operator-upgrade.md)."""
    from diffing.operator.judge import moves_operator, with_upgrade_in

    if not moves_operator(before, after, files):
        return report
    fleet, unread = None, ""
    if settings.live_basis != "off":
        fleet, unread = cluster_fleet(settings.kubernetes_timeout_seconds)
        _note("operator upgrade: " + (f"the cluster's objects could not be read: {unread}" if unread else
                                      "judged against the manifests only (no Kubernetes configuration)"
                                      if fleet is None else
                                      f"{len(fleet)} ray.io objects read from the cluster"))
    return with_upgrade_in(report, before, after, files=files, cluster=fleet, cluster_unread=unread,
                           policy=kwargs.get("policy"))


def _hold_text(report: diffing.Report) -> str:
    """The termination log of a hold: the summary, then each held object's reasons."""
    held = [r for r in report.resources if r.decision == "hold"]
    lines = [f"HOLD: {report.summary}"]
    for r in held:  # the "strategy: ..." line is context, not a reason to hold
        who = f"{r.namespace}/{r.name}" if r.kind == "RayService" else f"{r.kind} {r.namespace}/{r.name}"
        lines.extend(f"{who}: {reason}" for reason in r.reasons
                     if not reason.startswith("strategy: "))
    return "\n".join(lines)


def _run_presync(args: argparse.Namespace, kwargs: dict[str, Any], settings: Settings) -> int:
    app = (args.app or "").strip()
    if not app:
        raise UsageError("--app: the Argo CD Application name is empty (is $(ARGOCD_APP_NAME) set "
                         "in the hook's environment?)")
    token = settings.argocd_token.get_secret_value() if settings.argocd_token else ""
    verify: bool | str = str(settings.argocd_ca_file) if settings.argocd_ca_file else True
    if settings.argocd_insecure:
        verify = False
    server = str(settings.argocd_server)
    where = f"{args.app_namespace}/{app}" if args.app_namespace else app
    _note(f"checking Argo CD application {where} at {server}")
    try:
        with ArgoCDClient(server, token, timeout=settings.argocd_timeout_seconds,
                          retries=settings.argocd_retries, verify=verify) as client:
            body = client.managed_resources(app, app_namespace=args.app_namespace)
            # The operator's Deployment and CRDs, where an operator upgrade shows (one filter each).
            operator_items = [item for group, kind in OPERATOR_KINDS
                              for item in client.managed_resources(app, app_namespace=args.app_namespace,
                                                                   group=group, kind=kind).get("items") or []]
        before, after = texts_from_managed_resources(body)
        files = operator_files_from_managed_resources({"items": operator_items})
    except UpstreamError as exc:
        return _cannot_check(settings, str(exc))
    except ManagedResourcesError as exc:
        return _cannot_check(settings, f"Argo CD's managed-resources answer is not usable: {exc}")
    counts, keys, targets = _targets(body)
    _note(f"{_counted(counts)} managed by {where}")

    live = None
    advisory = False
    if keys and settings.live_basis == "auto":
        try:
            live = _read_live(settings, kwargs, keys, targets)
        except UpstreamError as exc:
            code = _cannot_check(settings, str(exc))
            if code != EXIT_OK:
                return code
            advisory = True
            _note("the report below uses the manifest basis and is advisory only")
    elif settings.live_basis == "off":
        _note("capacity basis: manifest (RAYSERVICE_IMPACT_LIVE_BASIS=off)")

    try:
        report = diffing.analyze(before, after, live=live, sources=("live", "target"),
                                 before_is_live=True, **kwargs)
    except diffing.ManifestError as exc:  # Argo CD's own answer cannot be read as manifests
        return _cannot_check(settings, f"Argo CD's managed-resources answer is not usable: {exc.message}")
    report = _operator_upgrade(settings, kwargs, report, before, after, files)
    write_report(report, args.format or "markdown", args.output)
    sys.stdout.flush()
    code = report.exit_code
    if advisory:
        return EXIT_OK
    if code == EXIT_HOLD:
        write_termination_log(settings.termination_log, _hold_text(report))
        _note(f"decision hold: exit {EXIT_HOLD}, the sync stops here. Change the manifests, free "
              "capacity, or sync again once it is there")
    else:
        _note(f"decision {report.decision}: exit {EXIT_OK}, the sync goes ahead")
        if report.resources and settings.rollout_service_url:
            _announce(settings, app, args.app_namespace, verify)
    return code


def _announce(settings: Settings, app: str, app_namespace: str | None, verify: bool | str) -> None:
    """Tell the service the sync of ``app`` goes ahead, as Argo CD's notification would
    (docs/rollout.md): it analyses the live state now, before the sync applies, and follows the
    rollout. Best effort: the gate's answer is given already, so a failure here is said on stderr
    and never changes the exit code."""
    import httpx

    secret = settings.argocd_webhook_secret.get_secret_value() if settings.argocd_webhook_secret else ""
    if not secret:
        _note("rollout report: RAYSERVICE_IMPACT_ARGOCD_WEBHOOK_SECRET is not set; the sync is not announced")
        return
    token = settings.argocd_token.get_secret_value() if settings.argocd_token else ""
    try:
        with ArgoCDClient(str(settings.argocd_server), token, timeout=settings.argocd_timeout_seconds,
                          retries=settings.argocd_retries, verify=verify) as client:
            application = client.application(app, app_namespace=app_namespace)
        note = sync_note(application, app, app_namespace)
        if note is None:
            _note(f"rollout report: Argo CD shows no revision being synced for {app}; not announced")
            return
        resp = httpx.post(f"{settings.rollout_service_url}/webhooks/argocd?wait=1", json=note, timeout=40,
                          headers={"X-RayService-Impact-Secret": secret})
    except (UpstreamError, httpx.HTTPError) as exc:
        _note(f"rollout report: the sync could not be announced ({exc}); it goes ahead unfollowed")
        return
    if resp.status_code >= 300:
        _note(f"rollout report: the service answered {resp.status_code} ({resp.text[:200]}); "
              "the sync goes ahead unfollowed")
        return
    status = resp.json().get("status") if "json" in resp.headers.get("content-type", "") else None
    _note(f"rollout report: announced {app}@{note['revision']} to {settings.rollout_service_url} ({status})")


def sync_note(application: dict[str, Any], app: str, app_namespace: str | None) -> dict[str, str] | None:
    """The notification body (docs/rollout.md's template) for the sync now running: the revision
    its operation syncs (``status.operationState.operation.sync.revision``, else the first of
    ``revisions`` for several sources) and the first source's ``repoURL``."""
    def get(value: Any, *keys: str) -> Any:
        for k in keys:
            value = value.get(k) if isinstance(value, dict) else None
        return value

    sync = get(application, "status", "operationState", "operation", "sync")
    revision = get(sync, "revision") or next(iter(get(sync, "revisions") or []), None)
    if not isinstance(revision, str) or not revision:
        return None
    spec = get(application, "spec") or {}
    source = get(spec, "source") or next(iter(get(spec, "sources") or []), None) or {}
    repo_url = get(source, "repoURL")
    namespace = app_namespace or get(application, "metadata", "namespace") or ""
    return {"app": app, "namespace": str(namespace), "revision": revision, "phase": "Running",
            "repoURL": repo_url if isinstance(repo_url, str) else ""}
