"""The case generator: KubeRay's own samples and the project's, times a mutation catalogue.

A case is ``{id, version, featureGates, env, kind, before, after, mutations, base}`` (plus
``family`` for the create/delete/v1alpha1 families, :data:`FAMILY_SHARE`): ``before`` is a
sample, ``after`` the same object with one to three mutations applied; a create has no
``before`` (``lifecycle.create``), a delete no ``after`` (``lifecycle.delete``). Everything is
deterministic for a seed. To add a mutation: write a function ``(obj, rng) -> obj | None``
(``None``: it does not apply to this object) and register it with :func:`mutation`; then
``scripts/conformance.py show 'BASE|NAME'`` prints both answers for it.
"""

from __future__ import annotations

import copy
import glob
import json
import os
import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import yaml

KINDS = ("RayService", "RayCluster", "RayJob")  # the kinds the Go harness drives (of diffing.kinds)
VERSION = "1.7.0"
# Feature gates each KubeRay version knows (pkg/features/features.go); a mutation that sets
# another is left out of that version's cases (the harness refuses unknown gates).
GATES = {
    "1.7.0": None,  # every gate the catalogue uses
    "1.6.2": {"RayClusterStatusConditions", "RayJobDeletionPolicy", "RayMultiHostIndexing",
              "RayServiceIncrementalUpgrade", "RayCronJob", "AsyncJobInfoQuery"},
}
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

Obj = dict[str, Any]
Fn = Callable[[Obj, random.Random], Obj | None]


@dataclass(frozen=True)
class Mutation:
    name: str
    kinds: tuple[str, ...]
    fn: Fn
    gates: tuple[tuple[str, bool], ...] = ()  # feature gates the case runs with
    env: tuple[tuple[str, str], ...] = ()  # operator environment
    alone: bool = False  # never combined with others (it changes what the others mean)


CATALOGUE: dict[str, Mutation] = {}


def mutation(name: str, *kinds: str, gates: dict[str, bool] | None = None, env: dict[str, str] | None = None,
             alone: bool = False) -> Callable[[Fn], Fn]:
    def register(fn: Fn) -> Fn:
        CATALOGUE[name] = Mutation(name, kinds or KINDS, fn, tuple(sorted((gates or {}).items())),
                                   tuple(sorted((env or {}).items())), alone)
        return fn
    return register


# ---- where the cluster spec is, per kind ---------------------------------------------------------

def cluster_spec(obj: Obj) -> Obj | None:
    spec = obj.get("spec") or {}
    if obj["kind"] == "RayService":
        return spec.get("rayClusterConfig")
    if obj["kind"] == "RayJob":
        return spec.get("rayClusterSpec")
    return spec


def groups(obj: Obj) -> list[Obj]:
    cs = cluster_spec(obj)
    return cs.setdefault("workerGroupSpecs", []) if cs is not None else []


def containers(template: Obj | None) -> list[Obj]:
    return ((template or {}).get("spec") or {}).get("containers") or []


def head_container(obj: Obj) -> Obj | None:
    cs = cluster_spec(obj)
    if not cs:
        return None
    cs_ = containers((cs.get("headGroupSpec") or {}).get("template"))
    return cs_[0] if cs_ else None


def first_group(obj: Obj) -> Obj | None:
    g = groups(obj)
    return g[0] if g else None


def serve(obj: Obj) -> Obj | None:
    text = (obj.get("spec") or {}).get("serveConfigV2")
    if obj["kind"] != "RayService" or not isinstance(text, str):
        return None
    try:
        cfg = yaml.safe_load(text)
    except yaml.YAMLError:
        return None
    ok = isinstance(cfg, dict) and isinstance(cfg.get("applications"), list) and cfg["applications"]
    return cfg if ok else None


def set_serve(obj: Obj, cfg: Obj) -> Obj:
    obj["spec"]["serveConfigV2"] = yaml.safe_dump(cfg, sort_keys=False)
    return obj


# ---- the catalogue ----------------------------------------------------------------------------------
# serveConfigV2 keys

@mutation("serve.num_replicas", "RayService")
def _serve_replicas(o: Obj, rng: random.Random) -> Obj | None:
    cfg = serve(o)
    deps = cfg and cfg["applications"][0].get("deployments")
    if not cfg or not deps:
        return None
    n = deps[0].get("num_replicas")
    deps[0]["num_replicas"] = (n if isinstance(n, int) else 1) + 1
    return set_serve(o, cfg)


