"""Issue "Green means safe", children: every renderer child runs under a memory limit and with an
environment holding nothing of ours.

A 420-byte Helm values file of nested aliases drove the Helm child past 8 GB, and a ``range until``
template to 3.5 GB before the output cap; under the limit both end as a render failure (a
``render-failed`` finding, so the change is held), never as a hang or the host's OOM. (A chart's own
values.yaml is read by Helm's Go loader, which refuses "excessive aliasing"; a values file an
Application names is read by the SDK child's PyYAML, which expands aliases as far as memory goes.)
"""

from __future__ import annotations

import importlib.util
import os
import sys
import time
from pathlib import Path

import pytest
from gitops import NEW_TAG, application, commit, make_repo, run, write

from app.render.helm import HelmSource, render_helm
from app.render.kustomize import find_tool, render_kustomize
from app.render.process import DEFAULT_MEMORY_BYTES, RENDER_NICENESS, RenderError, RenderLimits, run_tool
from app.render.snapshot import Snapshot, git_env

sdk = pytest.mark.skipif(importlib.util.find_spec("helm_python") is None,
                         reason="helm-python-sdk is not installed")
kubectl = pytest.mark.skipif(find_tool("kubectl") is None, reason="kubectl is not installed")

SECRETS = {"GITHUB_TOKEN": "ghp_0123456789abcdefghijklmnopqrstuvwxyz",
           "RAYSERVICE_IMPACT_GITHUB_TOKEN": "ghp_abcdefghijklmnopqrstuvwxyz0123456789",
           "RAYSERVICE_IMPACT_ARGOCD_TOKEN": "argocd-token-value",
           "AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"}

# 582 bytes: 9 strings of 30 characters, nested 8 levels deep 9 times over: 387 M strings when
# expanded (the file was 420 bytes with the same shape).
ALIAS_BOMB = "a: &a [" + ",".join(['"' + "x" * 30 + '"'] * 9) + "]\n" + "".join(
    f"{n}: &{n} [" + ",".join([f"*{p}"] * 9) + "]\n" for p, n in zip("abcdefg", "bcdefgh", strict=True)
) + "i: [" + ",".join(["*h"] * 9) + "]\n"

ECHO_VALUES = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}
data:
  i: {{ .Values.i | toJson | quote }}
"""

RANGE_UNTIL = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}
data:
  v: "{{ range until 400000000 }}x{{ end }}"
"""


def make_chart(folder: Path, template: str, values: str = "a: 1\n") -> Path:
    write(folder, "Chart.yaml", "apiVersion: v2\nname: demo\nversion: 0.1.0\n")
    write(folder, "values.yaml", values)
    write(folder, "templates/cm.yaml", template)
    return folder


def test_every_child_runs_under_the_memory_limit_and_below_our_priority(tmp_path: Path) -> None:
    out = run_tool("sh", ["sh", "-c", "ulimit -d"], cwd=str(tmp_path), limits=RenderLimits())
    assert int(out) * 1024 == DEFAULT_MEMORY_BYTES  # ulimit -d prints KiB
    niceness = run_tool("python", [sys.executable, "-c", "import os; print(os.nice(0))"], cwd=str(tmp_path),
                        limits=RenderLimits())
    assert int(niceness) == os.nice(0) + RENDER_NICENESS
    out = run_tool("sh", ["sh", "-c", "ulimit -d; echo $GOMEMLIMIT"], cwd=str(tmp_path),
                   limits=RenderLimits(memory_bytes=512 * 1024 * 1024))
    assert out.split() == [b"524288", b"384MiB"]
    assert run_tool("sh", ["sh", "-c", "ulimit -d"], cwd=str(tmp_path),
                    limits=RenderLimits(memory_bytes=None)).strip() == b"unlimited"


def test_children_get_no_secret_from_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)
    out = run_tool("env", ["env"], cwd=str(tmp_path), limits=RenderLimits()).decode()
    names = {line.split("=", 1)[0] for line in out.splitlines()}
    assert names <= {"PATH", "HOME", "TMPDIR", "LANG", "LC_ALL", "HELM_CACHE_HOME", "HELM_CONFIG_HOME",
                     "HELM_DATA_HOME", "KUSTOMIZE_PLUGIN_HOME", "NO_PROXY", "GOMEMLIMIT", "PWD", "SHLVL", "_"}
    assert not any(value in out for value in SECRETS.values())
    # git archive (the CLI's snapshots) keeps its configuration and locale, and nothing else
    kept = {"PATH": "/usr/bin", "HOME": "/home/u", "GIT_CONFIG_GLOBAL": "/g", "LC_ALL": "C"}
    assert git_env({**SECRETS, **kept}) == kept


