"""Node and Pod objects as the API serves them, for the placement tests."""

from __future__ import annotations

from typing import Any


def node(name: str, *, pool: str = "default-pool", machine: str = "n2-standard-8", cpu: str = "8",
         memory: str = "32Gi", pods: int = 110, extra: dict[str, Any] | None = None,
         labels: dict[str, str] | None = None, taints: list[dict[str, str]] | None = None,
         ready: str = "True", unschedulable: bool = False) -> dict[str, Any]:
    allocatable: dict[str, Any] = {"cpu": cpu, "memory": memory, "pods": str(pods),
                                   "ephemeral-storage": "100Gi"}
    allocatable.update(extra or {})
    return {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name,
                                              "cloud.google.com/gke-nodepool": pool,
                                              "node.kubernetes.io/instance-type": machine, **(labels or {})}},
        "spec": {"taints": taints or [], **({"unschedulable": True} if unschedulable else {})},
        "status": {"allocatable": allocatable, "capacity": allocatable,
                   "conditions": [{"type": "Ready", "status": ready}]},
    }


def pod(name: str, node_name: str | None, requests: dict[str, Any], *, namespace: str = "default",
        phase: str = "Running", labels: dict[str, str] | None = None,
        spec: dict[str, Any] | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"containers": [{"name": "main", "resources": {"requests": requests,
                                                                          "limits": requests}}]}
    if node_name:
        body["nodeName"] = node_name
    body.update(spec or {})
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace, "labels": labels or {}},
            "spec": body, "status": {"phase": phase}}


GPU_TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
GPU_TOLERATION = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}


def worker(name: str, requests: dict[str, Any], *, replicas: int = 1, hosts: int = 1,
           spec: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"groupName": name, "replicas": replicas, "minReplicas": 0, "maxReplicas": 100,
            "numOfHosts": hosts, "rayStartParams": {},
            "template": {"spec": {"containers": [{"name": "ray-worker", "image": "rayproject/ray:2.46.0",
                                                  "resources": {"requests": requests, "limits": requests}}],
                                  **(spec or {})}}}


def cluster(head: dict[str, Any], *workers: dict[str, Any], autoscaling: bool = False) -> dict[str, Any]:
    rcc: dict[str, Any] = {"headGroupSpec": {"rayStartParams": {}, "template": {"spec": {"containers": [
        {"name": "ray-head", "image": "rayproject/ray:2.46.0",
         "resources": {"requests": head, "limits": head}}]}}},
        "workerGroupSpecs": list(workers)}
    if autoscaling:
        rcc["enableInTreeAutoscaling"] = True
    return rcc
