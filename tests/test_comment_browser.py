"""The comment reads at a glance, and a real browser draws it as GitHub would.

The first tests read the markdown: the verdict said once, holds first, paths relative to the
resource (the JSON keeps them whole), Serve's lightweight / replica-restart visible, the chart
only for accelerators and with the known headroom as a line. The last renders a sample comment
in headless chromium (GitHub-flavoured markdown, mermaid from the npm registry) and checks that
the chart became an SVG and the tables tables; it is skipped without chromium or npm.
"""

from __future__ import annotations

import importlib.util
import re
import shutil
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

import diffing

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "samples"


def pair(name: str) -> tuple[str, str]:
    return (SAMPLES / name / "before.yaml").read_text(), (SAMPLES / name / "after.yaml").read_text()


def analyze(*names: str, **options: Any) -> diffing.Report:
    texts = [pair(n) for n in names]
    return diffing.analyze([(f"{n}.yaml", b) for n, (b, _) in zip(names, texts, strict=True)],
                           [(f"{n}.yaml", a) for n, (_, a) in zip(names, texts, strict=True)], **options)


def verdict_lines(text: str) -> list[str]:
    """The lines that could say a verdict: headings, the summary quote, table rows."""
    return [line for line in text.splitlines() if line.startswith(("#", ">", "|"))]


# --- the markdown ------------------------------------------------------------------------------

def test_the_verdict_is_said_once_in_the_heading() -> None:
    text = diffing.render_markdown(analyze("gpu-image-bump"))
    lines = verdict_lines(text)
    assert lines[0] == "## 🔴 rayservice-impact: **hold**"
    assert [line for line in lines if re.search(r"\bhold\b", line)] == [lines[0]]
    assert lines[1] == ("> default/ray-serve-llm → new-cluster; needs 4 extra nvidia.com/gpu; "
                        "no headroom is known")
    assert "### 🔴 `default/ray-serve-llm`: new-cluster" in lines


def test_holds_come_first_and_a_decision_unlike_the_verdict_is_named() -> None:
    # rayservice-sample (serve-only, approve) sorts before stable-diffusion (strategy None, hold)
    report = analyze("serve-only", "strategy-none")
    assert [r.name for r in report.resources] == ["rayservice-sample", "stable-diffusion"]
    text = diffing.render_markdown(report)
    rows = [line for line in verdict_lines(text) if line.startswith("| 🔴") or line.startswith("| 🟢")]
    assert rows[0].startswith("| 🔴 `default/stable-diffusion` |")
    assert rows[1].startswith("| 🟢 `default/rayservice-sample` (approve) |")
    assert text.index("### 🔴 `default/stable-diffusion`: not-applied\n") < \
        text.index("### 🟢 `default/rayservice-sample`: serve-in-place → approve\n")
    short = diffing.render_markdown(report, max_chars=len(text) - 1)  # compact: same order
    assert short.index("### 🔴 `default/stable-diffusion`") < \
        short.index("### 🟢 `default/rayservice-sample`")


def test_paths_are_relative_to_the_resource_in_markdown_and_whole_in_json() -> None:
    report = analyze("gpu-image-bump")
    full = ("spec.rayClusterConfig.workerGroupSpecs[groupName=gpu-group].template.spec"
            ".containers[name=ray-worker].image")
    assert full in [c["path"] for c in report.to_dict()["resources"][0]["changes"]]
    text = diffing.render_markdown(report)
    assert "`workerGroupSpecs[gpu-group].…containers[ray-worker].image`" in text
    assert "`headGroupSpec.…containers[ray-head].image`" in text
    assert "`rayClusterConfig.rayVersion`" in text
    assert "spec.rayClusterConfig" not in text


@pytest.mark.parametrize(("path", "short"), [
    ("spec.rayClusterConfig.workerGroupSpecs[groupName=gpu].template.spec.containers[name=ray-worker].image",
     "workerGroupSpecs[gpu].…containers[ray-worker].image"),
    ("spec.rayClusterConfig.workerGroupSpecs[groupName=gpu].template.spec",
     "workerGroupSpecs[gpu].template.spec"),
    ("spec.rayClusterConfig.workerGroupSpecs[2].template.metadata.labels",
     "workerGroupSpecs[2].template.metadata.labels"),
    ("spec.rayClusterConfig.enableInTreeAutoscaling", "rayClusterConfig.enableInTreeAutoscaling"),
    ("spec.upgradeStrategy.type", "upgradeStrategy.type"),  # not rayClusterConfig.upgradeStrategy
    ("spec.serveConfigV2.applications[name=app].deployments[name=Model].user_config",
     "serveConfigV2.applications[app].deployments[Model].user_config"),
    ('metadata.annotations["ray.io/ft-enabled"]', 'metadata.annotations["ray.io/ft-enabled"]'),
    ("spec", "spec"),
])
def test_short_path(path: str, short: str) -> None:
    from diffing.render.markdown import short_path

    assert short_path(path) == short