@kubectl
def test_kubectl_kustomize_renders_under_the_default_limit(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    out = render_kustomize(Snapshot(str(repo), ""), "overlays/prod", None, RenderLimits())
    assert "kind: RayService" in out and "namespace: ray-prod" in out


@sdk
def test_helm_sdk_renders_under_the_default_limit(tmp_path: Path) -> None:
    chart = make_chart(tmp_path / "chart", ECHO_VALUES, "i: [1, 2]\n")
    out = render_helm(HelmSource(str(chart), str(tmp_path), "rel"), RenderLimits(), engine="sdk")
    assert "i: '[1,2]'" in out or 'i: "[1,2]"' in out


@pytest.mark.parametrize("template, values_file", [(RANGE_UNTIL, ""), (ECHO_VALUES, ALIAS_BOMB)],
                         ids=["range-until-template", "values-file-alias-bomb"])
def test_a_runaway_helm_render_fails_at_the_memory_limit(tmp_path: Path, template: str,
                                                         values_file: str, engine: str) -> None:
    chart = make_chart(tmp_path / "chart", template)
    files: tuple[str, ...] = ()
    if values_file:
        write(tmp_path, "env/values.yaml", values_file)
        files = (str(tmp_path / "env/values.yaml"),)
    limits = RenderLimits(timeout_s=120, memory_bytes=512 * 1024 * 1024)
    started = time.monotonic()
    with pytest.raises(RenderError) as caught:
        render_helm(HelmSource(str(chart), str(tmp_path), "rel", value_files=files), limits, engine=engine)
    if engine == "binary" and values_file:
        # helm reads values files with Go's YAML parser, which refuses the bomb before expanding it.
        assert "excessive aliasing" in caught.value.message
    else:
        assert "needed more than its 512 MiB memory limit" in caught.value.message
    assert time.monotonic() - started < 60  # stopped by the limit, not by the wall clock


@sdk
@kubectl
def test_a_helm_values_bomb_in_a_pull_request_is_a_render_failed_hold(tmp_path: Path, capsys) -> None:
    """The whole CLI flow (``git BASE HEAD``) with the default limits: an Application's values file
    turned into a bomb is a finding that holds, and the rest of the change is still judged."""
    repo = make_repo(tmp_path, with_apps=True)
    make_chart(repo / "charts/demo", ECHO_VALUES)
    write(repo, "envs/prod/values.yaml", "i: [1]\n")
    write(repo, "apps/demo.yaml", application("demo", "charts/demo", "demo",
                                              helm={"valueFiles": ["../../envs/prod/values.yaml"]}))
    base = commit(repo)
    write(repo, "envs/prod/values.yaml", ALIAS_BOMB)
    write(repo, "overlays/prod/kustomization.yaml", (repo / "overlays/prod/kustomization.yaml").read_text()
          .replace("2.52.0-py311-cu128", NEW_TAG))
    started = time.monotonic()
    code, report = run(repo, base, commit(repo), capsys)
    assert code == 3 and report["decision"] == "hold"
    [failed] = [f for f in report["findings"] if f["code"] == "render-failed"]
    assert failed["path"] == "Application demo" and "1024 MiB memory limit" in failed["message"]
    assert [r["source"] for r in report["resources"]] == ["Application llm-prod"]  # the rest is judged
    assert time.monotonic() - started < 60


@pytest.mark.parametrize("stderr", [b"fatal error: runtime: out of memory",
                                    b"runtime: out of memory: cannot allocate 1048576-byte block",
                                    b"fatal error: runtime: cannot allocate memory", b"MemoryError",
                                    b"sh: fork: Cannot allocate memory"])
def test_every_way_a_child_reports_running_out_of_memory_is_recognised(stderr: bytes) -> None:
    """Go reports a failed mmap (a new thread's stack under the limit) as "cannot allocate memory": the
    runaway-template test above saw it under load in the SDK child, where "out of memory" is usual."""
    from app.render.process import _out_of_memory

    assert _out_of_memory(bytearray(stderr))
    assert not _out_of_memory(bytearray(b"Error: template: demo/templates/x.yaml:3: boom"))
