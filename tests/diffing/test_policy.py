"""The decision policy (diffing/policy.py): what holds a change, and every key and amount a caller gives
checked.

Amounts callers give (headroom, thresholds) are checked (issue 9, point 8).

A negative, non-numeric or absurd value is an input error naming the value: ``PolicyError``
from the core, exit 2 from the CLI (``--headroom``), 422 from the HTTP API (the shell maps
every ``DiffingError`` there), never an internal error.
"""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

import diffing
from app import cli
from app.errors import error_for
from diffing import Policy, PolicyError
from diffing.errors import HeadroomError
from tests.builders import dump, edited, sample, set_images, worker_container
from tests.diffing.helpers import GPU_BEFORE, HUGE_HEX, _cli, resource
from tests.diffing.raycluster.cluster import BASE, RECREATE, one, spec, variant, worker_pod

LLM = sample("llm-serve")
BUMP = edited(LLM, lambda o: set_images(o, "rayproject/ray-llm:2.53.0-py311-cu128"))

BAD = [
    ("nvidia.com/gpu", -1, "negative"),
    ("nvidia.com/gpu", "-1", "negative"),
    ("cpu", "-500m", "negative"),
    ("nvidia.com/gpu", "lots", "not an amount"),
    ("nvidia.com/gpu", "", "not an amount"),
    ("nvidia.com/gpu", True, "not an amount"),
    ("nvidia.com/gpu", None, "not an amount"),
    ("nvidia.com/gpu", [8], "not an amount"),
    ("nvidia.com/gpu", float("nan"), "not"),
    ("nvidia.com/gpu", float("inf"), "not"),
    ("nvidia.com/gpu", 0.5, "whole number"),
    ("google.com/tpu", "1500m", "whole number"),
    ("memory", "1e400", "out of range|not a plausible amount"),
    ("cpu", "1e999999999", "not a plausible amount"),
    ("cpu", 10**19, "out of range|not a plausible amount"),
]


@pytest.mark.parametrize(("name", "value", "message"), BAD, ids=[f"{n}={v!r}" for n, v, _ in BAD])
def test_bad_headroom_is_a_headroom_error_naming_the_value(name: str, value: Any, message: str) -> None:
    """A headroom error says headroom, not policy: the caller gave no policy (issue 24)."""
    with pytest.raises(HeadroomError, match=message) as exc:
        diffing.analyze(dump(LLM), dump(BUMP), headroom={name: value})
    assert str(exc.value).startswith(f"headroom {name}: ")
    assert "policy" not in str(exc.value)
    assert exc.value.code == "invalid-headroom"
    assert isinstance(exc.value, PolicyError)  # callers catching PolicyError still catch it
    assert repr(value) in str(exc.value) or str(value) in str(exc.value)


# A name no pod can request, and the name it most likely stands for (issue 24).
NICKNAMES = [("gpu", "nvidia.com/gpu"), ("GPU", "nvidia.com/gpu"), ("tpu", "google.com/tpu"),
             ("gaudi", "habana.ai/gaudi"), ("i915", "gpu.intel.com/i915"), ("Memory", "memory"),
             ("memroy", "memory"), ("requests.nvidia.com/gpu", "nvidia.com/gpu"), ("cpu ", "cpu")]


@pytest.mark.parametrize(("name", "likely"), NICKNAMES)
def test_unknown_headroom_name_is_refused_with_the_likely_name(name: str, likely: str) -> None:
    with pytest.raises(HeadroomError) as exc:
        diffing.analyze(dump(LLM), dump(BUMP), headroom={name: 4})
    assert str(exc.value).endswith(f"did you mean {likely}?"), str(exc.value)


def test_unknown_headroom_name_without_a_likely_one_says_how_to_count_it() -> None:
    with pytest.raises(HeadroomError, match="list it under the policy's accelerators"):
        diffing.analyze(dump(LLM), dump(BUMP), headroom={"widgets": 4})
    # a device the policy names is taken as it is, and may be the likely name of a typo
    policy = {"accelerators": ["widgets"]}
    assert diffing.analyze(dump(LLM), dump(BUMP), headroom={"widgets": 4}, policy=policy).decision == "hold"
    with pytest.raises(HeadroomError, match="did you mean widgets"):
        diffing.analyze(dump(LLM), dump(BUMP), headroom={"widget": 4}, policy=policy)


