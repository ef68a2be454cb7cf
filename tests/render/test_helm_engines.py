"""The two Helm engines against each other: the ``binary`` engine running a real helm (4.2.1, built by
tests/tools.py) and the ``sdk`` engine (helm-python-sdk 0.2.2, whose Go library is Helm 4.2.3: the
same chart rendering code, as the two releases differ only in pkg/kube/statuswait.go), on every
chart the render tests use.

The streams are not byte-identical. helm ``template`` and the SDK child's assembly
(app/render/helm_sdk.py ``assemble``) differ in three ways that change no object:

1. helm prints each template's text as it rendered it, so a document that ends its file keeps the
   file's final newline (a blank line before the next ``---``); the SDK child strips trailing
   whitespace from every document;
2. helm keeps a document that holds only comments; the SDK child drops it;
3. order: both print CRDs first, in the same order. Then helm orders documents by kind (helm
   v4.2.1 pkg/release/v1/util/kind_sorter.go: known kinds in its install order, then unknown
   kinds alphabetically) and prints hooks after everything else (pkg/cmd/template.go); within one
   kind, both keep template-path order and, within a file, the file's order. The SDK child keeps
   template-path order throughout.

So the test compares documents after stripping trailing whitespace and dropping comment-only
ones (:func:`documents`): the same documents, byte for byte; the same order within each kind
(hooks apart); CRDs first in both; the SDK's in path order. Two differences do change a value,
and are asserted as they are: ``.Capabilities.HelmVersion`` (the SDK's library carries no release
stamp: ``v4.2``, a release build ``v4.2.1``), and a ``--set`` integer of a million or more, which
prints as ``1e+06`` through the SDK (it reaches Go as a JSON number, a float64) and as ``1000000``
through helm (docs/rendering.md).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from gitops import SAMPLE
from test_helm import CONFIG_TEMPLATE, LIMITS, docs, make_chart, source, write

from app.render.helm import HelmSource, render_helm

pytestmark = pytest.mark.usefixtures("helm_on_path")

OLD_IMAGE = "rayproject/ray-llm:2.52.0-py311-cu128"  # tests/render/test_render_git.py's chart


@pytest.fixture(autouse=True)
def _sdk() -> None:
    pytest.importorskip("helm_python")


# --- the charts the render tests use ----------------------------------------------------------------

def echo_values(repo: Path) -> HelmSource:
    """test_helm.py's values tests in one render: defaults, two files, inline values, --set and
    --set-string with list indexes and Argo CD's comma escaping."""
    chart = make_chart(repo / "charts" / "demo", values="replicas: 2\nimage: {repo: ray, tag: '2.9'}\n"
                                                        "a: {b: {c: 0, d: 0}}\nports: [80, 443, 8080]\n")
    one = write(repo / "env" / "one.yaml", "a: {b: {c: 1}, x: 1}\nlist: [9]\nimage: {tag: '2.10'}\n")
    two = write(repo / "env" / "two.yaml", "a: {b: {d: 2}, x: 2}\nworkers: [{name: a, gpus: 1}]\n")
    params = (("head.resources.gpu", "1", False), ("ports[1]", "8443", False),
              ("workers[0].gpus", "4", False), ("serve.port", "123", True), ("note", "a,b", False),
              ("hosts", "{x,y}", False), ("x", "1", True), ("x", "2", False))
    return source(repo, chart, release="serve-prod", namespace="ray", value_files=(str(one), str(two)),
                  values=("workers: [{name: a, gpus: 1}, {name: b}]\n", "c: inline2\n"), parameters=params)


def go_scalars(repo: Path) -> HelmSource:
    chart = make_chart(repo / "demo")
    file = write(repo / "v.yaml", "at: 12:30\nday: 2024-01-02\nflag: y\nmode: 0o17\nbig: 1e3\noct: 017\n"
                                  "hex: 0x1F\nunder: 1_000\nhalf: .5\nquoted: '08'\nmillion: 1000000\n"
                                  "tagged: !vault secret/x\n")
    return source(repo, chart, value_files=(str(file),))


def stream_shape(repo: Path) -> HelmSource:
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
    return source(repo, chart)


def subchart(enabled: bool) -> Callable[[Path], HelmSource]:
    def build(repo: Path) -> HelmSource:
        chart = make_chart(repo / "demo", values="worker: {enabled: false}\n",
                           chart_yaml_extra="dependencies:\n  - name: worker\n    version: 0.1.0\n"
                                            "    condition: worker.enabled\n")
        make_chart(chart / "charts" / "worker", name="worker",
                   templates={"w.yaml": "kind: Worker\nmetadata: {name: {{ .Release.Name }}-w}\n"})
        write(chart / "charts" / "worker" / "crds" / "w.yaml",
              "kind: CustomResourceDefinition\nmetadata: {name: w}\n")
        return source(repo, chart, parameters=(("worker.enabled", str(enabled).lower(), False),))
    return build


