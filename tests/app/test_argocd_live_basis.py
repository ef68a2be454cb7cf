"""The live basis computed from Kubernetes objects (pure parts, and with a fake reader)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

import diffing
from app.clients.kubernetes import KubernetesError
from app.live import accelerator_headroom, free_accelerators, node_accepts, read_live_basis, tolerates

try:
    from . import argocd_standins as s
except ImportError:  # tests/app is not a package
    import argocd_standins as s  # type: ignore[no-redef]

TAINT = {"key": "ray.io/node-type", "value": "worker", "effect": "NoSchedule"}
TOL = {"key": "ray.io/node-type", "operator": "Equal", "value": "worker", "effect": "NoSchedule"}


def worker(rs: dict[str, Any]) -> dict[str, Any]:
    return rs["spec"]["rayClusterConfig"]["workerGroupSpecs"][0]["template"]["spec"]


def rayservice(gpus: int = 1, **pod_spec: Any) -> dict[str, Any]:
    rs = s.target_state(s.sample(), "app")
    spec = worker(rs)
    spec["containers"][0]["resources"] = {"limits": {"nvidia.com/gpu": str(gpus)}}
    spec["tolerations"] = []  # the sample tolerates the GPU taint; tests choose
    spec.update(pod_spec)
    return rs


def test_tolerates_matches_key_value_and_effect() -> None:
    assert tolerates(TOL, TAINT)
    assert tolerates({"operator": "Exists"}, TAINT)
    assert tolerates({"key": "ray.io/node-type", "operator": "Exists"}, TAINT)
    assert not tolerates(dict(TOL, value="head"), TAINT)
    assert not tolerates(dict(TOL, effect="NoExecute"), TAINT)
    assert not tolerates({"key": "", "operator": "Equal"}, TAINT)


def test_node_accepts_selector_affinity_taints_and_readiness() -> None:
    gpu = s.node("g1", gpus=4, labels={"pool": "l4", "zone": "a"}, taints=[TAINT])
    assert node_accepts(gpu, {"tolerations": [TOL], "nodeSelector": {"pool": "l4"}})
    assert not node_accepts(gpu, {"nodeSelector": {"pool": "l4"}})  # taint not tolerated
    assert not node_accepts(gpu, {"tolerations": [TOL], "nodeSelector": {"pool": "a100"}})
    affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["b"]}]},
        {"matchExpressions": [{"key": "pool", "operator": "NotIn", "values": ["a100"]},
                              {"key": "zone", "operator": "Exists"}]}]}}}
    assert node_accepts(gpu, {"tolerations": [TOL], "affinity": affinity})
    affinity["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"].pop()
    assert not node_accepts(gpu, {"tolerations": [TOL], "affinity": affinity})
    assert not node_accepts(s.node("g2", gpus=4, ready=False), {})
    cordoned = s.node("g3", gpus=4)
    cordoned["spec"]["unschedulable"] = True
    assert not node_accepts(cordoned, {})
    soft = s.node("g4", gpus=4, taints=[dict(TAINT, effect="PreferNoSchedule")])
    assert node_accepts(soft, {})


def test_free_accelerators_subtracts_bound_pods_only() -> None:
    nodes = [s.node("g1", gpus=8), s.node("c1")]
    pods = [s.pod("a", "ml", "g1", gpus=3), s.pod("b", "ml", "g1", gpus=1, phase="Succeeded"),
            s.pod("c", "ml", None, gpus=2, phase="Pending"), s.pod("d", "ml", "c1")]
    assert free_accelerators(nodes, pods) == {"g1": {"nvidia.com/gpu": 5}, "c1": {}}


def test_accelerator_headroom_counts_whole_pods_per_node() -> None:
    # 2 + 3 free GPUs: a 4-GPU pod fits nowhere, 2-GPU pods fit 1 + 1 times.
    nodes = [s.node("g1", gpus=4), s.node("g2", gpus=4)]
    pods = [s.pod("a", "x", "g1", gpus=2), s.pod("b", "x", "g2", gpus=1)]
    assert accelerator_headroom(rayservice(4), nodes, pods) == {"nvidia.com/gpu": 0}
    assert accelerator_headroom(rayservice(2), nodes, pods) == {"nvidia.com/gpu": 4}
    assert accelerator_headroom(rayservice(1), nodes, pods) == {"nvidia.com/gpu": 5}


def test_accelerator_headroom_only_on_nodes_the_pods_fit() -> None:
    nodes = [s.node("tainted", gpus=8, taints=[TAINT]), s.node("open", gpus=2, labels={"pool": "l4"})]
    assert accelerator_headroom(rayservice(1), nodes, []) == {"nvidia.com/gpu": 2}
    assert accelerator_headroom(rayservice(1, tolerations=[TOL]), nodes, []) == {"nvidia.com/gpu": 10}
    assert accelerator_headroom(rayservice(1, tolerations=[TOL], nodeSelector={"pool": "l4"}), nodes, []) == \
        {"nvidia.com/gpu": 2}


def test_accelerator_headroom_subtracts_pending_pods_that_compete() -> None:
    nodes = [s.node("g1", gpus=4)]
    waiting = s.pod("pending-worker", "ml", None, gpus=1, phase="Pending")
    elsewhere = s.pod("elsewhere", "ml", None, gpus=1, phase="Pending")
    elsewhere["spec"]["nodeSelector"] = {"pool": "other"}
    assert accelerator_headroom(rayservice(1), nodes, [waiting, elsewhere]) == {"nvidia.com/gpu": 3}


def test_accelerator_headroom_empty_for_cpu_only_rayservice() -> None:
    rs = rayservice()
    worker(rs)["containers"][0]["resources"] = {}
    assert accelerator_headroom(rs, [s.node("g1", gpus=4)], []) == {}


class FakeReader:
    def __init__(self, kube: s.Kubernetes) -> None:
        self.kube = kube
        self.calls: list[str] = []

    def _find(self, pool: list[dict[str, Any]], namespace: str, name: str) -> dict[str, Any] | None:
        return next((o for o in pool if o["metadata"]["namespace"] == namespace
                     and o["metadata"]["name"] == name), None)

    def get_rayservice(self, namespace: str, name: str) -> dict[str, Any] | None:
        self.calls.append(f"rs {name}")
        return self._find(self.kube.rayservices, namespace, name)

    def get_raycluster(self, namespace: str, name: str) -> dict[str, Any] | None:
        self.calls.append(f"rc {name}")
        return self._find(self.kube.rayclusters, namespace, name)

    def list_rayclusters(self, namespace: str, label_selector: str) -> list[dict[str, Any]]:
        self.calls.append(f"list rc {label_selector}")
        key, _, value = label_selector.partition("=")
        return [c for c in self.kube.rayclusters if c["metadata"]["labels"].get(key) == value]

    def list_custom(self, plural: str, namespace: str) -> list[dict[str, Any]]:
        self.calls.append(f"list {plural} {namespace}")
        pool = self.kube.rayservices if plural == "rayservices" else self.kube.rayclusters
        return [o for o in pool if o["metadata"]["namespace"] == namespace]

    def list_nodes(self) -> list[dict[str, Any]]:
        self.calls.append("nodes")
        return self.kube.nodes

    def list_active_pods(self) -> list[dict[str, Any]]:
        self.calls.append("pods")
        return self.kube.pods

    def list_cluster_pods(self, namespace: str) -> list[dict[str, Any]]:
        self.calls.append(f"list pods {namespace}")
        return [p for p in self.kube.pods if p["metadata"]["namespace"] == namespace
                and "ray.io/cluster" in p["metadata"]["labels"]]


def test_read_live_basis_finds_active_cluster_by_label_without_status() -> None:
    live = s.live_state(s.target_state(s.sample(), "app"), active="sd-old")
    live["status"] = {}
    newer = s.raycluster(live, "sd-pending", {"gpu-group": 9})
    newer["metadata"]["creationTimestamp"] = "2026-08-21T00:00:00Z"
    kube = s.Kubernetes([live], [newer, s.raycluster(live, "sd-old", {"gpu-group": 2})],
                        [s.node("g1", gpus=4, taints=[TAINT])], [])
    reader = FakeReader(kube)
    basis = read_live_basis(reader, ["ml/stable-diffusion"])  # type: ignore[arg-type]
    assert basis == {"ml/stable-diffusion": diffing.LiveCluster(
        active_cluster="sd-old", worker_replicas={"gpu-group": 2}, headroom={"nvidia.com/gpu": 4})}
    # found through the label in the namespace's one RayCluster list, not a call per RayService
    assert reader.calls == ["list rayservices ml", "nodes", "pods", "list rayclusters ml"]


def test_read_live_basis_user_headroom_wins_and_cpu_only_reads_nodes_for_the_plan() -> None:
    # A cpu-only RayService: no accelerator headroom is measured (the user's stands), but the
    # nodes and pods are read, once each, for the placement plan (docs/placement.md).
    base = s.sample()
    worker(base)["containers"][0]["resources"] = {}
    live = s.live_state(s.target_state(base, "app"), active="sd-1")
    reader = FakeReader(s.Kubernetes([live], [s.raycluster(live, "sd-1")]))
    basis = read_live_basis(reader, ["ml/stable-diffusion"], headroom={"cpu": "8"})  # type: ignore[arg-type]
    assert basis["ml/stable-diffusion"].headroom == {"cpu": "8"}
    assert reader.calls.count("nodes") == 1 and reader.calls.count("pods") == 1
    assert basis["ml/stable-diffusion"].cluster is not None


def test_read_live_basis_target_spec_chooses_nodes() -> None:
    live = s.live_state(s.target_state(s.sample(), "app"), active="sd-1")
    target = copy.deepcopy(live)
    worker(target)["nodeSelector"] = {"pool": "a100"}
    nodes = [s.node("l4", gpus=4, taints=[TAINT]), s.node("a100", gpus=8, labels={"pool": "a100"},
                                                           taints=[TAINT])]
    reader = FakeReader(s.Kubernetes([live], [s.raycluster(live, "sd-1")], nodes))
    basis = read_live_basis(reader, ["ml/stable-diffusion"],  # type: ignore[arg-type]
                            targets={"ml/stable-diffusion": target})
    assert basis["ml/stable-diffusion"].headroom == {"nvidia.com/gpu": 8}


def test_read_live_basis_reads_each_namespace_once_and_bounds_namespaces() -> None:
    """One hostile body naming 250 RayServices made 502 API calls; now two lists per namespace."""
    kube = s.Kubernetes(rayservices=[], rayclusters=[], pods=[], nodes=[])
    reader = FakeReader(kube)
    keys = [f"ns-{i % 3}/rs-{i}" for i in range(250)]
    targets = {k: rayservice() for k in keys}
    basis = read_live_basis(reader, keys, targets=targets)  # type: ignore[arg-type]
    assert len(basis) == 250
    assert sorted(c for c in reader.calls if c.startswith("list")) == [
        f"list rayservices ns-{i}" for i in range(3)]
    assert reader.calls.count("nodes") == 1 and reader.calls.count("pods") == 1
    many = [f"ns-{i}/rs" for i in range(20)]
    with pytest.raises(KubernetesError, match="more than 16 namespaces"):
        read_live_basis(FakeReader(kube), many)  # type: ignore[arg-type]


def test_read_live_basis_standalone_rayclusters_read_two_lists_per_namespace() -> None:
    """250 standalone RayClusters and 50 RayServices over 3 namespaces, CPU only: one RayCluster
    list and one RayService list per namespace, the nodes and the pods once (for the placement
    plan; the RayClusters' pods come from that list); the bound counts namespaces."""
    cpu_rs = s.target_state(s.sample(), "app")
    for spec in [cpu_rs["spec"]["rayClusterConfig"]["headGroupSpec"]] + \
            cpu_rs["spec"]["rayClusterConfig"]["workerGroupSpecs"]:
        for c in spec["template"]["spec"]["containers"]:
            c["resources"] = {"limits": {"cpu": "1"}}
    clusters = [{"apiVersion": "ray.io/v1", "kind": "RayCluster",
                 "metadata": {"name": f"rc-{i}", "namespace": f"ns-{i % 3}"},
                 "spec": {"workerGroupSpecs": [{"groupName": "w", "replicas": i % 4}]}}
                for i in range(0, 250, 2)]
    pods = [s.ray_pod("rc-4", "ns-1", "w", 0), s.ray_pod("rc-4", "ns-1", "gone", 0),
            s.ray_pod("rc-4", "ns-1", "headgroup", 0,
                      annotations={"ray.io/upgrade-strategy-recreate-hash": "H"})]
    reader = FakeReader(s.Kubernetes(rayservices=[], rayclusters=clusters, pods=pods, nodes=[]))
    keys = [f"RayCluster/ns-{i % 3}/rc-{i}" for i in range(250)] + [f"ns-{i % 3}/rs-{i}" for i in range(50)]
    targets = {k: cpu_rs for k in keys if not k.startswith("RayCluster/")}
    basis = read_live_basis(reader, keys, targets=targets)  # type: ignore[arg-type]
    assert len(basis) == 125 + 50  # absent RayClusters without a target have nothing to say
    assert sorted(reader.calls) == sorted(
        ["nodes", "pods"] + [f"list {kind} ns-{i}" for i in range(3)
                             for kind in ("rayclusters", "rayservices")])
    rc4 = basis["RayCluster/ns-1/rc-4"]
    assert (rc4.active_cluster, dict(rc4.worker_replicas), dict(rc4.group_pods), rc4.head_hash) == (
        "rc-4", {"w": 0}, {"gone": 1, "w": 1}, "H")
    with pytest.raises(KubernetesError, match="more than 16 namespaces"):
        many = [f"RayCluster/ns-{i}/rc" for i in range(17)]
        read_live_basis(FakeReader(s.Kubernetes()), many)  # type: ignore[arg-type]


class KueueReader(FakeReader):
    """Kueue installed: one ClusterQueue list, the LocalQueues per namespace."""

    def list_kueue(self, plural: str, namespace: str | None = None) -> list[dict[str, Any]]:
        self.calls.append(f"kueue {plural} {namespace or ''}".rstrip())
        if plural == "clusterqueues":
            return [{"metadata": {"name": "cq"}, "spec": {}}]
        return [{"metadata": {"name": "team", "namespace": namespace}, "spec": {"clusterQueue": "cq"}}]


def test_read_live_basis_reads_kueue_for_a_labelled_raycluster_and_rayjob() -> None:
    """A RayCluster and a RayJob labelled kueue.x-k8s.io/queue-name get the queues as a
    RayService does (docs/placement.md): one ClusterQueue list, one LocalQueue list per namespace."""
    label = {"kueue.x-k8s.io/queue-name": "team"}
    rc = {"apiVersion": "ray.io/v1", "kind": "RayCluster",
          "metadata": {"name": "rc", "namespace": "ns-a", "labels": label},
          "spec": {"workerGroupSpecs": [{"groupName": "w", "replicas": 1}]}}
    head = {"template": {"spec": {"containers": [{"name": "h"}]}}}
    job = {"apiVersion": "ray.io/v1", "kind": "RayJob",
           "metadata": {"name": "job", "namespace": "ns-a", "labels": label},
           "spec": {"rayClusterSpec": {"headGroupSpec": head}}}
    plain = {**job, "metadata": {"name": "other", "namespace": "ns-b"}}
    reader = KueueReader(s.Kubernetes(rayservices=[], rayclusters=[rc], pods=[], nodes=[]))
    targets = {"RayCluster/ns-a/rc": rc, "RayJob/ns-a/job": job, "RayJob/ns-b/other": plain}
    basis = read_live_basis(reader, list(targets), targets=targets)  # type: ignore[arg-type]
    for key in ("RayCluster/ns-a/rc", "RayJob/ns-a/job"):
        queued = basis[key].kueue
        assert queued is not None and [q["metadata"]["name"] for q in queued[1]] == ["cq"]
    assert basis["RayJob/ns-b/other"].kueue is None  # no label: no queue read for it
    kueue_calls = [c for c in reader.calls if c.startswith("kueue")]
    assert kueue_calls == ["kueue clusterqueues", "kueue localqueues ns-a"]
