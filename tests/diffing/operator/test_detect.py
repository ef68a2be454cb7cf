from __future__ import annotations

import pytest

from diffing.errors import ManifestError
from diffing.operator.detect import ARGOCD_SKIP_CRDS, HELM_CRDS, IMAGE_ONLY, KUSTOMIZE, detect, release

APP = """apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: kuberay}
spec:
  source:
    repoURL: https://ray-project.github.io/kuberay-helm/
    chart: kuberay-operator
    targetRevision: %s
    helm: {skipCrds: %s}
"""


def test_detect_chart_dependency_version():
    deps = "dependencies: [{name: kuberay-operator, version: %s}, {name: x, version: %s}]"
    (c,) = detect([("Chart.yaml", deps % ("1.6.2", 1), deps % ("1.7.0", 2))])
    assert c.to_dict() == {"path": "Chart.yaml", "field": "dependencies[name=kuberay-operator].version",
                           "via": "chart-dependency", "before": "1.6.2", "after": "1.7.0", "crds": HELM_CRDS}


def test_detect_values_image_tag_under_chart_key():
    (c,) = detect([("values.yaml", "kuberay-operator:\n  image:\n    tag: v1.6.2\n",
                    "kuberay-operator:\n  image:\n    tag: v1.7.0\n")])
    assert (c.field, c.before, c.after, c.crds) == (
        "kuberay-operator.image.tag", "v1.6.2", "v1.7.0", IMAGE_ONLY)


def test_detect_deployment_image_string():
    (c,) = detect([("op.yaml", "spec: {containers: [{image: 'quay.io/kuberay/operator:v1.6.2'}]}",
                    "spec: {containers: [{image: 'quay.io/kuberay/operator:v1.7.0'}]}")])
    assert (c.field, c.via, c.after) == ("spec.containers[0].image", "image", "v1.7.0")


def test_detect_argocd_application_skip_crds():
    (c,) = detect([("apps/k.yaml", APP % ("1.6.2", "true"), APP % ("1.7.0", "true"))])
    assert (c.field, c.via, c.before, c.after, c.crds) == (
        "spec.source.targetRevision", "argocd-application", "1.6.2", "1.7.0", ARGOCD_SKIP_CRDS)


def test_detect_kustomization_image_and_remote_base():
    before = ("resources:\n- github.com/ray-project/kuberay/ray-operator/config/default?ref=v1.6.2\n"
              "images:\n- name: quay.io/kuberay/operator\n  newTag: v1.6.2\n")
    changes = detect([("ops/kustomization.yaml", before, before.replace("v1.6.2", "v1.7.0"))])
    assert [(c.via, c.after, c.crds) for c in changes] == [
        ("kustomize-image", "v1.7.0", IMAGE_ONLY), ("kustomize-remote", "v1.7.0", KUSTOMIZE)]


def test_detect_ignores_unrelated_images_and_unchanged_versions():
    text = "image: {repository: quay.io/kuberay/operator, tag: v1.7.0}\nother: {image: nginx:1}\n"
    assert detect([("values.yaml", text, text.replace("nginx:1", "nginx:2"))]) == ()


def test_detect_bad_yaml_names_the_file():
    with pytest.raises(ManifestError, match="values.yaml"):
        detect([("values.yaml", "a: [", "a: 1")])


@pytest.mark.parametrize(("text", "expected"), [("v1.7.0", "1.7.0"), ("1.6.2", "1.6.2"),
                                                ("1.7.0-rc.0", "1.7.0-rc.0"), ("~1.6", None),
                                                ("master", None), (None, None)])
def test_release_exact_only(text, expected):
    assert release(text) == expected
