"""What a GitRepository's artifact leaves out (docs/flux.md, "Source exclusions"): the matcher
against fluxcd/pkg's own pattern cases, then Flux roots through the CLI on real git repositories
with real ``kubectl kustomize``: a file a ``.sourceignore``, ``spec.ignore`` or source-controller's
defaults exclude is not there when Flux builds, as kustomize-controller would find it."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from fluxrepo import SOURCE, helm_release, kustomization, make_flux_repo
from gitops import NEW_TAG, commit, edit_yaml, git, run, write

from app.render.kustomize import find_tool
from app.render.sourceignore import EXCLUDE, INCLUDE, NO_MATCH, ArtifactRules, Filter, parse_pattern

APPS_ROOT = "Kustomization flux-system/apps"
PLAIN_ROOT = "Kustomization flux-system/plain"
SERVICE = "apps/base/rayservice.yaml"
SYNC = "clusters/prod/flux-system/gotk-sync.yaml"

needs_kubectl = pytest.mark.skipif(find_tool("kubectl") is None, reason="kubectl is not installed")


# -- the matcher: fluxcd/pkg sourceignore/gitignore/pattern_test.go (e2cfd1a), case by case ---------

PATTERN_CASES = [  # (upstream test, pattern, domain, path, is a folder, result)
    ("SimpleMatch_inclusion", "!vul?ano", "", "value/vulkano/tail", False, INCLUDE),
    ("Match_domainLonger_mismatch", "value", "head/middle/tail", "head/middle", False, NO_MATCH),
    ("Match_domainSameLength_mismatch", "value", "head/middle/tail", "head/middle/tail", False, NO_MATCH),
    ("Match_domainMismatch_mismatch", "value", "head/middle/tail", "head/middle/_tail_/value", False,
     NO_MATCH),
    ("SimpleMatch_withDomain", "middle/", "value/volcano", "value/volcano/middle/tail", False, EXCLUDE),
    ("SimpleMatch_onlyMatchInDomain_mismatch", "volcano/", "value/volcano", "value/volcano/tail", True,
     NO_MATCH),
    ("SimpleMatch_atStart", "value", "", "value/tail", False, EXCLUDE),
    ("SimpleMatch_inTheMiddle", "value", "", "head/value/tail", False, EXCLUDE),
    ("SimpleMatch_atEnd", "value", "", "head/value", False, EXCLUDE),
    ("SimpleMatch_atStart_dirWanted", "value/", "", "value/tail", False, EXCLUDE),
    ("SimpleMatch_inTheMiddle_dirWanted", "value/", "", "head/value/tail", False, EXCLUDE),
    ("SimpleMatch_atEnd_dirWanted", "value/", "", "head/value", True, EXCLUDE),
    ("SimpleMatch_atEnd_dirWanted_notADir_mismatch", "value/", "", "head/value", False, NO_MATCH),
    ("SimpleMatch_mismatch", "value", "", "head/val/tail", False, NO_MATCH),
    ("SimpleMatch_valueLonger_mismatch", "val", "", "head/value/tail", False, NO_MATCH),
    ("SimpleMatch_withAsterisk", "v*o", "", "value/vulkano/tail", False, EXCLUDE),
    ("SimpleMatch_withQuestionMark", "vul?ano", "", "value/vulkano/tail", False, EXCLUDE),
    ("SimpleMatch_magicChars", "v[ou]l[kc]ano", "", "value/volcano", False, EXCLUDE),
    ("SimpleMatch_wrongPattern_mismatch", "v[ou]l[", "", "value/vol[", False, NO_MATCH),
    ("GlobMatch_fromRootWithSlash", "/value/vul?ano", "", "value/vulkano/tail", False, EXCLUDE),
    ("GlobMatch_withDomain", "middle/tail/", "value/volcano", "value/volcano/middle/tail", True, EXCLUDE),
    ("GlobMatch_onlyMatchInDomain_mismatch", "volcano/tail", "value/volcano", "value/volcano/tail", False,
     NO_MATCH),
    ("GlobMatch_fromRootWithoutSlash", "value/vul?ano", "", "value/vulkano/tail", False, EXCLUDE),
    ("GlobMatch_fromRoot_mismatch", "value/vulkano", "", "value/volcano", False, NO_MATCH),
    ("GlobMatch_fromRoot_tooShort_mismatch", "value/vul?ano", "", "value", False, NO_MATCH),
    ("GlobMatch_fromRoot_notAtRoot_mismatch", "/value/volcano", "", "value/value/volcano", False, NO_MATCH),
    ("GlobMatch_leadingAsterisks_atStart", "**/*lue/vol?ano", "", "value/volcano/tail", False, EXCLUDE),
    ("GlobMatch_leadingAsterisks_notAtStart", "**/*lue/vol?ano", "", "head/value/volcano/tail", False,
     EXCLUDE),
    ("GlobMatch_leadingAsterisks_mismatch", "**/*lue/vol?ano", "", "head/value/Volcano/tail", False,
     NO_MATCH),
    ("GlobMatch_leadingAsterisks_isDir", "**/*lue/vol?ano/", "", "head/value/volcano/tail", False, EXCLUDE),
    ("GlobMatch_leadingAsterisks_isDirAtEnd", "**/*lue/vol?ano/", "", "head/value/volcano", True, EXCLUDE),
    ("GlobMatch_leadingAsterisks_isDir_mismatch", "**/*lue/vol?ano/", "", "head/value/Colcano", True,
     NO_MATCH),
    ("GlobMatch_leadingAsterisks_isDirNoDirAtEnd_mismatch", "**/*lue/vol?ano/", "", "head/value/volcano",
     False, NO_MATCH),
    ("GlobMatch_tailingAsterisks", "/*lue/vol?ano/**", "", "value/volcano/tail/moretail", False, EXCLUDE),
    ("GlobMatch_tailingAsterisks_exactMatch", "/*lue/vol?ano/**", "", "value/volcano", False, EXCLUDE),
    ("GlobMatch_middleAsterisks_emptyMatch", "/*lue/**/vol?ano", "", "value/volcano", False, EXCLUDE),
    ("GlobMatch_middleAsterisks_oneMatch", "/*lue/**/vol?ano", "", "value/middle/volcano", False, EXCLUDE),
    ("GlobMatch_middleAsterisks_multiMatch", "/*lue/**/vol?ano", "", "value/middle1/middle2/volcano", False,
     EXCLUDE),
    ("GlobMatch_middleAsterisks_isDir_trailing", "/*lue/**/vol?ano/", "", "value/middle1/middle2/volcano",
     True, EXCLUDE),
    ("GlobMatch_middleAsterisks_isDir_trailing_mismatch", "/*lue/**/vol?ano/", "",
     "value/middle1/middle2/volcano", False, NO_MATCH),
    ("GlobMatch_middleAsterisks_isDir", "/*lue/**/vol?ano/", "", "value/middle1/middle2/volcano/tail", False,
     EXCLUDE),
    ("GlobMatch_wrongDoubleAsterisk_mismatch", "/*lue/**foo/vol?ano", "", "value/foo/volcano/tail", False,
     NO_MATCH),
    ("GlobMatch_magicChars", "**/head/v[ou]l[kc]ano", "", "value/head/volcano", False, EXCLUDE),
    ("GlobMatch_wrongPattern_noTraversal_mismatch", "**/head/v[ou]l[", "", "value/head/vol[", False,
     NO_MATCH),
    ("GlobMatch_wrongPattern_onTraversal_mismatch", "/value/**/v[ou]l[", "", "value/head/vol[", False,
     NO_MATCH),
    ("GlobMatch_issue_923", "**/android/**/GeneratedPluginRegistrant.java", "",
     "packages/flutter_tools/lib/src/android/gradle.dart", False, NO_MATCH),
    # Go's filepath.Match, not Python's fnmatch: ``^`` negates a class, ``!`` is a plain character
    ("(Go class) negation", "[^a-c]x", "", "dx", False, EXCLUDE),
    ("(Go class) bang is literal", "[!a]x", "", "bx", False, NO_MATCH),
    ("(Go escape)", "\\*.yaml", "", "*.yaml", False, EXCLUDE),
]


@pytest.mark.parametrize(("name", "pattern", "domain", "path", "is_dir", "expected"), PATTERN_CASES,
                         ids=[c[0] for c in PATTERN_CASES])
def test_pattern_matches_as_fluxcd_pkg_does(name: str, pattern: str, domain: str, path: str, is_dir: bool,
                                            expected: int) -> None:
    dom = tuple(domain.split("/")) if domain else ()
    assert parse_pattern(pattern, dom, "test").match(tuple(path.split("/")), is_dir) == expected


@pytest.mark.parametrize(("name", "pattern", "domain", "path", "is_dir", "expected"), PATTERN_CASES,
                         ids=[c[0] for c in PATTERN_CASES])
def test_the_filter_decides_as_the_pattern_does(name: str, pattern: str, domain: str, path: str, is_dir: bool,
                                                expected: int) -> None:
    """The same cases through :class:`Filter` (per-folder shortcut for patterns without ``/``), the
    pattern written in a ``.sourceignore`` of its domain folder."""
    filt = Filter(ArtifactRules("r", ignore_files=((domain, pattern + "\n"),)))
    assert (filt.excluded(path, is_dir) is not None) == (expected == EXCLUDE)


def test_any_pattern_drops_the_defaults_but_never_the_vcs_ones() -> None:
    """artifact/storage/archive.go:68-77: no pattern at all -> VCS + defaults; any pattern (a
    ``.sourceignore`` anywhere, or ``spec.ignore``) -> VCS + those only."""
    bare = Filter(ArtifactRules("GitRepository flux-system/flux-system"))
    assert bare.excluded(".github/workflows/ci.yaml", False) is not None
    assert bare.excluded("apps/logo.png", False) is not None
    assert bare.excluded("apps/.gitignore", False) is not None
    assert bare.excluded("apps/x.yaml", False) is None
    for rules in (ArtifactRules("r", spec_ignore="# only a comment\n/docs\n"),
                  ArtifactRules("r", ignore_files=(("deep/down", "*.md\n"),))):
        f = Filter(rules)
        assert f.excluded(".github/workflows/ci.yaml", False) is None, rules
        assert f.excluded("apps/logo.png", False) is None, rules
        assert f.excluded("apps/.gitignore", False) is not None, rules
    comments_only = Filter(ArtifactRules("r", ignore_files=(("", "# nothing\n\n   \n"),)))
    assert comments_only.excluded(".github/ci.yaml", False) is not None  # no pattern: defaults stay


def test_spec_ignore_overrules_a_sourceignore_and_a_deeper_file_overrules_a_shallower_one() -> None:
    """matcher.go:41-49: the last pattern that matches decides; the order is every ``.sourceignore``
    (a folder's before its sub-folders', sourceignore.go:105-131), then spec.ignore
    (gitrepository_controller.go:921-923)."""
    f = Filter(ArtifactRules("r", ignore_files=(("", "*.yaml\n"), ("apps", "!keep.yaml\n")),
                             spec_ignore="apps/keep.yaml\n!apps/back.yaml\n"))
    assert f.excluded("apps/keep.yaml", False) is not None  # spec.ignore has the last word
    assert f.excluded("apps/back.yaml", False) is None
    assert f.excluded("other/keep.yaml", False) is not None  # apps/.sourceignore only applies below apps/
    assert f.excluded("apps/x.yaml", False) is not None
    why = f.excluded("apps/keep.yaml", False)
    assert why is not None and (why.text, why.origin) == ("apps/keep.yaml", "spec.ignore of r")


# -- through the CLI, real kubectl kustomize -------------------------------------------------------

@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_flux_repo(tmp_path)


def head(repo: Path) -> str:
    return git(repo, "rev-parse", "HEAD")


def other_service(repo: Path, name: str) -> str:
    """The sample's RayService alone (not its Secret, which kustomize would see twice), renamed."""
    return (repo / SERVICE).read_text().split("\n---")[0].replace("ray-serve-llm", name)


