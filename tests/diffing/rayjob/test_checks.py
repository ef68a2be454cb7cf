"""The findings about a RayJob change (diffing/rayjob/checks.py): cluster selectors, the traps, and
their order. Ids cite KubeRay as in jobs.py.
"""

from __future__ import annotations

from typing import Any

from diffing.report import SEVERITY_ORDER
from tests.diffing.rayjob.jobs import _codes, _job, _one, _rcs, _spec, _text, _update


def test_cluster_selector_added_to_an_own_cluster_leaks_it_RJC_904_910() -> None:
    r = _update(_spec(clusterSelector={"ray.io/cluster": "shared"}))
    assert r.rollout == "next-run" and r.decision == "approve"
    assert _codes(r) == {"rayjob-cluster-selector-leak": "warning"}
    assert "904-910" in r.findings[0].message and "429-432" in r.findings[0].message


def test_cluster_selector_removed_warns_about_the_shared_cluster_RJC_801_829() -> None:
    def before(j: dict[str, Any]) -> None:
        j["spec"]["clusterSelector"] = {"ray.io/cluster": "shared"}
    r = _update(lambda j: j["spec"].pop("clusterSelector"), before)
    assert r.rollout == "next-run"
    assert _codes(r) == {"rayjob-cluster-selector-removed": "warning"}
    assert "inferred" in r.findings[0].message


# -- the traps ---------------------------------------------------------------------------------

def test_upgrade_strategy_in_rayClusterSpec_never_gets_pods_VAL_49_55() -> None:
    r = _update(_rcs(lambda r: r.update(upgradeStrategy={"type": "Recreate"})))
    assert r.rollout == "next-run" and r.decision == "hold"  # the RayJob itself is accepted (VAL:605-612)
    assert _codes(r) == {"rayjob-upgrade-strategy": "error"}
    assert r.findings[0].path == "spec.rayClusterSpec.upgradeStrategy.type"
    created = _one("", _text(_job(_rcs(lambda r: r.update(upgradeStrategy={"type": "Recreate"})))))
    assert (created.rollout, created.decision) == ("create", "hold")


_APP = {"apiVersion": "argoproj.io/v1alpha1", "kind": "Application", "metadata": {"name": "jobs"},
        "spec": {"syncPolicy": {"automated": {"prune": True, "selfHeal": True}}}}


def _delete_self(j: dict[str, Any]) -> None:
    j["spec"].update(shutdownAfterJobFinishes=False, deletionStrategy={"deletionRules": [
        {"policy": "DeleteSelf", "condition": {"jobStatus": "SUCCEEDED", "ttlSeconds": 60}}]})


def test_delete_self_with_self_heal_reruns_the_job_RJC_1560_1587() -> None:
    job = _job(_delete_self)
    r = _one("", _text(job, _APP))
    assert _codes(r) == {"rayjob-deleteself-selfheal": "error"}
    assert r.decision == "hold"
    assert r.findings[0].path == "spec.deletionStrategy.deletionRules[0].policy"
    unknown = _one("", _text(job))  # no Application in sight: self-heal is not known
    assert _codes(unknown) == {"rayjob-deleteself-selfheal": "warning"}
    assert unknown.decision == "approve"


def test_delete_self_through_the_operator_env_RJC_1537_1542() -> None:
    policy = {"operator": {"env": {"DELETE_RAYJOB_CR_AFTER_JOB_FINISHES": "true"}}}
    r = _one("", _text(_job()), policy=policy)
    assert _codes(r) == {"rayjob-deleteself-selfheal": "warning"}
    assert r.findings[0].path == "spec.shutdownAfterJobFinishes"
    assert _codes(_one("", _text(_job()))) == {}


def test_legacy_delete_self_policy_is_the_same_trap() -> None:
    def edit(j: dict[str, Any]) -> None:
        j["spec"]["deletionStrategy"] = {"onSuccess": {"policy": "DeleteSelf"},
                                         "onFailure": {"policy": "DeleteCluster"}}
    r = _one("", _text(_job(edit), _APP))
    assert ("rayjob-deleteself-selfheal", "spec.deletionStrategy.onSuccess.policy") in [
        (f.code, f.path) for f in r.findings]


def test_findings_are_sorted_error_first() -> None:
    def edit(j: dict[str, Any]) -> None:
        _delete_self(j)
        j["spec"]["rayClusterSpec"]["upgradeStrategy"] = {"type": "Recreate"}
    r = _one("", _text(_job(edit)))
    ranks = [SEVERITY_ORDER[f.severity] for f in r.findings]
    assert ranks == sorted(ranks) and len(ranks) == 2
