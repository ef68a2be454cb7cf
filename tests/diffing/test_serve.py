from __future__ import annotations

import yaml

from diffing.kube.paths import format_path
from diffing.rayservice import serve

BASE = {"applications": [
    {"name": "a", "import_path": "m:a", "route_prefix": "/a", "deployments": [
        {"name": "D1", "num_replicas": 1, "user_config": {"k": 1}, "ray_actor_options": {"num_gpus": 1}},
        {"name": "D2", "num_replicas": 2}]},
    {"name": "b", "import_path": "m:b"}]}


def changes(before: dict, after: dict) -> list[tuple[str, str]]:
    out = serve.diff(serve.parse(yaml.safe_dump(before)), serve.parse(yaml.safe_dump(after)))
    return [(format_path(c.path), c.detail) for c in out]


def test_serve_diff_marks_lightweight_and_restarting_changes() -> None:
    after = yaml.safe_load(yaml.safe_dump(BASE))
    deps = after["applications"][0]["deployments"]
    deps[0]["num_replicas"] = 3
    deps[0]["ray_actor_options"]["num_gpus"] = 2
    after["applications"][0]["route_prefix"] = "/x"
    after["applications"][1]["import_path"] = "m:b2"
    prefix = "spec.serveConfigV2.applications"
    assert sorted(changes(BASE, after)) == [
        (f"{prefix}[name=a].deployments[name=D1].num_replicas", "lightweight"),
        (f"{prefix}[name=a].deployments[name=D1].ray_actor_options", "replica-restart"),
        (f"{prefix}[name=a].route_prefix", "lightweight"),
        (f"{prefix}[name=b].import_path", "replica-restart")]


def test_serve_diff_added_and_removed_by_name_and_runtime_options() -> None:
    after = yaml.safe_load(yaml.safe_dump(BASE))
    after["applications"][0]["deployments"] = [after["applications"][0]["deployments"][0],
                                               {"name": "D3"}]
    after["applications"].append({"name": "c", "import_path": "m:c"})
    after["http_options"] = {"port": 9000}
    prefix = "spec.serveConfigV2.applications"
    assert sorted(changes(BASE, after)) == [
        (f"{prefix}[name=a].deployments[name=D2]", "deployment-removed"),
        (f"{prefix}[name=a].deployments[name=D3]", "deployment-added"),
        (f"{prefix}[name=c]", "application-added"),
        ("spec.serveConfigV2.http_options", "not-applied-at-runtime")]


def test_serve_diff_order_and_format_only_are_no_ops() -> None:
    reordered = {"applications": BASE["applications"][::-1]}
    (only,) = serve.diff(serve.parse(yaml.safe_dump(BASE)), serve.parse(yaml.safe_dump(reordered)))
    assert only.noop and only.path == serve.SERVE_PATH
    (fmt,) = serve.diff(serve.parse(yaml.safe_dump(BASE)), serve.parse(yaml.safe_dump(BASE, indent=4)))
    assert fmt.noop


def test_serve_invalid_text_is_reported_not_raised() -> None:
    bad = serve.parse("applications: [\n")
    assert not bad.ok and "line" in bad.error
    assert serve.parse(42).error == "serveConfigV2 must be a string holding YAML"


def test_gpu_demand_uses_the_replica_ceiling() -> None:
    cfg = {"applications": [{"name": "a", "deployments": [
        {"name": "x", "num_replicas": 2, "ray_actor_options": {"num_gpus": 0.5}},
        {"name": "y", "autoscaling_config": {"min_replicas": 1, "max_replicas": 4},
         "ray_actor_options": {"num_gpus": 1}}]}]}
    demand = serve.gpu_demand(serve.parse(yaml.safe_dump(cfg)))
    assert (demand.gpus, demand.known) == (5.0, True)
    built_by_args = serve.gpu_demand(serve.parse(yaml.safe_dump({"applications": [{"name": "llm"}]})))
    assert (built_by_args.gpus, built_by_args.known) == (0.0, False)


def test_rayservices_sharing_a_serve_config_text_are_judged_each_on_its_own() -> None:
    # One analysis reads each distinct serveConfigV2 text once; three RayServices start from the
    # same text, one changes a deployment, one changes nothing, one breaks its YAML.
    import diffing

    def service(name: str, serve_text: str) -> str:
        return yaml.safe_dump({"apiVersion": "ray.io/v1", "kind": "RayService", "metadata": {"name": name},
                               "spec": {"serveConfigV2": serve_text, "rayClusterConfig": {
                                   "headGroupSpec": {"template": {"spec": {"containers": [
                                       {"name": "h", "image": "rayproject/ray:2.52.0"}]}}}}}})

    same = yaml.safe_dump(BASE)
    changed = yaml.safe_load(same)
    changed["applications"][0]["deployments"][1]["num_replicas"] = 5
    before = "---\n".join(service(n, same) for n in ("a", "b", "c"))
    after = "---\n".join([service("a", yaml.safe_dump(changed)), service("b", same),
                          service("c", "applications: [\n")])
    by_name = {r["name"]: r for r in diffing.analyze(before, after).to_dict()["resources"]}
    assert [c["path"] for c in by_name["a"]["changes"]] == [
        "spec.serveConfigV2.applications[name=a].deployments[name=D2].num_replicas"]
    assert by_name["a"]["rollout"] == "serve-in-place"
    assert (by_name["b"]["changes"], by_name["b"]["rollout"]) == ([], "none")
    assert any(f["code"] == "serve-config-invalid" for f in by_name["c"]["findings"])
