"""The kustomization kustomize-controller generates and edits (fluxcd/pkg kustomize/
kustomize_generator.go), and its build with both kustomize renderers (kubectl kustomize and the
real kustomize built by tests/tools.py)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import yaml

from app.render.flux import FluxKustomize
from app.render.flux_build import _scan, after_build, generate, render_flux_kustomization
from app.render.kustomize import find_tool
from app.render.process import RenderLimits
from app.render.snapshot import Snapshot

LIMITS = RenderLimits()
RAY = {"apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": {"name": "c"},
       "spec": {"headGroupSpec": {"template": {"spec": {"containers": [{"name": "h", "image": "ray:1"}]}}}}}


def tree(root: Path, files: dict[str, object]) -> None:
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content if isinstance(content, str) else yaml.safe_dump(content))


def test_scan_lists_manifests_and_kustomization_folders_in_walk_order(tmp_path: Path) -> None:
    tree(tmp_path, {"b.yaml": RAY, "a/x.yml": RAY, "a/deep/y.yaml": RAY, "k/kustomization.yaml": {},
                    "k/inner.yaml": RAY, "notes.json": "{}", "README.md": "# x"})
    assert _scan(str(tmp_path)) == ["./a/deep/y.yaml", "./a/x.yml", "./b.yaml", "./k"]


def test_an_empty_folder_gets_the_placeholder_namespace(tmp_path: Path) -> None:
    assert generate(str(tmp_path), FluxKustomize())["namespace"] == "_placeholder"


def test_images_merge_into_the_entry_of_the_same_name(tmp_path: Path) -> None:
    """kustomize_generator.go:301-331: newName kept when unset, newTag and digest replaced as one."""
    tree(tmp_path, {"kustomization.yaml": {"resources": ["c.yaml"], "images": [
        {"name": "ray", "newName": "mirror/ray", "digest": "sha256:" + "0" * 64}]}, "c.yaml": RAY})
    opts = FluxKustomize(images=('{"name": "ray", "newTag": "2"}', '{"name": "other", "newTag": "3"}'),
                         target_namespace="t", name_prefix="p-")
    doc = generate(str(tmp_path), opts)
    assert doc["images"] == [{"name": "ray", "newName": "mirror/ray", "newTag": "2"},
                             {"name": "other", "newTag": "3"}]
    assert (doc["namespace"], doc["namePrefix"]) == ("t", "p-")


def test_component_that_is_no_local_relative_path_is_refused(tmp_path: Path) -> None:
    from app.render.process import RenderError

    with pytest.raises(RenderError, match="must be local and relative"):
        generate(str(tmp_path), FluxKustomize(components=("/etc",)))


def test_common_metadata_after_substitution() -> None:
    text = yaml.safe_dump(RAY | {"metadata": {"name": "${name:=c}", "labels": {"a": "b"}}})
    out = yaml.safe_load(after_build(text, FluxKustomize(post_build=True, variables=(("name", "x"),),
                                                         common_labels=(("team", "ml"),))))
    assert out["metadata"] == {"name": "x", "labels": {"a": "b", "team": "ml"}}


@pytest.mark.skipif(find_tool("kubectl") is None, reason="kubectl is not installed")
def test_both_renderers_build_the_same_flux_kustomization(tmp_path: Path, real_kustomize: str,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", f"{os.path.dirname(real_kustomize)}{os.pathsep}{os.environ.get('PATH', '')}")
    tree(tmp_path, {"apps/c.yaml": RAY, "apps/sub/d.yaml": RAY | {"metadata": {"name": "d"}}})
    patch = {"patch": '- op: add\n  path: /spec/rayVersion\n  value: "2.53.0"\n',
             "target": {"kind": "RayCluster", "name": "d"}}
    opts = FluxKustomize(target_namespace="ray", name_suffix="-prod",
                         images=('{"name": "ray", "newTag": "2"}',), patches=(json.dumps(patch),))
    snap = Snapshot(str(tmp_path), "")
    kubectl = render_flux_kustomization(snap, "apps", opts, LIMITS, renderer="kubectl")
    kustomize = render_flux_kustomization(snap, "apps", opts, LIMITS, renderer="kustomize")
    docs = list(yaml.safe_load_all(kubectl))
    assert list(yaml.safe_load_all(kustomize)) == docs
    got = {(d["metadata"]["namespace"], d["metadata"]["name"], d["spec"].get("rayVersion")) for d in docs}
    assert got == {("ray", "c-prod", None), ("ray", "d-prod", "2.53.0")}
    images = {d["spec"]["headGroupSpec"]["template"]["spec"]["containers"][0]["image"] for d in docs}
    assert images == {"ray:2"}
    assert not (tmp_path / "apps" / "kustomization.yaml").exists()  # generated in a copy only
