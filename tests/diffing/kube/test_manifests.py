"""KubeRay manifests as read from texts (diffing/kube/manifests.py): an object twice on one side, the
default namespace, server-set fields, RayClusters another object owns.
"""

from __future__ import annotations

import pytest

import diffing
from tests.builders import dump, edited, group, sample
from tests.diffing.helpers import resource
from tests.diffing.raycluster.cluster import analyse, variant


def test_duplicate_rayservice_in_one_side_is_an_input_error() -> None:
    text = dump(sample("sample"))
    with pytest.raises(diffing.ManifestError, match="appears twice") as exc:
        diffing.analyze("", text + "---\n" + text)
    assert exc.value.document == 2


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


def test_an_owned_raycluster_is_not_analysed() -> None:
    owned = variant(lambda o: o["metadata"].update(ownerReferences=[
        {"apiVersion": "ray.io/v1", "kind": "RayJob", "name": "j", "uid": "u"}]))
    report = analyse(None, owned)
    assert report["resources"] == [] and report["notAnalysed"] == {"RayCluster": 1}
