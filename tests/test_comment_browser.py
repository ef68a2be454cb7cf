"""The comment reads at a glance, and a real browser draws it as GitHub would.

The first tests read the markdown: the verdict said once, holds first, paths relative to the
resource and shortened (the whole on hover; the JSON keeps them whole), Serve's lightweight /
replica-restart visible, the chart only for accelerators and with the known headroom as a line,
the whole pull request's extra capacity before each environment's (production first), KubeRay's
code cited by links to the upstream lines. The last render comments in headless chromium
(GitHub-flavoured markdown, mermaid from the npm registry) at the width of a comment on
github.com, 780 px: a hold, an approve, a change that reaches two environments and a plan per
node pool (its bars measured: one stacked bar per pool), each checked
for the chart as an SVG, the tables as tables and nothing wider than the comment (every table
and code block measured: its content no wider than its box). They are skipped without chromium
or npm.
"""

from __future__ import annotations

import importlib.util
import os
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
    # a shortened path shows the whole one on hover, and may wrap after each dot
    assert (f'| <code title="{full}">workerGroupSpecs[gpu-group].<wbr>…containers[ray-worker].<wbr>image'
            "</code><br><sub>cluster-recreate</sub> |") in text
    assert "at `workerGroupSpecs[gpu-group].template.spec` (line 70)" in text  # a finding: code as it is
    assert "| `rayClusterConfig.rayVersion`<br><sub>cluster-recreate</sub> | `2.52.0` | `2.53.0` |" in text
    assert "spec.rayClusterConfig" not in re.sub(r' title="[^"]*"', "", text)


@pytest.mark.parametrize(("path", "shown"), [
    ("spec.serveConfigV2.applications[name=fruit_app].deployments[name=MangoStand].user_config",
     "…applications[fruit_app].deployments[MangoStand].user_config"),
    ("spec.serveConfigV2.applications[name=text_ml_app].deployments[name=Translator].ray_actor_options",
     "…deployments[Translator].ray_actor_options"),
    ("spec.rayClusterConfig.workerGroupSpecs[groupName=gpu-group].template.spec.containers[name=ray-worker]"
     ".resources.limits[\"nvidia.com/gpu\"]", 'workerGroupSpecs[gpu-group].…limits["nvidia.com/gpu"]'),
    ("spec.rayClusterSpec.headGroupSpec.template.spec.containers[name=ray-head].image",  # a RayJob's
     "headGroupSpec.…containers[ray-head].image"),
    ("spec.upgradeStrategy.type", "upgradeStrategy.type"),
])
def test_long_paths_keep_their_last_segments(path: str, shown: str) -> None:
    from diffing.render.markdown import MAX_PATH, shown_path

    assert shown_path(path) == shown and len(shown) <= MAX_PATH


def test_a_value_without_a_place_to_wrap_gets_one() -> None:
    from diffing.render.markdown import _cell

    digest = "rayproject/ray@sha256:" + "0123456789abcdef" * 4
    cell = _cell(digest)
    assert cell.startswith("<code>rayproject/<wbr>ray@<wbr>sha256:<wbr>") and cell.endswith("…</code>")
    assert max(len(part) for part in re.split(r"<wbr>|<code>|</code>", cell)) <= 32
    assert _cell("rayproject/ray-llm:2.53.0-py311-cu128") == "`rayproject/ray-llm:2.53.0-py311-cu128`"
    assert _cell("a|b") == "`a\\|b`"


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
    assert text.count("<sub>serve-in-place · **lightweight**: applied to the running replicas</sub> |") == 2
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


def two_environments(policy: dict[str, Any] | None = None) -> diffing.Report:
    """The GPU image bump as a base change renders it into ``overlays/dev`` and ``overlays/prod``."""
    before, after = pair("gpu-image-bump")

    def side(text: str) -> list[diffing.Source]:
        return [diffing.Source(f"overlays/{env} (kustomize)", text, lines=False, namespace=f"ray-{env}")
                for env in ("dev", "prod")]

    return diffing.analyze(side(before), side(after), policy=policy)


