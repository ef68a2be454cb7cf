"""Flux HelmReleases as roots, through the CLI on real git repositories and the real Helm path the
Argo CD Helm sources use (the ``engine`` fixture: the helm-python-sdk child and a real helm binary).
docs/flux.md."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from fluxrepo import SOURCE, helm_release, make_flux_repo
from gitops import commit, edit_yaml, git, run, write

from app.render.flux import _release_name, merge_maps

CHART = "charts/ray-llm"
TEMPLATE = """\
apiVersion: ray.io/v1
kind: RayCluster
metadata:
  name: {{ .Release.Name }}
  namespace: {{ .Release.Namespace }}
spec:
  rayVersion: "2.52.0"
  enableInTreeAutoscaling: {{ .Values.autoscaling }}
  headGroupSpec:
    rayStartParams: {}
    template:
      spec:
        containers:
        - name: ray-head
          image: "rayproject/ray:{{ .Values.tag }}"
          resources:
            limits: {cpu: "2", memory: 8Gi}
            requests: {cpu: "2", memory: 8Gi}
  workerGroupSpecs:
  - groupName: gpu
    replicas: {{ .Values.replicas }}
    minReplicas: 1
    maxReplicas: 4
    rayStartParams: {}
    template:
      spec:
        containers:
        - name: ray-worker
          image: "rayproject/ray:{{ .Values.tag }}"
          resources:
            limits: {cpu: "4", memory: 16Gi, nvidia.com/gpu: {{ .Values.gpus }}}
            requests: {cpu: "4", memory: 16Gi, nvidia.com/gpu: {{ .Values.gpus }}}