def plain(repo: Path, **spec: object) -> None:
    """plain/llm.yaml and plain/extra.yaml (RayServices llm-a and llm-b), deployed by the
    Kustomization ``plain`` from a folder without kustomization file (a generated one)."""
    write(repo, "plain/llm.yaml", other_service(repo, "llm-a"))
    write(repo, "plain/extra.yaml", other_service(repo, "llm-b"))
    write(repo, "clusters/prod/plain.yaml", kustomization("plain", "./plain", targetNamespace="ray-plain",
                                                          **spec))


def set_repository_ignore(repo: Path, ignore: str) -> None:
    docs = list(yaml.safe_load_all((repo / SYNC).read_text()))
    docs[0]["spec"]["ignore"] = ignore
    write(repo, SYNC, yaml.safe_dump_all(docs, sort_keys=False))


def bump(repo: Path, rel: str) -> None:
    write(repo, rel, (repo / rel).read_text().replace("2.52.0-py311-cu128", NEW_TAG))


@needs_kubectl
def test_a_resource_the_sourceignore_excludes_fails_the_build_as_in_flux(repo: Path, capsys) -> None:
    """apps/base/kustomization.yaml lists rayservice.yaml, which the new .sourceignore leaves out of
    the artifact: kustomize-controller's build fails, so the change holds, naming the pattern."""
    base = head(repo)
    write(repo, ".sourceignore", "# generated secrets\nrayservice.yaml\n")
    code, report = run(repo, base, commit(repo), capsys)
    assert (code, report["decision"]) == (3, "hold")
    [f] = report["findings"]
    assert (f["severity"], f["code"], f["path"]) == ("error", "render-failed", APPS_ROOT)
    assert "rayservice.yaml" in f["message"] and "'rayservice.yaml' (.sourceignore)" in f["message"]
    assert "/tmp" not in f["message"]


