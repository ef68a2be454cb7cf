"""The 60 tricky cases of the KubeRay v1.7.0 semantics (docs/semantics/rayservice.md §7),
table-driven.

Each case edits a real KubeRay sample and asserts what the operator does with the change:
the categories of the changes, the rollout, the decision and the exact accelerator counts.
Cases that are not a manifest change (operator upgrades, a Gateway nobody serves) are
covered by what a diff can say about them, and say so.
"""

# A table of 60+ cases reads better one case per (long) row.

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

import diffing
from tests.builders import dump, edited, group, head_container, rcc, sample, set_images, worker_container

SD = "stable-diffusion"  # one GPU worker group (nvidia.com/gpu: 1), replicas 1, max 10
NRS = "no-ray-serve-replica"  # CPU, replicas 2, min 1, max 5, autoscaling off
INC = "incremental-upgrade"  # NewClusterWithIncrementalUpgrade, autoscaling on
LLM = "llm-serve"  # 4 GPUs per worker, min = max = 1
HA = "high-availability"  # gcsFaultToleranceOptions
CSS = "custom-serve-service"


def autoscaling(obj: dict[str, Any]) -> None:
    rcc(obj)["enableInTreeAutoscaling"] = True


def image(tag: str):
    return lambda o: set_images(o, tag)


