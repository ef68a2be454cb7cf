"""What Go's ``encoding/json`` makes of a RayCluster spec (diffing/kube/gojson.py): pointers and
omitempty, canonical quantities, CRD defaults and pruning before encoding.
"""

from __future__ import annotations

from diffing.kube.gojson import ABSENT, OMIT, struct
from tests.diffing.kube.schema_nodes import CONTAINER, CONTAINER_SCH, GO, GROUP_SCH, SCHEMAS, enc


def test_gojson_pointer_keeps_presence_and_omitempty_drops_zero() -> None:
    assert "enableInTreeAutoscaling" not in enc({})
    assert enc({"enableInTreeAutoscaling": False})["enableInTreeAutoscaling"] is False
    assert "env" not in enc({"name": "c", "env": []}, CONTAINER, CONTAINER_SCH)
    assert enc({"name": "c", "securityContext": {}}, CONTAINER, CONTAINER_SCH)["securityContext"] == {}


def test_gojson_map_without_omitempty_keeps_null_vs_empty() -> None:
    t = struct("ray/v1.WorkerGroupSpec")
    assert enc({"groupName": "g"}, t, GROUP_SCH)["rayStartParams"] is None
    assert enc({"groupName": "g", "rayStartParams": {}}, t, GROUP_SCH)["rayStartParams"] == {}


def test_gojson_quantities_canonical_int_or_string_kept() -> None:
    out = enc({"name": "c", "resources": {"limits": {"cpu": "1000m", "memory": "2048Mi"}},
               "readinessProbe": {"httpGet": {"port": "8000"}}}, CONTAINER, CONTAINER_SCH)
    assert out["resources"]["limits"] == {"cpu": "1", "memory": "2Gi"}
    assert out["readinessProbe"]["httpGet"]["port"] == "8000"


def test_gojson_crd_defaults_and_pruning_apply_before_encoding() -> None:
    t = struct("ray/v1.WorkerGroupSpec")
    out = enc({"groupName": "g", "template": {"metadata": {"creationTimestamp": None, "labels": {"a": "b"}}}},
              t, GROUP_SCH)
    defaults = (out["numOfHosts"], out["replicas"], out["minReplicas"], out["maxReplicas"])
    assert defaults == (1, 0, 0, 2**31 - 1)
    assert out["template"]["metadata"] == {"labels": {"a": "b"}}


def test_gojson_absent_and_omitted_markers() -> None:
    assert GO.encode(ABSENT, ("pointer", "nil", "bool", "bool"), SCHEMAS, None) is OMIT
    assert GO.encode(ABSENT, ("slice", "never", "string", "string"), SCHEMAS, None) is None