@needs_kubectl
def test_a_nested_sourceignore_is_relative_to_its_folder(repo: Path, capsys) -> None:
    """An anchored ``/rayservice.yaml`` at the root matches only a root file; the same line in
    apps/base/.sourceignore matches apps/base/rayservice.yaml (pattern.go:87-97, its domain)."""
    write(repo, ".sourceignore", "/rayservice.yaml\n")
    base = commit(repo, "root sourceignore")
    edit_yaml(repo, "apps/prod/kustomization.yaml", lambda d: d["images"][0].update(newTag=NEW_TAG))
    code, report = run(repo, base, commit(repo), capsys)
    [r] = report["resources"]
    assert (code, r["source"], r["rollout"]) == (3, APPS_ROOT, "new-cluster")  # rendered: not excluded
    base = head(repo)
    write(repo, "apps/base/.sourceignore", "/rayservice.yaml\n")
    code, report = run(repo, base, commit(repo), capsys)
    [f] = report["findings"]
    assert (code, f["code"], f["path"]) == (3, "render-failed", APPS_ROOT)
    assert "(apps/base/.sourceignore)" in f["message"]


@needs_kubectl
def test_generated_kustomization_leaves_an_ignored_file_out_and_its_change_has_no_impact(
        repo: Path, capsys) -> None:
    """kustomize-controller generates the resource list from the artifact: plain/extra.yaml, left out
    by plain/.sourceignore, is not deployed, so a change to it alone approves (exit 0)."""
    plain(repo)
    base = commit(repo, "plain")
    write(repo, "plain/.sourceignore", "extra.yaml\n")
    code, report = run(repo, base, commit(repo), capsys)  # adding the .sourceignore re-renders the root
    got = sorted((r["name"], r["action"]) for r in report["resources"] if r["source"] == PLAIN_ROOT)
    assert got == [("llm-a", "unchanged"), ("llm-b", "deleted")]
    base = head(repo)
    bump(repo, "plain/extra.yaml")
    code, report = run(repo, base, commit(repo), capsys)
    assert (code, report["decision"]) == (0, "approve")
    assert [(r["name"], r["action"]) for r in report["resources"] if r["source"] == PLAIN_ROOT] == [
        ("llm-a", "unchanged")]
    base = head(repo)
    bump(repo, "plain/llm.yaml")  # the file still in the artifact: held as before
    code, report = run(repo, base, commit(repo), capsys)
    [r] = report["resources"]
    assert (code, r["name"], r["rollout"]) == (3, "llm-a", "new-cluster")


