"""Property tests: random edits of real samples never break the analyzer."""

from __future__ import annotations

import copy
import os
from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import diffing
from tests.builders import SAMPLES, dump, sample

NAMES = sorted(p.name[len("ray-service."):-len(".yaml")] for p in SAMPLES.glob("ray-service.*.yaml"))
SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-(2**40), 2**40), st.floats(allow_nan=False),
                    st.text(max_size=12), st.sampled_from(["1000m", "2Gi", "0", "", "TCP", "None"]))
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.one_of(st.lists(inner, max_size=3),
                            st.dictionaries(st.text(max_size=8), inner, max_size=3)),
    max_leaves=6)
# FUZZ_EXAMPLES=3000 for a deeper run than CI's.
PROFILE = settings(max_examples=int(os.environ.get("FUZZ_EXAMPLES", "120")), deadline=None,
                   suppress_health_check=[HealthCheck.too_slow])


def paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(value, dict):
        for k, v in value.items():
            out += paths(v, prefix + (k,))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out += paths(v, prefix + (i,))
    return out


def apply(obj: dict[str, Any], path: tuple[Any, ...], op: str, value: Any) -> dict[str, Any]:
    obj = copy.deepcopy(obj)
    if not path:
        return obj
    parent = obj
    for seg in path[:-1]:
        parent = parent[seg]
    last = path[-1]
    if op == "delete":
        del parent[last]
    elif op == "set":
        parent[last] = value
    elif op == "reverse" and isinstance(parent[last], list):
        parent[last] = parent[last][::-1]
    elif op == "duplicate" and isinstance(parent, list):
        parent.append(copy.deepcopy(parent[last]))
    return obj


@st.composite
def edits(draw: st.DrawFn) -> tuple[str, dict[str, Any], dict[str, Any]]:
    name = draw(st.sampled_from(NAMES))
    before = sample(name)
    after = before
    for _ in range(draw(st.integers(1, 3))):
        path = draw(st.sampled_from(paths(after)))
        op = draw(st.sampled_from(["delete", "set", "reverse", "duplicate"]))
        after = apply(after, path, op, draw(VALUES))
    return name, before, after


@PROFILE
@given(edits())
def test_random_edits_raise_only_the_documented_error(
        case: tuple[str, dict[str, Any], dict[str, Any]]) -> None:
    _, before, after = case
    try:
        report = diffing.analyze(dump(before), yaml.safe_dump(after) if isinstance(after, dict) else "")
    except diffing.ManifestError as exc:
        assert exc.message
        return
    out = report.to_dict()
    assert out["decision"] in ("approve", "hold", "ignore-differences")
    for r in out["resources"]:
        for change in r["changes"]:
            assert change["category"] in {c.value for c in diffing.Category}
        assert diffing.render_markdown(report)


@PROFILE
@given(edits())
def test_a_manifest_against_itself_is_none_and_approve(
        case: tuple[str, dict[str, Any], dict[str, Any]]) -> None:
    _, _, after = case
    text = yaml.safe_dump(after)
    try:
        report = diffing.analyze(text, text)
    except diffing.ManifestError:
        return
    assert report.decision == "approve"
    assert all((r.rollout, r.action, r.changes) == ("none", "unchanged", ()) for r in report.resources)


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(NAMES), st.data())
def test_random_text_damage_raises_only_manifest_error(name: str, data: st.DataObject) -> None:
    text = (SAMPLES / f"ray-service.{name}.yaml").read_text()
    pos = data.draw(st.integers(0, len(text)))
    junk = data.draw(st.text(alphabet="{}[]:-&*!|>'\"\t #\n", max_size=6))
    damaged = text[:pos] + junk + text[pos + data.draw(st.integers(0, 5)):]
    try:
        diffing.analyze(text, damaged)
    except diffing.ManifestError as exc:
        assert exc.document is not None or exc.path or exc.line is None


def test_reformatted_yaml_is_no_change() -> None:
    for name in NAMES:
        obj = sample(name)
        flow = yaml.safe_dump(obj, default_flow_style=True, width=10_000)
        report = diffing.analyze(dump(obj), flow)
        assert all(r.rollout == "none" and not r.changes for r in report.resources), name


@PROFILE
@given(edits())
def test_the_hash_walk_agrees_with_encoding_everything(
        case: tuple[str, dict[str, Any], dict[str, Any]]) -> None:
    """``same_encoding`` skips what is equal on both sides; the oracle encodes both whole
    ``rayClusterConfig``s the Go way, clears the muted fields and compares."""
    from diffing.engine import Engine
    from diffing.kube.gojson import drop_path, same_encoding
    from diffing.policy import Policy
    from diffing.versions import rules_for

    _, before, after = case
    engine = Engine(rules_for("1.7.0"), Policy())
    b = ((before.get("spec") or {}) if isinstance(before, dict) else {}).get("rayClusterConfig")
    a = ((after.get("spec") or {}) if isinstance(after, dict) and isinstance(after.get("spec"), dict)
         else {}).get("rayClusterConfig")
    sch = engine.schemas.child(engine.schemas.child(engine.schemas.root("v1"), "spec"), "rayClusterConfig")
    muted = frozenset(p[2:] for p in engine.rules.muted_patterns)

    def full(value: Any) -> Any:
        encoded = engine.gotypes.encode(value, engine.gotypes.root, engine.schemas, sch)
        for pattern in muted:
            drop_path(encoded, pattern)
        return encoded

    assert same_encoding(engine.gotypes, b, a, engine.gotypes.root, engine.schemas, sch, muted) == (
        full(b) == full(a))
