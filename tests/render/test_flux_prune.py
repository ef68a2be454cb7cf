"""What Flux deletes when an object leaves Git (diffing/flux.py ``not_pruned``, docs/flux.md): a
Kustomization deletes it only with ``prune: true`` and no ``prune: disabled`` mark; a removed
Kustomization by its ``deletionPolicy``; Helm keeps ``helm.sh/resource-policy: keep``. Where Flux
leaves the object running, the report says so (``flux-not-pruned``) instead of staying silent.
Through the CLI on real git repositories and real ``kubectl kustomize``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from fluxrepo import kustomization, make_flux_repo
from gitops import commit, edit_yaml, git, run, write

from app.render.kustomize import find_tool
from diffing.flux import not_pruned

pytestmark = pytest.mark.skipif(find_tool("kubectl") is None, reason="kubectl is not installed")

APPS = "clusters/prod/apps.yaml"
SERVICE = "apps/base/rayservice.yaml"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_flux_repo(tmp_path)


def remove_service(repo: Path) -> None:
    """The RayService leaves Git; the Kustomization stays (and renders nothing)."""
    (repo / SERVICE).unlink()
    write(repo, "apps/base/kustomization.yaml", {"resources": []})


def removed(repo: Path, capsys: Any) -> dict[str, Any]:
    base = git(repo, "rev-parse", "HEAD")
    code, report = run(repo, base, commit(repo), capsys)
    [r] = report["resources"]
    assert (r["kind"], r["action"]) == ("RayService", "deleted"), report
    return dict(r)


def pruned_warnings(r: dict[str, Any]) -> list[str]:
    return [f["message"] for f in r["findings"] if f["code"] == "flux-not-pruned"]


def test_with_prune_true_the_removed_object_is_deleted_and_nothing_is_said(repo: Path, capsys) -> None:
    remove_service(repo)
    assert pruned_warnings(removed(repo, capsys)) == []


def test_with_prune_false_the_object_stays_and_the_report_says_so(repo: Path, capsys) -> None:
    edit_yaml(repo, APPS, lambda d: d["spec"].update(prune=False))
    commit(repo, "no pruning")
    remove_service(repo)
    [why] = pruned_warnings(removed(repo, capsys))
    assert "Kustomization flux-system/apps has prune: false" in why and "stays in the cluster" in why


def test_prune_turned_off_in_the_same_change_counts(repo: Path, capsys) -> None:
    """kustomize-controller reconciles the new Kustomization: its prune is what decides."""
    edit_yaml(repo, APPS, lambda d: d["spec"].update(prune=False))
    remove_service(repo)
    assert len(pruned_warnings(removed(repo, capsys))) == 1


def test_an_object_marked_prune_disabled_stays(repo: Path, capsys) -> None:
    text = (repo / SERVICE).read_text()
    marked = text.replace("metadata:\n", "metadata:\n  annotations:\n"
                                         "    kustomize.toolkit.fluxcd.io/prune: disabled\n", 1)
    assert marked != text
    write(repo, SERVICE, marked)
    commit(repo, "keep it")
    remove_service(repo)
    [why] = pruned_warnings(removed(repo, capsys))
    assert "kustomize.toolkit.fluxcd.io/prune: disabled" in why


@pytest.mark.parametrize(("spec", "stays"), [
    ({}, False),                                     # MirrorPrune with prune: true
    ({"prune": False}, True),                        # MirrorPrune with prune: false
    ({"prune": False, "deletionPolicy": "Delete"}, False),
    ({"deletionPolicy": "Orphan"}, True),
    ({"suspend": True}, True),
])
def test_a_removed_kustomization_deletes_by_its_deletion_policy(repo: Path, capsys, spec: dict[str, Any],
                                                                 stays: bool) -> None:
    write(repo, APPS, kustomization("apps", "./apps/prod", **spec))
    commit(repo, "policy")
    (repo / APPS).unlink()
    warnings = pruned_warnings(removed(repo, capsys))
    assert len(warnings) == int(stays), warnings
    assert all("Kustomization flux-system/apps is removed" in w for w in warnings)


def test_helm_keeps_a_resource_policy_keep_object() -> None:
    release = {"apiVersion": "helm.toolkit.fluxcd.io/v2", "kind": "HelmRelease",
               "metadata": {"name": "llm", "namespace": "ray"}, "spec": {}}
    kept = {"metadata": {"name": "x", "annotations": {"helm.sh/resource-policy": " Keep "}}}
    assert "helm.sh/resource-policy: keep" in not_pruned(release, release, kept)
    assert not_pruned(release, None, kept)                    # an uninstall keeps it too
    assert not_pruned(release, release, {"metadata": {"name": "x"}}) == ""
    # the Kustomization's own marks mean nothing to Helm
    marked = {"metadata": {"annotations": {"kustomize.toolkit.fluxcd.io/prune": "disabled"}}}
    assert not_pruned(release, release, marked) == ""