@needs_kubectl
def test_a_negated_pattern_brings_a_file_back(repo: Path, capsys) -> None:
    """``*.yaml`` then ``!llm.yaml``: the later pattern wins (matcher.go:41-49)."""
    plain(repo)
    write(repo, "plain/.sourceignore", "*.yaml\n!llm.yaml\n")
    base = commit(repo, "plain")
    bump(repo, "plain/llm.yaml")
    bump(repo, "plain/extra.yaml")
    code, report = run(repo, base, commit(repo), capsys)
    [r] = report["resources"]
    assert (code, r["name"], r["rollout"]) == (3, "llm-a", "new-cluster")


@needs_kubectl
def test_github_folder_is_excluded_by_default_and_spec_ignore_replaces_the_defaults(
        repo: Path, capsys) -> None:
    """A Kustomization of ./.github/ray: not in the artifact by default (sourceignore.go:33), so the
    build fails as kustomize-controller's does (kustomization path not found); a GitRepository
    ``spec.ignore`` replaces the defaults (archive.go:68-77), and then the folder is deployed."""
    write(repo, ".github/ray/llm.yaml", other_service(repo, "llm-gh"))
    base = commit(repo, "github folder")
    write(repo, "clusters/prod/gh.yaml", kustomization("gh", "./.github/ray", targetNamespace="ray-gh"))
    code, report = run(repo, base, commit(repo), capsys)
    [f] = report["findings"]
    assert (code, f["code"], f["path"]) == (3, "render-failed", "Kustomization flux-system/gh")
    assert "kustomization path not found" in f["message"]
    assert "'.github/' (source-controller's default exclusions)" in f["message"]
    set_repository_ignore(repo, "/docs\n")  # any pattern: the defaults no longer apply
    base = commit(repo, "spec.ignore")
    bump(repo, ".github/ray/llm.yaml")
    code, report = run(repo, base, commit(repo), capsys)
    assert report["findings"] == []
    [r] = [r for r in report["resources"] if r["name"] == "llm-gh"]
    assert (code, r["namespace"], r["rollout"], r["source"]) == (3, "ray-gh", "new-cluster",
                                                                 "Kustomization flux-system/gh")


