"""Green means safe: faults of the core that approved or crashed, each now a hold or a located
input error (exit 2 / HTTP 4xx), never an approve.

1. Accelerators by name: every extended resource (a device plugin's) counts like a GPU.
2. A rename (delete + create in one change): both objects run at once, the new one's
   accelerators are extra capacity.
3. Integers beyond 64 bits (``0x`` + 3 600 ``f``) are located input errors, not tracebacks.
"""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

import diffing
from diffing import Finding, Policy, PolicyError
from diffing.kube import resources as cap
from diffing.kube.loading import MAX_INT, MIN_INT, load_value
from tests.builders import dump, edited, sample, set_images, worker_container

ROOT = Path(__file__).resolve().parents[2]
LLM = sample("llm-serve")  # one worker of 4 nvidia.com/gpu
RAYCLUSTER = (ROOT / "samples/raycluster-image-bump/before.yaml").read_text()  # 4 nvidia.com/gpu
TPU_JOB = (ROOT / "tests/data/kuberay-rayjob/ray-job.tpu-v6e-singlehost.yaml").read_text()  # 4 TPUs
HUGE_HEX = "0x" + "f" * 3600  # parses as an int; printing it raises ValueError (4 300-digit limit)


def one(report: diffing.Report, name: str | None = None) -> dict[str, Any]:
    resources = report.to_dict()["resources"]
    return next(r for r in resources if name is None or r["name"] == name)


def device(name: str, count: int = 2) -> Any:
    """An edit: the one worker asks for ``count`` of ``name`` instead of its nvidia.com/gpu."""
    def edit(obj: dict[str, Any]) -> None:
        res = worker_container(obj)["resources"]
        for side in ("limits", "requests"):
            res[side].pop("nvidia.com/gpu", None)
            res[side][name] = str(count)
    return edit


def doubled(name: str) -> tuple[str, str]:
    """A RayService on ``name`` devices and an image bump of it: a new-cluster rollout."""
    before = edited(LLM, device(name))
    return dump(before), dump(edited(before, lambda o: set_images(o, "rayproject/ray-llm:2.53.0")))


# -- 1. accelerators by name -------------------------------------------------------------------

DEVICES = ["habana.ai/gaudi", "gpu.intel.com/i915", "nvidia.com/gpu.shared", "nvidia.com/mig-1g.5gb",
           "amd.com/gpu", "aws.amazon.com/neuroncore", "google.com/tpu", "example.com/foo"]


@pytest.mark.parametrize("name", DEVICES)
def test_doubling_any_extended_resource_holds_without_headroom(name: str) -> None:
    before, after = doubled(name)
    report = diffing.analyze(before, after)
    r = one(report)
    assert (r["rollout"], r["decision"]) == ("new-cluster", "hold")
    assert r["capacity"]["extra"][name] == 2  # an integer, like nvidia.com/gpu
    assert f"needs 2 extra {name}" in report.summary
    assert diffing.analyze(before, after, headroom={name: 2}).decision == "approve"
    assert diffing.analyze(before, after, headroom={name: 1}).decision == "hold"


@pytest.mark.parametrize("name", ["cpu", "memory", "ephemeral-storage", "storage", "hugepages-2Mi",
                                  "requests.example.com/foo", "kubernetes.io/batteries",
                                  "example.kubernetes.io/thing"])
def test_native_resources_never_count_as_accelerators(name: str) -> None:
    assert not cap.is_accelerator(name)


@pytest.mark.parametrize(("name", "family"), [
    ("habana.ai/gaudi", "(Habana Gaudi accelerator)"), ("gpu.intel.com/i915", "(Intel GPU)"),
    ("nvidia.com/gpu.shared", "(NVIDIA GPU shared by time-slicing or MPS)"),
    ("aws.amazon.com/neuroncore", ""), ("nvidia.com/mig-1g.5gb", ""),
    ("example.com/foo",
     "(an extended resource, counted as an accelerator; policy notAccelerators excludes it)"),
])
def test_hold_reasons_name_the_family(name: str, family: str) -> None:
    r = one(diffing.analyze(*doubled(name)))
    reason = next(x for x in r["reasons"] if x.startswith("the rollout needs"))
    named = f"{name} {family}" if family else name
    assert reason.startswith(f"the rollout needs 2 extra {named} while the old cluster still runs; no "
                             "headroom is known")


def test_an_unknown_extended_resource_gets_a_way_out_in_the_policy() -> None:
    before, after = doubled("example.com/foo")
    steps = one(diffing.analyze(before, after))["nextSteps"]
    assert any("`notAccelerators: [example.com/foo]`" in s for s in steps)
    r = one(diffing.analyze(before, after, policy={"notAccelerators": ["example.com/foo"]}))
    assert r["decision"] == "approve"  # the team said it is not a scarce device
    assert r["capacity"]["extra"]["example.com/foo"] == 2  # still reported
    gaudi = one(diffing.analyze(*doubled("habana.ai/gaudi")))["nextSteps"]
    assert not any("notAccelerators" in s for s in gaudi)  # a known family: no such hint