def extra_group(name: str = "extra", replicas: int = 1, gpus: int = 0):
    def edit(o: dict[str, Any]) -> None:
        g = {"groupName": name, "replicas": replicas, "minReplicas": 0, "maxReplicas": 4,
             "rayStartParams": {},
             "template": {"spec": {"containers": [{"name": "ray-worker", "image": "rayproject/ray:2.52.0",
                                                   "resources": {"limits": {"cpu": "2", "memory": "4Gi"}}}]}}}
        if gpus:
            g["template"]["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] = str(gpus)
        rcc(o)["workerGroupSpecs"].append(g)
    return edit


def serve_edit(old: str, new: str):
    def edit(o: dict[str, Any]) -> None:
        assert old in o["spec"]["serveConfigV2"]
        o["spec"]["serveConfigV2"] = o["spec"]["serveConfigV2"].replace(old, new)
    return edit


def strategy(kind: str, **opts: Any):
    def edit(o: dict[str, Any]) -> None:
        o["spec"]["upgradeStrategy"] = {"type": kind}
        if opts:
            o["spec"]["upgradeStrategy"]["clusterUpgradeOptions"] = opts
    return edit


@dataclass
class Case:
    id: str
    base: str
    after: list[Any]
    rollout: str
    decision: str
    categories: set[str] | None = None  # exact set of change categories
    accelerators: dict[str, int] | None = None  # exact capacity.extra accelerators
    findings: set[str] = field(default_factory=set)  # codes that must be present
    before: list[Any] = field(default_factory=list)
    policy: dict[str, Any] | None = None
    headroom: dict[str, Any] | None = None
    live: dict[str, diffing.LiveCluster] | None = None
    create: bool = False


GPU_INC = [autoscaling, strategy("NewClusterWithIncrementalUpgrade", gatewayClassName="istio",
                                 stepSizePercent=10, intervalSeconds=30, maxSurgePercent=50)]
TWO_GROUPS = [extra_group("second")]
ENV2 = [lambda o: worker_container(o).__setitem__("env", [{"name": "A", "value": "1"},
                                                          {"name": "B", "value": "2"}])]

CASES = [
    # Without autoscaling nothing owns the replica fields: operator-ignored, never autoscaler-owned.
    Case("01-replicas-autoscaling-off", NRS, [lambda o: group(o).__setitem__("replicas", 4)],
         "not-applied", "hold", {"operator-ignored"}, {}, {"not-applied"}),
    Case("01b-replicas-autoscaling-on", NRS, [lambda o: group(o).__setitem__("replicas", 4)],
         "none", "ignore-differences", {"autoscaler-owned"}, before=[autoscaling]),
    Case("02-minreplicas", NRS, [lambda o: group(o).__setitem__("minReplicas", 2)],
         "not-applied", "hold", {"operator-ignored"}, {}, {"not-applied"}),
    Case("02b-maxreplicas-autoscaling-on", NRS, [lambda o: group(o).__setitem__("maxReplicas", 9)],
         "not-applied", "hold", {"autoscaler-owned"}, before=[autoscaling]),
    Case("03-append-group", NRS, [extra_group()], "cluster-in-place", "approve",
         {"worker-group-appended"}, {}),
    Case("03c-append-group-autoscaling", NRS, [extra_group()], "cluster-in-place", "approve",
         {"worker-group-appended"}, {}, {"append-resets-replicas"}, before=[autoscaling]),
    Case("03b-append-gpu-group", NRS, [extra_group(gpus=2)], "cluster-in-place", "approve",
         {"worker-group-appended"}, {"nvidia.com/gpu": 2}),
    Case("04-append-and-replicas", NRS, [extra_group(), lambda o: group(o).__setitem__("replicas", 3)],
         "cluster-in-place", "approve", {"worker-group-appended", "operator-ignored"}),
    Case("05-append-and-image", SD, [extra_group(), image("rayproject/ray-ml:2.47.0-gpu")],
         "new-cluster", "hold", {"cluster-recreate"}, {"nvidia.com/gpu": 1}),
    Case("06-remove-last-group", NRS, [lambda o: rcc(o)["workerGroupSpecs"].pop()], "new-cluster", "approve",
         {"cluster-recreate"}, {}, before=TWO_GROUPS),
    Case("07-insert-group-front", NRS,
         [lambda o: extra_group("front")(o),
          lambda o: rcc(o).__setitem__("workerGroupSpecs", rcc(o)["workerGroupSpecs"][::-1])],
         "new-cluster", "approve", {"cluster-recreate"}),
    Case("07b-reorder-groups", NRS,
         [lambda o: rcc(o).__setitem__("workerGroupSpecs", rcc(o)["workerGroupSpecs"][::-1])],
         "new-cluster", "approve", {"cluster-recreate"}, before=TWO_GROUPS),
    Case("07c-rename-group", SD, [lambda o: group(o).__setitem__("groupName", "gpu")],
         "new-cluster", "hold", {"cluster-recreate"}, {"nvidia.com/gpu": 1}),
    Case("08-image-bump-gpu", SD, [image("rayproject/ray-ml:2.47.0-gpu")], "new-cluster", "hold",
         {"cluster-recreate"}, {"nvidia.com/gpu": 1}),
    Case("08b-image-bump-llm", LLM, [image("rayproject/ray-llm:2.53.0-py311-cu128")], "new-cluster", "hold",
         {"cluster-recreate"}, {"nvidia.com/gpu": 4}),
    Case("08c-image-bump-with-headroom", LLM, [image("rayproject/ray-llm:2.53.0-py311-cu128")],
         "new-cluster", "approve", {"cluster-recreate"}, {"nvidia.com/gpu": 4},
         headroom={"nvidia.com/gpu": 4}),
    Case("09-serve-only", NRS, [serve_edit("num_replicas: 1", "num_replicas: 2")], "serve-in-place",
         "approve", {"serve-in-place"}),
    Case("10-serve-formatting", NRS, [serve_edit("applications:", "# a comment\napplications:")],
         "serve-in-place", "approve", {"serve-in-place"}, findings={"serve-config-resubmitted"}),
    Case("11-image-and-serve", SD, [image("rayproject/ray-ml:2.47.0-gpu"),
                                    serve_edit("stable_diffusion:entrypoint", "stable_diffusion:app")],
         "new-cluster", "hold", {"cluster-recreate", "serve-in-place"}, {"nvidia.com/gpu": 1}),
    Case("11b-image-with-rcc-suspend", SD, [image("rayproject/ray-ml:2.47.0-gpu"),
                                            lambda o: rcc(o).__setitem__("suspend", True)],
         "new-cluster", "hold", {"cluster-recreate", "operator-ignored"}, {},
         findings={"new-cluster-suspended"}),
    Case("12-quantity-reformat", NRS, [
        lambda o: head_container(o)["resources"]["limits"].update(cpu="1000m", memory="5120Mi"),
        lambda o: worker_container(o)["resources"]["requests"].__setitem__("cpu", "0.5"),
        lambda o: worker_container(o)["resources"]["limits"].__setitem__("cpu", 1)],
        "none", "approve", {"no-op"}),
    Case("12b-float-quantity-rejected", NRS,
         [lambda o: worker_container(o)["resources"]["requests"].__setitem__("cpu", 0.5)],
         "not-applied", "hold", {"no-op"}, findings={"schema-violation"}),
    Case("13-memory-binary-vs-decimal", NRS,
         [lambda o: worker_container(o)["resources"]["limits"].__setitem__("memory", "2147483648")],
         "new-cluster", "approve", {"cluster-recreate"}),
    Case("14-group-resources-map", NRS,
         [lambda o: group(o).__setitem__("resources", {"cpu": "1000m"})],
         "new-cluster", "approve", {"cluster-recreate"},
         before=[lambda o: group(o).__setitem__("resources", {"cpu": "1"})]),
    Case("15-raystartparams-empty-map", NRS, [lambda o: group(o).__setitem__("rayStartParams", {})],
         "new-cluster", "approve", {"cluster-recreate"}, before=[lambda o: group(o).pop("rayStartParams")]),
    Case("16-autoscaling-false-explicit", NRS, [lambda o: rcc(o).__setitem__("enableInTreeAutoscaling", False)],
         "new-cluster", "approve", {"cluster-recreate"}),
    Case("17-crd-defaults-explicit", NRS, [
        lambda o: group(o).update(numOfHosts=1, priority=0),
        lambda o: head_container(o).__setitem__("ports", [{"containerPort": 8000, "name": "serve",
                                                           "protocol": "TCP"}])],
         "none", "approve", {"no-op"},
         before=[lambda o: head_container(o).__setitem__("ports", [{"containerPort": 8000, "name": "serve"}])]),
    Case("18-pod-default-explicit", NRS, [lambda o: worker_container(o).__setitem__("imagePullPolicy",
                                                                                    "IfNotPresent")],
         "new-cluster", "approve", {"cluster-recreate"}),
    Case("19-empty-security-context", NRS, [lambda o: worker_container(o).__setitem__("securityContext", {})],
         "new-cluster", "approve", {"cluster-recreate"}),
    Case("20-empty-omitempty", NRS, [lambda o: worker_container(o).__setitem__("env", []),
                                     lambda o: group(o).__setitem__("labels", {}),
                                     lambda o: group(o)["template"].__setitem__("metadata", {})],
         "none", "approve", {"no-op"}),
    Case("21-env-reorder", NRS, [lambda o: worker_container(o).__setitem__(
        "env", worker_container(o)["env"][::-1])], "new-cluster", "approve", {"cluster-recreate"},
         before=ENV2),
    Case("22-tolerations", SD, [lambda o: group(o)["template"]["spec"]["tolerations"].append(
        {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"})],
         "not-applied", "hold", {"operator-ignored"}, {}),
    Case("22b-scheduling-gates", NRS, [lambda o: group(o)["template"]["spec"].__setitem__(
        "schedulingGates", [{"name": "kueue"}])], "not-applied", "hold", {"operator-ignored"}),
    Case("23-node-selector", SD, [lambda o: group(o)["template"]["spec"].__setitem__(
        "nodeSelector", {"gpu": "a100"})], "new-cluster", "hold", {"cluster-recreate"}, {"nvidia.com/gpu": 1}),
    Case("24-ray-version-only", NRS, [lambda o: rcc(o).__setitem__("rayVersion", "2.53.0")],
         "new-cluster", "approve", {"cluster-recreate"}, findings={"ray-version-mismatch"}),
    Case("25-autoscaler-options", NRS, [lambda o: rcc(o).__setitem__("autoscalerOptions",
                                                                     {"idleTimeoutSeconds": 120})],
         "new-cluster", "approve", {"cluster-recreate"}, before=[autoscaling]),
    Case("25b-upscaling-mode", NRS, [lambda o: rcc(o)["autoscalerOptions"].__setitem__("upscalingMode",
                                                                                      "Aggressive")],
         "new-cluster", "approve", {"cluster-recreate"},
         before=[autoscaling, lambda o: rcc(o).__setitem__("autoscalerOptions", {"upscalingMode": "Default"})]),
    Case("26-strategy-none-image", SD, [image("rayproject/ray-ml:2.47.0-gpu")], "not-applied", "hold",
         {"cluster-recreate"}, {}, {"latent-cluster-change"}, before=[strategy("None")]),
    Case("26b-strategy-none-serve-too", SD, [image("rayproject/ray-ml:2.47.0-gpu"),
                                              serve_edit("stable_diffusion:entrypoint", "x:y")],
         "not-applied", "hold", {"cluster-recreate", "serve-in-place"}, findings={"serve-applied-anyway"},
         before=[strategy("None")]),
    Case("27-none-to-newcluster-no-edit", SD, [strategy("NewCluster")], "none", "approve",
         {"service-level"}, before=[strategy("None")]),
    Case("28-env-zero-downtime-false", SD, [image("rayproject/ray-ml:2.47.0-gpu")], "not-applied", "hold",
         {"cluster-recreate"}, policy={"operator": {"env": {"ENABLE_ZERO_DOWNTIME": "false"}}}),
    Case("29-type-wins-over-env", SD, [image("rayproject/ray-ml:2.47.0-gpu")], "new-cluster", "hold",
         {"cluster-recreate"}, {"nvidia.com/gpu": 1}, before=[strategy("NewCluster")],
         policy={"operator": {"env": {"ENABLE_ZERO_DOWNTIME": "false"}}}),
    Case("30-bad-strategy-type", NRS, [strategy("Foo")], "not-applied", "hold", {"service-level"},
         findings={"validation-failed"}),
    Case("31-incremental-without-autoscaling", NRS,
         [strategy("NewClusterWithIncrementalUpgrade", gatewayClassName="istio", stepSizePercent=10,
                   intervalSeconds=30)], "not-applied", "hold", {"service-level"}, findings={"validation-failed"}),
    Case("32-step-over-surge", INC, [lambda o: o["spec"]["upgradeStrategy"]["clusterUpgradeOptions"].update(
        stepSizePercent=30, maxSurgePercent=20)], "not-applied", "hold", {"service-level"},
         findings={"validation-failed"}),
    Case("33-missing-gateway-class", INC, [lambda o: o["spec"]["upgradeStrategy"]["clusterUpgradeOptions"].pop(
        "gatewayClassName")], "not-applied", "hold", {"service-level"}, findings={"schema-violation"}),
    Case("34-incremental-image", INC, [image("rayproject/ray:2.52.0")], "incremental", "approve",
         {"cluster-recreate"}, {}, {"incremental-prerequisites"}),
    Case("34b-incremental-gpu", LLM, [image("rayproject/ray-llm:2.53.0-py311-cu128")], "incremental", "hold",
         {"cluster-recreate"}, {"nvidia.com/gpu": 4}, before=GPU_INC),
    Case("35-incremental-gate-off", INC, [image("rayproject/ray:2.52.0")], "not-applied", "hold",
         {"cluster-recreate"}, policy={"operator": {"featureGates": {"RayServiceIncrementalUpgrade": False}}}),
    Case("36-gateway-class-unserved", INC, [image("rayproject/ray:2.52.0")], "incremental", "approve",
         findings={"incremental-prerequisites"}),  # a diff cannot see the Gateway controller; it warns
    Case("37-step-zero", INC, [lambda o: o["spec"]["upgradeStrategy"]["clusterUpgradeOptions"].update(
        stepSizePercent=0, maxSurgePercent=0), image("rayproject/ray:2.52.0")], "incremental", "hold",
         findings={"incremental-never-progresses"}),
    Case("38-mid-upgrade-image-again", SD, [image("rayproject/ray-ml:2.48.0-gpu")], "new-cluster", "hold",
         {"cluster-recreate"}, findings={"upgrade-in-progress"},
         live={"default/stable-diffusion": diffing.LiveCluster(active_cluster="sd-a", pending_cluster="sd-b",
                                                              worker_replicas={"gpu-group": 1})}),
    Case("42-append-mid-upgrade", NRS, [extra_group()], "cluster-in-place", "approve",
         {"worker-group-appended"}),
    Case("43-no-spec-edit", SD, [], "none", "approve", set()),
    Case("45-metadata-labels", NRS, [lambda o: o["metadata"].__setitem__("labels", {"team": "ml"})],
         "none", "approve", {"service-level"}),
    Case("46-ft-annotation-with-gcs-ft", HA, [lambda o: o["metadata"].__setitem__(
        "annotations", {"ray.io/ft-enabled": "true"})], "not-applied", "hold", {"service-level"},
         findings={"validation-failed"}),
    Case("47-initializing-timeout-bad", NRS, [lambda o: o["metadata"].__setitem__(
        "annotations", {"ray.io/initializing-timeout": "abc"})], "not-applied", "hold", {"service-level"},
         findings={"validation-failed"}),
    Case("48-name-too-long", NRS, [lambda o: o["metadata"].__setitem__("name", "r" * 48)], "not-applied",
         "hold", findings={"name-too-long"}, create=True),
    Case("49-exclude-head", NRS, [lambda o: o["spec"].__setitem__("excludeHeadPodFromServeSvc", True)],
         "none", "approve", {"service-level"}),
    Case("50-serve-service-type", CSS, [lambda o: o["spec"]["serveService"]["spec"].__setitem__("type",
                                                                                               "ClusterIP")],
         "none", "approve", {"service-level"}, findings={"serve-service-deferred"}),
    Case("51-serve-service-name", CSS, [lambda o: o["spec"]["serveService"]["metadata"].__setitem__(
        "name", "other")], "none", "approve", {"service-level"}, findings={"serve-service-metadata-ignored"}),
    Case("52-deletion-delay", NRS, [lambda o: o["spec"].__setitem__("rayClusterDeletionDelaySeconds", 600)],
         "none", "approve", {"service-level"}),
    Case("53-deprecated-thresholds", NRS, [lambda o: o["spec"].__setitem__(
        "serviceUnhealthySecondThreshold", 900)], "none", "approve", {"service-level"}),
    Case("54-suspend", SD, [lambda o: o["spec"].__setitem__("suspend", True)], "suspend", "hold",
         {"service-level"}, {}, {"suspend-stops-serving"}),
    Case("54b-resume", SD, [lambda o: o["spec"].__setitem__("suspend", False)], "resume", "approve", {"service-level"}, {"nvidia.com/gpu": 1},
         before=[lambda o: o["spec"].__setitem__("suspend", True)]),
    Case("55-cluster-suspend", NRS, [lambda o: rcc(o).__setitem__("suspend", False)], "not-applied", "hold",
         {"operator-ignored"}, before=[lambda o: rcc(o).__setitem__("suspend", True)]),
    Case("56-worker-group-suspend", SD, [lambda o: group(o).__setitem__("suspend", True)], "new-cluster",
         "approve", {"cluster-recreate"}, {}),
    Case("57-workers-to-delete", NRS, [lambda o: group(o).__setitem__("scaleStrategy",
                                                                      {"workersToDelete": ["w-1"]})],
         "not-applied", "hold", {"operator-ignored"}),
    Case("57b-workers-to-delete-autoscaling", NRS, [lambda o: group(o).__setitem__(
        "scaleStrategy", {"workersToDelete": ["w-1"]})], "none", "ignore-differences", {"autoscaler-owned"},
         before=[autoscaling]),
    Case("58-cluster-upgrade-strategy", NRS, [lambda o: rcc(o).__setitem__("upgradeStrategy",
                                                                           {"type": "Recreate"})],
         "not-applied", "hold", {"operator-ignored"}, findings={"cluster-upgrade-strategy-set"}),
    Case("59-probe-port-int-vs-string", NRS, [lambda o: worker_container(o)["readinessProbe"]["httpGet"]
                                              .__setitem__("port", "8000")],
         "new-cluster", "approve", {"cluster-recreate"},
         before=[lambda o: worker_container(o).__setitem__("readinessProbe", {"httpGet": {"port": 8000}})]),
    Case("60-gcs-backend-immutable", HA, [lambda o: rcc(o)["gcsFaultToleranceOptions"].__setitem__(
        "backend", "rocksdb")], "not-applied", "hold", findings={"schema-violation"},
         before=[lambda o: rcc(o)["gcsFaultToleranceOptions"].__setitem__("backend", "redis")]),
]


def run(case: Case) -> dict[str, Any]:
    base = edited(sample(case.base), *case.before)
    after = edited(base, *case.after)
    report = diffing.analyze("" if case.create else dump(base), dump(after), headroom=case.headroom,
                             policy=case.policy, live=case.live)
    assert len(report.resources) == 1
    return report.to_dict()["resources"][0]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_semantics_case(case: Case) -> None:
    r = run(case)
    got_codes = {f["code"] for f in r["findings"]}
    assert (r["rollout"], r["decision"]) == (case.rollout, case.decision), (r["reasons"], r["changes"],
                                                                           got_codes)
    if case.categories is not None:
        assert {c["category"] for c in r["changes"]} == case.categories, r["changes"]
    if case.accelerators is not None:
        acc = {k: v for k, v in r["capacity"]["extra"].items() if k not in ("cpu", "memory")}
        assert acc == case.accelerators
    assert case.findings <= got_codes, r["findings"]
    assert r["reasons"] and all(len(reason) > 20 for reason in r["reasons"])


AUTOSCALER_WORDS = ("autoscaler-owned", "append-resets-replicas")


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_autoscaler_words_only_with_autoscaling(case: Case) -> None:
    """`autoscaler-owned` (a category, a finding code) and `append-resets-replicas` name what the Ray
    autoscaler does: they appear only when in-tree autoscaling is on (issue 24)."""
    base = edited(sample(case.base), *case.before)
    after = edited(base, *case.after)
    on = any(rcc(o).get("enableInTreeAutoscaling") is True for o in (base, after))
    r = run(case)
    words = {c["category"] for c in r["changes"]} | {f["code"] for f in r["findings"]}
    used = {w for w in words if w.startswith(AUTOSCALER_WORDS)}
    if not on:
        assert used == set(), (case.id, used)
