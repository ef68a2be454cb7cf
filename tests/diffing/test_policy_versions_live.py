"""Policy, KubeRay versions, live basis, findings and rendering limits of the core."""

from __future__ import annotations

import pytest
import yaml

import diffing
from tests.builders import dump, edited, group, rcc, sample, set_images, worker_container

LLM = sample("llm-serve")
LLM_BUMP = edited(LLM, lambda o: set_images(o, "rayproject/ray-llm:2.53.0-py311-cu128"))


def resource(before: dict | None, after: dict | None, **kwargs: object) -> dict:
    report = diffing.analyze(dump(before), dump(after), **kwargs)  # type: ignore[arg-type]
    (r,) = report.to_dict()["resources"]
    return r


@pytest.mark.parametrize(("policy", "headroom", "decision"), [
    ({"holdOnRecreate": "never"}, None, "approve"),
    ({"holdOnRecreate": "always"}, {"nvidia.com/gpu": 100}, "hold"),
    ({"thresholds": {"nvidia.com/gpu": 4}}, None, "approve"),
    ({"thresholds": {"nvidia.com/gpu": 3}}, None, "hold"),
    ({"thresholds": {"cpu": "8"}}, {"nvidia.com/gpu": 4, "cpu": "16"}, "hold"),
    ({"thresholds": {"cpu": "18"}}, {"nvidia.com/gpu": 4, "cpu": "16"}, "approve"),
    (None, {"nvidia.com/gpu": 3}, "hold"),
    (None, {"nvidia.com/gpu": "4"}, "approve"),
])
def test_policy_decides_recreations(policy: dict | None, headroom: dict | None, decision: str) -> None:
    r = resource(LLM, LLM_BUMP, policy=policy, headroom=headroom)
    assert (r["rollout"], r["decision"]) == ("new-cluster", decision)


BAD_POLICIES = [{"holdOnRecreate": "maybe"}, {"surprise": 1}, {"thresholds": {"cpu": "x"}},
                {"operator": {"featureGates": {"X": "yes"}}}, {"accelerators": "a"}, []]


@pytest.mark.parametrize("policy", BAD_POLICIES)
def test_policy_errors_name_the_key(policy: object) -> None:
    with pytest.raises(diffing.PolicyError):
        diffing.analyze("", dump(LLM), policy=policy)  # type: ignore[arg-type]


def test_policy_extra_accelerator_names_count() -> None:
    gaudi = edited(LLM, lambda o: worker_container(o)["resources"]["limits"].update({"habana.ai/gaudi": "8"}),
                   lambda o: worker_container(o)["resources"]["requests"].update({"habana.ai/gaudi": "8"}))
    bumped = edited(gaudi, lambda o: set_images(o, "x:2.53.0"))
    r = resource(gaudi, bumped, policy={"accelerators": ["habana.ai/gaudi"]}, headroom={"nvidia.com/gpu": 4})
    assert r["capacity"]["extra"]["habana.ai/gaudi"] == 8
    assert r["decision"] == "hold"


@pytest.mark.parametrize("version", ["1.6.2", "v1.6", "1.6.0"])
def test_version_16_incremental_gate_is_off(version: str) -> None:
    inc = sample("incremental-upgrade")
    r = resource(inc, edited(inc, lambda o: set_images(o, "rayproject/ray:2.52.0")), kuberay_version=version)
    assert r["rollout"] == "not-applied"
    assert any("feature gate off" in reason for reason in r["reasons"])


def test_version_16_cluster_suspend_toggle_updates_in_place() -> None:
    base = edited(sample("sample"), lambda o: rcc(o).__setitem__("suspend", True))
    after = edited(base, lambda o: rcc(o).__setitem__("suspend", False))
    assert resource(base, after, kuberay_version="1.6.2")["rollout"] == "cluster-in-place"
    assert resource(base, after, kuberay_version="1.7.0")["rollout"] == "not-applied"


def test_unknown_version_is_refused() -> None:
    with pytest.raises(diffing.UnsupportedVersionError, match="1.6.x, 1.7.x"):
        diffing.analyze("", "", kuberay_version="1.8.0")