def test_serve_effects_show_in_the_table_and_in_the_short_form() -> None:
    report = analyze("serve-only")
    text = diffing.render_markdown(report)
    assert "**Changes:** serve-in-place 2 (lightweight 2)" in text
    assert text.count("| **lightweight**: applied to the running replicas |") == 2
    short = diffing.render_markdown(report, max_chars=len(text) - 1)
    assert "| serve-in-place |" not in short and "serve-in-place 2 (lightweight 2)" in short


def test_no_chart_without_an_accelerator_change_and_the_peak_kept() -> None:
    text = diffing.render_markdown(analyze("incremental-upgrade"))  # CPU and memory only
    assert "mermaid" not in text and "Capacity over the rollout" not in text
    assert ("**Extra capacity needed:** cpu: 1.5, memory: 2.5Gi (basis: manifest) · "
            "peak: cpu: 3, memory: 5Gi · headroom: unknown") in text


def test_the_chart_draws_the_known_headroom_as_a_line() -> None:
    unknown = diffing.render_markdown(analyze("gpu-image-bump"))
    assert "  bar [4, 8, 4]\n```" in unknown and "No headroom is known" in unknown
    known = diffing.render_markdown(analyze("gpu-image-bump", headroom={"nvidia.com/gpu": 2}))
    assert "  bar [4, 8, 4]\n  line [6, 6, 6]\n```" in known
    assert "4 in use now + 2 headroom = 6" in known
    roomy = diffing.render_markdown(analyze("gpu-image-bump", headroom={"nvidia.com/gpu": 12}))
    assert '  y-axis "nvidia.com/gpu" 0 --> 17\n' in roomy and "  line [16, 16, 16]" in roomy


# --- in a browser ------------------------------------------------------------------------------

def load_screenshots() -> ModuleType:
    spec = importlib.util.spec_from_file_location("screenshots", ROOT / "scripts" / "screenshots.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> tuple[ModuleType, Path]:
    if not shutil.which("chromium") and not shutil.which("chromium-browser"):
        pytest.skip("chromium is not installed")
    if not shutil.which("npm"):
        pytest.skip("npm is not installed (mermaid comes from the npm registry)")
    shots = load_screenshots()
    try:
        mermaid_js = shots.fetch_mermaid(tmp_path_factory.mktemp("npm"))
    except Exception as exc:  # no registry here: nothing to draw the chart with
        pytest.skip(f"mermaid could not be fetched: {exc}")
    return shots, mermaid_js


def test_the_comment_renders_in_a_browser(browser: tuple[ModuleType, Path], tmp_path: Path) -> None:
    shots, mermaid_js = browser
    markdown = diffing.render_markdown(analyze("gpu-image-bump", headroom={"nvidia.com/gpu": 2}))
    png = tmp_path / "comment.png"
    dom = shots.render(shots.comment_body(markdown), mermaid_js, png, tmp_path)

    assert 'data-rendered="done"' in dom
    chart = re.search(r'<pre class="mermaid"[^>]*>(.*?)</pre>', dom, re.DOTALL)
    assert chart is not None and "<svg" in chart.group(1), "the mermaid block did not become an SVG"
    svg = chart.group(1)
    assert "Syntax error" not in svg and "nvidia.com/gpu in use (new-cluster)" in svg
    assert re.search(r'class="[^"]*bar-plot', svg) and re.search(r'class="[^"]*line-plot', svg)
    assert len(re.findall(r"<table\b", dom)) == 2  # the resources and the changes
    assert "<th>RayService</th>" in dom and "|---|" not in dom
    assert re.search(r"<details open", dom)  # opened before mermaid drew (a closed one has no size)

    width, height = shots.png_size(png)
    assert width == 1200 and 1000 < height < 8000
    assert png.stat().st_size > 30_000  # a drawn page, not a blank one


def test_a_raycluster_comment_renders_in_a_browser(browser: tuple[ModuleType, Path], tmp_path: Path) -> None:
    """The standalone RayCluster answer as a reviewer sees it: the kind named in the table, the
    Argo CD rule as a YAML block, no stray markdown."""
    shots, mermaid_js = browser
    markdown = diffing.render_markdown(analyze("raycluster-autoscaler-fight"))
    png = tmp_path / "raycluster.png"
    dom = shots.render(shots.comment_body(markdown), mermaid_js, png, tmp_path)

    assert 'data-rendered="done"' in dom
    assert "<th>resource</th>" in dom
    assert re.search(r"<td>🟡 RayCluster <code>ml-dev/notebooks-l4</code>", dom)
    block = re.search(r"<pre[^>]*><code[^>]*>(.*?)</code></pre>", dom, re.DOTALL)
    assert block is not None and "kind: RayCluster" in block.group(1)
    assert ".spec.workerGroupSpecs[]?.scaleStrategy" in block.group(1)
    assert "ApplyOutOfSyncOnly=true" in block.group(1) and "|---|" not in dom
    width, height = shots.png_size(png)
    assert width == 1200 and height > 600 and png.stat().st_size > 20_000
