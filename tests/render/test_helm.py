"""The Helm renderer: real renders through both engines, the helm-python-sdk child and a real ``helm``
binary (helm 4.2.1 built from its Go module by tests/tools.py; skipped with ``REAL HELM NOT BUILT``
where it cannot be built), and the ``helm template`` command line checked against a recording
stand-in ``helm`` (the arguments and environment are ours to check, whatever helm does with them).

Charts are written into ``tmp_path`` per test so every case shows the chart it renders.
"""

from __future__ import annotations

import json
import os
import stat
import sys
import tempfile
import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml

import app.render.helm as helm_module
from app.render.helm import HelmSource, helm_engine, render_helm
from app.render.helm_sdk import apply_set, load_values, merge_maps, split_manifests
from app.render.pipeline import repo_paths
from app.render.process import RenderError, RenderLimits, child_env

LIMITS = RenderLimits(timeout_s=30.0, max_bytes=10 * 1024 * 1024)

CONFIG_TEMPLATE = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-config
  namespace: {{ .Release.Namespace }}
data:
  values.json: {{ .Values | toJson | quote }}
"""


@pytest.fixture
def sdk() -> None:
    """Skips where the helm-python-sdk extra is not installed."""
    pytest.importorskip("helm_python")


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return path


def make_chart(folder: Path, *, name: str = "demo", values: str = "", templates: dict[str, str] | None = None,
               chart_yaml_extra: str = "") -> Path:
    """A chart folder: Chart.yaml, values.yaml and templates (by default one ConfigMap echoing .Values)."""
    write(folder / "Chart.yaml", f"apiVersion: v2\nname: {name}\nversion: 0.1.0\n{chart_yaml_extra}")
    write(folder / "values.yaml", values)
    for rel, text in (templates if templates is not None else {"configmap.yaml": CONFIG_TEMPLATE}).items():
        write(folder / "templates" / rel, text)
    return folder


def source(snapshot: Path, chart: Path, **kwargs: Any) -> HelmSource:
    return HelmSource(chart_dir=str(chart), snapshot=str(snapshot), release_name=kwargs.pop("release", "rel"),
                      **kwargs)


def docs(stream: str) -> list[dict[str, Any]]:
    return [doc for doc in yaml.safe_load_all(stream) if doc is not None]


def values_seen(stream: str) -> dict[str, Any]:
    """The values the ConfigMap template echoed back."""
    (config,) = [doc for doc in docs(stream) if doc["kind"] == "ConfigMap"]
    seen: dict[str, Any] = json.loads(config["data"]["values.json"])
    return seen


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    snapshot = tmp_path / "repo"
    snapshot.mkdir()
    return snapshot


# --- values, in Helm's order --------------------------------------------------------------------


def test_values_yaml_defaults(engine: str, repo: Path) -> None:
    chart = make_chart(repo / "charts" / "demo", values="replicas: 2\nimage: {repo: ray, tag: '2.9'}\n")
    out = render_helm(source(repo, chart), LIMITS, engine=engine)
    assert values_seen(out) == {"replicas": 2, "image": {"repo": "ray", "tag": "2.9"}}
    assert out.startswith("---\n# Source: demo/templates/configmap.yaml\n")


def test_values_file_overrides_defaults(engine: str, repo: Path) -> None:
    chart = make_chart(repo / "demo", values="replicas: 2\nimage: {repo: ray, tag: '2.9'}\n")
    prod = write(repo / "env" / "prod.yaml", "image: {tag: '2.10'}\n")
    out = render_helm(source(repo, chart, value_files=(str(prod),)), LIMITS, engine=engine)
    assert values_seen(out) == {"replicas": 2, "image": {"repo": "ray", "tag": "2.10"}}


def test_two_value_files_later_wins_and_maps_merge_deeply(engine: str, repo: Path) -> None:
    chart = make_chart(repo / "demo", values="a: {b: {c: 0, d: 0}}\nlist: [1, 2, 3]\n")
    first = write(repo / "one.yaml", "a: {b: {c: 1}, x: 1}\nlist: [9]\nonly: one\n")
    second = write(repo / "two.yaml", "a: {b: {d: 2}, x: 2}\nonly: two\n")
    out = render_helm(source(repo, chart, value_files=(str(first), str(second))), LIMITS, engine=engine)
    # Maps merge key by key at every depth; a list is replaced whole; the later file wins a key.
    assert values_seen(out) == {"a": {"b": {"c": 1, "d": 2}, "x": 2}, "list": [9], "only": "two"}


def test_inline_values_come_after_files_in_order(engine: str, repo: Path) -> None:
    chart = make_chart(repo / "demo", values="a: chart\nb: chart\nc: chart\n")
    file = write(repo / "v.yaml", "a: file\nb: file\nc: file\n")
    out = render_helm(source(repo, chart, value_files=(str(file),), values=("b: inline1\nc: inline1\n",
                                                                             "c: inline2\n")),
                      LIMITS, engine=engine)
    assert values_seen(out) == {"a": "file", "b": "inline1", "c": "inline2"}


def test_set_parameters_nested_list_index_and_force_string(engine: str, repo: Path) -> None:
    chart = make_chart(repo / "demo", values="ports: [80, 443, 8080]\nworkers: [{name: a, gpus: 1}]\n")
    params = (
        ("head.resources.gpu", "1", False),         # nested key, typed: an integer
        ("ports[1]", "8443", False),                # an index into a list of the chart's defaults ...
        ("workers[0].gpus", "4", False),            # ... and into a list of the values files
        ("serve.port", "123", True),                # --set-string keeps "123" a string
        ("note", "a,b", False),                     # Argo CD escapes commas: one string value
        ("hosts", "{x,y}", False),                  # ... but not in Helm's list syntax
    )
    out = render_helm(source(repo, chart, values=("workers: [{name: a, gpus: 1}, {name: b}]\n",),
                                 parameters=params), LIMITS, engine=engine)
    seen = values_seen(out)
    assert seen["head"] == {"resources": {"gpu": 1}}
    # Helm writes --set into the user's values only: the chart's default list is replaced, not patched.
    assert seen["ports"] == [None, 8443]
    # A list the values already hold is patched in place, element 1 kept.
    assert seen["workers"] == [{"name": "a", "gpus": 4}, {"name": "b"}]
    assert seen["serve"] == {"port": "123"}
    assert seen["note"] == "a,b"
    assert seen["hosts"] == ["x", "y"]


def test_set_string_applies_after_set_whatever_the_order(engine: str, repo: Path) -> None:
    chart = make_chart(repo / "demo")
    params = (("x", "1", True), ("x", "2", False))
    out = render_helm(source(repo, chart, parameters=params), LIMITS, engine=engine)
    assert values_seen(out) == {"x": "1"}


def test_release_name_and_namespace(engine: str, repo: Path) -> None:
    chart = make_chart(repo / "demo")
    (config,) = docs(render_helm(source(repo, chart, release="serve-prod", namespace="ray"), LIMITS,
                                 engine=engine))
    assert config["metadata"] == {"name": "serve-prod-config", "namespace": "ray"}
    (config,) = docs(render_helm(source(repo, chart, release="serve-prod"), LIMITS, engine=engine))
    assert config["metadata"]["namespace"] == "default"  # helm template's namespace without --namespace


def test_values_yaml_scalars_read_like_helm(engine: str, repo: Path) -> None:
    chart = make_chart(repo / "demo")
    file = write(repo / "v.yaml", "at: 12:30\nday: 2024-01-02\nflag: y\nmode: 0o17\nbig: 1e3\n")
    seen = values_seen(render_helm(source(repo, chart, value_files=(str(file),)), LIMITS, engine=engine))
    assert seen == {"at": "12:30", "day": "2024-01-02", "flag": True, "mode": 15, "big": 1000}


# --- output shape ---------------------------------------------------------------------------------


def test_stream_like_helm_template(engine: str, repo: Path) -> None:
    chart = make_chart(repo / "demo", templates={
        "b.yaml": "kind: B\nmetadata: {name: b1}\n---\n# only a comment\n---\n"
                  "kind: B\nmetadata: {name: b2}\n",
        "a.yaml": "kind: A\nmetadata: {name: a}\n",
        "empty.yaml": "{{- if false }}\nkind: Never\n{{- end }}\n",
        "NOTES.txt": "Thanks for installing {{ .Release.Name }}\n",
        "_helpers.tpl": '{{- define "demo.x" }}x{{ end }}\n',
    })
    write(chart / "crds" / "widgets.yaml", "apiVersion: apiextensions.k8s.io/v1\n"
          "kind: CustomResourceDefinition\nmetadata: {name: widgets.example.com}\n")
    out = render_helm(source(repo, chart), LIMITS, engine=engine)
    sources = [line for line in out.splitlines() if line.startswith("# Source: ")]
    if engine == "sdk":
        assert sources == ["# Source: demo/crds/widgets.yaml", "# Source: demo/templates/a.yaml",
                           "# Source: demo/templates/b.yaml", "# Source: demo/templates/b.yaml"]
    else:
        # helm keeps the comment-only document and sorts documents by kind (known kinds in its
        # install order, then unknown ones alphabetically: "" before "A" before "B"), each kind in
        # template-path order (helm v4.2.1 pkg/release/v1/util/kind_sorter.go, lessByKind).
        assert sources == ["# Source: demo/crds/widgets.yaml", "# Source: demo/templates/b.yaml",
                           "# Source: demo/templates/a.yaml", "# Source: demo/templates/b.yaml",
                           "# Source: demo/templates/b.yaml"]
    assert [d["metadata"]["name"] for d in docs(out)] == ["widgets.example.com", "a", "b1", "b2"]
    assert "Thanks" not in out


def test_subchart_renders_when_vendored_and_enabled(engine: str, repo: Path) -> None:
    chart = make_chart(repo / "demo", values="worker: {enabled: false}\n",
                       chart_yaml_extra="dependencies:\n  - name: worker\n    version: 0.1.0\n"
                                        "    condition: worker.enabled\n")
    make_chart(chart / "charts" / "worker", name="worker",
               templates={"w.yaml": "kind: Worker\nmetadata: {name: {{ .Release.Name }}-w}\n"})
    write(chart / "charts" / "worker" / "crds" / "w.yaml",
          "kind: CustomResourceDefinition\nmetadata: {name: w}\n")
    off = render_helm(source(repo, chart), LIMITS, engine=engine)
    assert {d["kind"] for d in docs(off)} == {"ConfigMap"}
    enable = (("worker.enabled", "true", False),)
    on = render_helm(source(repo, chart, parameters=enable), LIMITS, engine=engine)
    assert sorted(d["kind"] for d in docs(on)) == ["ConfigMap", "CustomResourceDefinition", "Worker"]


# --- failures -------------------------------------------------------------------------------------


def test_template_error_names_the_template(engine: str, repo: Path) -> None:
    broken = "kind: X\ndata: {{ .Values.missing.deeper }}\n"
    chart = make_chart(repo / "demo", templates={"broken.yaml": broken})
    with pytest.raises(RenderError) as caught:
        render_helm(source(repo, chart), LIMITS, engine=engine)
    assert caught.value.tool == "helm"
    assert "demo/templates/broken.yaml:2" in caught.value.message
    assert "nil pointer evaluating interface {}.deeper" in caught.value.message  # Go's template error
    if engine == "sdk":
        assert "\n" not in caught.value.message  # the child prints one line; helm prints three


def test_invalid_yaml_output_names_the_template(engine: str, repo: Path) -> None:
    chart = make_chart(repo / "demo", templates={"bad.yaml": "kind: X\n  nope: [\n"})
    with pytest.raises(RenderError, match="YAML parse error on demo/templates/bad.yaml"):
        render_helm(source(repo, chart), LIMITS, engine=engine)


def test_missing_dependency_fails_and_names_it(engine: str, repo: Path) -> None:
    chart = make_chart(repo / "demo", chart_yaml_extra="dependencies:\n  - name: redis\n    version: 1.0.0\n"
                                                        "    repository: https://charts.example.com\n")
    (chart / "charts").mkdir()
    with pytest.raises(RenderError, match="missing in charts/ directory: redis"):
        render_helm(source(repo, chart), LIMITS, engine=engine)


@pytest.mark.parametrize("text, problem, helm_says", [
    ("- a\n- b\n", "is not a YAML mapping", "cannot unmarshal array into Go value of type map"),
    ("a: [\n", "is not valid YAML", "yaml: line 1: did not find expected node content"),
    ("a: .nan\n", "holds .inf or .nan", "json: unsupported value: NaN"),
])
def test_bad_values_file_names_it(engine: str, repo: Path, text: str, problem: str, helm_says: str) -> None:
    chart = make_chart(repo / "demo")
    bad = write(repo / "env" / "bad.yaml", text)
    with pytest.raises(RenderError) as caught:
        render_helm(source(repo, chart, value_files=(str(bad),)), LIMITS, engine=engine)
    # helm names the file by the (absolute) path it was given; a finding carries the message with
    # the snapshot's folder cut out, as app.render.pipeline does for every renderer.
    message = repo_paths(caught.value.message, str(repo))
    if engine == "sdk":
        assert f"values file env/bad.yaml {problem}" in message
    else:
        assert message.startswith("Error: failed to parse env/bad.yaml: ") and helm_says in message
    assert str(repo) not in message


@pytest.mark.parametrize("document", ["- a\n", "a: [\n"])
def test_bad_inline_values_are_named_not_their_temporary_file(engine: str, repo: Path, document: str) -> None:
    """The binary engine hands inline values to helm as a private temporary file; a finding names them
    as the SDK child does, never by a path that changes on every run."""
    chart = make_chart(repo / "demo")
    with pytest.raises(RenderError) as caught:
        render_helm(source(repo, chart, values=("a: 1\n", document)), LIMITS, engine=engine)
    assert "inline values #2" in caught.value.message
    assert "rsi-helm-values-" not in caught.value.message and "/tmp" not in caught.value.message


def test_empty_values_file_is_no_values(engine: str, repo: Path) -> None:
    chart = make_chart(repo / "demo", values="a: 1\n")
    empty = write(repo / "empty.yaml", "# nothing yet\n")
    assert values_seen(render_helm(source(repo, chart, value_files=(str(empty),)), LIMITS,
                                   engine=engine)) == {"a": 1}


def test_time_limit_stops_the_child(engine: str, repo: Path) -> None:
    # 400 million loop iterations: far beyond a second of template work on any machine.
    heavy = "{{- range until 20000 }}{{- range until 20000 }}{{- end }}{{- end }}\nkind: Never\n"
    chart = make_chart(repo / "demo", templates={"heavy.yaml": heavy})
    with pytest.raises(RenderError, match="took longer than 1 s"):
        render_helm(source(repo, chart), RenderLimits(timeout_s=1.0), engine=engine)


def test_output_cap_stops_the_child(engine: str, repo: Path) -> None:
    chart = make_chart(repo / "demo", values="padding: " + "x" * 500 + "\n")
    with pytest.raises(RenderError, match="printed more than 100 bytes"):
        render_helm(source(repo, chart), RenderLimits(max_bytes=100), engine=engine)


def test_chart_folder_cannot_plant_modules_in_the_child(sdk: None, repo: Path) -> None:
    """The child runs with cwd = the chart folder; ``-P`` keeps a committed app/ or yaml.py from loading."""
    chart = make_chart(repo / "demo")
    write(chart / "app" / "__init__.py", "raise SystemExit('planted app imported')\n")
    write(chart / "app" / "render" / "__init__.py", "")
    write(chart / "app" / "render" / "helm_sdk.py", "print('kind: Planted')\n")
    write(chart / "yaml.py", "raise SystemExit('planted yaml imported')\n")
    assert [d["kind"] for d in docs(render_helm(source(repo, chart), LIMITS, engine="sdk"))] == ["ConfigMap"]


# --- path safety: refused before any child runs ----------------------------------------------------


@pytest.fixture
def no_child(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*_args: object, **_kwargs: object) -> bytes:
        raise AssertionError("a child was started")
    monkeypatch.setattr(helm_module, "run_tool", refuse)


@pytest.mark.parametrize("engine", ["sdk", "binary"])
def test_values_file_via_dotdot_leaves_the_repository(repo: Path, no_child: None, engine: str) -> None:
    chart = make_chart(repo / "charts" / "demo")
    write(repo.parent / "etc" / "x", "secret: 1\n")
    escaping = str(repo / "charts" / ".." / ".." / "etc" / "x")
    with pytest.raises(RenderError, match=r"values file \.\./etc/x leaves the repository"):
        render_helm(source(repo, chart, value_files=(escaping,)), LIMITS, engine=engine)


@pytest.mark.parametrize("engine", ["sdk", "binary"])
def test_values_file_via_symlink_leaves_the_repository(repo: Path, no_child: None, engine: str) -> None:
    chart = make_chart(repo / "demo")
    outside = write(repo.parent / "secret.yaml", "token: 1\n")
    link = repo / "env" / "prod.yaml"
    link.parent.mkdir()
    link.symlink_to(outside)
    with pytest.raises(RenderError, match="values file env/prod.yaml leaves the repository"):
        render_helm(source(repo, chart, value_files=(str(link),)), LIMITS, engine=engine)


def test_chart_file_symlink_leaving_the_repository_is_refused(repo: Path, no_child: None) -> None:
    chart = make_chart(repo / "demo")
    outside = write(repo.parent / "passwd", "root:x:0:0\n")
    (chart / "templates" / "leak.yaml").symlink_to(outside)
    with pytest.raises(RenderError, match="chart file demo/templates/leak.yaml is a symlink that leaves"):
        render_helm(source(repo, chart), LIMITS, engine="sdk")


def test_chart_folder_outside_the_repository_is_refused(repo: Path, no_child: None) -> None:
    chart = make_chart(repo.parent / "elsewhere")
    with pytest.raises(RenderError, match=r"chart folder \.\./elsewhere leaves the repository"):
        render_helm(source(repo, chart), LIMITS, engine="sdk")


def test_remote_values_file_is_refused(repo: Path, no_child: None) -> None:
    chart = make_chart(repo / "demo")
    url = "https://user:tok3n@example.com/values.yaml?sig=abc"
    with pytest.raises(RenderError, match="remote values files are not fetched") as caught:
        render_helm(source(repo, chart, value_files=(url,)), LIMITS, engine="binary")
    assert "tok3n" not in caught.value.message and "sig=" not in caught.value.message


def test_missing_values_file_is_named(repo: Path, no_child: None) -> None:
    chart = make_chart(repo / "demo")
    with pytest.raises(RenderError, match="values file env/gone.yaml does not exist"):
        render_helm(source(repo, chart, value_files=(str(repo / "env" / "gone.yaml"),)), LIMITS, engine="sdk")


@pytest.mark.parametrize("name", ["--post-renderer=./x", "Upper", "", "a" * 54, "ok\n"])
def test_invalid_release_name_is_refused(repo: Path, no_child: None, name: str) -> None:
    with pytest.raises(RenderError, match="release name"):
        render_helm(source(repo, make_chart(repo / "demo"), release=name), LIMITS, engine="binary")


# --- engine choice ------------------------------------------------------------------------------------


def test_no_engine_says_how_to_install(repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    monkeypatch.setattr(helm_module.importlib.util, "find_spec", lambda *_args, **_kwargs: None)
    assert helm_engine() is None
    with pytest.raises(RenderError, match=r"helm is not installed.*rayservice-impact\[helm\].*PATH"):
        render_helm(source(repo, make_chart(repo / "demo")), LIMITS)


# --- the helm binary, through a recording stand-in ----------------------------------------------------

STAND_IN = """\
#!{python}
import json, os, sys
args = sys.argv[1:]
inline = [args[i + 1] for i, a in enumerate(args) if a == "--values" and "rsi-helm-values-" in args[i + 1]]
record = {{"argv": args, "env": dict(os.environ), "cwd": os.getcwd(),
          "inline": {{p: open(p).read() for p in inline}}}}