def test_live_basis_sizes_the_new_cluster_from_autoscaled_replicas() -> None:
    sd = edited(sample("stable-diffusion"), lambda o: rcc(o).__setitem__("enableInTreeAutoscaling", True))
    bumped = edited(sd, lambda o: set_images(o, "rayproject/ray-ml:2.47.0-gpu"))
    live = {"default/stable-diffusion": diffing.LiveCluster(active_cluster="sd-abcde",
                                                            worker_replicas={"gpu-group": 6},
                                                            headroom={"nvidia.com/gpu": 4})}
    r = resource(sd, bumped, live=live)
    assert r["capacity"]["basis"] == "live"
    assert r["capacity"]["extra"]["nvidia.com/gpu"] == 6
    assert r["capacity"]["peak"]["nvidia.com/gpu"] == 12
    assert r["capacity"]["headroom"] == {"nvidia.com/gpu": 4}
    assert r["decision"] == "hold"
    live_ok = {"default/stable-diffusion": diffing.LiveCluster(active_cluster="sd-abcde",
                                                               worker_replicas={"gpu-group": 6},
                                                               headroom={"nvidia.com/gpu": 6})}
    assert resource(sd, bumped, live=live_ok)["decision"] == "approve"


def test_live_divergence_is_reported() -> None:
    sd = sample("stable-diffusion")
    path = "spec.rayClusterConfig.workerGroupSpecs[groupName=gpu-group].template.spec.containers[0].image"
    live = {"default/stable-diffusion": diffing.LiveCluster(active_cluster="sd-x", divergence=(path,))}
    r = resource(sd, edited(sd, lambda o: group(o).__setitem__("replicas", 2)), live=live)
    assert [f["path"] for f in r["findings"] if f["code"] == "latent-divergence"] == [path]


def test_cluster_divergence_ignores_muted_fields() -> None:
    rs = sample("stable-diffusion")
    rc = {"spec": yaml.safe_load(yaml.safe_dump(rcc(rs)))}
    rc["spec"]["workerGroupSpecs"][0]["replicas"] = 7
    rc["spec"]["workerGroupSpecs"][0]["template"]["spec"].pop("tolerations")
    assert diffing.cluster_divergence(rs, rc) == ()
    rc["spec"]["rayVersion"] = "2.40.0"
    assert diffing.cluster_divergence(rs, rc) == ("spec.rayClusterConfig.rayVersion",)


def test_findings_for_common_hazards() -> None:
    base = sample("sample")
    after = edited(base, lambda o: o.__setitem__("apiVersion", "ray.io/v1alpha1"),
                   lambda o: group(o).__setitem__("replicas", 9),
                   lambda o: group(o).__setitem__("surprise", True))
    r = resource(base, after)
    codes = {f["code"] for f in r["findings"]}
    assert {"deprecated-api-version", "replicas-outside-bounds", "unknown-field"} <= codes
    bounds = next(f for f in r["findings"] if f["code"] == "replicas-outside-bounds")
    assert "KubeRay silently runs 5 pods" in bounds["message"]
    assert bounds["line"] is not None


def test_serve_gpu_demand_over_the_cluster_ceiling_warns() -> None:
    sd = sample("stable-diffusion")
    cfg = yaml.safe_load(sd["spec"]["serveConfigV2"])
    cfg["applications"][0]["deployments"] = [{"name": "Model", "num_replicas": 12,
                                              "ray_actor_options": {"num_gpus": 1}}]
    after = edited(sd, lambda o: o["spec"].__setitem__("serveConfigV2", yaml.safe_dump(cfg)))
    r = resource(sd, after)
    assert r["rollout"] == "serve-in-place"
    assert r["capacity"]["serveGpus"] == {"before": 0, "after": 12, "ceiling": 10}
    assert "serve-gpu-demand-exceeds-supply" in {f["code"] for f in r["findings"]}