def test_a_change_reaching_two_environments_leads_with_its_total_then_production() -> None:
    report = two_environments()
    assert [r.namespace for r in report.resources] == ["ray-dev", "ray-prod"]  # the JSON's order
    text = diffing.render_markdown(report)
    lines = text.splitlines()
    assert lines[2] == ("> ray-prod/ray-serve-llm → new-cluster; needs 4 extra nvidia.com/gpu; no headroom "
                        "is known; +1 more RayService")
    assert report.summary.startswith("hold: ray-prod/ray-serve-llm")  # the status says prod too
    whole = "**Extra while it rolls out, whole pull request:** nvidia.com/gpu: 8 (CPU 68, memory 72Gi)"
    total = lines.index(whole)
    assert lines[total + 2: total + 4] == [
        "- 🔴 `overlays/prod (kustomize)`: nvidia.com/gpu: 4 (CPU 34, memory 36Gi)",
        "- 🔴 `overlays/dev (kustomize)`: nvidia.com/gpu: 4 (CPU 34, memory 36Gi)"]
    assert total < text.index("| RayService |")  # before the table
    assert text.index("| 🔴 `ray-prod/ray-serve-llm` |") < text.index("| 🔴 `ray-dev/ray-serve-llm` |")
    assert text.index("### 🔴 `ray-prod/ray-serve-llm`") < text.index("### 🔴 `ray-dev/ray-serve-llm`")


def test_the_policy_gives_the_order_of_environments() -> None:
    report = two_environments({"environments": ["dev", "prod"]})
    text = diffing.render_markdown(report)
    assert text.index("- 🔴 `overlays/dev (kustomize)`") < text.index("- 🔴 `overlays/prod (kustomize)`")
    assert report.summary.startswith("hold: ray-dev/ray-serve-llm")
    assert "environments" not in report.to_dict()  # a reader's order, not part of the report
    with pytest.raises(diffing.PolicyError):
        diffing.analyze("", "", policy={"environments": "prod"})


def test_one_object_gets_no_total() -> None:
    assert "whole pull request" not in diffing.render_markdown(analyze("gpu-image-bump"))


def test_kuberay_citations_link_to_the_upstream_lines_and_the_json_keeps_them() -> None:
    report = analyze("rayjob-tpu-next-run")
    [r] = report.to_dict()["resources"]
    assert any("(RJC:988-992, 560-584, 518-557)" in reason for reason in r["reasons"])  # the JSON as it was
    text = diffing.render_markdown(report)
    upstream = "https://github.com/ray-project/kuberay/blob/v1.7.0/ray-operator/controllers/ray/rayjob_controller.go"
    assert (f"([rayjob_controller.go:988-992]({upstream}#L988-L992), [560-584]({upstream}#L560-L584), "
            f"[518-557]({upstream}#L518-L557))") in text
    assert not re.search(r"\b(RJC|RCC|RCJC|VAL|JOB|TYPES):\d", text)


def _citations() -> list[tuple[str, str]]:
    """(file cited, lines) of every citation in the texts of the samples' reports."""
    from diffing.render.citations import CITATION, FILES

    found = []
    for folder in sorted(SAMPLES.iterdir()):
        if not (folder / "before.yaml").exists():
            continue
        report = analyze(folder.name).to_dict()
        texts = [report["summary"], *(f["message"] for f in report["findings"])]
        for r in report["resources"]:
            texts += [*r["reasons"], *r["nextSteps"], *(f["message"] for f in r["findings"]),
                      *(c.get("detail", "") for c in r["changes"])]
        for text in texts:
            for m in CITATION.finditer(text):
                found += [(FILES[m["name"]], lines) for lines in m["ranges"].split(", ")]
    return found


