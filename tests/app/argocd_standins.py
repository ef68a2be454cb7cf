"""Local stand-ins on 127.0.0.1 for the Argo CD API (managed-resources; Applications and their
manifests rendered from a real git repository) and the Kubernetes API, plus builders for the
objects they serve (shapes as the real servers answer them)."""

from __future__ import annotations

import copy
import io
import json
import subprocess
import tarfile
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import yaml

DATA = Path(__file__).resolve().parent.parent / "data" / "argocd"
ARGO_TOKEN = "argocd-test-token"
KUBE_TOKEN = "kube-test-token"

Handler = Callable[[str, str, dict[str, list[str]], Any], tuple[int, Any]]


@contextmanager
def serve(handler: Handler) -> Iterator[str]:
    """Run ``handler(method, path, query, headers) -> (status, json body)`` on 127.0.0.1."""

    class _H(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's naming
            url = urlsplit(self.path)
            status, body = handler("GET", url.path, parse_qs(url.query), self.headers)
            data = json.dumps(body).encode() if not isinstance(body, bytes) else body
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: Any) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), _H)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


# -- Argo CD -------------------------------------------------------------------------------------


@dataclass
class ArgoCD:
    """``GET /api/v1/applications/{name}/managed-resources`` for one application."""

    app: str
    items: list[dict[str, Any]]
    token: str = ARGO_TOKEN
    fail_first: int = 0  # answer 503 this many times first
    application: dict[str, Any] | None = None  # GET /api/v1/applications/{app}
    requests: list[tuple[str, dict[str, list[str]]]] = field(default_factory=list)

    def __call__(self, method: str, path: str, query: dict[str, list[str]], headers: Any
                 ) -> tuple[int, Any]:
        self.requests.append((path, query))
        if headers.get("Authorization") != f"Bearer {self.token}":
            return 401, {"error": "invalid session: token signature is invalid", "code": 16,
                         "message": "invalid session: token signature is invalid"}
        if self.fail_first > 0:
            self.fail_first -= 1
            return 503, {"error": "upstream connect error", "code": 14, "message": "unavailable"}
        if path == f"/api/v1/applications/{self.app}" and self.application is not None:
            return 200, self.application
        if path != f"/api/v1/applications/{self.app}/managed-resources":
            # Without ?project= Argo CD answers 403 for an app that does not exist.
            return 403, {"error": "permission denied", "code": 7, "message": "permission denied"}
        group, kind = query.get("group", [""])[0], query.get("kind", [""])[0]
        items = [i for i in self.items
                 if (not group or i["group"] == group) and (not kind or i["kind"] == kind)]
        return 200, {"items": items}


def managed_item(live: dict[str, Any] | None, target: dict[str, Any] | None, group: str = "ray.io"
                 ) -> dict[str, Any]:
    """A ``v1alpha1ResourceDiff`` as argocd-server returns it (states are JSON strings)."""
    obj = target or live or {}
    meta = obj.get("metadata") or {}
    return {
        "group": group, "kind": obj.get("kind", "RayService"), "version": "v1",
        "namespace": meta.get("namespace", "default"), "name": meta["name"],
        "liveState": json.dumps(live) if live is not None else "null",
        "targetState": json.dumps(target) if target is not None else "null",
        "normalizedLiveState": json.dumps(live) if live is not None else "null",
        "predictedLiveState": json.dumps(target) if target is not None else "{}",
        "hook": False, "modified": live != target,
        "resourceVersion": (live or {}).get("metadata", {}).get("resourceVersion", ""),
    }


# -- objects ---------------------------------------------------------------------------------------


def sample(name: str = "ray-service.stable-diffusion.yaml") -> dict[str, Any]:
    return yaml.safe_load((DATA / name).read_text())


def target_state(obj: dict[str, Any], app: str, namespace: str = "ml") -> dict[str, Any]:
    """The Git object as Argo CD renders it: destination namespace and tracking annotation set."""
    out = copy.deepcopy(obj)
    meta = out.setdefault("metadata", {})
    meta["namespace"] = namespace
    meta.setdefault("annotations", {})["argocd.argoproj.io/tracking-id"] = \
        f"{app}:ray.io/RayService:{namespace}/{meta['name']}"
    return out