@mutation("serve.user_config", "RayService")
def _serve_user_config(o: Obj, rng: random.Random) -> Obj | None:
    cfg = serve(o)
    deps = cfg and cfg["applications"][0].get("deployments")
    if not cfg or not deps:
        return None
    deps[0].setdefault("user_config", {})["conformance"] = rng.randint(1, 99)
    return set_serve(o, cfg)


@mutation("serve.route_prefix", "RayService")
def _serve_route(o: Obj, rng: random.Random) -> Obj | None:
    cfg = serve(o)
    if not cfg:
        return None
    cfg["applications"][0]["route_prefix"] = "/conformance"
    return set_serve(o, cfg)


@mutation("serve.app_added", "RayService")
def _serve_app_added(o: Obj, rng: random.Random) -> Obj | None:
    cfg = serve(o)
    if not cfg:
        return None
    cfg["applications"].append({"name": "conformance_app", "import_path": "conformance.app:graph",
                                "route_prefix": "/conformance-app"})
    return set_serve(o, cfg)


@mutation("serve.app_removed", "RayService")
def _serve_app_removed(o: Obj, rng: random.Random) -> Obj | None:
    cfg = serve(o)
    if not cfg or len(cfg["applications"]) < 2:
        return None
    cfg["applications"].pop()
    return set_serve(o, cfg)


@mutation("serve.reformatted", "RayService")
def _serve_reformatted(o: Obj, rng: random.Random) -> Obj | None:
    """The same Serve config, written differently (JSON flow style)."""
    cfg = serve(o)
    if not cfg:
        return None
    o["spec"]["serveConfigV2"] = json.dumps(cfg)
    return o


@mutation("serve.runtime_env", "RayService")
def _serve_runtime_env(o: Obj, rng: random.Random) -> Obj | None:
    cfg = serve(o)
    if not cfg:
        return None
    cfg["applications"][0].setdefault("runtime_env", {})["env_vars"] = {"CONFORMANCE": "1"}
    return set_serve(o, cfg)


# images, resources, environment

@mutation("image.head")
def _image_head(o: Obj, rng: random.Random) -> Obj | None:
    c = head_container(o)
    if not c or "image" not in c:
        return None
    c["image"] = c["image"] + "-conformance"
    return o


@mutation("image.all")
def _image_all(o: Obj, rng: random.Random) -> Obj | None:
    cs = cluster_spec(o)
    if not cs:
        return None
    templates = [(cs.get("headGroupSpec") or {}).get("template")] + [g.get("template") for g in groups(o)]
    done = False
    for t in templates:
        for c in containers(t):
            if "image" in c:
                c["image"] = c["image"] + "-conformance"
                done = True
    return o if done else None


@mutation("image.worker")
def _image_worker(o: Obj, rng: random.Random) -> Obj | None:
    g = first_group(o)
    cs_ = containers(g.get("template")) if g else []
    if not cs_ or "image" not in cs_[0]:
        return None
    cs_[0]["image"] = cs_[0]["image"] + "-conformance"
    return o


@mutation("resources.worker_cpu")
def _worker_cpu(o: Obj, rng: random.Random) -> Obj | None:
    g = first_group(o)
    cs_ = containers(g.get("template")) if g else []
    if not cs_:
        return None
    res = cs_[0].setdefault("resources", {})
    for part in ("requests", "limits"):
        if part in res or part == "requests":
            res.setdefault(part, {})["cpu"] = "3"
    return o


@mutation("resources.worker_gpu_added")
def _worker_gpu(o: Obj, rng: random.Random) -> Obj | None:
    g = first_group(o)
    cs_ = containers(g.get("template")) if g else []
    if not cs_:
        return None
    limits = cs_[0].setdefault("resources", {}).setdefault("limits", {})
    limits["nvidia.com/gpu"] = int(limits.get("nvidia.com/gpu", 0) or 0) + 1
    return o


@mutation("resources.head_tpu_added")
def _head_tpu(o: Obj, rng: random.Random) -> Obj | None:
    c = head_container(o)
    if not c:
        return None
    c.setdefault("resources", {}).setdefault("limits", {})["google.com/tpu"] = 4
    return o


@mutation("env.head_added")
def _env_head(o: Obj, rng: random.Random) -> Obj | None:
    c = head_container(o)
    if not c:
        return None
    c.setdefault("env", []).append({"name": "CONFORMANCE", "value": str(rng.randint(1, 9))})
    return o


@mutation("rayVersion")
def _ray_version(o: Obj, rng: random.Random) -> Obj | None:
    cs = cluster_spec(o)
    if not cs:
        return None
    cs["rayVersion"] = "2.99.0"
    return o


@mutation("rayStartParams.worker")
def _start_params(o: Obj, rng: random.Random) -> Obj | None:
    g = first_group(o)
    if not g:
        return None
    g.setdefault("rayStartParams", {})["object-store-memory"] = "100000000"
    return o


