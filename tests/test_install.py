"""The install and run lines users copy (README, docs/, the Dockerfile, deploy/) agree with the
package and with each other (issue 24). What they do when run is scripts/new_user_run.py's job
(.ci/run runs it after the tests: it downloads the dependencies)."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
VERSION = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
IMAGE = f"rayservice-impact:{VERSION}"
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), ROOT / "bench" / "README.md",
        ROOT / "Dockerfile", ROOT / "action.yml"]
# What a pip/pipx install line may install: the clone ('.', a path), a built wheel (dist/...), the
# Action's own checkout, or the `build` tool from PyPI. Never the package from an index: it is on none.
LOCAL = re.compile(r"""^['"]?(\.|/|dist/|\$|"\$)|^build$|^\.\.\.$""")
INSTALL = re.compile(r"\b(pipx?) install\b([^`|;&#\n]*)")


def install_lines() -> list[tuple[str, str]]:
    found = []
    for path in DOCS:
        for line in path.read_text().splitlines():
            if line.lstrip().startswith("==>"):  # a step title in new_user_run.py's transcript
                continue
            for m in INSTALL.finditer(line):
                found.append((f"{path.relative_to(ROOT)}: {line.strip()}", m.group(2)))
    return found


@pytest.mark.parametrize(("where", "args"), install_lines(), ids=lambda v: v[:70])
def test_every_install_line_installs_from_the_clone_or_a_wheel(where: str, args: str) -> None:
    words = args.replace("\\", " ").split()
    targets, skip = [], False
    for word in words:
        if skip:
            skip = False
            continue
        if word in ("-r", "-c", "--find-links", "-f", "--index-url", "-i"):
            skip = True
            continue
        if word.startswith("-"):
            continue
        targets.append(word)
    assert targets, where
    for target in targets:
        assert LOCAL.match(target), f"{where}: {target!r} is not on any index: install from a clone or wheel"


def test_the_readme_http_example_installs_the_server_extra_before_serve() -> None:
    readme = (ROOT / "README.md").read_text()
    block = re.search(r"## HTTP service\n\n```sh\n(.*?)```", readme, re.S)
    assert block
    lines = block.group(1).splitlines()
    serve = next(i for i, line in enumerate(lines) if "rayservice-impact serve" in line)
    assert any("pip install" in line and "[server]" in line for line in lines[:serve])


def deploy_images() -> dict[str, str]:
    out = {}
    for path in sorted((ROOT / "deploy").rglob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            spec = (doc or {}).get("spec") or {}
            pod = (spec.get("template") or {}).get("spec") or spec
            for c in (pod.get("containers") or []) + (pod.get("initContainers") or []):
                out[f"{path.relative_to(ROOT)}:{c['name']}"] = c["image"]
    return out


def test_deploy_runs_the_image_the_documented_build_makes() -> None:
    images = deploy_images()
    assert set(images) >= {"deploy/base/deployment.yaml:server", "deploy/argocd/presync-pod.yaml:presync"}
    assert set(images.values()) == {IMAGE}
    build = f"docker build -t {IMAGE} ."
    for doc in ("Dockerfile", "README.md", "docs/install.md"):
        assert build in (ROOT / doc).read_text(), doc
    assert f"docker build -t {IMAGE}" in (ROOT / "docs" / "argocd.md").read_text()
    assert "ghcr.io/example" not in "".join(p.read_text() for p in (ROOT / "deploy").rglob("*.yaml"))


def test_the_image_is_multi_stage_and_runs_as_the_user_deploy_names() -> None:
    dockerfile = (ROOT / "Dockerfile").read_text()
    stages = re.findall(r"^FROM\s+(\S+)(?:\s+AS\s+(\S+))?", dockerfile, re.M)
    assert len(stages) == 2 and stages[0][1] == "build" and not stages[1][1]
    final = dockerfile[dockerfile.rindex("\nFROM "):]
    assert "COPY --from=build /opt/rayservice-impact /opt/rayservice-impact" in final
    assert "/wheels" not in final  # nothing of the build but the virtualenv
    (user,) = re.findall(r"^USER\s+(\S+)", final, re.M)
    uid, _, gid = user.partition(":")
    # numeric and not root: the kubelet's runAsNonRoot check can verify it
    assert uid.isdigit() and int(uid) > 0 and gid.isdigit() and int(gid) > 0
    pods = [yaml.safe_load((ROOT / p).read_text()) for p in ("deploy/base/deployment.yaml",
                                                            "deploy/argocd/presync-pod.yaml")]
    for pod in pods:
        spec = pod["spec"]["template"]["spec"] if pod["kind"] == "Deployment" else pod["spec"]
        ctx = spec["securityContext"]
        assert (ctx["runAsNonRoot"], str(ctx["runAsUser"]), str(ctx["runAsGroup"])) == (True, uid, gid)


def test_the_build_context_leaves_caches_out() -> None:
    ignored = set((ROOT / ".dockerignore").read_text().split())
    assert {".git", ".venv", ".cache", "dist", "build"} <= ignored