@pytest.mark.parametrize(("policy", "says"), [
    ({"notAccelerators": ["nvidia.com/gpu"]}, "known accelerator"),
    ({"notAccelerators": ["habana.ai/gaudi"]}, "Habana Gaudi accelerator"),
    ({"notAccelerators": ["gpu.intel.com/xe"]}, "Intel GPU"),
    ({"notAccelerators": ["cpu"]}, "not an extended resource"),
    ({"notAccelerators": "example.com/foo"}, "list of resource names"),
    ({"notAccelerators": [7]}, "list of resource names"),
    ({"notAccelerators": ["example.com/foo"], "accelerators": ["example.com/foo"]}, "also listed"),
])
def test_not_accelerators_is_validated_like_the_other_keys(policy: dict[str, Any], says: str) -> None:
    with pytest.raises(diffing.PolicyError) as err:
        diffing.analyze("", dump(LLM), policy=policy)
    assert err.value.key == "notAccelerators" and says in str(err.value)


def test_a_standalone_raycluster_scale_up_of_gaudi_holds() -> None:
    obj = yaml.safe_load(RAYCLUSTER)
    for group in obj["spec"]["workerGroupSpecs"]:
        for c in group["template"]["spec"]["containers"]:
            for side in ("limits", "requests"):
                c["resources"].get(side, {}).pop("nvidia.com/gpu", None)
            c["resources"].setdefault("limits", {})["habana.ai/gaudi"] = 1
    more = copy.deepcopy(obj)
    group = more["spec"]["workerGroupSpecs"][0]
    group["replicas"] += 2
    group["maxReplicas"] += 2
    r = one(diffing.analyze(yaml.safe_dump(obj), yaml.safe_dump(more)))
    assert (r["rollout"], r["decision"], r["capacity"]["extra"]["habana.ai/gaudi"]) == ("scale", "hold", 2)
    assert any("(Habana Gaudi accelerator)" in x for x in r["reasons"])


def test_gpu_without_toleration_names_any_accelerator() -> None:
    obj = edited(LLM, device("gpu.intel.com/i915"),
                 lambda o: o["spec"]["rayClusterConfig"]["workerGroupSpecs"][0]["template"]["spec"].pop(
                     "tolerations", None),
                 lambda o: o["spec"]["rayClusterConfig"]["workerGroupSpecs"][0]["template"]["spec"].pop(
                     "nodeSelector", None))
    codes = {f["code"]: f["message"] for f in one(diffing.analyze("", dump(obj)))["findings"]}
    assert "gpu.intel.com/i915" in codes["gpu-without-toleration"]


# -- 2. a rename: a delete and a create in one change ----------------------------------------------

def renamed(text: str, suffix: str = "-v2") -> str:
    docs = [d for d in yaml.safe_load_all(text) if d]
    for d in docs:
        d["metadata"]["name"] += suffix
    return yaml.safe_dump_all(docs)


def test_a_renamed_rayservice_holds_without_headroom() -> None:
    before = dump(LLM)
    report = diffing.analyze(before, renamed(before))
    new = one(report, "ray-serve-llm-v2")
    assert (new["action"], new["rollout"], new["decision"]) == ("created", "create", "hold")
    assert new["capacity"]["extra"]["nvidia.com/gpu"] == 4
    assert any(r.startswith("created while RayService default/ray-serve-llm is deleted: both run until the "
                            "old one is pruned") for r in new["reasons"])
    assert any("the new RayService needs 4 extra nvidia.com/gpu while the deleted one still runs; no "
               "headroom is known" in r for r in new["reasons"])
    assert "created while RayService default/ray-serve-llm is deleted: no headroom is known" in report.summary
    assert any("split the change" in s for s in new["nextSteps"])
    assert one(report, "ray-serve-llm")["decision"] == "approve"  # the delete alone is fine
    assert report.decision == "hold"


def test_a_rename_with_room_for_both_or_a_policy_that_says_so_approves() -> None:
    before = dump(LLM)
    assert diffing.analyze(before, renamed(before), headroom={"nvidia.com/gpu": 4}).decision == "approve"
    assert diffing.analyze(before, renamed(before), headroom={"nvidia.com/gpu": 3}).decision == "hold"
    assert diffing.analyze(before, renamed(before), policy={"thresholds": {"nvidia.com/gpu": 4}}).decision \
        == "approve"
    assert diffing.analyze(before, renamed(before), policy={"holdOnRecreate": "never"}).decision == "approve"