def _default_pod_spec(spec: dict[str, Any]) -> None:
    for c in spec.get("containers") or []:
        for p in c.get("ports") or []:
            p.setdefault("protocol", "TCP")


def live_state(target: dict[str, Any], *, active: str, pending: str | None = None) -> dict[str, Any]:
    """The stored object: CRD defaults filled by the API server, server metadata, status."""
    out = copy.deepcopy(target)
    rcc = out["spec"]["rayClusterConfig"]
    _default_pod_spec(rcc["headGroupSpec"]["template"]["spec"])
    for g in rcc.get("workerGroupSpecs") or []:
        g.setdefault("numOfHosts", 1)
        g.setdefault("replicas", 0)
        g.setdefault("minReplicas", 0)
        g.setdefault("maxReplicas", 2147483647)
        _default_pod_spec(g["template"]["spec"])
    meta = out["metadata"]
    meta.update({
        "uid": "5f0b2c8e-4a6e-4c1d-9b63-0d7f3c1e9a41", "resourceVersion": "48213977", "generation": 3,
        "creationTimestamp": "2026-07-30T09:12:44Z", "finalizers": ["ray.io/rayservice-finalizer"],
        "managedFields": [
            {"manager": "argocd-controller", "operation": "Apply", "apiVersion": "ray.io/v1",
             "time": "2026-08-20T11:02:03Z", "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {}}},
            {"manager": "kuberay-operator", "operation": "Update", "apiVersion": "ray.io/v1",
             "time": "2026-08-20T11:05:41Z", "fieldsType": "FieldsV1", "fieldsV1": {"f:status": {}},
             "subresource": "status"},
        ],
    })
    meta.setdefault("annotations", {})["kubectl.kubernetes.io/last-applied-configuration"] = \
        json.dumps(target, separators=(",", ":"))
    status: dict[str, Any] = {
        "activeServiceStatus": {
            "rayClusterName": active,
            "applicationStatuses": {"stable_diffusion": {"status": "RUNNING",
                                                         "healthLastUpdateTime": "2026-08-20T11:05:41Z"}},
            "rayClusterStatus": {"state": "ready", "readyWorkerReplicas": 1},
        },
        "pendingServiceStatus": {},
        "conditions": [{"type": "Ready", "status": "True", "reason": "NonZeroServeEndpoints",
                        "lastTransitionTime": "2026-08-20T11:05:41Z", "message": "",
                        "observedGeneration": 3}],
        "observedGeneration": 3, "serviceStatus": "Running", "numServeEndpoints": 1,
    }
    if pending:
        status["pendingServiceStatus"] = {"rayClusterName": pending}
        status["conditions"].append({"type": "UpgradeInProgress", "status": "True",
                                     "reason": "BothActivePendingClustersExist"})
    out["status"] = status
    return out


def raycluster(live_rs: dict[str, Any], name: str, replicas: dict[str, int] | None = None
               ) -> dict[str, Any]:
    """The RayCluster KubeRay created from the live RayService (autoscaled replicas applied)."""
    rs_meta = live_rs["metadata"]
    spec = copy.deepcopy(live_rs["spec"]["rayClusterConfig"])
    for g in spec.get("workerGroupSpecs") or []:
        if replicas and g["groupName"] in replicas:
            g["replicas"] = replicas[g["groupName"]]
    return {
        "apiVersion": "ray.io/v1", "kind": "RayCluster",
        "metadata": {
            "name": name, "namespace": rs_meta["namespace"], "uid": "7d4c1e2a-0b9f-4f3e-8c55-2a6b9e0c1d77",
            "resourceVersion": "48213001", "generation": 5, "creationTimestamp": "2026-08-20T11:02:10Z",
            "labels": {"ray.io/originated-from-cr-name": rs_meta["name"],
                       "ray.io/originated-from-crd": "RayService"},
            "annotations": {"ray.io/hash-without-replicas-and-workers-to-delete":
                            "8XN3WUD8B0AKQ3MDLD5BQTT5R6",
                            "ray.io/num-worker-groups": str(len(spec.get("workerGroupSpecs") or [])),
                            "ray.io/kuberay-version": "v1.7.0"},
            "ownerReferences": [{"apiVersion": "ray.io/v1", "kind": "RayService", "name": rs_meta["name"],
                                 "uid": rs_meta.get("uid", ""), "controller": True,
                                 "blockOwnerDeletion": True}],
        },
        "spec": spec,
        "status": {"state": "ready", "readyWorkerReplicas": sum((replicas or {}).values()),
                   "desiredGPU": "1",
                   "head": {"podName": f"{name}-head-x7k2p", "serviceName": f"{name}-head-svc"}},
    }


def node(name: str, *, gpus: int = 0, cpu: str = "32", memory: str = "128Gi",
         labels: dict[str, str] | None = None, taints: list[dict[str, str]] | None = None,
         ready: bool = True) -> dict[str, Any]:
    allocatable = {"cpu": cpu, "memory": memory, "pods": "110", "ephemeral-storage": "95Gi"}
    if gpus:
        allocatable["nvidia.com/gpu"] = str(gpus)
    return {
        "metadata": {"name": name, "uid": f"uid-{name}", "resourceVersion": "1",
                     "creationTimestamp": "2026-06-01T00:00:00Z",
                     "labels": {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
                                **(labels or {})}},
        "spec": {"podCIDR": "10.244.1.0/24", "providerID": f"kind://docker/kind/{name}",
                 **({"taints": taints} if taints else {})},
        "status": {"capacity": dict(allocatable), "allocatable": allocatable,
                   "conditions": [{"type": "MemoryPressure", "status": "False",
                                   "reason": "KubeletHasSufficientMemory"},
                                  {"type": "Ready", "status": "True" if ready else "False",
                                   "reason": "KubeletReady" if ready else "KubeletNotReady"}],
                   "nodeInfo": {"kubeletVersion": "v1.32.2", "containerRuntimeVersion": "containerd://2.0.3"}},
    }


def pod(name: str, namespace: str, node_name: str | None, *, gpus: int = 0, cpu: str = "1",
        phase: str = "Running", labels: dict[str, str] | None = None,
        tolerations: list[dict[str, str]] | None = None, annotations: dict[str, str] | None = None,
        deleting: bool = False) -> dict[str, Any]:
    resources: dict[str, Any] = {"requests": {"cpu": cpu, "memory": "1Gi"}, "limits": {"memory": "1Gi"}}
    if gpus:
        resources["limits"]["nvidia.com/gpu"] = str(gpus)  # extended resources: limits only is usual
    spec: dict[str, Any] = {
        "containers": [{"name": "main", "image": "busybox", "resources": resources}],
        "restartPolicy": "Always", "schedulerName": "default-scheduler",
        "tolerations": tolerations or [],
    }
    if node_name:
        spec["nodeName"] = node_name
    meta: dict[str, Any] = {"name": name, "namespace": namespace, "uid": f"uid-{name}",
                            "labels": labels or {}, "creationTimestamp": "2026-08-20T11:02:30Z"}
    if annotations:
        meta["annotations"] = annotations
    if deleting:
        meta.update(deletionTimestamp="2026-08-21T08:00:00Z", deletionGracePeriodSeconds=30)
    return {"metadata": meta, "spec": spec, "status": {"phase": phase, "qosClass": "Burstable"}}


def standalone_raycluster(target: dict[str, Any], replicas: dict[str, int] | None = None) -> dict[str, Any]:
    """A user's RayCluster as the API server stores it: CRD defaults, server metadata, status, and
    the autoscaler's ``replicas`` written into its spec."""
    out = copy.deepcopy(target)
    spec = out["spec"]
    _default_pod_spec(spec["headGroupSpec"]["template"]["spec"])
    for g in spec.get("workerGroupSpecs") or []:
        g.setdefault("numOfHosts", 1)
        g.setdefault("minReplicas", 0)
        g.setdefault("maxReplicas", 2147483647)
        g["replicas"] = (replicas or {}).get(g["groupName"], g.get("replicas", 0))
        _default_pod_spec(g["template"]["spec"])
    out["metadata"].update({
        "uid": "2b7e51c0-9d3a-4f0e-a1c4-6c2f8e0b9d13", "resourceVersion": "48214400", "generation": 4,
        "creationTimestamp": "2026-08-01T10:00:00Z"})
    out["status"] = {"state": "ready", "readyWorkerReplicas": sum((replicas or {}).values()),
                     "observedGeneration": 4,
                     "head": {"podName": f"{out['metadata']['name']}-head-5kq2n"},
                     "conditions": [{"type": "HeadPodReady", "status": "True",
                                     "reason": "HeadPodRunningAndReady"},
                                    {"type": "RayClusterProvisioned", "status": "True",
                                     "reason": "AllPodRunningAndReadyFirstTime"}]}
    return out


def ray_pod(cluster: str, namespace: str, group: str, index: int, *, node_name: str = "cpu-node-1",
            gpus: int = 0, annotations: dict[str, str] | None = None, phase: str = "Running",
            deleting: bool = False, tolerations: list[dict[str, str]] | None = None) -> dict[str, Any]:
    """A pod KubeRay v1.7.0 created for ``cluster``: ``group`` "headgroup" is the head, others workers
    (labels from ray-operator/controllers/ray/utils/constant.go)."""
    head = group == "headgroup"
    name = f"{cluster}-head-{index}" if head else f"{cluster}-{group}-worker-{index}"
    labels = {"ray.io/cluster": cluster, "ray.io/node-type": "head" if head else "worker",
              "ray.io/group": group, "ray.io/is-ray-node": "yes",
              "app.kubernetes.io/created-by": "kuberay-operator", "app.kubernetes.io/name": "kuberay"}
    return pod(name, namespace, node_name, gpus=gpus, labels=labels, annotations=annotations, phase=phase,
               deleting=deleting, tolerations=tolerations)


# -- Kubernetes ------------------------------------------------------------------------------------


def _status(code: int, reason: str, message: str) -> dict[str, Any]:
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": message, "reason": reason, "code": code}


@dataclass
class Kubernetes:
    """The RayService/RayCluster, node and pod endpoints the official client calls."""

    rayservices: list[dict[str, Any]] = field(default_factory=list)
    rayclusters: list[dict[str, Any]] = field(default_factory=list)
    nodes: list[dict[str, Any]] = field(default_factory=list)
    pods: list[dict[str, Any]] = field(default_factory=list)
    localqueues: list[dict[str, Any]] = field(default_factory=list)
    clusterqueues: list[dict[str, Any]] | None = None  # None: Kueue is not installed (404)
    token: str = KUBE_TOKEN
    forbidden: tuple[str, ...] = ()  # path prefixes answered 403
    requests: list[str] = field(default_factory=list)
    rayjobs: list[dict[str, Any]] = field(default_factory=list)

    def __call__(self, method: str, path: str, query: dict[str, list[str]], headers: Any
                 ) -> tuple[int, Any]:
        self.requests.append(path + ("?" + "&".join(f"{k}={v[0]}" for k, v in sorted(query.items()))
                                     if query else ""))
        if headers.get("Authorization") != f"Bearer {self.token}":
            return 401, _status(401, "Unauthorized", "Unauthorized")
        if any(path.startswith(p) for p in self.forbidden):
            return 403, _status(403, "Forbidden", f'nodes is forbidden: User "system:serviceaccount:ml:'
                                f'rayservice-impact-presync" cannot list resource at {path}')
        parts = path.strip("/").split("/")
        if path == "/api/v1/nodes":
            return 200, {"kind": "NodeList", "apiVersion": "v1", "metadata": {"resourceVersion": "900"},
                         "items": self.nodes}
        if path == "/api/v1/pods" or (len(parts) == 5 and parts[:3] == ["api", "v1", "namespaces"]
                                      and parts[4] == "pods"):
            items = [p for p in self.pods if len(parts) != 5 or p["metadata"]["namespace"] == parts[3]]
            selector = query.get("fieldSelector", [""])[0]
            for term in filter(None, selector.split(",")):
                key, _, value = term.partition("!=")
                if key == "status.phase":
                    items = [p for p in items if p["status"]["phase"] != value]
            items = _select(items, query.get("labelSelector", [""])[0])
            return 200, {"kind": "PodList", "apiVersion": "v1", "metadata": {"resourceVersion": "901"},
                         "items": items}
        pools = {"rayservices": self.rayservices, "rayclusters": self.rayclusters, "rayjobs": self.rayjobs}
        if parts[:3] == ["apis", "ray.io", "v1"] and len(parts) == 4 and parts[3] in pools:
            kind = {"rayservices": "RayServiceList", "rayclusters": "RayClusterList"}.get(parts[3],
                                                                                         "RayJobList")
            return 200, {"apiVersion": "ray.io/v1", "kind": kind, "items": pools[parts[3]],
                         "metadata": {"resourceVersion": "903", "continue": ""}}
        if parts[:3] == ["apis", "kueue.x-k8s.io", "v1beta1"] and self.clusterqueues is not None:
            if parts[3:] == ["clusterqueues"]:
                return 200, {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "ClusterQueueList",
                             "metadata": {"resourceVersion": "903"}, "items": self.clusterqueues}
            if len(parts) == 6 and parts[3] == "namespaces" and parts[5] == "localqueues":
                items = [q for q in self.localqueues if q["metadata"]["namespace"] == parts[4]]
                return 200, {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "LocalQueueList",
                             "metadata": {"resourceVersion": "904"}, "items": items}
        if parts[:3] == ["apis", "ray.io", "v1"] and len(parts) >= 6 and parts[3] == "namespaces":
            namespace, plural = parts[4], parts[5]
            pool = pools.get(plural)
            if pool is None:
                return 404, _status(404, "NotFound", "the server could not find the requested resource")
            in_ns = [o for o in pool if o["metadata"]["namespace"] == namespace]
            if len(parts) == 7:
                found = next((o for o in in_ns if o["metadata"]["name"] == parts[6]), None)
                if found is None:
                    return 404, _status(404, "NotFound", f'{plural}.ray.io "{parts[6]}" not found')
                return 200, found
            in_ns = _select(in_ns, query.get("labelSelector", [""])[0])
            kind = "RayServiceList" if plural == "rayservices" else "RayClusterList"
            return 200, {"apiVersion": "ray.io/v1", "kind": kind,
                         "metadata": {"resourceVersion": "902", "continue": ""}, "items": in_ns}
        return 404, _status(404, "NotFound", "the server could not find the requested resource")


def _select(items: list[dict[str, Any]], selector: str) -> list[dict[str, Any]]:
    """A label selector of ``key=value`` and ``key`` (exists) terms, as the API server reads them."""
    for term in filter(None, selector.split(",")):
        key, eq, value = term.partition("=")
        items = [o for o in items if key in (o["metadata"].get("labels") or {})
                 and (not eq or o["metadata"]["labels"][key] == value)]
    return items


def write_kubeconfig(path: Path, server: str, token: str = KUBE_TOKEN) -> Path:
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "standin",
        "clusters": [{"name": "standin", "cluster": {"server": server}}],
        "users": [{"name": "presync", "user": {"token": token}}],
        "contexts": [{"name": "standin", "context": {"cluster": "standin", "user": "presync",
                                                     "namespace": "ml"}}],
    }))
    return path


