"""Flux Kustomizations as roots, through the CLI on real git repositories and real ``kubectl
kustomize`` (docs/flux.md): the Argo CD scenario set (test_render_git.py, test_fail_closed.py)
for a ``flux bootstrap`` layout."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from fluxrepo import SOURCE, kustomization, make_flux_repo
from gitops import IMAGE, NEW_TAG, REPO_URL, application, commit, edit_yaml, git, run, write

from app.render.flux_build import substitute
from app.render.kustomize import find_tool

pytestmark = pytest.mark.skipif(find_tool("kubectl") is None, reason="kubectl is not installed")

APPS = "clusters/prod/apps.yaml"
SERVICE = "apps/base/rayservice.yaml"
APPS_ROOT = "Kustomization flux-system/apps"
PLAIN_ROOT = "Kustomization flux-system/plain"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_flux_repo(tmp_path)


def head(repo: Path) -> str:
    return git(repo, "rev-parse", "HEAD")


def set_spec(repo: Path, **spec: Any) -> None:
    edit_yaml(repo, APPS, lambda d: d["spec"].update(spec))


def templated(repo: Path, gpus: str = "${gpu_count}") -> None:
    """The worker group's GPU count as a postBuild variable; ``num-gpus`` must stay a string, so it
    is wrapped in a ``${quote}`` variable as kustomize-controller's docs advise (docs/spec/v1/
    kustomizations.md, "Post build substitution of numbers and booleans")."""
    text = (repo / SERVICE).read_text()
    text = text.replace('nvidia.com/gpu: "4"', f'nvidia.com/gpu: "{gpus}"').replace(
        'num-gpus: "4"', f'num-gpus: "${{quote}}{gpus}${{quote}}"')
    write(repo, SERVICE, text)


Q = {"quote": '"'}


def test_image_bump_through_the_overlay_is_a_new_cluster_hold(repo: Path, capsys) -> None:
    base = head(repo)
    edit_yaml(repo, "apps/prod/kustomization.yaml", lambda d: d["images"][0].update(newTag=NEW_TAG))
    code, report = run(repo, base, commit(repo), capsys)
    assert (code, report["decision"]) == (3, "hold")
    [r] = report["resources"]
    assert (r["namespace"], r["name"], r["rollout"]) == ("ray-prod", "ray-serve-llm", "new-cluster")
    assert r["source"] == "Kustomization flux-system/apps"  # not "apps/prod (kustomize)": Flux deploys it
    assert r["capacity"]["extra"]["nvidia.com/gpu"] == 4
    assert report["notAnalysed"] == {}  # the Flux objects are plumbing, as Applications are


def test_serve_only_change_is_approved(repo: Path, capsys) -> None:
    base = head(repo)
    write(repo, "apps/prod/serve-patch.yaml", {
        "apiVersion": "ray.io/v1", "kind": "RayService", "metadata": {"name": "ray-serve-llm"},
        "spec": {"serveConfigV2": "applications:\n- name: llms\n"
                                  "  import_path: ray.serve.llm:build_openai_app\n"
                                  "  route_prefix: /\n  runtime_env: {env_vars: {LOG_LEVEL: debug}}\n"}})
    edit_yaml(repo, "apps/prod/kustomization.yaml",
              lambda d: d.update(patches=[{"path": "serve-patch.yaml"}]))
    code, report = run(repo, base, commit(repo), capsys)
    [r] = report["resources"]
    assert (code, r["rollout"], r["decision"]) == (0, "serve-in-place", "approve")


def test_kustomization_options_are_applied_as_flux_applies_them(repo: Path, capsys) -> None:
    """spec.images over the overlay's entry of the same name, spec.patches with a target,
    targetNamespace, namePrefix and commonMetadata (kustomize_generator.go:219-331)."""
    base = head(repo)
    set_spec(repo, images=[{"name": IMAGE, "newTag": NEW_TAG}], targetNamespace="ray-flux",
             commonMetadata={"labels": {"team": "ml"}},
             patches=[{"target": {"kind": "RayService"},
                       "patch": "- op: replace\n  path: /spec/rayClusterConfig/rayVersion\n"
                                "  value: '2.53.0'\n"}])
    code, report = run(repo, base, commit(repo), capsys)
    [gone, new] = sorted(report["resources"], key=lambda r: r["namespace"])
    assert (new["namespace"], new["action"]) == ("ray-prod", "deleted")  # the overlay's namespace at base
    assert (gone["namespace"], gone["action"]) == ("ray-flux", "created")  # targetNamespace wins
    assert code == 3


def test_images_entry_keeps_the_overlay_name_and_bumps_the_tag(repo: Path, capsys) -> None:
    base = head(repo)
    set_spec(repo, images=[{"name": IMAGE, "newTag": NEW_TAG}])
    code, report = run(repo, base, commit(repo), capsys)
    [r] = report["resources"]
    assert {c["after"] for c in r["changes"] if c["path"].endswith(".image")} == {f"{IMAGE}:{NEW_TAG}"}
    assert r["rollout"] == "new-cluster" and code == 3


def test_postbuild_substitute_of_the_gpu_count_holds_with_the_extra_gpus(repo: Path, capsys) -> None:
    templated(repo)
    set_spec(repo, postBuild={"substitute": {"gpu_count": "4", **Q}})
    base = commit(repo, "templated")
    set_spec(repo, postBuild={"substitute": {"gpu_count": "8", **Q}})
    code, report = run(repo, base, commit(repo), capsys)
    [r] = report["resources"]
    assert (code, r["rollout"]) == (3, "new-cluster")
    assert r["capacity"]["extra"]["nvidia.com/gpu"] == 8  # the new cluster's 8, next to the old one's 4
    gpu = [c for c in r["changes"] if "nvidia.com/gpu" in c["path"]]
    assert gpu and {str(c["after"]) for c in gpu} == {"8"}


def test_a_number_substituted_into_a_string_field_is_refused_as_flux_would(repo: Path, capsys) -> None:
    """Flux substitutes into the YAML text, so ``num-gpus: ${n}`` becomes the integer 8, which the
    API server refuses for a string field: the change applies nothing (not-applied hold)."""
    templated(repo)
    write(repo, SERVICE, (repo / SERVICE).read_text().replace("${quote}", ""))
    set_spec(repo, postBuild={"substitute": {"gpu_count": "4"}})
    base = commit(repo, "templated")
    set_spec(repo, postBuild={"substitute": {"gpu_count": "8"}})
    code, report = run(repo, base, commit(repo), capsys)
    [r] = report["resources"]
    assert (code, r["rollout"]) == (3, "not-applied")
    assert any(f["code"] == "schema-violation" and "num-gpus" in f["path"] for f in r["findings"])


def test_substitute_from_a_configmap_in_the_repository(repo: Path, capsys) -> None:
    templated(repo)
    cm = {"apiVersion": "v1", "kind": "ConfigMap",
          "metadata": {"name": "cluster-vars", "namespace": "flux-system"},
          "data": {"gpu_count": "4", **Q}}
    write(repo, "clusters/prod/cluster-vars.yaml", cm)
    set_spec(repo, postBuild={"substituteFrom": [{"kind": "ConfigMap", "name": "cluster-vars"}]})
    base = commit(repo, "templated")
    edit_yaml(repo, "clusters/prod/cluster-vars.yaml", lambda d: d["data"].update(gpu_count="2"))
    code, report = run(repo, base, commit(repo), capsys)  # only the ConfigMap changed
    [r] = report["resources"]
    assert r["source"] == "Kustomization flux-system/apps" and r["rollout"] == "new-cluster"
    assert r["capacity"]["extra"]["nvidia.com/gpu"] == 2
    assert code == 3


def test_inline_substitute_wins_over_substitute_from(repo: Path, capsys) -> None:
    templated(repo)
    write(repo, "clusters/prod/vars.yaml", {"apiVersion": "v1", "kind": "ConfigMap",
                                            "metadata": {"name": "vars", "namespace": "flux-system"},
                                            "data": {"gpu_count": "2"}})
    set_spec(repo, postBuild={"substituteFrom": [{"kind": "ConfigMap", "name": "vars"}],
                              "substitute": {"gpu_count": "4", **Q}})
    base = commit(repo, "templated")
    edit_yaml(repo, "clusters/prod/vars.yaml", lambda d: d["data"].update(gpu_count="8"))
    code, report = run(repo, base, commit(repo), capsys)
    assert code == 0  # the inline 4 still wins: nothing changes
    assert [(r["action"], r["changes"]) for r in report["resources"]] == [("unchanged", [])]


def test_substitute_from_a_secret_is_an_unknown_source_hold(repo: Path, capsys) -> None:
    templated(repo, "${gpu_count:=4}")
    base = commit(repo, "templated")
    set_spec(repo, postBuild={"substituteFrom": [{"kind": "Secret", "name": "cluster-secrets"}]})
    code, report = run(repo, base, commit(repo), capsys)
    assert (code, report["decision"]) == (3, "hold")
    [f] = report["findings"]
    assert (f["severity"], f["code"], f["path"]) == ("error", "unknown-source", APPS_ROOT)
    assert "Secret flux-system/cluster-secrets" in f["message"]
    assert report["resources"] == []


def test_optional_secret_leaves_the_variables_unset_with_a_warning(repo: Path, capsys) -> None:
    templated(repo, "${gpu_count:=4}")
    base = commit(repo, "templated")
    set_spec(repo, postBuild={"substituteFrom": [{"kind": "Secret", "name": "s", "optional": True}]})
    code, report = run(repo, base, commit(repo), capsys)
    assert code == 0  # the default 4 both times
    assert [(r["action"], r["changes"]) for r in report["resources"]] == [("unchanged", [])]
    [f] = report["findings"]
    assert (f["severity"], f["code"]) == ("warning", "not-rendered") and "optional" in f["message"]


def test_kustomization_from_another_repository_is_an_unknown_source_hold(repo: Path, capsys) -> None:
    write(repo, "clusters/prod/other-source.yaml", {
        "apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "GitRepository",
        "metadata": {"name": "platform", "namespace": "flux-system"},
        "spec": {"url": "https://github.com/example-org/platform.git", "ref": {"branch": "main"}}})
    base = commit(repo, "source")
    write(repo, "clusters/prod/platform.yaml", kustomization(
        "platform", "./ray", sourceRef={"kind": "GitRepository", "name": "platform"}))
    code, report = run(repo, base, commit(repo), capsys)
    assert (code, report["decision"]) == (3, "hold")
    [f] = report["findings"]
    assert (f["code"], f["path"]) == ("unknown-source", "clusters/prod/platform.yaml")
    assert "example-org/platform" in f["message"]


def test_remote_base_holds_and_is_never_fetched(repo: Path, capsys) -> None:
    base = head(repo)
    edit_yaml(repo, "apps/prod/kustomization.yaml",
              lambda d: d["resources"].append("https://github.com/example-org/ray-bases//llm?ref=v1"))
    code, report = run(repo, base, commit(repo), capsys)
    assert code == 3
    [f] = report["findings"]
    assert (f["code"], f["path"]) == ("unknown-source", "Kustomization flux-system/apps")
    assert "never fetched" in f["message"]


def test_broken_overlay_is_a_render_failed_hold_naming_the_file(repo: Path, capsys) -> None:
    base = head(repo)
    edit_yaml(repo, "apps/prod/kustomization.yaml", lambda d: d["resources"].append("missing-file.yaml"))
    code, report = run(repo, base, commit(repo), capsys)
    assert (code, report["resources"]) == (3, [])
    [f] = report["findings"]
    assert (f["severity"], f["code"], f["path"]) == ("error", "render-failed", APPS_ROOT)
    assert "missing-file.yaml" in f["message"] and "/tmp" not in f["message"]


def test_folder_without_kustomization_is_generated_recursively(repo: Path, capsys) -> None:
    """kustomize_generator.go:575-632: every .yaml below the path, sub-folders with a kustomization
    as one resource (not descended); a .json file is not a manifest to the generator."""
    write(repo, "plain/ray/llm.yaml", (repo / SERVICE).read_text())
    write(repo, "plain/ray/ignored.json", '{"apiVersion": "v1", "kind": "ConfigMap"}')
    write(repo, "plain/kustomized/kustomization.yaml", {"resources": ["job.yaml"]})
    only_service = (repo / SERVICE).read_text().split("\n---")[0]  # its Secret once, or kustomize refuses
    write(repo, "plain/kustomized/job.yaml", only_service.replace("ray-serve-llm", "other-llm"))
    write(repo, "clusters/prod/plain.yaml", kustomization("plain", "./plain", targetNamespace="ray-plain"))
    base = commit(repo, "plain")
    text = (repo / "plain/ray/llm.yaml").read_text().replace("2.52.0-py311-cu128", NEW_TAG)
    write(repo, "plain/ray/llm.yaml", text)
    code, report = run(repo, base, commit(repo), capsys)
    [r] = [r for r in report["resources"] if r["action"] != "unchanged"]
    assert (r["namespace"], r["name"], r["source"]) == ("ray-plain", "ray-serve-llm", PLAIN_ROOT)
    assert code == 3
    base = head(repo)
    job = repo / "plain/kustomized/job.yaml"
    write(repo, "plain/kustomized/job.yaml", job.read_text().replace('"2.52.0"', '"2.53.0"'))
    code, report = run(repo, base, commit(repo), capsys)
    changed = [(r["namespace"], r["name"], r["source"]) for r in report["resources"]
               if r["action"] != "unchanged"]
    assert changed == [("ray-plain", "other-llm", PLAIN_ROOT)]


def test_substitution_disabled_by_annotation_and_dollar_var_untouched(repo: Path, capsys) -> None:
    templated(repo)
    set_spec(repo, postBuild={"substitute": {"gpu_count": "4", **Q}})
    base = commit(repo, "templated")
    write(repo, SERVICE, (repo / SERVICE).read_text().replace(
        "  name: ray-serve-llm\n",
        "  name: ray-serve-llm\n  annotations: {kustomize.toolkit.fluxcd.io/substitute: disabled}\n", 1))
    code, report = run(repo, base, commit(repo), capsys)
    [r] = report["resources"]
    gpu = [c for c in r["changes"] if "nvidia.com/gpu" in c["path"]]
    assert gpu and {c["after"] for c in gpu} == {"${gpu_count}"}  # left as written: the API server refuses it


def test_envsubst_rules() -> None:
    v = {"a": "1", "empty": ""}
    assert substitute("x: ${a} ${b} $a $${a}", v) == "x: 1  $a ${a}"
    assert substitute("${b:=2} ${empty:-3} ${b=4} ${a-5}", v) == "2 3 4 1"
    with pytest.raises(ValueError):
        substitute("${a/1/2}", v)
    with pytest.raises(ValueError):
        substitute("${#a}", v)


def test_suspended_kustomization_is_a_warning(repo: Path, capsys) -> None:
    set_spec(repo, suspend=True)
    base = commit(repo, "suspend")
    edit_yaml(repo, "apps/prod/kustomization.yaml", lambda d: d["images"][0].update(newTag=NEW_TAG))
    code, report = run(repo, base, commit(repo), capsys)
    assert code == 3 and report["resources"][0]["rollout"] == "new-cluster"
    assert [f["code"] for f in report["findings"]] == ["flux-suspended"]


def test_same_object_from_an_application_and_a_kustomization_is_a_duplicate(repo: Path, capsys) -> None:
    write(repo, "argocd/llm-prod.yaml", application("llm-prod", "apps/prod", "ray-prod"))
    base = commit(repo, "argo too")
    edit_yaml(repo, "apps/prod/kustomization.yaml", lambda d: d["images"][0].update(newTag=NEW_TAG))
    code, report = run(repo, base, commit(repo), capsys)
    [r] = report["resources"]
    [dup] = [f for f in r["findings"] if f["code"] == "duplicate-resource"]
    assert dup["severity"] == "error" and "Kustomization flux-system/apps" in dup["message"] + r["source"]
    assert "Application llm-prod" in dup["message"] + r["source"]
    assert code == 3


def test_flux_system_kustomization_renders_the_cluster_folder(repo: Path, capsys) -> None:
    """A change to clusters/prod/apps.yaml re-renders both the apps Kustomization and flux-system
    (which applies apps.yaml); neither the Flux objects nor their GitRepository are analysed."""
    base = head(repo)
    set_spec(repo, prune=False, dependsOn=[{"name": "infra"}])
    code, report = run(repo, base, commit(repo), capsys)
    assert (code, report["findings"], report["notAnalysed"]) == (0, [], {})
    assert [(r["source"], r["action"]) for r in report["resources"]] == [
        ("Kustomization flux-system/apps", "unchanged")]


def test_repository_url_decides_which_gitrepository_is_this_one(tmp_path: Path, capsys) -> None:
    repo = make_flux_repo(tmp_path)
    write(repo, "clusters/prod/flux-system/gotk-sync.yaml",
          (repo / "clusters/prod/flux-system/gotk-sync.yaml").read_text().replace(
              REPO_URL, "ssh://git@github.com/example-org/ray-gitops"))
    base = commit(repo, "ssh url")
    edit_yaml(repo, "apps/prod/kustomization.yaml", lambda d: d["images"][0].update(newTag=NEW_TAG))
    code, report = run(repo, base, commit(repo), capsys)
    assert code == 3 and report["resources"][0]["source"] == "Kustomization flux-system/apps"
    assert SOURCE["name"] == "flux-system"
    assert yaml.safe_load_all((repo / "clusters/prod/flux-system/gotk-sync.yaml").read_text())


def test_nothing_a_flux_object_names_is_ever_fetched(repo: Path, capsys) -> None:
    """A component, a postRenderer patch ``path`` or a string patchesStrategicMerge entry that is no
    file of this repository: held as unknown, and no request leaves (a loopback server sees none)."""
    import http.server
    import threading

    hits: list[str] = []

    class Recorder(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802
            hits.append(self.path)
            self.send_response(200)
            self.end_headers()
            self.wfile.write(b"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n")

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Recorder)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        for n, spec in enumerate([{"components": [f"{url}/component"]},
                                  {"components": ["github.com/example-org/ray//component"]},
                                  {"patchesStrategicMerge": [f"{url}/patch.yaml"]}]):
            base = head(repo)
            set_spec(repo, **spec)
            code, report = run(repo, base, commit(repo, f"case {n}"), capsys)
            [f] = report["findings"]
            assert (code, f["code"], f["path"]) == (3, "unknown-source", APPS_ROOT), (spec, f)
            git(repo, "reset", "-q", "--hard", base)
    finally:
        server.shutdown()
        server.server_close()
    assert hits == []


def test_a_pattern_never_decides_what_a_flux_kustomization_is(repo: Path, capsys) -> None:
    """Flow style, a quoted key, a comment after the kind, in a List: the Kustomization is found by
    its parsed apiVersion group and kind, so the images bump it makes is rendered and held."""
    def spelled(tag: str) -> str:
        return ('{"apiVersion": v1, kind: List, items: [{"apiVersion": "kustomize.toolkit.fluxcd.io/v1",\n'
                '  kind: Kustomization,  # apps\n'
                '  metadata: {name: apps, namespace: flux-system},\n'
                '  spec: {path: ./apps/prod, sourceRef: {kind: GitRepository, name: flux-system},\n'
                f'         images: [{{name: "{IMAGE}", newTag: "{tag}"}}]}}}}]}}\n')

    write(repo, APPS, spelled("2.52.0-py311-cu128"))
    base = commit(repo, "spelled")
    write(repo, APPS, spelled(NEW_TAG))
    code, report = run(repo, base, commit(repo), capsys)
    [r] = report["resources"]
    assert (code, r["source"], r["rollout"]) == (3, APPS_ROOT, "new-cluster")


def test_an_if_not_present_object_says_flux_does_not_apply_the_update(repo: Path, capsys) -> None:
    write(repo, SERVICE, (repo / SERVICE).read_text().replace(
        "  name: ray-serve-llm\n",
        "  name: ray-serve-llm\n  annotations: {kustomize.toolkit.fluxcd.io/ssa: IfNotPresent}\n", 1))
    base = commit(repo, "if not present")
    edit_yaml(repo, "apps/prod/kustomization.yaml", lambda d: d["images"][0].update(newTag=NEW_TAG))
    code, report = run(repo, base, commit(repo), capsys)
    [r] = report["resources"]
    [f] = [f for f in r["findings"] if f["code"] == "flux-not-applied"]
    assert f["severity"] == "warning" and "IfNotPresent" in f["message"]
    assert code == 3  # the verdict is for the change as Git has it (docs/flux.md)