def test_a_plain_create_keeps_todays_behaviour() -> None:
    text = dump(LLM)
    r = one(diffing.analyze("", text))
    assert (r["rollout"], r["decision"]) == ("create", "approve")
    assert not any(x.startswith("created while") for x in r["reasons"])
    job = one(diffing.analyze("", TPU_JOB))
    assert (job["rollout"], job["decision"]) == ("create", "approve")


def test_a_rename_without_accelerators_approves() -> None:
    cpu_only = edited(LLM, lambda o: [c["resources"][side].pop("nvidia.com/gpu", None)
                                      for side in ("limits", "requests") for c in [worker_container(o)]])
    text = dump(cpu_only)
    assert diffing.analyze(text, renamed(text)).decision == "approve"


def test_a_deleted_object_another_controller_manages_frees_nothing_here() -> None:
    managed = edited(LLM, lambda o: o["spec"].__setitem__("managedBy", "kueue.x-k8s.io/multikueue"))
    r = one(diffing.analyze(dump(managed), renamed(dump(LLM))), "ray-serve-llm-v2")
    assert (r["rollout"], r["decision"]) == ("create", "approve")


def test_a_renamed_raycluster_holds_without_headroom() -> None:
    report = diffing.analyze(RAYCLUSTER, renamed(RAYCLUSTER))
    new = one(report, "train-l4-v2")
    assert (new["kind"], new["rollout"], new["decision"]) == ("RayCluster", "create", "hold")
    assert new["capacity"]["extra"]["nvidia.com/gpu"] == 4
    assert any(r.startswith("created while RayCluster ml-batch/train-l4 is deleted") for r in new["reasons"])
    room = {"nvidia.com/gpu": 4}
    assert diffing.analyze(RAYCLUSTER, renamed(RAYCLUSTER), headroom=room).decision == "approve"
    assert one(diffing.analyze("", RAYCLUSTER))["decision"] == "approve"  # a plain create


def test_a_renamed_rayjob_holds_even_without_a_known_headroom() -> None:
    report = diffing.analyze(TPU_JOB, renamed(TPU_JOB))
    new = one(report, "v6e-4-job-v2")
    assert (new["kind"], new["rollout"], new["decision"]) == ("RayJob", "create", "hold")
    assert any(r.startswith("created while RayJob default/v6e-4-job is deleted") for r in new["reasons"])
    assert any("google.com/tpu while the deleted one still runs; no headroom is known" in r
               for r in new["reasons"])
    assert diffing.analyze(TPU_JOB, renamed(TPU_JOB), headroom={"google.com/tpu": 4}).decision == "approve"


def test_a_move_across_kinds_counts_too() -> None:
    """A RayCluster replaced by a RayJob: the job's TPUs run next to the cluster's pods."""
    report = diffing.analyze(RAYCLUSTER, TPU_JOB)
    job = one(report, "v6e-4-job")
    assert job["decision"] == "hold"
    assert any(r.startswith("created while RayCluster ml-batch/train-l4 is deleted") for r in job["reasons"])


# -- 3. integers beyond 64 bits ------------------------------------------------------------------

def _with(text: str, old: str, new: str) -> str:
    assert old in text, old
    return text.replace(old, new, 1)


GPU_BEFORE = (ROOT / "samples/gpu-image-bump/before.yaml").read_text()


@pytest.mark.parametrize(("old", "new", "path"), [
    ('cpu: "2"', f"cpu: {HUGE_HEX}", "limits.cpu"),
    ("- replicas: 1", f"- replicas: {HUGE_HEX}", ".replicas"),
    ("containerPort: 8000", f"containerPort: {HUGE_HEX}", ".containerPort"),
    ("- replicas: 1", "- replicas: 0b" + "1" * 65, ".replicas"),
    ("- replicas: 1", "- replicas: 18446744073709551616", ".replicas"),
    ("- replicas: 1", "- replicas: -9223372036854775809", ".replicas"),
])
def test_an_integer_beyond_64_bits_is_a_located_manifest_error(old: str, new: str, path: str) -> None:
    after = _with(GPU_BEFORE, old, new)
    with pytest.raises(diffing.ManifestError) as err:
        diffing.analyze(GPU_BEFORE, after)
    exc = err.value
    assert (exc.source, exc.document) == ("after", 1)
    assert exc.line == after[:after.index(new)].count("\n") + 1
    assert exc.path.startswith("spec.") and exc.path.endswith(path)
    assert "out of range" in exc.reason and len(exc.message) < 400  # the text is shortened, not echoed


def test_64_bit_integers_are_still_read() -> None:
    assert load_value(f"a: {MAX_INT}\nb: {MIN_INT}\nc: 0x{'f' * 16}\nd: 1_000\n") == {
        "a": 2**64 - 1, "b": -(2**63), "c": 2**64 - 1, "d": 1000}