# -- Argo CD rendering a git repository ----------------------------------------------------------


@dataclass
class ArgoCDRepoServer:
    """``GET /api/v1/applications`` and ``GET /api/v1/applications/{name}/manifests?revision=``
    for the Applications of a real git repository, as argocd-server answers them: each
    manifest is one object as a JSON string, rendered by real ``kubectl kustomize`` of the
    Application's path at that revision (a plain folder: its YAML files), with the tracking
    annotation repo-server adds. ``fail[(app, revision)] = status`` answers that status instead;
    ``slow[(app, revision)] = seconds`` answers that much later."""

    repo: Path
    applications: list[dict[str, Any]]
    token: str = ARGO_TOKEN
    fail: dict[tuple[str, str], int] = field(default_factory=dict)
    slow: dict[tuple[str, str], float] = field(default_factory=dict)
    requests: list[tuple[str, dict[str, list[str]], str]] = field(default_factory=list)  # path, query, auth

    def __call__(self, method: str, path: str, query: dict[str, list[str]], headers: Any
                 ) -> tuple[int, Any]:
        self.requests.append((path, query, headers.get("Authorization") or ""))
        if headers.get("Authorization") != f"Bearer {self.token}":
            return 401, {"error": "invalid session: token signature is invalid", "code": 16,
                         "message": "invalid session: token signature is invalid"}
        if path == "/api/v1/applications":
            repo = query.get("repo", [""])[0]
            items = [a for a in self.applications if not repo or a["spec"]["source"]["repoURL"] == repo]
            return 200, {"metadata": {"resourceVersion": "1000"}, "items": items}
        parts = path.strip("/").split("/")
        if len(parts) == 5 and parts[:3] == ["api", "v1", "applications"] and parts[4] == "manifests":
            app = next((a for a in self.applications if a["metadata"]["name"] == parts[3]), None)
            if app is None:
                return 403, {"error": "permission denied", "code": 7, "message": "permission denied"}
            revision = query.get("revision", [""])[0]
            time.sleep(self.slow.get((parts[3], revision), 0.0))
            status = self.fail.get((parts[3], revision))
            if status:
                return status, {"error": "rpc error: code = Unavailable desc = repo-server is restarting",
                                "code": 14, "message": "rpc error: code = Unavailable desc = repo-server "
                                                       "is restarting"}
            return self._manifests(app, revision)
        return 404, {"error": "Not Found", "code": 5, "message": "Not Found"}

    def _manifests(self, app: dict[str, Any], revision: str) -> tuple[int, Any]:
        source, dest = app["spec"]["source"], app["spec"]["destination"]
        rev = subprocess.run(["git", "-C", str(self.repo), "rev-parse", "--verify", "--quiet",
                              f"{revision or 'HEAD'}^{{commit}}"], capture_output=True, text=True)
        if rev.returncode != 0:
            message = f"rpc error: code = Unknown desc = unable to resolve '{revision}' to a commit SHA"
            return 500, {"error": message, "code": 2, "message": message}
        sha = rev.stdout.strip()
        archive = subprocess.run(["git", "-C", str(self.repo), "archive", "--format=tar", sha],
                                 check=True, capture_output=True).stdout
        with tempfile.TemporaryDirectory(prefix="argocd-standin-") as tmp:
            with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
                tar.extractall(tmp, filter="data")
            folder = Path(tmp) / source["path"]
            if (folder / "kustomization.yaml").is_file():
                done = subprocess.run(["kubectl", "kustomize", str(folder)], capture_output=True, text=True)
                if done.returncode != 0:
                    message = (f"rpc error: code = Unknown desc = Manifest generation error (cached): "
                               f"`kustomize build <path to cached source>/{source['path']}` failed exit "
                               f"status 1: {done.stderr.strip()}")
                    return 500, {"error": message, "code": 2, "message": message}
                text, kind = done.stdout, "Kustomize"
            else:
                text = "\n---\n".join(p.read_text() for p in sorted(folder.glob("*.yaml")))
                kind = "Directory"
        manifests = []
        for obj in yaml.safe_load_all(text):
            if not isinstance(obj, dict):
                continue
            meta = obj.setdefault("metadata", {})
            group = obj.get("apiVersion", "").rpartition("/")[0]
            where = f"{meta['namespace']}/{meta['name']}" if meta.get("namespace") else meta["name"]
            meta.setdefault("annotations", {})["argocd.argoproj.io/tracking-id"] = \
                f"{app['metadata']['name']}:{group}/{obj.get('kind')}:{where}"
            manifests.append(json.dumps(obj))
        return 200, {"manifests": manifests, "namespace": dest.get("namespace", ""),
                     "server": dest.get("server", ""), "revision": sha, "sourceType": kind,
                     "commands": [f"kustomize build <path to cached source>/{source['path']}"]}
