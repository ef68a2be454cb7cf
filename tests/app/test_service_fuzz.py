"""Hostile and generated input against the real server: never a 5xx, errors always in one shape."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    negative_data_rejection,
    response_schema_conformance,
    status_code_conformance,
)

ROUTES = ("/v1/analyze", "/v1/argocd/managed-resources")
FUZZ = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def assert_answer_is_sound(response: httpx.Response) -> None:
    assert response.status_code < 500, response.text[:500]
    if response.status_code >= 400:
        body = response.json()
        assert list(body) == ["error"]
        assert set(body["error"]) - {"location"} == {"code", "message"}
        assert isinstance(body["error"]["code"], str) and isinstance(body["error"]["message"], str)


@pytest.fixture(scope="module")
def client(analysis_service):
    with httpx.Client(base_url=analysis_service.base_url, timeout=30,
                      headers={"content-type": "application/json"}) as c:
        yield c


SAMPLE_RS = (Path(__file__).resolve().parents[2] / "samples/gpu-image-bump/after.yaml").read_text()
# Scalars that used to cost minutes or a 500: huge exponents and digit strings, tags Kubernetes
# cannot hold (issue 12).
HOSTILE_SCALARS = ['"1e200000"', '"1e4300"', "9" * 5000, '"' + "9" * 5000 + '"', "1e999", ".inf", ".nan",
                   "!!bool maybe", "!!float 1e999", "!!int 99x", "!!set {a, b}", "!!omap [a: 1]",
                   "!!binary aGk=", "!!timestamp 2001-12-14", "!!str 1", '"16Ei"', '"-1"', '"1e-200000"']
_PLACES = {"cpu": 'cpu: "2"', "replicas": "- replicas: 1", "rayVersion": 'rayVersion: "2.53.0"',
           "gpu": 'nvidia.com/gpu: "4"'}


def _with(where: str, what: str) -> str:
    """The real sample with one hostile scalar at ``where``."""
    place = _PLACES[where]
    assert place in SAMPLE_RS, place
    return SAMPLE_RS.replace(place, f"{place.rsplit(':', 1)[0]}: {what}", 1)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=30),
    lambda children: st.lists(children, max_size=4)
    | st.dictionaries(st.text(max_size=10), children, max_size=4),
    max_leaves=20)

yaml_texts = st.one_of(
    st.text(max_size=200),
    st.sampled_from([
        "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
            f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join([f'*{chr(97 + i)}'] * 9)}]\n" for i in range(9)),
        "[" * 5000 + "]" * 5000,
        "a: &a [*a]\n",
        "{a: 1, a: 2}",
        "apiVersion: ray.io/v1\nkind: RayService\nmetadata: {name: x}\nspec: []\n",
        "apiVersion: ray.io/v1\nkind: RayService\nmetadata: {name: [x]}\nspec: {}\n",
        "apiVersion: ray.io/v1\nkind: RayService\nmetadata: {name: x}\nspec: {rayClusterConfig: 7}\n",
        "apiVersion: ray.io/v1\nkind: RayService\nmetadata: {name: x}\nspec:\n  serveConfigV2: '[: ['\n",
        "---\n" * 20000,
        "a: !!python/object:os.system x\n",
        "\t\x00",
    ]),
    st.builds(_with, st.sampled_from(sorted(_PLACES)), st.sampled_from(HOSTILE_SCALARS)),
    st.integers(min_value=2, max_value=700).map(
        lambda n: "a: &x [" + ",".join(["v"] * n) + "]\nb: [" + ",".join(["*x"] * n) + "]\n"),
)

analyze_bodies = st.fixed_dictionaries(
    {"before": yaml_texts, "after": yaml_texts},
    optional={
        "kuberayVersion": st.one_of(st.text(max_size=8), st.sampled_from(["1.6.0", "1.7.2", "1.5"])),
        "headroom": st.dictionaries(st.text(max_size=15), st.integers() | st.text(max_size=6), max_size=3),
        "policy": st.dictionaries(st.sampled_from(["operator", "thresholds", "x"]), json_values, max_size=2)})

wrong_types = st.one_of(json_values, st.fixed_dictionaries(
    {"before": json_values, "after": json_values}, optional={"headroom": json_values, "policy": json_values}))


def managed_bodies() -> st.SearchStrategy[Any]:
    state = st.one_of(st.just("null"), st.just(""), yaml_texts,
                      json_values.map(json.dumps), st.just(json.dumps({"kind": "RayService"})),
                      st.just(json.dumps({"apiVersion": "ray.io/v1", "kind": "RayService",
                                          "metadata": {"name": "x"}, "spec": {}})))
    item = st.fixed_dictionaries({}, optional={
        "group": st.sampled_from(["ray.io", "", "apps"]), "kind": st.sampled_from(["RayService", "Service"]),
        "name": st.text(max_size=5), "namespace": st.text(max_size=5),
        "liveState": state | json_values, "targetState": state | json_values})
    return st.one_of(st.fixed_dictionaries({"items": st.lists(item, max_size=3)}), json_values)


@FUZZ
@given(body=analyze_bodies)
def test_fuzz_analyze_bodies_never_5xx(client, body):
    assert_answer_is_sound(client.post("/v1/analyze", content=json.dumps(body)))


@FUZZ
@given(body=wrong_types, route=st.sampled_from(ROUTES))
def test_fuzz_wrong_types_never_5xx(client, body, route):
    response = client.post(route, content=json.dumps(body))
    assert_answer_is_sound(response)


@FUZZ
@given(body=managed_bodies())
def test_fuzz_managed_resources_never_5xx(client, body):
    assert_answer_is_sound(client.post("/v1/argocd/managed-resources", content=json.dumps(body)))


@FUZZ
@given(raw=st.binary(max_size=300) | st.text(max_size=100).map(lambda t: ('{"before": "' + t).encode(
    "utf-8", "surrogatepass")) | st.sampled_from([
        json.dumps({"before": "", "after": ""}).encode("utf-16"),
        json.dumps({"before": "", "after": ""}).encode("utf-32"),
        b'{"before": "", "after": "", "n": ' + b"9" * 5000 + b"}",
        b'{"before": "", "after": "", "n": NaN}', b'{"before": "", "after": "", "n": -Infinity}',
        b'{"before": "", "after": "", "n": 1e999}']), route=st.sampled_from(ROUTES))
def test_fuzz_raw_bytes_never_5xx(client, raw, route):
    response = client.post(route, content=raw)
    assert_answer_is_sound(response)
    assert response.status_code in (200, 400, 422)


@pytest.mark.parametrize("route", ROUTES)
def test_deeply_nested_json_is_an_error_not_a_crash(client, route):
    statuses = []
    for depth in (200, 950, 100_000):
        nested = b"[" * depth + b"]" * depth
        for body in (b'{"before": ' + nested + b"}", b'{"items": [{"x": ' + nested + b"}]}"):
            response = client.post(route, content=body)
            assert_answer_is_sound(response)
            statuses.append(response.status_code)
    assert statuses[-2:] == [400, 400]  # too deep for the JSON reader: malformed, not a crash


def test_ten_megabyte_string_is_413(client):
    response = client.post("/v1/analyze", content=json.dumps({"before": "x" * 10_000_000, "after": ""}))
    assert (response.status_code, response.json()["error"]["code"]) == (413, "body-too-large")


def test_alias_bomb_is_refused_quickly(client):
    bomb = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join([f'*{chr(97 + i)}'] * 9)}]\n" for i in range(9))
    response = client.post("/v1/analyze", content=json.dumps({"before": bomb, "after": ""}))
    assert (response.status_code, response.json()["error"]["code"]) == (422, "invalid-manifest")
    assert response.elapsed.total_seconds() < 2


# schemathesis (Python API: its pytest plugin does not load under pytest 9): every operation of the
# app's own /openapi.json, positive and negative cases, over real HTTP.
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance,
          negative_data_rejection]


@pytest.mark.parametrize("mode", list(GenerationMode))
def test_openapi_operations_conform(analysis_service, mode):
    schema = schemathesis.openapi.from_url(analysis_service.base_url + "/openapi.json")
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) == 5
    for operation in operations:
        if mode is GenerationMode.NEGATIVE and operation.method.upper() != "POST":
            continue  # no parameters and no body: nothing to make invalid

        @given(case=operation.as_strategy(generation_mode=mode))
        @settings(max_examples=20, deadline=None, suppress_health_check=list(HealthCheck), database=None)
        def check(case: schemathesis.Case) -> None:
            response = case.call(base_url=analysis_service.base_url, timeout=30)
            case.validate_response(response, checks=CHECKS)

        check()