def test_every_cited_line_is_in_kuberay_v1_7_0() -> None:
    source = Path(os.environ.get("KUBERAY_SRC", ROOT / ".cache/conformance/src/ray-operator-v1.7.0"))
    if not (source / "controllers").is_dir():
        pytest.skip(f"KubeRay v1.7.0's ray-operator is not at {source} (set KUBERAY_SRC)")
    cited = _citations()
    assert len(cited) >= 5
    for path, lines in cited:
        length = len((source / path.removeprefix("ray-operator/")).read_text().splitlines())
        first, _, last = lines.partition("-")
        assert 1 <= int(first) <= int(last or first) <= length, (path, lines, length)


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
    assert shots.overflow(dom) == []  # nothing wider than a comment on github.com
    chart = re.search(r'<pre class="mermaid"[^>]*>(.*?)</pre>', dom, re.DOTALL)
    assert chart is not None and "<svg" in chart.group(1), "the mermaid block did not become an SVG"
    svg = chart.group(1)
    assert "Syntax error" not in svg and "nvidia.com/gpu in use (new-cluster)" in svg
    assert re.search(r'class="[^"]*bar-plot', svg) and re.search(r'class="[^"]*line-plot', svg)
    assert len(re.findall(r"<table\b", dom)) == 2  # the resources and the changes
    assert "<th>RayService</th>" in dom and "|---|" not in dom
    assert re.search(r"<details open", dom)  # opened before mermaid drew (a closed one has no size)
    assert re.search(r'<code title="spec\.rayClusterConfig\.workerGroupSpecs\[groupName=gpu-group\]', dom)

    width, height = shots.png_size(png)
    assert width == 780 and 1000 < height < 8000
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
    assert shots.overflow(dom) == []
    width, height = shots.png_size(png)
    assert width == 780 and height > 600 and png.stat().st_size > 20_000


def test_the_placement_per_pool_renders_as_stacked_bars(browser: tuple[ModuleType, Path],
                                                         tmp_path: Path) -> None:
    """With a live basis the plan is pictured per node pool: one bar per pool, drawn over one
    another (grey total, green held + the rollout's, blue held), so each reads as a stacked bar."""
    from tests.diffing.placement.helpers import node, pod

    shots, mermaid_js = browser
    before, after = pair("gpu-image-bump")
    nodes = [node("cpu-0", pool="cpu-pool"),
             node("h100-0", pool="h100-pool", machine="a3-highgpu-8g", cpu="206", memory="1800Gi",
                  extra={"nvidia.com/gpu": "8"}),
             node("a100-0", pool="a100-pool", machine="a2-highgpu-8g", cpu="94", memory="1300Gi",
                  extra={"nvidia.com/gpu": "8"})]
    pods = [pod("busy", "h100-0", {"nvidia.com/gpu": "2"}), pod("full", "a100-0", {"nvidia.com/gpu": "6"})]
    live = {k: diffing.LiveCluster(active_cluster="old", cluster=(nodes, pods))
            for k in diffing.live_objects(after, "after")}
    markdown = diffing.render_markdown(diffing.analyze(before, after, live=live))
    png = tmp_path / "placement.png"
    dom = shots.render(shots.comment_body(markdown), mermaid_js, png, tmp_path)

    assert 'data-rendered="done"' in dom and shots.overflow(dom) == []
    charts = re.findall(r'<pre class="mermaid"[^>]*>(.*?)</pre>', dom, re.DOTALL)
    svg = next(c for c in charts if "per node pool" in c)
    assert "<svg" in svg and "Syntax error" not in svg
    assert "h100-pool (a3-highgpu-8g)" in svg and "a100-pool (a2-highgpu-8g)" in svg
    rects = re.findall(r'<rect x="([\d.]+)" y="([\d.]+)" width="([\d.]+)" height="[\d.]+" '
                       r'fill="(#[0-9a-f]+)"', svg)
    bars: dict[str, dict[str, float]] = {}
    for x, y, width, colour in rects:
        assert float(x) == float(rects[0][0])  # every bar starts at 0
        bars.setdefault(y, {})[colour] = float(width)
    h100, a100 = bars.values()  # h100 first: it takes the rollout's pod
    # h100: 8 in all, 2 held + 4 placed, 2 held; a100: 8 in all, 6 held, nothing placed
    unit = h100["#8c959f"] / 8

    def widths(*units: int) -> tuple[Any, ...]:
        return tuple(pytest.approx(n * unit, rel=0.05) for n in units)

    assert (h100["#2da44e"], h100["#54aeff"]) == widths(6, 2)
    assert (a100["#8c959f"], a100["#2da44e"], a100["#54aeff"]) == widths(8, 6, 6)
    assert "<th>node pool</th>" in dom
    assert shots.png_size(png)[0] == 780

    # The h100 node busy too: the worker's 4 GPUs fit nowhere, a red bar of 4 below the pools,
    # drawn first so that the pools' bars cover its zeros.
    pods[0] = pod("busy", "h100-0", {"nvidia.com/gpu": "6"})
    live = {k: diffing.LiveCluster(active_cluster="old", cluster=(nodes, pods))
            for k in diffing.live_objects(after, "after")}
    markdown = diffing.render_markdown(diffing.analyze(before, after, live=live))
    dom = shots.render(shots.comment_body(markdown), mermaid_js, tmp_path / "short.png", tmp_path)
    svg = next(c for c in re.findall(r'<pre class="mermaid"[^>]*>(.*?)</pre>', dom, re.DOTALL)
               if "per node pool" in c)
    assert "does not fit" in svg
    bars = {}
    for _x, y, width, colour in re.findall(r'<rect x="([\d.]+)" y="([\d.]+)" width="([\d.]+)" '
                                           r'height="[\d.]+" fill="(#[0-9a-f]+)"', svg):
        bars.setdefault(y, {})[colour] = float(width)
    *pools, short = bars.values()
    assert short["#cf222e"] == pytest.approx(4 * unit, rel=0.05)
    assert all(p["#8c959f"] > p["#cf222e"] for p in pools)  # the pools' bars hide the red zeros