def test_an_integer_beyond_64_bits_is_located_under_anchors_and_merge_keys() -> None:
    tail = f"y:\n  z: [1, 2, {HUGE_HEX}]\n"
    for text in ("x: &a 1\n" + tail, "x: {q: 1}\n<<: {r: 2}\n" + tail):
        with pytest.raises(diffing.ManifestError) as err:
            load_value(text, source="t")
        assert (err.value.source, err.value.document, err.value.path) == ("t", 1, "y.z[2]")
        assert err.value.line == text.count("\n")  # the last line


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


@pytest.mark.parametrize(("headroom", "policy"), [
    ({"nvidia.com/gpu": 10**5000}, None),
    (None, {"thresholds": {"nvidia.com/gpu": 10**5000}}),
    (None, {"thresholds": {"cpu": -(10**5000)}}),
    (None, {"operator": {"env": {"ENABLE_ZERO_DOWNTIME": 10**5000}}}),
    (None, {"thresholds": {"cpu": [10**5000]}}),
])
def test_huge_integers_in_headroom_and_policy_are_policy_errors(headroom: Any, policy: Any) -> None:
    with pytest.raises(diffing.PolicyError) as err:
        diffing.analyze(GPU_BEFORE, GPU_BEFORE, headroom=headroom, policy=policy)
    assert len(str(err.value)) < 300


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "app", *args], capture_output=True, text=True, cwd=ROOT,
                          timeout=120)


def test_cli_exits_2_naming_where_the_huge_integer_is(tmp_path: Path) -> None:
    before, after = tmp_path / "before.yaml", tmp_path / "after.yaml"
    before.write_text(GPU_BEFORE)
    after.write_text(_with(GPU_BEFORE, "- replicas: 1", f"- replicas: {HUGE_HEX}"))
    proc = _cli("analyze", str(before), str(after), "--format", "json")
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr
    assert str(after) in proc.stderr and "document 1" in proc.stderr and "line " in proc.stderr
    assert "workerGroupSpecs[0].replicas" in proc.stderr and "out of range" in proc.stderr


@pytest.mark.parametrize("policy", [
    f"thresholds:\n  nvidia.com/gpu: {HUGE_HEX}\n",
    f"operator:\n  env:\n    ENABLE_ZERO_DOWNTIME: {HUGE_HEX}\n",
])
def test_cli_exits_2_for_a_policy_file_with_a_huge_integer(tmp_path: Path, policy: str) -> None:
    (tmp_path / "p.yaml").write_text(policy)
    (tmp_path / "rs.yaml").write_text(GPU_BEFORE)
    proc = _cli("analyze", str(tmp_path / "rs.yaml"), str(tmp_path / "rs.yaml"), "--policy",
                str(tmp_path / "p.yaml"))
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr and "out of range" in proc.stderr and "p.yaml" in proc.stderr


def test_cli_exits_2_for_a_huge_headroom(tmp_path: Path) -> None:
    (tmp_path / "rs.yaml").write_text(GPU_BEFORE)
    for amount in (HUGE_HEX, "9" * 5000):
        proc = _cli("analyze", str(tmp_path / "rs.yaml"), str(tmp_path / "rs.yaml"), "--headroom",
                    f"nvidia.com/gpu={amount}")
        assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
        assert "--headroom" in proc.stderr


def test_reports_stay_json_serialisable_at_the_64_bit_edge() -> None:
    after = _with(GPU_BEFORE, "    - replicas: 1", f"    - replicas: {MAX_INT}")
    report = diffing.analyze(GPU_BEFORE, after)
    json.dumps(report.to_dict())
    diffing.render_markdown(report)
    assert report.decision == "hold"


# -- unknown sources --------------------------------------------------------------------------------

@pytest.mark.parametrize(("value", "key"), [
    ("maybe", "unknownSources"), ({"default": "off"}, "unknownSources.default"),
    ({"allow": "github.com/x"}, "unknownSources.allow"), ({"allow": [""]}, "unknownSources.allow"),
    ({"deny": []}, "unknownSources"),
])
def test_unknown_sources_is_validated(value: object, key: str) -> None:
    with pytest.raises(PolicyError) as err:
        Policy.from_mapping({"unknownSources": value})
    assert err.value.key == key


def test_unknown_source_notes_are_weighed_by_source() -> None:
    note = Finding("error", "unknown-source", "apps/a.yaml",
                   "chart x from https://charts.example.com and path . from git@github.com:org/base.git")
    one = {"unknownSources": {"allow": ["charts.example.com"]}}
    both = {"unknownSources": {"allow": ["https://charts.example.com", "https://github.com/org/base"]}}
    report = diffing.analyze("", "", notes=[note], policy=one)
    assert (report.decision, report.findings[0].severity) == ("hold", "error")  # one source is not allowed
    report = diffing.analyze("", "", notes=[note], policy=both)
    assert (report.decision, report.findings[0].severity) == ("approve", "warning")
