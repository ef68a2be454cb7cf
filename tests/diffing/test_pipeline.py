"""One pipeline for every kind (diffing/pipeline.py): objects paired across documents and kinds, a
rename (a delete and a create in one change, both running at once), notes weighed by the policy.
"""

from __future__ import annotations

import yaml

import diffing
from diffing import Finding
from tests.builders import dump, edited, sample, set_images, worker_container
from tests.diffing.helpers import LLM, RAYCLUSTER, TPU_JOB, one, renamed
from tests.diffing.raycluster.cluster import BASE, gpu, variant


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


def test_a_raycluster_next_to_a_rayservice_keeps_the_rayservice_report_unchanged() -> None:
    rs = open("samples/kuberay-v1.7.0/ray-service.sample.yaml").read()
    rs2 = rs.replace("2.52.0", "2.53.0")
    alone = diffing.analyze(rs, rs2).to_dict()["resources"]
    both = diffing.analyze(rs + "\n---\n" + yaml.safe_dump(BASE),
                           rs2 + "\n---\n" + yaml.safe_dump(variant(lambda o: gpu(o).update(replicas=1))))
    got = both.to_dict()["resources"]
    assert [r["kind"] for r in got] == ["RayService", "RayCluster"]
    assert got[0] == alone[0]


# -- a rename: a delete and a create in one change ---------------------------------------------

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


# -- unknown sources --------------------------------------------------------------------------------

def test_unknown_source_notes_are_weighed_by_source() -> None:
    note = Finding("error", "unknown-source", "apps/a.yaml",
                   "chart x from https://charts.example.com and path . from git@github.com:org/base.git")
    one = {"unknownSources": {"allow": ["charts.example.com"]}}
    both = {"unknownSources": {"allow": ["https://charts.example.com", "https://github.com/org/base"]}}
    report = diffing.analyze("", "", notes=[note], policy=one)
    assert (report.decision, report.findings[0].severity) == ("hold", "error")  # one source is not allowed
    report = diffing.analyze("", "", notes=[note], policy=both)
    assert (report.decision, report.findings[0].severity) == ("approve", "warning")