def llm_rayservice(repo: Path) -> HelmSource:
    """test_render_git.py's chart: KubeRay's LLM RayService sample as a template."""
    template = SAMPLE.read_text().replace(OLD_IMAGE, "{{ .Values.image }}")
    template = template.replace("name: ray-serve-llm", "name: {{ .Release.Name }}", 1)
    chart = repo / "charts" / "llm"
    write(chart / "Chart.yaml", "apiVersion: v2\nname: llm\nversion: 0.1.0\n")
    write(chart / "values.yaml", f"image: {OLD_IMAGE}\n")
    write(chart / "templates" / "rayservice.yaml", template)
    return source(repo, chart, release="llm", namespace="ray-prod")


def limits_echo(repo: Path) -> HelmSource:
    """test_render_limits.py's chart."""
    chart = make_chart(repo / "chart", values="a: 1\n", templates={"cm.yaml": (
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\n"
        "data:\n  i: {{ .Values.i | toJson | quote }}\n")})
    return source(repo, chart, values=("i: [1, 2]\n",))


def install_order(repo: Path) -> HelmSource:
    """A RayCluster chart laid out so that helm reorders it: path order is RayCluster, Service,
    ServiceAccount, a ConfigMap and a hook Job; helm prints ServiceAccount, ConfigMap, Service,
    RayCluster (an unknown kind, last) and then the hook."""
    name = "{{ .Release.Name }}"
    values = "image: rayproject/ray:2.52.0\nworkers: 2\n"
    chart = make_chart(repo / "ray", name="ray", values=values, templates={
        "a-raycluster.yaml": f"apiVersion: ray.io/v1\nkind: RayCluster\nmetadata:\n  name: {name}\n"
                             "spec:\n  workerGroupSpecs:\n  - groupName: gpu\n"
                             "    replicas: {{ .Values.workers }}\n"
                             "    template:\n      spec:\n        containers:\n        - name: ray-worker\n"
                             "          image: {{ .Values.image }}\n",
        "b-service.yaml": f"apiVersion: v1\nkind: Service\nmetadata: {{name: {name}-head}}\n",
        "c-serviceaccount.yaml": f"apiVersion: v1\nkind: ServiceAccount\nmetadata: {{name: {name}}}\n"
                                 f"---\napiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {name}-cfg}}\n",
        "0-hook.yaml": "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: {{ .Release.Name }}-check\n"
                       "  annotations: {\"helm.sh/hook\": pre-install}\n",
        "_helpers.tpl": '{{- define "ray.name" }}{{ .Chart.Name }}{{ end }}\n',
    })
    return source(repo, chart, release="raycluster")


def builtins(repo: Path) -> HelmSource:
    """Helm's built-in objects and functions that differ between a cluster and none: the Kubernetes
    version and API versions helm assumes, ``lookup`` (empty without a cluster), ``.Files``, ``tpl``."""
    chart = make_chart(repo / "demo", values="greeting: 'hi {{ .Release.Name }}'\n", templates={"b.yaml": (
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: builtins}\ndata:\n"
        "  kube: {{ .Capabilities.KubeVersion.Version | quote }}\n"
        "  minor: {{ .Capabilities.KubeVersion.Minor | quote }}\n"
        "  apps: {{ .Capabilities.APIVersions.Has \"apps/v1\" | quote }}\n"
        "  ray: {{ .Capabilities.APIVersions.Has \"ray.io/v1\" | quote }}\n"
        "  install: {{ .Release.IsInstall | quote }}\n"
        "  service: {{ .Release.Service | quote }}\n"
        "  revision: {{ .Release.Revision | quote }}\n"
        "  chart: {{ .Chart.Name }}-{{ .Chart.Version }}\n"
        "  lookup: {{ lookup \"v1\" \"Namespace\" \"\" \"default\" | toJson | quote }}\n"
        "  file: {{ .Files.Get \"files/note.txt\" | quote }}\n"
        "  tpl: {{ tpl .Values.greeting . | quote }}\n")})
    write(chart / "files" / "note.txt", "from the chart\n")
    return source(repo, chart, release="rel")


CHARTS: dict[str, Callable[[Path], HelmSource]] = {
    "echo-values": echo_values,
    "go-scalars": go_scalars,
    "stream-shape": stream_shape,
    "subchart-off": subchart(False),
    "subchart-on": subchart(True),
    "default-configmap": lambda repo: source(repo, make_chart(repo / "demo")),
    "llm-rayservice": llm_rayservice,
    "limits-echo": limits_echo,
    "install-order": install_order,
    "builtins": builtins,
}


# --- the comparison -------------------------------------------------------------------------------

_BLOCK = re.compile(r"^---\n# Source: ([^\n]*)\n", re.M)


def blocks(stream: str) -> list[tuple[str, str]]:
    """(source, text) of each document, in order; the stream must be made of such blocks only."""
    starts = list(_BLOCK.finditer(stream))
    assert starts and starts[0].start() == 0, stream[:200]
    ends = [m.start() for m in starts[1:]] + [len(stream)]
    return [(m.group(1), stream[m.end():end]) for m, end in zip(starts, ends, strict=True)]