@needs_kubectl
def test_spec_ignore_adds_to_what_the_sourceignore_files_exclude(repo: Path, capsys) -> None:
    """spec.ignore's patterns follow the .sourceignore ones (gitrepository_controller.go:921-923):
    it can exclude a whole spec.path, a named render error (Flux would fail, not deploy nothing)."""
    plain(repo)
    write(repo, "plain/.sourceignore", "extra.yaml\n")
    base = commit(repo, "plain")
    set_repository_ignore(repo, "/plain/\n")
    code, report = run(repo, base, commit(repo), capsys)  # only the GitRepository changed
    [f] = report["findings"]
    assert (code, f["code"], f["path"]) == (3, "render-failed", PLAIN_ROOT)
    assert "spec.path 'plain' is not in the artifact" in f["message"]
    assert "'/plain/' (spec.ignore of GitRepository flux-system/flux-system)" in f["message"]


def test_the_sourceignore_files_are_read_by_every_flux_root(repo: Path) -> None:
    """A .sourceignore anywhere can turn the defaults off, so every Flux root reads all of them (a
    change to one re-renders) and carries their text (a render cache key)."""
    from app.render.discovery import discover
    from app.render.snapshot import git_snapshot

    write(repo, "docs/.sourceignore", "*.md\n")
    rev = commit(repo, "docs ignore")
    with git_snapshot(str(repo), rev) as snap:
        roots = discover(snap, repo_url=None).roots
    apps = next(r for r in roots.values() if r.label == APPS_ROOT)
    assert "docs/.sourceignore" in apps.read_files
    rules = apps.sources[0].flux.artifact
    assert rules.ignore_files == (("docs", "*.md\n"),) and rules.spec_ignore is None
    assert rules.repository == "GitRepository flux-system/flux-system"


@needs_kubectl
def test_a_chart_template_the_sourceignore_excludes_is_not_rendered(repo: Path, engine: str, capsys) -> None:
    """source-controller builds a HelmRelease's chart from the GitRepository's artifact too."""
    write(repo, "charts/ray-llm/Chart.yaml", {"apiVersion": "v2", "name": "ray-llm", "version": "0.1.0"})
    service = other_service(repo, "{{ .Release.Name }}").replace(
        "2.52.0-py311-cu128", "{{ .Values.tag }}")
    write(repo, "charts/ray-llm/values.yaml", {"tag": "2.52.0-py311-cu128"})
    write(repo, "charts/ray-llm/templates/rayservice.yaml", service)
    write(repo, "clusters/prod/ray-llm.yaml", helm_release(
        "ray-llm", "ray", {"chart": "./charts/ray-llm", "sourceRef": {**SOURCE, "namespace": "flux-system"}}))
    base = commit(repo, "chart")
    write(repo, "charts/ray-llm/.sourceignore", "templates/\n")
    code, report = run(repo, base, commit(repo), capsys)
    assert [(r["name"], r["action"]) for r in report["resources"] if r["source"] == "HelmRelease ray/ray-llm"
            ] == [("ray-llm", "deleted")]


