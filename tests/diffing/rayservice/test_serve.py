"""serveConfigV2 (diffing/rayservice/serve.py): the diff per application and deployment, Serve's GPU
demand, and the placement warnings it feeds.

A Serve deployment whose replicas ``max_replicas_per_node`` and the cluster's node count can never
place, or whose GPU demand is above what ``maxReplicas`` can ever supply, is a warning (issue 9,
point 10).
"""

from __future__ import annotations

from typing import Any

import pytest
import yaml

import diffing
from diffing.kube.paths import format_path
from diffing.rayservice import serve
from tests.builders import dump, edited, group, rcc, sample
from tests.diffing.helpers import GPU_BEFORE, HUGE_HEX, one, resource

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


NRS = "no-ray-serve-replica"  # head num-cpus 0; 2 workers (1..5), BaseService max_replicas_per_node 1
SD = "stable-diffusion"  # 1 GPU worker, maxReplicas 10


def serve_deployment(**fields: Any):  # type: ignore[no-untyped-def]
    def edit(o: dict[str, Any]) -> None:
        cfg = yaml.safe_load(o["spec"]["serveConfigV2"])
        deployments = cfg["applications"][0].setdefault("deployments", [{"name": "Model"}])
        deployments[0].update(fields)
        o["spec"]["serveConfigV2"] = yaml.safe_dump(cfg, sort_keys=False)
    return edit


def autoscaling(o: dict[str, Any]) -> None:
    rcc(o)["enableInTreeAutoscaling"] = True


PLACEMENT = [
    # (id, base, before edits, after edits, expected warning codes)
    ("replicas-fit-two-workers", NRS, [], [serve_deployment(num_replicas=2)], set()),
    ("replicas-beyond-workers-times-per-node", NRS, [], [serve_deployment(num_replicas=3)],
     {"serve-replicas-unplaceable"}),
    ("per-node-raised-makes-room", NRS, [], [serve_deployment(num_replicas=3, max_replicas_per_node=2)],
        set()),
    ("autoscaling-grows-to-max-replicas", NRS, [autoscaling], [serve_deployment(num_replicas=5)], set()),
    ("autoscaling-cannot-exceed-max-replicas", NRS, [autoscaling], [serve_deployment(num_replicas=6)],
     {"serve-replicas-unplaceable"}),
    ("serve-autoscaling-max-counts", NRS, [], [serve_deployment(
        num_replicas="auto", autoscaling_config={"min_replicas": 1, "max_replicas": 4})],
     {"serve-replicas-unplaceable"}),
    ("head-with-cpus-is-a-node-too", NRS, [lambda o: rcc(o)["headGroupSpec"]["rayStartParams"].__setitem__(
        "num-cpus", "1")], [serve_deployment(num_replicas=3)], set()),
    ("gpu-demand-over-max-replicas", SD, [], [serve_deployment(num_replicas=12,
        ray_actor_options={"num_gpus": 1})],
     {"serve-gpu-demand-exceeds-supply"}),
    ("gpu-demand-and-per-node", SD, [lambda o: group(o).__setitem__("maxReplicas", 2)],
     [serve_deployment(num_replicas=4, max_replicas_per_node=1, ray_actor_options={"num_gpus": 1})],
     {"serve-gpu-demand-exceeds-supply", "serve-replicas-unplaceable"}),
    ("gpu-demand-within-max-replicas", SD, [], [serve_deployment(num_replicas=8,
        ray_actor_options={"num_gpus": 1})],
     set()),
]

SERVE_WARNINGS = {"serve-replicas-unplaceable", "serve-gpu-demand-exceeds-supply"}


@pytest.mark.parametrize(("id_", "base", "before", "after", "codes"), PLACEMENT,
    ids=[p[0] for p in PLACEMENT])
def test_serve_placement_warnings(id_: str, base: str, before: list[Any], after: list[Any],
    codes: set[str]) -> None:
    b = edited(sample(base), *before)
    (r,) = diffing.analyze(dump(b), dump(edited(b, *after))).to_dict()["resources"]
    found = [f for f in r["findings"] if f["code"] in SERVE_WARNINGS]
    assert {f["code"] for f in found} == codes, found
    assert all(f["severity"] == "warning" for f in found)


def test_unplaceable_message_says_why() -> None:
    b = sample(NRS)
    (r,) = diffing.analyze(dump(b), dump(edited(b, serve_deployment(num_replicas=3)))).to_dict()["resources"]
    (f,) = [f for f in r["findings"] if f["code"] == "serve-replicas-unplaceable"]
    assert f["path"] == "spec.serveConfigV2.applications[name=simple_app].deployments[name=BaseService]"
    assert "up to 3 replicas" in f["message"] and "max_replicas_per_node 1" in f["message"]
    assert "2 Ray node(s)" in f["message"] and "autoscaling is off" in f["message"]


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


def test_an_integer_beyond_64_bits_in_serve_config_holds() -> None:
    obj = next(yaml.safe_load_all(GPU_BEFORE))
    serve = yaml.safe_load(obj["spec"]["serveConfigV2"])
    text = yaml.safe_dump(serve).replace("min_replicas: 1", f"min_replicas: {HUGE_HEX}", 1)
    assert HUGE_HEX in text
    obj["spec"]["serveConfigV2"] = text
    r = one(diffing.analyze(GPU_BEFORE, yaml.safe_dump(obj)))
    assert r["decision"] == "hold"
    finding = next(f for f in r["findings"] if f["code"] == "serve-config-invalid")
    assert "out of range" in finding["message"] and "line" in finding["message"]