def test_unknown_threshold_name_is_a_policy_error_with_the_likely_name() -> None:
    with pytest.raises(PolicyError, match=r"^policy thresholds\.gpu: .*did you mean nvidia\.com/gpu\?$"):
        diffing.analyze("", dump(LLM), policy={"thresholds": {"gpu": 1}})


def test_cli_unknown_headroom_name_exits_2_with_the_likely_name(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["analyze", "/dev/null", "/dev/null", "--headroom", "gpu=4"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("rayservice-impact: --headroom 'gpu=4': ")
    assert err.rstrip().endswith("did you mean nvidia.com/gpu?")
    assert "policy" not in err


@pytest.mark.parametrize(("name", "value", "message"), BAD[:7], ids=[f"{n}={v!r}" for n, v, _ in BAD[:7]])
def test_bad_threshold_is_a_policy_error(name: str, value: Any, message: str) -> None:
    with pytest.raises(diffing.PolicyError, match=message):
        diffing.analyze("", dump(LLM), policy={"thresholds": {name: value}})


GOOD = [({"nvidia.com/gpu": 0}, "hold"), ({"nvidia.com/gpu": "4"}, "approve"), ({"nvidia.com/gpu": 4.0},
    "approve"),
        ({"cpu": "1.5", "memory": "64Gi", "nvidia.com/gpu": 8}, "approve")]


@pytest.mark.parametrize(("headroom", "decision"), GOOD)
def test_good_headroom_is_used(headroom: dict[str, Any], decision: str) -> None:
    assert diffing.analyze(dump(LLM), dump(BUMP), headroom=headroom).decision == decision


CLI_BAD = ["nvidia.com/gpu=-1", "nvidia.com/gpu=lots", "nvidia.com/gpu=0.5", "cpu=1e30", "memory=-1Gi"]


@pytest.mark.parametrize("item", CLI_BAD)
def test_cli_bad_headroom_exits_2_naming_the_value(item: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["analyze", "/dev/null", "/dev/null", "--headroom", item]) == 2
    err = capsys.readouterr().err
    assert f"--headroom {item!r}" in err and "internal error" not in err


def test_http_api_answers_422_for_the_same_error() -> None:
    with pytest.raises(diffing.PolicyError) as exc:
        diffing.analyze("", "", headroom={"nvidia.com/gpu": -1})
    status, body, _ = error_for(exc.value)
    assert status == 422
    assert body["error"]["code"] == "invalid-headroom"
    assert "'-1'" in body["error"]["message"] or "-1 is negative" in body["error"]["message"]


def test_measured_headroom_is_lenient() -> None:
    """A live measurement below zero (an over-committed node) is 0 free, not an input error."""
    from diffing.policy import parse_headroom

    assert parse_headroom({"nvidia.com/gpu": -2, "cpu": "x"},
        measured=True) == {"nvidia.com/gpu": Fraction(0)}
    live = {"default/ray-serve-llm": diffing.LiveCluster(active_cluster="a", headroom={"nvidia.com/gpu": -2})}
    report = diffing.analyze(dump(LLM), dump(BUMP), live=live)
    assert report.decision == "hold"
    assert "the known headroom covers 0" in " ".join(report.resources[0].reasons)


LLM_BUMP = edited(LLM, lambda o: set_images(o, "rayproject/ray-llm:2.53.0-py311-cu128"))


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


# -- RayCluster keys ---------------------------------------------------------------------------------

def test_policy_can_approve_a_recreate_and_hold_every_latent_change() -> None:
    edit = variant(lambda o: worker_pod(o)["containers"][0].update(env=[{"name": "X", "value": "1"}]),
                   base=RECREATE)
    assert one(RECREATE, edit, policy={"raycluster": {"holdOnRecreate": False}})["decision"] == "approve"
    latent = variant(lambda o: worker_pod(o)["containers"][0].update(env=[{"name": "X", "value": "1"}]))
    assert one(BASE, latent, policy={"raycluster": {"holdOnLatent": "always"}})["decision"] == "hold"
    skew = variant(lambda o: spec(o).update(rayVersion="2.53.0"))
    assert one(BASE, skew, policy={"raycluster": {"holdOnLatent": "never"}})["decision"] == "approve"


def test_policy_rejects_unknown_raycluster_keys() -> None:
    with pytest.raises(diffing.PolicyError):
        diffing.analyze("", "", policy={"raycluster": {"holdOnOrphans": True}})