# worker groups

def _group_copy(o: Obj, name: str) -> Obj | None:
    g = first_group(o)
    if not g:
        return None
    new = copy.deepcopy(g)
    new["groupName"] = name
    new.pop("scaleStrategy", None)
    return new


@mutation("groups.appended")
def _group_appended(o: Obj, rng: random.Random) -> Obj | None:
    new = _group_copy(o, "conformance-added")
    if new is None:
        return None
    groups(o).append(new)
    return o


@mutation("groups.prepended")
def _group_prepended(o: Obj, rng: random.Random) -> Obj | None:
    new = _group_copy(o, "conformance-first")
    if new is None:
        return None
    groups(o).insert(0, new)
    return o


@mutation("groups.removed_last")
def _group_removed(o: Obj, rng: random.Random) -> Obj | None:
    gs = groups(o)
    if len(gs) < 1:
        return None
    gs.pop()
    return o


@mutation("groups.renamed")
def _group_renamed(o: Obj, rng: random.Random) -> Obj | None:
    g = first_group(o)
    if not g:
        return None
    g["groupName"] = str(g.get("groupName", "g")) + "-renamed"
    return o


@mutation("groups.reordered")
def _group_reordered(o: Obj, rng: random.Random) -> Obj | None:
    gs = groups(o)
    if len(gs) < 2:
        return None
    gs[0], gs[1] = gs[1], gs[0]
    return o


@mutation("groups.suspended")
def _group_suspended(o: Obj, rng: random.Random) -> Obj | None:
    g = first_group(o)
    if not g:
        return None
    g["suspend"] = True
    return o


# replicas and bounds

def _int(v: Any, default: int) -> int:
    return v if isinstance(v, int) and not isinstance(v, bool) else default


@mutation("replicas.up")
def _replicas_up(o: Obj, rng: random.Random) -> Obj | None:
    g = first_group(o)
    if not g:
        return None
    g["replicas"] = _int(g.get("replicas"), 1) + 1
    g["maxReplicas"] = max(_int(g.get("maxReplicas"), 1), g["replicas"])
    return o


@mutation("replicas.down")
def _replicas_down(o: Obj, rng: random.Random) -> Obj | None:
    g = first_group(o)
    if not g or _int(g.get("replicas"), 1) < 1:
        return None
    g["replicas"] = _int(g.get("replicas"), 1) - 1
    g["minReplicas"] = min(_int(g.get("minReplicas"), 0), g["replicas"])
    return o


@mutation("replicas.min_up")
def _min_up(o: Obj, rng: random.Random) -> Obj | None:
    g = first_group(o)
    if not g:
        return None
    g["minReplicas"] = _int(g.get("minReplicas"), 0) + 1
    g["maxReplicas"] = max(_int(g.get("maxReplicas"), 1), g["minReplicas"])
    return o


@mutation("replicas.max_up")
def _max_up(o: Obj, rng: random.Random) -> Obj | None:
    g = first_group(o)
    if not g:
        return None
    g["maxReplicas"] = _int(g.get("maxReplicas"), 1) + 3
    return o


@mutation("replicas.above_max")
def _above_max(o: Obj, rng: random.Random) -> Obj | None:
    g = first_group(o)
    if not g:
        return None
    g["replicas"] = _int(g.get("maxReplicas"), 1) + 2
    return o


@mutation("workersToDelete")
def _workers_to_delete(o: Obj, rng: random.Random) -> Obj | None:
    g = first_group(o)
    if not g:
        return None
    g["scaleStrategy"] = {"workersToDelete": ["conformance-worker-x"]}
    return o


@mutation("invalid.min_above_max")
def _min_above_max(o: Obj, rng: random.Random) -> Obj | None:
    g = first_group(o)
    if not g:
        return None
    g["minReplicas"] = _int(g.get("maxReplicas"), 1) + 1
    return o


@mutation("invalid.max_removed_no_autoscaling")
def _max_removed(o: Obj, rng: random.Random) -> Obj | None:
    """maxReplicas is defaulted by the CRD: removing it is a no-op, not a validation error."""
    g = first_group(o)
    if not g or "maxReplicas" not in g:
        return None
    del g["maxReplicas"]
    return o


@mutation("invalid.duplicate_group")
def _dup_group(o: Obj, rng: random.Random) -> Obj | None:
    g = first_group(o)
    if not g:
        return None
    groups(o).append(copy.deepcopy(g))
    return o


