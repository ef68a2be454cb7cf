"""Safe YAML loading with line numbers and hard limits (diffing/kube/loading.py), integers beyond 64
bits included: a located input error (exit 2 / HTTP 4xx), never a traceback.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import diffing
from diffing.errors import ManifestError
from diffing.kube.loading import MAX_INT, MIN_INT, Limits, load_documents, load_value
from diffing.kube.paths import Key
from tests.diffing.helpers import GPU_BEFORE, HUGE_HEX, _cli, _with


def test_load_documents_keeps_index_and_lines() -> None:
    docs = load_documents("a: 1\n---\n# c\nkind: X\nspec:\n  items:\n  - name: n\n    v: 2\n")
    assert [(d.index, d.value) for d in docs] == [
        (1, {"a": 1}), (2, {"kind": "X", "spec": {"items": [{"name": "n", "v": 2}]}})]
    assert docs[1].line_of(("spec", "items", Key("name", "n"), "v")) == 8
    assert docs[1].line_of(("spec", "missing")) == 5


def test_load_syntax_error_names_document_and_line() -> None:
    with pytest.raises(ManifestError) as exc:
        load_documents("a: 1\n---\nb: [1, 2\n", source="after.yaml")
    assert (exc.value.source, exc.value.document) == ("after.yaml", 2)
    assert exc.value.line == 4 or exc.value.line == 3
    assert exc.value.message.startswith("after.yaml, document 2, line")


def test_load_rejects_alias_bomb_quickly() -> None:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    for i in range(1, 12):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]")
    with pytest.raises(ManifestError, match="aliases expand to more than"):
        load_documents("\n".join(lines))


def test_load_allows_small_aliases() -> None:
    assert load_value("a: &x {k: 1}\nb: *x\n") == {"a": {"k": 1}, "b": {"k": 1}}


def test_load_rejects_recursive_alias() -> None:
    with pytest.raises(ManifestError, match="refers to itself"):
        load_documents("a: &x [*x]\n")


def test_load_rejects_duplicate_keys_with_both_lines() -> None:
    with pytest.raises(ManifestError, match=r"duplicate key 'name' \(first on line 2\)") as exc:
        load_documents("metadata:\n  name: a\n  name: b\n")
    assert exc.value.line == 3


def test_load_rejects_deep_nesting() -> None:
    with pytest.raises(ManifestError, match="nesting deeper than 100"):
        load_documents("a: " + "[" * 150 + "]" * 150)
    with pytest.raises(ManifestError, match="nesting deeper than 100"):
        load_documents("a: &x " + "[" * 150 + "]" * 150)


def test_load_rejects_nesting_past_libyaml_limit() -> None:
    with pytest.raises(ManifestError, match="nesting depth"):
        load_documents("[" * 5000 + "]" * 5000)


def test_analyze_turns_deep_nesting_into_an_input_error() -> None:
    import diffing
    from tests.builders import dump, sample

    text = dump(sample("sample"))
    deep = text.replace("  name: rayservice-sample\n",
                        "  name: rayservice-sample\n  labels: {x: " + "[" * 900 + "]" * 900 + "}\n")
    with pytest.raises(ManifestError, match="nesting deeper than 100 levels"):
        diffing.analyze(text, deep)


def test_load_rejects_oversized_text() -> None:
    with pytest.raises(ManifestError, match="over the 10-byte limit"):
        load_documents(b"a: 12345678901", limits=Limits(max_bytes=10))


def test_load_rejects_non_utf8_bytes() -> None:
    with pytest.raises(ManifestError, match="not UTF-8"):
        load_documents(b"a: \xff\xfe")


def test_load_refuses_python_tags() -> None:
    with pytest.raises(ManifestError):
        load_documents("a: !!python/object/apply:os.system ['true']\n")


def test_load_keeps_timestamps_and_odd_keys_as_strings() -> None:
    assert load_value("t: 2024-01-02\n1: x\ntrue: y\n") == {"t": "2024-01-02", "1": "x", "true": "y"}


def test_scalar_tags_follow_the_text_and_its_quoting_in_any_order() -> None:
    # The tag of a plain scalar is remembered by its text across loads: a quoted scalar with
    # the same text stays a string, before and after the plain one is seen.
    text = "a: '8'\nb: 8\nd: \"true\"\ne: true\ng: [8, '8', true, 'true', ~, '~']\n"
    want = {"a": "8", "b": 8, "d": "true", "e": True, "g": [8, "8", True, "true", None, "~"]}
    assert load_value(text) == want
    assert load_value(text) == want
    reordered = "b: 8\na: '8'\ne: true\nd: \"true\"\n"
    assert load_value(reordered) == {"b": 8, "a": "8", "e": True, "d": "true"}
    assert [type(v) for v in load_value(reordered).values()] == [int, str, bool, str]


def test_load_value_rejects_several_documents() -> None:
    with pytest.raises(ManifestError, match="expected one YAML document"):
        load_value("a: 1\n---\nb: 2\n")


def test_load_empty_and_comment_only_texts_have_no_values() -> None:
    assert load_documents("") == []
    assert [d.value for d in load_documents("# nothing\n")] == []


def test_load_rejects_lone_surrogates_with_a_line() -> None:
    with pytest.raises(ManifestError, match="lone surrogate") as exc:
        load_documents("a: 1\nb: '\ud800'\n", source="body")
    assert (exc.value.source, exc.value.line) == ("body", 2)


def test_one_line_json_documents_have_no_line_numbers() -> None:
    (doc,) = load_documents('{"spec": {"a": [1, 2]}}')
    assert doc.line_of(("spec", "a")) is None
    (doc,) = load_documents('{"spec":\n  {"a": [1, 2]}}')
    assert doc.line_of(("spec", "a")) == 2


# -- integers beyond 64 bits (``0x`` + 3 600 ``f``) ------------------------------------------

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


def test_cli_exits_2_naming_where_the_huge_integer_is(tmp_path: Path) -> None:
    before, after = tmp_path / "before.yaml", tmp_path / "after.yaml"
    before.write_text(GPU_BEFORE)
    after.write_text(_with(GPU_BEFORE, "- replicas: 1", f"- replicas: {HUGE_HEX}"))
    proc = _cli("analyze", str(before), str(after), "--format", "json")
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr
    assert str(after) in proc.stderr and "document 1" in proc.stderr and "line " in proc.stderr
    assert "workerGroupSpecs[0].replicas" in proc.stderr and "out of range" in proc.stderr


def test_reports_stay_json_serialisable_at_the_64_bit_edge() -> None:
    after = _with(GPU_BEFORE, "    - replicas: 1", f"    - replicas: {MAX_INT}")
    report = diffing.analyze(GPU_BEFORE, after)
    json.dumps(report.to_dict())
    diffing.render_markdown(report)
    assert report.decision == "hold"


def test_decode_refuses_utf8_behind_a_utf16_mark_and_keeps_real_utf16() -> None:
    from diffing.kube.scope import decode

    text = "apiVersion: ray.io/v1\nkind: RayService\n"
    assert decode(b"\xff\xfe" + text.encode("utf-16-le")) == text
    assert decode(text.encode("utf-16")) == text
    with pytest.raises(ManifestError, match="not one character of it is ASCII"):
        decode(b"\xfe\xff" + (text + "#").encode())  # an even number of bytes: it decodes