def test_a_file_brought_back_inside_a_left_out_folder_is_laid_out(tmp_path: Path) -> None:
    """archive.go:106-119 decides every path on its own (no pruning): ``secret/`` then
    ``!secret/keep.yaml`` keeps that file, and its folder is made for it (tar/untar.go:127-132);
    a symlink is left out (archive.go:111-114), the rest is hard-linked."""
    from app.render.sourceignore import SYMLINK, artifact_copy, scan

    top = tmp_path / "tree"
    for rel in ("secret/drop.yaml", "secret/keep.yaml", "apps/a.yaml", "apps/logo.png", "empty/.gitkeep"):
        write(top, rel, "x: 1\n")
    (top / "apps/link.yaml").symlink_to("a.yaml")
    rules = ArtifactRules("r", spec_ignore="secret/\n!secret/keep.yaml\n")
    excluded = scan(str(top), rules)
    assert sorted(excluded) == ["apps/link.yaml", "secret", "secret/drop.yaml"]  # logo.png stays
    assert excluded["apps/link.yaml"] is SYMLINK
    dest = tmp_path / "artifact"
    artifact_copy(str(top), str(dest), excluded)
    got = sorted(str(p.relative_to(dest)) for p in dest.rglob("*") if not p.is_dir())
    assert got == ["apps/a.yaml", "apps/logo.png", "empty/.gitkeep", "secret/keep.yaml"]
    assert (dest / "apps/a.yaml").stat().st_ino == (top / "apps/a.yaml").stat().st_ino


@needs_kubectl
def test_a_values_file_the_artifact_leaves_out_is_missing(repo: Path, engine: str, capsys) -> None:
    """valuesFiles are read from the same artifact: a left-out one is a render-failed hold naming the
    pattern, unless ignoreMissingValuesFiles."""
    write(repo, "charts/ray-llm/Chart.yaml", {"apiVersion": "v2", "name": "ray-llm", "version": "0.1.0"})
    service = other_service(repo, "{{ .Release.Name }}").replace("2.52.0-py311-cu128", "{{ .Values.tag }}")
    write(repo, "charts/ray-llm/templates/rayservice.yaml", service)
    write(repo, "values/prod.yaml", {"tag": "2.52.0-py311-cu128"})
    chart = {"chart": "./charts/ray-llm", "sourceRef": {**SOURCE, "namespace": "flux-system"},
             "valuesFiles": ["values/prod.yaml"]}
    write(repo, "clusters/prod/ray-llm.yaml", helm_release("ray-llm", "ray", chart))
    base = commit(repo, "chart")
    set_repository_ignore(repo, "/values/\n")
    code, report = run(repo, base, commit(repo), capsys)
    [f] = [f for f in report["findings"] if f["path"] == "HelmRelease ray/ray-llm"]
    assert (code, f["code"]) == (3, "render-failed")
    assert "values/prod.yaml" in f["message"] and "'/values/' (spec.ignore of GitRepository" in f["message"]


@needs_kubectl
def test_a_symlink_is_not_in_the_artifact_so_a_build_through_one_fails_as_in_flux(repo: Path, capsys) -> None:
    """apps/base lists rayservice.yaml, now a symlink to the file moved to shared/: source-controller
    archives regular files only (archive.go:111-114), so kustomize-controller cannot find it. The
    same repository deployed by an Argo CD Application renders through the symlink."""
    base = head(repo)
    write(repo, "shared/rayservice.yaml", (repo / SERVICE).read_text())
    (repo / SERVICE).unlink()
    (repo / SERVICE).symlink_to("../../shared/rayservice.yaml")
    code, report = run(repo, base, commit(repo), capsys)
    assert (code, report["decision"]) == (3, "hold")
    [f] = report["findings"]
    assert (f["severity"], f["code"], f["path"]) == ("error", "render-failed", APPS_ROOT)
    assert "rayservice.yaml" in f["message"]
    assert "is a symlink, left out of the artifact of GitRepository flux-system/flux-system" in f["message"]