"""
RELEASE = "clusters/prod/ray-llm.yaml"
VALUES_CM = "clusters/prod/ray-llm-values.yaml"


def chart(repo: Path) -> None:
    write(repo, f"{CHART}/Chart.yaml", {"apiVersion": "v2", "name": "ray-llm", "version": "0.1.0"})
    write(repo, f"{CHART}/values.yaml", {"tag": "2.52.0", "gpus": 1, "replicas": 1, "autoscaling": False})
    write(repo, f"{CHART}/templates/raycluster.yaml", TEMPLATE)


def values_cm(**values: object) -> dict[str, object]:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "ray-llm-values", "namespace": "ray"},
            "data": {"values.yaml": yaml.safe_dump(values)}}


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    repo = make_flux_repo(tmp_path)
    chart(repo)
    write(repo, VALUES_CM, values_cm(gpus=2))
    write(repo, RELEASE, helm_release(
        "ray-llm", "ray", {"chart": f"./{CHART}", "sourceRef": {**SOURCE, "namespace": "flux-system"}},
        valuesFrom=[{"kind": "ConfigMap", "name": "ray-llm-values"}], values={"tag": "2.52.0"}))
    commit(repo, "helm release")
    return repo


def head(repo: Path) -> str:
    return git(repo, "rev-parse", "HEAD")


def test_values_from_a_configmap_change_the_rollout(repo: Path, engine: str, capsys) -> None:
    base = head(repo)
    write(repo, VALUES_CM, values_cm(gpus=4))
    code, report = run(repo, base, commit(repo), capsys)
    [r] = report["resources"]
    assert (r["kind"], r["namespace"], r["name"]) == ("RayCluster", "ray", "ray-llm")  # release name = name
    assert r["source"] == "HelmRelease ray/ray-llm"
    gpu = {(c["before"], c["after"]) for c in r["changes"] if "nvidia.com/gpu" in c["path"]}
    assert gpu == {(2, 4)}  # the ConfigMap's 2 over the chart's 1, then 4
    assert r["rollout"] == "latent"  # a RayCluster: only pods built later get it
    assert code == 0


def test_inline_values_win_over_values_from(repo: Path, engine: str, capsys) -> None:
    base = head(repo)
    edit_yaml(repo, RELEASE, lambda d: d["spec"]["values"].update(gpus=2))
    write(repo, VALUES_CM, values_cm(gpus=4))
    code, report = run(repo, base, commit(repo), capsys)
    assert [r["changes"] for r in report["resources"]] == [[]] and code == 0


def test_target_namespace_names_the_release_and_its_namespace(repo: Path, engine: str, capsys) -> None:
    base = head(repo)
    edit_yaml(repo, RELEASE, lambda d: d["spec"].update(targetNamespace="ray-prod"))
    code, report = run(repo, base, commit(repo), capsys)
    got = sorted((r["namespace"], r["name"], r["action"]) for r in report["resources"])
    assert got == [("ray", "ray-llm", "deleted"), ("ray-prod", "ray-prod-ray-llm", "created")]
    assert code == 3


def test_post_renderer_image_is_applied(repo: Path, engine: str, capsys) -> None:
    base = head(repo)
    edit_yaml(repo, RELEASE, lambda d: d["spec"].update(postRenderers=[{"kustomize": {
        "images": [{"name": "rayproject/ray", "newTag": "2.53.0"}]}}]))
    code, report = run(repo, base, commit(repo), capsys)
    [r] = report["resources"]
    assert {c["after"] for c in r["changes"] if c["path"].endswith(".image")} == {"rayproject/ray:2.53.0"}
    assert code == 3


def test_chart_from_a_helm_repository_is_an_unknown_source_hold(repo: Path, capsys) -> None:
    base = head(repo)
    write(repo, "clusters/prod/kuberay.yaml", helm_release(
        "kuberay", "ray", {"chart": "ray-cluster", "version": "1.7.0",
                           "sourceRef": {"kind": "HelmRepository", "name": "kuberay"}}))
    code, report = run(repo, base, commit(repo), capsys)
    [f] = report["findings"]
    assert (code, f["severity"], f["code"], f["path"]) == (3, "error", "unknown-source",
                                                           "clusters/prod/kuberay.yaml")
    assert "HelmRepository ray/kuberay" in f["message"]


def test_chart_ref_to_an_oci_repository_is_an_unknown_source_hold(repo: Path, capsys) -> None:
    base = head(repo)
    doc = helm_release("kuberay", "ray", chartRef={"kind": "OCIRepository", "name": "ray-charts"})
    write(repo, "clusters/prod/kuberay.yaml", doc)
    code, report = run(repo, base, commit(repo), capsys)
    [f] = report["findings"]
    assert (code, f["code"]) == (3, "unknown-source") and "OCIRepository ray/ray-charts" in f["message"]


def test_values_from_a_secret_is_an_unknown_source_hold(repo: Path, capsys) -> None:
    base = head(repo)
    edit_yaml(repo, RELEASE, lambda d: d["spec"]["valuesFrom"].append({"kind": "Secret", "name": "creds"}))
    code, report = run(repo, base, commit(repo), capsys)
    [f] = report["findings"]
    assert (code, f["code"], f["path"]) == (3, "unknown-source", "HelmRelease ray/ray-llm")
    assert "Secret ray/creds" in f["message"] and report["resources"] == []


def test_target_path_sets_one_value(repo: Path, engine: str, capsys) -> None:
    base = head(repo)
    cm = values_cm(gpus=2)
    cm["data"]["tag"] = "2.53.0"  # type: ignore[index]
    write(repo, VALUES_CM, cm)
    edit_yaml(repo, RELEASE, lambda d: d["spec"].update(values={}, valuesFrom=[
        {"kind": "ConfigMap", "name": "ray-llm-values"},
        {"kind": "ConfigMap", "name": "ray-llm-values", "valuesKey": "tag", "targetPath": "tag"}]))
    code, report = run(repo, base, commit(repo), capsys)
    [r] = report["resources"]
    assert {c["after"] for c in r["changes"] if c["path"].endswith(".image")} == {"rayproject/ray:2.53.0"}


def test_release_name_rules() -> None:
    """helm-controller api/v2/helmrelease_types.go:1551 and internal/release/name.go:35."""
    hr = {"metadata": {"name": "llm"}, "spec": {"targetNamespace": "prod"}}
    assert _release_name(hr) == "prod-llm"
    assert _release_name({"metadata": {"name": "llm"}, "spec": {"releaseName": "x"}}) == "x"
    long = {"metadata": {"name": "n" * 60}, "spec": {}}
    name = _release_name(long)
    assert len(name) == 53 and name.startswith("n" * 40 + "-")
    assert merge_maps({"a": {"b": 1, "c": 2}}, {"a": {"b": 3}}) == {"a": {"b": 3, "c": 2}}


def test_a_post_renderer_patch_path_is_never_loaded(repo: Path, engine: str, capsys) -> None:
    """helm-controller's postRenderer patches have only ``patch`` (required) and ``target``: a
    ``path`` key is dropped, never handed to kustomize (which would load or fetch it); the entry
    left empty fails the render, as helm-controller refuses it."""
    base = head(repo)
    edit_yaml(repo, RELEASE, lambda d: d["spec"].update(postRenderers=[{"kustomize": {"patches": [
        {"path": "http://127.0.0.1:9/patch.yaml"}]}}]))
    code, report = run(repo, base, commit(repo), capsys)
    [f] = report["findings"]
    assert (code, f["code"], f["path"]) == (3, "render-failed", "HelmRelease ray/ray-llm")
    assert "postRenderers" in f["message"] and "127.0.0.1" not in f["message"]


def test_values_files_replace_the_chart_values(repo: Path, engine: str, capsys) -> None:
    """spec.chart.spec.valuesFiles are the chart's values, values.yaml left out unless listed
    (helm-controller api/v2/helmrelease_types.go:414-419); a change to one outside the chart
    folder re-renders."""
    write(repo, "values/prod.yaml", {"tag": "2.52.0", "gpus": 2, "replicas": 1, "autoscaling": False})
    edit_yaml(repo, RELEASE, lambda d: d["spec"].update(valuesFrom=[], values={}))
    edit_yaml(repo, RELEASE, lambda d: d["spec"]["chart"]["spec"].update(valuesFiles=["values/prod.yaml"]))
    write(repo, f"{CHART}/values.yaml", {"tag": "9.9.9", "gpus": 1, "replicas": 1, "autoscaling": False})
    base = commit(repo, "values files")
    write(repo, "values/prod.yaml", {"tag": "2.52.0", "gpus": 4, "replicas": 1, "autoscaling": False})
    code, report = run(repo, base, commit(repo), capsys)
    [r] = report["resources"]
    assert {(c["before"], c["after"]) for c in r["changes"] if "nvidia.com/gpu" in c["path"]} == {(2, 4)}
    assert not any("9.9.9" in str(c["after"]) for c in r["changes"])
    base = head(repo)
    write(repo, f"{CHART}/values.yaml", {"tag": "9.9.8", "gpus": 8, "replicas": 1, "autoscaling": False})
    code, report = run(repo, base, commit(repo), capsys)  # values.yaml is not among the valuesFiles
    assert code == 0 and [r["changes"] for r in report["resources"]] == [[]]


# A ConfigMap value set at a targetPath: typed as the real helm types it (the oracle: helm 4.2.1, built
# from its module; helm-controller sets it with the same strvals parser, fluxcd/pkg chartutil/values.go).
TARGET_TEXTS = ["2", "-05", "+7", "0", "007", "1.5", "1e3", "TRUE", "False", "NULL", "nil", "",
                "9223372036854775807", "9223372036854775808", "x=y", "a[0]", "}", "two words",
                "'quoted'", "\"2\"", "'\"mixed\"'", "\"", "line\nbreak"]


def _helm_value(real_helm: str, chart: Path, flag: str, text: str) -> object:
    import json
    import subprocess

    proc = subprocess.run([real_helm, "template", "t", str(chart), flag, f"t.v={text}"], capture_output=True,
                          text=True, check=True, timeout=60)
    doc = yaml.safe_load(proc.stdout.split("---", 1)[-1])
    return json.loads(doc["data"]["v"])["v"]


@pytest.mark.parametrize("literal", [False, True])
def test_target_path_values_are_typed_as_helm_types_them(tmp_path: Path, real_helm: str,
                                                          literal: bool) -> None:
    from app.render.flux import _set_path

    chart = tmp_path / "chart"
    write(chart, "Chart.yaml", {"apiVersion": "v2", "name": "c", "version": "0.1.0"})
    (chart / "templates").mkdir()
    (chart / "templates" / "cm.yaml").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: t}\ndata:\n  v: {{ toJson .Values.t | quote }}\n")
    for text in TARGET_TEXTS:
        ours: dict[str, object] = {}
        _set_path(ours, "t.v", text, literal=literal)
        quoted = any(text.startswith(q) and text.endswith(q) for q in "'\"")
        # helm-controller: literal -> --set-literal; quoted -> --set-string of the unquoted text
        flag, given = (("--set-literal", text) if literal else
                       ("--set-string", text.strip("'\"")) if quoted else ("--set", text))
        assert ours["t"] == {"v": _helm_value(real_helm, chart, flag, given)}, (text, flag)


def test_target_path_values_helms_parser_would_split_are_refused() -> None:
    from app.render.flux import _set_path

    for text in ("a,b", "back\\slash", "{1,2}", "'a,b'"):
        with pytest.raises(ValueError, match="not evaluated here"):
            _set_path({}, "t.v", text, literal=False)
        out: dict[str, object] = {}
        _set_path(out, "t.v", text, literal=True)  # --set-literal keeps it whole
        assert out == {"t": {"v": text}}