with open({record!r}, "w") as f:
    json.dump(record, f)
sys.stdout.write({output!r})
sys.stderr.write({error!r})
sys.exit({code})
"""

MANIFEST = ("---\n# Source: demo/templates/configmap.yaml\n"
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n")


def install_stand_in(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *, output: str = MANIFEST,
                     error: str = "", code: int = 0, raw: bytes | None = None) -> Path:
    """A ``helm`` first on PATH that records argv/env/cwd to a file; returns that file's path."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    record = tmp_path / "helm-record.json"
    script = STAND_IN.format(python=sys.executable, record=str(record), output=output, error=error,
                              code=code)
    if raw is not None:
        script = script.replace(f"sys.stdout.write({output!r})", f"sys.stdout.buffer.write({raw!r})")
    helm = bin_dir / "helm"
    helm.write_text(script)
    helm.chmod(helm.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    return record


def test_binary_engine_is_preferred_on_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    install_stand_in(tmp_path, monkeypatch)
    assert helm_engine() == "binary"


def test_binary_command_line_environment_and_cleanup(repo: Path, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    record_path = install_stand_in(tmp_path, monkeypatch)
    monkeypatch.setenv("RAYSERVICE_IMPACT_GITHUB_TOKEN", "secret")
    chart = make_chart(repo / "charts" / "demo")
    one = write(repo / "env" / "one.yaml", "a: 1\n")
    two = write(repo / "env" / "two.yaml", "b: 2\n")
    src = source(repo, chart, release="serve", namespace="ray", value_files=(str(one), str(two)),
                 values=("c: 3\n", "d: 4\n"),
                 parameters=(("head.gpu", "1", False), ("tag", "123", True), ("note", "a,b", False)))

    assert render_helm(src, LIMITS) == MANIFEST  # auto picks the binary

    record = json.loads(record_path.read_text())
    argv = record["argv"]
    inline = list(record["inline"])
    real = os.path.realpath
    assert argv == ["template", "serve", real(chart), "--namespace", "ray",
                    "--values", real(one), "--values", real(two),
                    "--values", inline[0], "--values", inline[1],
                    "--set", "head.gpu=1", "--set", "note=a\\,b", "--set-string", "tag=123",
                    "--include-crds"]
    assert "--dependency-update" not in argv
    assert list(record["inline"].values()) == ["c: 3\n", "d: 4\n"]
    assert record["cwd"] == real(chart)
    # Nothing of ours reaches the child: not the token, not any variable the child env does not define.
    env = record["env"]
    assert "RAYSERVICE_IMPACT_GITHUB_TOKEN" not in env
    ours = set(child_env("/nowhere"))
    assert [key for key in os.environ if key not in ours and key in env] == []
    # The inline values files and their private folder are gone.
    for path in inline:
        assert not os.path.exists(path)
        assert not os.path.exists(os.path.dirname(path))


def test_binary_without_namespace_or_values(repo: Path, tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    record_path = install_stand_in(tmp_path, monkeypatch)
    chart = make_chart(repo / "demo")
    render_helm(source(repo, chart), LIMITS, engine="binary")
    argv = json.loads(record_path.read_text())["argv"]
    assert argv == ["template", "rel", os.path.realpath(chart), "--include-crds"]


def test_binary_failure_is_a_render_error(repo: Path, tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    failure = "Error: template: demo/templates/x.yaml:3: boom\n"
    install_stand_in(tmp_path, monkeypatch, output="", error=failure, code=1)
    private_tmp = tmp_path / "tmp"
    private_tmp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(private_tmp))
    with pytest.raises(RenderError) as caught:
        render_helm(source(repo, make_chart(repo / "demo"), values=("a: 1\n",)), LIMITS, engine="binary")
    assert caught.value.tool == "helm"
    assert "demo/templates/x.yaml:3: boom" in caught.value.message
    assert list(private_tmp.iterdir()) == []  # the inline values folder went with the failure


def test_binary_output_that_is_not_utf8(repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    install_stand_in(tmp_path, monkeypatch, raw=b"kind: A\n\xff\n")
    with pytest.raises(RenderError, match="not UTF-8 .*offset 8"):
        render_helm(source(repo, make_chart(repo / "demo")), LIMITS, engine="binary")


def test_binary_engine_refused_without_helm(repo: Path, tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    with pytest.raises(RenderError, match="helm is not installed"):
        render_helm(source(repo, make_chart(repo / "demo")), LIMITS, engine="binary")


# --- the merge rules themselves (no Go library needed) -----------------------------------------------


def test_merge_maps_like_helm() -> None:
    base = {"a": {"b": 1, "c": [1, 2]}, "d": {"e": 1}, "s": "x"}
    assert merge_maps(base, {"a": {"c": [3]}, "d": "flat", "s": {"now": "map"}}) == {
        "a": {"b": 1, "c": [3]}, "d": "flat", "s": {"now": "map"}}
    assert base == {"a": {"b": 1, "c": [1, 2]}, "d": {"e": 1}, "s": "x"}  # untouched


def test_apply_set_writes_into_lists_like_strvals() -> None:
    base = {"l": [1, 2, 3], "m": [{"k": 1, "j": 2}]}
    assert apply_set(base, {"l": [None, 9]}) == {"l": [1, 9, 3], "m": [{"k": 1, "j": 2}]}
    assert apply_set(base, {"m": [{"k": 5}]})["m"] == [{"k": 5, "j": 2}]
    assert apply_set(base, {"l": [None, None, None, None, 4]})["l"] == [1, 2, 3, None, 4]
    assert apply_set({}, {"n": [None, 1]}) == {"n": [None, 1]}


def test_values_loader_resolves_scalars_like_go() -> None:
    text = "a: y\nb: off\nc: 017\nd: 0x1F\ne: 1_000\nf: .5\ng: 2001-12-14\nh: 190:20:30\ni: =\nj: '08'\n"
    assert load_values(text, "v") == {"a": True, "b": False, "c": 15, "d": 31, "e": 1000, "f": 0.5,
                                      "g": "2001-12-14", "h": "190:20:30", "i": "=", "j": "08"}
    assert load_values("a: 1\n---\nb: 2\n---\n", "v") == {"a": 1, "b": 2}  # documents merge, as in Helm v4
    assert load_values("", "v") == {}
    # Custom tags are ignored, as Go's parser ignores them; nothing but plain data is ever built.
    assert load_values("a: !vault secret/x\nb: !!python/object:os.system {c: 1}\n", "v") == {
        "a": "secret/x", "b": {"c": 1}}


def test_split_manifests_like_helm() -> None:
    text = "\n---\nkind: A\n---   \nkind: B\n\n---\n# c\n---kind: C\n"
    # "---kind: C" splits too: Helm's separator needs no line break after the dashes.
    assert split_manifests(text) == ["kind: A", "kind: B", "# c", "kind: C\n"]