def test_an_approve_with_long_serve_config_paths_fits_at_780_px(browser: tuple[ModuleType, Path],
                                                               tmp_path: Path) -> None:
    shots, mermaid_js = browser
    markdown = diffing.render_markdown(analyze("serve-only"))
    png = tmp_path / "approve.png"
    dom = shots.render(shots.comment_body(markdown), mermaid_js, png, tmp_path)

    assert 'data-rendered="done"' in dom and "rayservice-impact: <strong>approve</strong>" in dom
    assert dom.count('title="spec.serveConfigV2.applications[name=') == 2  # the whole path on hover
    assert shots.overflow(dom) == []
    assert shots.png_size(png)[0] == 780


def test_a_change_reaching_two_environments_fits_at_780_px(browser: tuple[ModuleType, Path],
                                                          tmp_path: Path) -> None:
    shots, mermaid_js = browser
    png = tmp_path / "two-environments.png"
    dom = shots.render(shots.comment_body(shots.multi_root()), mermaid_js, png, tmp_path)

    assert 'data-rendered="done"' in dom
    assert "<strong>Extra while it rolls out, whole pull request:</strong>" in dom
    assert dom.index("overlays/prod (kustomize)") < dom.index("overlays/dev (kustomize)")
    assert len(re.findall(r'<pre class="mermaid"[^>]*>\s*<svg', dom)) == 2  # a chart per environment
    assert shots.overflow(dom) == []
    assert shots.png_size(png)[0] == 780


def test_the_overflow_check_catches_a_table_too_wide_for_the_comment(browser: tuple[ModuleType, Path],
                                                                    tmp_path: Path) -> None:
    """The measure itself: a cell without a place to wrap does not fit 780 px, and is reported."""
    shots, mermaid_js = browser
    wide = "| a | b |\n|---|---|\n| `" + "x" * 200 + "` | y |\n"
    dom = shots.render(shots.comment_body(wide), mermaid_js, tmp_path / "wide.png", tmp_path)
    assert [o["what"] for o in shots.overflow(dom)][:1] == ["table"]