@mutation("invalid.head_no_containers")
def _head_no_containers(o: Obj, rng: random.Random) -> Obj | None:
    cs = cluster_spec(o)
    if not cs:
        return None
    cs["headGroupSpec"]["template"]["spec"]["containers"] = []
    return o


@mutation("invalid.replicas_string")
def _replicas_string(o: Obj, rng: random.Random) -> Obj | None:
    g = first_group(o)
    if not g:
        return None
    g["replicas"] = "two"
    return o


@mutation("invalid.negative_idle_timeout")
def _neg_idle(o: Obj, rng: random.Random) -> Obj | None:
    cs = cluster_spec(o)
    if not cs:
        return None
    cs["enableInTreeAutoscaling"] = True
    cs["autoscalerOptions"] = {"idleTimeoutSeconds": -5}
    return o


@mutation("invalid.unknown_field")
def _unknown(o: Obj, rng: random.Random) -> Obj | None:
    cs = cluster_spec(o)
    if not cs:
        return None
    cs["conformanceUnknown"] = "x"
    return o


@mutation("invalid.quantity")
def _bad_quantity(o: Obj, rng: random.Random) -> Obj | None:
    c = head_container(o)
    if not c:
        return None
    c.setdefault("resources", {}).setdefault("requests", {})["memory"] = "lots"
    return o


# tolerations, labels, annotations