def test_respect_ignore_differences_with_atomic_worker_groups_is_flagged() -> None:
    app = {"apiVersion": "argoproj.io/v1alpha1", "kind": "Application", "metadata": {"name": "serving"},
           "spec": {"ignoreDifferences": [{"group": "ray.io", "kind": "RayService", "jqPathExpressions": [
               ".spec.rayClusterConfig.workerGroupSpecs[]?.replicas"]}],
                    "syncPolicy": {"syncOptions": ["RespectIgnoreDifferences=true"]}}}
    base = dump(sample("sample"))
    report = diffing.analyze(base, base.replace("price: 3", "price: 4") + "---\n" + yaml.safe_dump(app))
    codes = {f.code for f in report.resources[0].findings}
    assert "respect-ignore-differences-atomic" in codes


def test_multi_document_pairing_by_namespace_and_name() -> None:
    a, b = sample("sample"), sample("mobilenet")
    b_other_ns = edited(b, lambda o: o["metadata"].__setitem__("namespace", "ml"))
    before = dump(a) + "---\n" + dump(b)
    after = dump(b_other_ns) + "---\n" + dump(edited(a, lambda o: set_images(o, "rayproject/ray:2.53.0")))
    report = diffing.analyze(before, after)
    got = [(r.namespace, r.name, r.action, r.rollout) for r in report.resources]
    assert got == [("default", "rayservice-mobilenet", "deleted", "delete"),
                   ("default", "rayservice-sample", "updated", "new-cluster"),
                   ("ml", "rayservice-mobilenet", "created", "create")]


def test_duplicate_rayservice_in_one_side_is_an_input_error() -> None:
    text = dump(sample("sample"))
    with pytest.raises(diffing.ManifestError, match="appears twice") as exc:
        diffing.analyze("", text + "---\n" + text)
    assert exc.value.document == 2


def test_kind_list_is_flattened() -> None:
    items = {"apiVersion": "v1", "kind": "List", "items": [sample("sample"), sample("mobilenet")]}
    assert len(diffing.analyze("", yaml.safe_dump(items)).resources) == 2


def test_user_crd_replaces_the_schema() -> None:
    text = dump(sample("sample"))
    strict = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
              "spec": {"versions": [{"name": "v1", "schema": {"openAPIV3Schema": {
                  "type": "object", "properties": {"spec": {"type": "object", "properties": {
                      "serveConfigV2": {"type": "integer"}}}}}}}]}}
    report = diffing.analyze(text, text.replace("price: 3", "price: 4"), crd=yaml.safe_dump(strict))
    assert "schema-violation" in {f.code for f in report.resources[0].findings}


def test_markdown_truncation_keeps_the_verdict() -> None:
    before = "".join("---\n" + dump(edited(sample("llm-serve"), lambda o, i=i: o["metadata"].__setitem__(
        "name", f"llm-{i}"))) for i in range(40))
    after = before.replace("ray-llm:2.52.0-py311-cu128", "ray-llm:2.53.0-py311-cu128")
    report = diffing.analyze(before, after)
    full = diffing.render_markdown(report)
    short = diffing.render_markdown(report, max_chars=6000)
    assert len(full) > 6000 >= len(short)
    assert short.startswith("## 🔴 rayservice-impact: **hold**")
    assert "truncated" in short
    assert diffing.render_markdown(report, max_chars=len(full)) == full


def test_missing_namespace_equals_default_and_is_no_change() -> None:
    base = sample("sample")
    explicit = edited(base, lambda o: o["metadata"].__setitem__("namespace", "default"))
    r = resource(base, explicit)
    assert (r["action"], r["rollout"], r["changes"]) == ("unchanged", "none", [])


def test_live_before_hides_server_default_noise() -> None:
    target = sample("sample")
    live = edited(target, lambda o: group(o).update(numOfHosts=1, priority=0),
                  lambda o: o["metadata"].update(uid="u-1", resourceVersion="42", generation=3,
                                                 finalizers=["ray.io/rayservice-finalizer"]),
                  lambda o: o.__setitem__("status", {"serviceStatus": "Running"}))
    report = diffing.analyze(dump(live), dump(target), before_is_live=True)
    r = report.to_dict()["resources"][0]
    assert (r["action"], r["rollout"], r["decision"], r["changes"]) == ("unchanged", "none", "approve", [])