@dataclass(frozen=True, order=True)
class Doc:
    source: str
    body: str   # without trailing whitespace
    group: str  # "crd", or the kind, with " (hook)" for a helm hook


def documents(stream: str) -> list[Doc]:
    """The stream's documents in order, trailing whitespace stripped, comment-only ones dropped."""
    found = []
    for src, text in blocks(stream):
        body = text.rstrip()
        if all(not line.strip() or line.lstrip().startswith("#") for line in body.splitlines()):
            continue
        obj = yaml.safe_load(body) or {}
        hook = "helm.sh/hook" in ((obj.get("metadata") or {}).get("annotations") or {})
        group = "crd" if "/crds/" in src else str(obj.get("kind", "")) + (" (hook)" if hook else "")
        found.append(Doc(src, body, group))
    return found


def assert_same_documents(binary: str, sdk: str) -> None:
    ours, theirs = documents(sdk), documents(binary)
    assert sorted(theirs) == sorted(ours)  # the same documents, byte for byte
    for group in {d.group for d in ours}:  # the same order within each kind
        assert [d for d in theirs if d.group == group] == [d for d in ours if d.group == group], group
    crds = [d for d in ours if d.group == "crd"]
    assert ours[:len(crds)] == theirs[:len(crds)] == crds  # CRDs first in both
    assert [d.source for d in ours[len(crds):]] == sorted(d.source for d in ours[len(crds):])
    assert "".join(f"---\n# Source: {d.source}\n{d.body}\n" for d in ours) == sdk  # nothing else dropped


@pytest.mark.parametrize("name", list(CHARTS))
def test_binary_and_sdk_agree_on_every_test_chart(name: str, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    src = CHARTS[name](repo)
    binary = render_helm(src, LIMITS, engine="binary")
    sdk = render_helm(src, LIMITS, engine="sdk")
    assert docs(sdk), "the chart renders nothing: a vacuous comparison"
    assert_same_documents(binary, sdk)


def test_the_differences_are_real(tmp_path: Path) -> None:
    """Each of the three differences shows on the charts above (the normal form is not a no-op)."""
    repo = tmp_path / "repo"
    repo.mkdir()
    binary = render_helm(install_order(repo), LIMITS, engine="binary")
    sdk = render_helm(install_order(repo), LIMITS, engine="sdk")
    order = [src.rsplit("/", 1)[-1] for src, _ in blocks(binary)]
    assert order == ["c-serviceaccount.yaml", "c-serviceaccount.yaml", "b-service.yaml", "a-raycluster.yaml",
                     "0-hook.yaml"]
    assert [src.rsplit("/", 1)[-1] for src, _ in blocks(sdk)] == sorted(order)
    assert "\n\n---\n" in binary and "\n\n---\n" not in sdk  # a template's final newline
    shape = tmp_path / "shape"
    shape.mkdir()
    kept = [text for _, text in blocks(render_helm(stream_shape(shape), LIMITS, engine="binary"))]
    assert "# only a comment\n" in kept


def test_set_integers_of_a_million_print_differently(tmp_path: Path) -> None:
    """The one value difference: --set reaches helm's strvals as an int64, the SDK as a JSON number."""
    repo = tmp_path / "repo"
    repo.mkdir()
    chart = make_chart(repo / "demo", templates={"configmap.yaml": CONFIG_TEMPLATE, "n.yaml": (
        "kind: N\nmetadata: {name: n}\nsmall: {{ .Values.small }}\nbig: {{ .Values.big }}\n"
        "fromFile: {{ .Values.fromFile }}\n")}, values="fromFile: 1000000\n")
    src = source(repo, chart, parameters=(("small", "999999", False), ("big", "1000000", False)))
    [n_binary] = [d for d in docs(render_helm(src, LIMITS, engine="binary")) if d["kind"] == "N"]
    [n_sdk] = [d for d in docs(render_helm(src, LIMITS, engine="sdk")) if d["kind"] == "N"]
    assert n_binary == {"kind": "N", "metadata": {"name": "n"}, "small": 999999, "big": 1000000,
                        "fromFile": "1e+06"}  # a values file's number is a float64 to helm too
    assert n_sdk == {**n_binary, "big": "1e+06"}


def test_helm_version_the_chart_sees(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    chart = make_chart(repo / "demo", templates={"v.yaml": (
        "kind: V\nmetadata: {name: v}\nhelm: {{ .Capabilities.HelmVersion.Version | quote }}\n"
        "kube: {{ .Capabilities.KubeVersion.Version | quote }}\n")})
    [binary] = docs(render_helm(source(repo, chart), LIMITS, engine="binary"))
    [sdk] = docs(render_helm(source(repo, chart), LIMITS, engine="sdk"))
    assert (binary["helm"], sdk["helm"]) == ("v4.2.1", "v4.2")
    assert binary["kube"] == sdk["kube"] == "v1.36.0"  # client-go v0.36.1 in both builds