@mutation("tolerations.worker")
def _tolerations(o: Obj, rng: random.Random) -> Obj | None:
    g = first_group(o)
    if not g:
        return None
    g["template"].setdefault("spec", {}).setdefault("tolerations", []).append(
        {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"})
    return o


@mutation("labels.object")
def _labels_object(o: Obj, rng: random.Random) -> Obj | None:
    o["metadata"].setdefault("labels", {})["conformance"] = "yes"
    return o


@mutation("annotations.object")
def _annotations_object(o: Obj, rng: random.Random) -> Obj | None:
    o["metadata"].setdefault("annotations", {})["conformance/note"] = "yes"
    return o


@mutation("labels.pod_template")
def _labels_template(o: Obj, rng: random.Random) -> Obj | None:
    g = first_group(o)
    if not g:
        return None
    g["template"].setdefault("metadata", {}).setdefault("labels", {})["conformance"] = "yes"
    return o


@mutation("headServiceAnnotations")
def _head_svc_ann(o: Obj, rng: random.Random) -> Obj | None:
    cs = cluster_spec(o)
    if not cs:
        return None
    cs["headServiceAnnotations"] = {"conformance": "yes"}
    return o


# autoscaling, GCS FT, managedBy, suspend

@mutation("autoscaling.toggled")
def _autoscaling(o: Obj, rng: random.Random) -> Obj | None:
    cs = cluster_spec(o)
    if not cs:
        return None
    cs["enableInTreeAutoscaling"] = not bool(cs.get("enableInTreeAutoscaling"))
    return o


@mutation("autoscaling.idle_timeout")
def _idle(o: Obj, rng: random.Random) -> Obj | None:
    cs = cluster_spec(o)
    if not cs:
        return None
    cs.setdefault("autoscalerOptions", {})["idleTimeoutSeconds"] = 120
    return o


@mutation("gcsFT.redis", "RayService", "RayCluster")
def _gcs_ft(o: Obj, rng: random.Random) -> Obj | None:
    cs = cluster_spec(o)
    if not cs:
        return None
    cs["gcsFaultToleranceOptions"] = {"redisAddress": "redis:6379"}
    return o


@mutation("managedBy.kueue")
def _managed_by(o: Obj, rng: random.Random) -> Obj | None:
    """On a base that names KubeRay already this changes the value: CEL's ``self == oldSelf``."""
    o["spec"]["managedBy"] = "kueue.x-k8s.io/multikueue"
    return o


@mutation("invalid.managedBy_value")
def _managed_by_bad(o: Obj, rng: random.Random) -> Obj | None:
    o["spec"]["managedBy"] = "example.com/other-controller"  # CEL: not one of the two values
    return o


@mutation("gcsFT.backend_switched", "RayService", "RayCluster")
def _gcs_backend(o: Obj, rng: random.Random) -> Obj | None:
    """CEL: backend is immutable once set (``self == oldSelf``) when the base sets it."""
    cs = cluster_spec(o)
    if not cs:
        return None
    ft = cs.setdefault("gcsFaultToleranceOptions", {"redisAddress": "redis:6379"})
    ft["backend"] = "rocksdb" if ft.get("backend") == "redis" else "redis"
    if ft["backend"] == "rocksdb":
        for k in ("redisAddress", "redisPassword", "redisUsername", "externalStorageNamespace"):
            ft.pop(k, None)
    return o


@mutation("suspend.true", alone=True)
def _suspend(o: Obj, rng: random.Random) -> Obj | None:
    if o["kind"] == "RayJob" and o["spec"].get("shutdownAfterJobFinishes") is not True:
        o["spec"]["shutdownAfterJobFinishes"] = True
    if o["kind"] == "RayJob" and o["spec"].get("clusterSelector"):
        return None
    o["spec"]["suspend"] = True
    return o


@mutation("suspend.rayClusterConfig", "RayService")
def _rcc_suspend(o: Obj, rng: random.Random) -> Obj | None:
    cs = cluster_spec(o)
    if not cs:
        return None
    cs["suspend"] = True
    return o


# RayService: upgrade strategy and service-level fields

@mutation("strategy.NewCluster", "RayService")
def _strategy_new(o: Obj, rng: random.Random) -> Obj | None:
    o["spec"]["upgradeStrategy"] = {"type": "NewCluster"}
    return o


@mutation("strategy.None", "RayService")
def _strategy_none(o: Obj, rng: random.Random) -> Obj | None:
    o["spec"]["upgradeStrategy"] = {"type": "None"}
    return o


@mutation("strategy.Foo", "RayService")
def _strategy_foo(o: Obj, rng: random.Random) -> Obj | None:
    o["spec"]["upgradeStrategy"] = {"type": "Foo"}
    return o


def _incremental(o: Obj) -> Obj:
    o["spec"]["upgradeStrategy"] = {"type": "NewClusterWithIncrementalUpgrade", "clusterUpgradeOptions": {
        "gatewayClassName": "istio", "stepSizePercent": 50, "intervalSeconds": 30, "maxSurgePercent": 50}}
    cs = cluster_spec(o)
    if cs is not None:
        cs["enableInTreeAutoscaling"] = True
    return o


@mutation("strategy.incremental", "RayService")
def _strategy_incremental(o: Obj, rng: random.Random) -> Obj | None:
    return _incremental(o)


@mutation("strategy.incremental_gate_off", "RayService", gates={"RayServiceIncrementalUpgrade": False})
def _strategy_incremental_off(o: Obj, rng: random.Random) -> Obj | None:
    return _incremental(o)


@mutation("strategy.incremental_no_options", "RayService")
def _strategy_incremental_bad(o: Obj, rng: random.Random) -> Obj | None:
    o["spec"]["upgradeStrategy"] = {"type": "NewClusterWithIncrementalUpgrade"}
    return o


@mutation("zeroDowntime.env_false", "RayService", env={"ENABLE_ZERO_DOWNTIME": "false"})
def _zero_downtime(o: Obj, rng: random.Random) -> Obj | None:
    (o["spec"].get("upgradeStrategy") or {}).pop("type", None)
    return o


@mutation("deletionDelay.30", "RayService")
def _delay(o: Obj, rng: random.Random) -> Obj | None:
    o["spec"]["rayClusterDeletionDelaySeconds"] = 30
    return o


@mutation("invalid.deletionDelay_negative", "RayService")
def _delay_neg(o: Obj, rng: random.Random) -> Obj | None:
    o["spec"]["rayClusterDeletionDelaySeconds"] = -1
    return o


@mutation("excludeHeadPodFromServeSvc", "RayService")
def _exclude_head(o: Obj, rng: random.Random) -> Obj | None:
    o["spec"]["excludeHeadPodFromServeSvc"] = True
    return o


@mutation("invalid.initializing_timeout", "RayService")
def _init_timeout(o: Obj, rng: random.Random) -> Obj | None:
    o["metadata"].setdefault("annotations", {})["ray.io/initializing-timeout"] = "soon"
    return o


# RayCluster: upgrade strategy

@mutation("cluster.recreate", "RayCluster")
def _recreate(o: Obj, rng: random.Random) -> Obj | None:
    o["spec"]["upgradeStrategy"] = {"type": "Recreate"}
    return o


@mutation("invalid.cluster_strategy_enum", "RayCluster")
def _recreate_bad(o: Obj, rng: random.Random) -> Obj | None:
    o["spec"]["upgradeStrategy"] = {"type": "Foo"}
    return o


# RayJob fields

@mutation("job.entrypoint", "RayJob")
def _entrypoint(o: Obj, rng: random.Random) -> Obj | None:
    o["spec"]["entrypoint"] = str(o["spec"].get("entrypoint", "python x.py")) + " --conformance"
    return o


@mutation("job.ttl", "RayJob")
def _ttl(o: Obj, rng: random.Random) -> Obj | None:
    o["spec"]["shutdownAfterJobFinishes"] = True
    o["spec"]["ttlSecondsAfterFinished"] = 60
    return o


@mutation("job.active_deadline", "RayJob")
def _deadline(o: Obj, rng: random.Random) -> Obj | None:
    o["spec"]["activeDeadlineSeconds"] = 3600
    return o


@mutation("job.backoff_limit", "RayJob")
def _backoff(o: Obj, rng: random.Random) -> Obj | None:
    if o["spec"].get("clusterSelector") or o["spec"].get("submissionMode") == "InteractiveMode":
        return None
    o["spec"]["backoffLimit"] = 2
    return o


@mutation("job.runtime_env", "RayJob")
def _runtime_env(o: Obj, rng: random.Random) -> Obj | None:
    o["spec"]["runtimeEnvYAML"] = "env_vars:\n  CONFORMANCE: '1'\n"
    return o


@mutation("invalid.job_negative_ttl", "RayJob")
def _ttl_neg(o: Obj, rng: random.Random) -> Obj | None:
    o["spec"]["ttlSecondsAfterFinished"] = -1
    return o


@mutation("invalid.job_negative_deadline", "RayJob")
def _deadline_neg(o: Obj, rng: random.Random) -> Obj | None:
    o["spec"]["activeDeadlineSeconds"] = -3
    return o


@mutation("invalid.job_suspend_no_shutdown", "RayJob", alone=True)
def _suspend_no_shutdown(o: Obj, rng: random.Random) -> Obj | None:
    if o["spec"].get("clusterSelector"):
        return None
    o["spec"]["shutdownAfterJobFinishes"] = False
    o["spec"]["suspend"] = True
    return o


@mutation("job.submission_mode_http", "RayJob")
def _mode(o: Obj, rng: random.Random) -> Obj | None:
    if o["spec"].get("submissionMode", "K8sJobMode") == "HTTPMode":
        return None
    o["spec"]["submissionMode"] = "HTTPMode"
    return o


# create, delete, and the API version of the write

# Markers, not edits: ``lifecycle.create`` makes the case a create (no "before": the object,
# with the case's other mutations applied, is new), ``lifecycle.delete`` a delete (no "after":
# the object, with the other mutations applied, is created first, then deleted). make_case
# reads them; their functions are never called.
LIFECYCLE = ("lifecycle.create", "lifecycle.delete")


@mutation("lifecycle.create", alone=True)
def _create(o: Obj, rng: random.Random) -> Obj | None:
    raise AssertionError("a marker: make_case handles it")


@mutation("lifecycle.delete", alone=True)
def _delete(o: Obj, rng: random.Random) -> Obj | None:
    raise AssertionError("a marker: make_case handles it")


V1ALPHA1 = "ray.io/v1alpha1"


@mutation("apiVersion.v1alpha1", alone=True)
def _v1alpha1(o: Obj, rng: random.Random) -> Obj | None:
    """The object written as ray.io/v1alpha1 (served, not stored; KubeRay's CRDs convert with
    the None strategy: the API server only relabels it and prunes it to each version's schema)."""
    if o.get("apiVersion") == V1ALPHA1:
        return None
    o["apiVersion"] = V1ALPHA1
    return o


@mutation("apiVersion.unserved", alone=True)
def _unserved(o: Obj, rng: random.Random) -> Obj | None:
    """A version of ray.io no KubeRay CRD serves: the API server has no such resource (404)."""
    o["apiVersion"] = "ray.io/v1beta1"
    return o


# ---- bases --------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Base:
    name: str
    obj: Obj


def _clean(obj: Obj) -> Obj:
    obj = copy.deepcopy(obj)
    meta = obj.setdefault("metadata", {})
    meta["namespace"] = "default"
    if not meta.get("name") and meta.get("generateName"):  # an update needs a fixed name
        meta["name"] = str(meta.pop("generateName")).rstrip("-") + "-conformance"
    for k in ("resourceVersion", "uid", "creationTimestamp", "generation", "managedFields"):
        meta.pop(k, None)
    obj.pop("status", None)
    return obj


def _documents(path: str) -> Iterator[Obj]:
    try:
        with open(path, encoding="utf-8") as f:
            for doc in yaml.safe_load_all(f):
                if (isinstance(doc, dict) and doc.get("kind") in KINDS
                        and doc.get("apiVersion") == "ray.io/v1" and isinstance(doc.get("spec"), dict)):
                    yield doc
    except yaml.YAMLError:
        return


def bases(kuberay_src: str | None) -> list[Base]:
    """KubeRay's config/samples (every RayService, RayCluster and RayJob, ray.io/v1) and the
    project's samples/*/before.yaml, deduplicated by content, in a fixed order."""
    out: list[Base] = []
    seen: set[str] = set()
    paths: list[tuple[str, str]] = []
    if kuberay_src:
        samples = os.path.join(kuberay_src, "config", "samples")
        paths += [("kuberay:" + os.path.relpath(p, samples), p)
                  for p in sorted(glob.glob(os.path.join(samples, "**", "*.yaml"), recursive=True))]
    paths += [("project:" + os.path.relpath(p, os.path.join(ROOT, "samples")), p)
              for p in sorted(glob.glob(os.path.join(ROOT, "samples", "*", "before.yaml")))]
    for label, path in paths:
        for i, doc in enumerate(_documents(path)):
            obj = _clean(doc)
            key = json.dumps(obj, sort_keys=True)
            if key in seen:
                continue
            seen.add(key)
            out.append(Base(f"{label}#{i}" if i else label, obj))
    # Derived bases, so that update-only rules (CEL transition rules with oldSelf) have an old
    # value to compare: the project's samples with managedBy naming KubeRay, and with a Redis
    # GCS FT backend.
    for b in [b for b in out if b.name.startswith("project:")]:
        managed = copy.deepcopy(b.obj)
        managed["spec"]["managedBy"] = "ray.io/kuberay-operator"
        out.append(Base(b.name + "+managedBy", managed))
        ft = copy.deepcopy(b.obj)
        cs = cluster_spec(ft)
        if cs is not None and ft["kind"] != "RayJob":
            cs["gcsFaultToleranceOptions"] = {"backend": "redis", "redisAddress": "redis:6379"}
            out.append(Base(b.name + "+gcsFT", ft))
        # ... and written as ray.io/v1alpha1, so both sides of a change can be in that version.
        alpha = copy.deepcopy(b.obj)
        alpha["apiVersion"] = V1ALPHA1
        out.append(Base(b.name + "+v1alpha1", alpha))
    return out


# ---- cases ----------------------------------------------------------------------------------------------

def make_case(base: Base, names: tuple[str, ...], seed: int, version: str = VERSION) -> Obj | None:
    """``base`` with the named mutations applied in order, or None if one does not apply or
    the mutations change nothing. ``version``: the KubeRay version both sides answer for.

    With ``lifecycle.create`` the case creates the mutated object (no "before"); with
    ``lifecycle.delete`` it deletes it (no "after"); otherwise it updates ``base`` to it."""
    known = GATES.get(version)
    lifecycle = [n for n in names if n in LIFECYCLE]
    if len(lifecycle) > 1:
        return None
    rng = random.Random(f"{seed}|{base.name}|{'+'.join(names)}")
    obj: Obj | None = copy.deepcopy(base.obj)
    gates: dict[str, bool] = {}
    env: dict[str, str] = {}
    for name in names:
        m = CATALOGUE[name]
        if base.obj["kind"] not in m.kinds or obj is None:
            return None
        if known is not None and any(g not in known for g, _ in m.gates):
            return None
        if name in LIFECYCLE:
            continue
        try:
            obj = m.fn(obj, rng)
        except (AttributeError, KeyError, IndexError, TypeError):
            return None  # the sample lacks what the mutation edits (e.g. a template without metadata)
        gates.update(m.gates)
        env.update(m.env)
    if obj is None:
        return None
    before: Obj | None = base.obj
    after: Obj | None = obj
    if lifecycle == ["lifecycle.create"]:
        before = None
    elif lifecycle == ["lifecycle.delete"]:
        before, after = obj, None
    elif obj == base.obj:
        return None
    return {"id": f"{base.name}|{'+'.join(names)}", "version": version, "featureGates": gates, "env": env,
            "kind": base.obj["kind"], "base": base.name, "mutations": list(names),
            "before": before, "after": after}


def operation(case: Obj) -> str:
    """``create`` (no before), ``delete`` (no after) or ``update``."""
    return "create" if case.get("before") is None else "delete" if case.get("after") is None else "update"


# The families of create/delete/v1alpha1 cases and their share of a run of ``count`` cases:
# every base's create and delete when count // 10 covers them (a full run), the invalid-value
# mutations on a create and the API-version writes (v1alpha1; a create in a version no CRD
# serves) with count // 20 each, and what the operator
# holds back (created suspended, created or deleted with managedBy another controller) with
# count // 40.
FAMILY_SHARE = {"create": 10, "delete": 10, "create-invalid": 20, "v1alpha1": 20, "held": 40}


def families(all_bases: list[Base], seed: int, version: str) -> dict[str, list[Obj]]:
    """Every case of each create/delete/v1alpha1 family (see :data:`FAMILY_SHARE`)."""
    invalid = [n for n in CATALOGUE if n.startswith("invalid.")]
    others = [n for n, m in CATALOGUE.items() if not m.alone]
    rng = random.Random(f"{seed}|families")
    out: dict[str, list[Obj]] = {k: [] for k in FAMILY_SHARE}

    def add(family: str, base: Base, names: tuple[str, ...]) -> None:
        c = make_case(base, names, seed, version)
        if c is not None:
            c["family"] = family
            out[family].append(c)

    for b in all_bases:
        add("create", b, ("lifecycle.create",))
        add("delete", b, ("lifecycle.delete",))
        for n in invalid:
            add("create-invalid", b, ("lifecycle.create", n))
        add("held", b, ("lifecycle.create", "suspend.true"))
        add("held", b, ("lifecycle.create", "managedBy.kueue"))
        add("held", b, ("lifecycle.delete", "managedBy.kueue"))
        if b.obj.get("apiVersion") != V1ALPHA1:
            add("v1alpha1", b, ("apiVersion.v1alpha1",))
            add("v1alpha1", b, ("lifecycle.create", "apiVersion.v1alpha1"))
            add("v1alpha1", b, ("apiVersion.v1alpha1", rng.choice(others)))
            add("v1alpha1", b, ("lifecycle.create", "apiVersion.unserved"))
    return out


def generate(kuberay_src: str | None, seed: int, count: int | None = None,
             version: str = VERSION) -> list[Obj]:
    """``count`` cases: the create/delete/v1alpha1 families' shares (:data:`FAMILY_SHARE`,
    spread over kinds and mutations), then updates: three fifths single mutations (a seeded
    sample that keeps every mutation and every base represented), the rest random combinations
    of two or three. Without a count: every case of every family, every single mutation of
    every base and as many combinations again."""
    rng = random.Random(seed)
    all_bases = bases(kuberay_src)
    lifecycle: list[Obj] = []
    for family, cases in families(all_bases, seed, version).items():
        n = len(cases) if count is None else min(len(cases), count // FAMILY_SHARE[family])
        lifecycle += _stratified(cases, n, random.Random(f"{seed}|{family}"))
    updates = [n for n, m in CATALOGUE.items() if n not in LIFECYCLE and not n.startswith("apiVersion.")]
    singles = [c for b in all_bases for n in updates if (c := make_case(b, (n,), seed, version))]
    target = count - len(lifecycle) if count is not None else 2 * len(singles)
    out = singles if count is None else _spread(singles, min(len(singles), target * 3 // 5), rng)
    ids = {c["id"] for c in out} | {c["id"] for c in lifecycle}
    by_kind = {k: [n for n, m in CATALOGUE.items() if k in m.kinds and not m.alone] for k in KINDS}
    attempts = 0
    while len(out) < target and attempts < 50 * target:
        attempts += 1
        base = rng.choice(all_bases)
        names = by_kind[base.obj["kind"]]
        picked = tuple(rng.sample(names, rng.choice((2, 2, 3))))
        c = make_case(base, picked, seed, version)
        if c and c["id"] not in ids:
            ids.add(c["id"])
            out.append(c)
    return lifecycle + out


def _stratified(cases: list[Obj], n: int, rng: random.Random) -> list[Obj]:
    """n cases taken in turn from each (kind, mutations) group, each group in a seeded order, so
    that a small share still covers every kind and every mutation; in their original order."""
    groups: dict[str, list[Obj]] = {}
    for c in cases:
        groups.setdefault(f"{c['kind']}|{'+'.join(c['mutations'])}", []).append(c)
    for g in groups.values():
        rng.shuffle(g)
    queues = [groups[k] for k in sorted(groups)]
    rng.shuffle(queues)
    picked: list[Obj] = []
    while len(picked) < n and any(queues):
        for q in queues:
            if q and len(picked) < n:
                picked.append(q.pop())
    order = {c["id"]: i for i, c in enumerate(cases)}
    return sorted(picked, key=lambda c: order[c["id"]])


def _spread(cases: list[Obj], n: int, rng: random.Random) -> list[Obj]:
    """n cases: first one per mutation and one per base, then a seeded sample of the rest."""
    picked: dict[str, Obj] = {}
    for key in ("mutations", "base"):
        seen: set[str] = set()
        for c in cases:
            k = str(c[key])
            if k not in seen:
                seen.add(k)
                picked.setdefault(c["id"], c)
    rest = [c for c in cases if c["id"] not in picked]
    rng.shuffle(rest)
    out = list(picked.values())[:n] + rest[: max(0, n - len(picked))]
    order = {c["id"]: i for i, c in enumerate(cases)}
    return sorted(out, key=lambda c: order[c["id"]])
