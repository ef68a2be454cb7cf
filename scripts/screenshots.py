"""Screenshots of the pull request comment as a browser draws it: docs/screenshots/*.png.

The comment's markdown becomes HTML the way GitHub reads it (markdown-it-py: CommonMark with
tables, strikethrough and raw HTML such as ``<details>`` and ``<sub>``), with a small
GitHub-like stylesheet; fenced ``mermaid`` blocks are drawn by mermaid 11, fetched from the npm
registry into a temporary folder at run time (never kept in the repository) and loaded from a
``file://`` URL. Headless chromium then takes the picture; nothing else is loaded. Every
``<details>`` is opened so the whole comment shows (on GitHub the folded parts start closed).

The page is as wide as a comment in a pull request's conversation on github.com, about 780 px
(:data:`WIDTH`), and the stylesheet takes GitHub's own rules where they decide the layout (inline
code wraps at spaces, ``white-space: break-spaces``; a table is a block at most as wide as the
comment that scrolls when its content is wider; text breaks long words). The page also measures
what does not fit: every element of the comment whose content is wider than its box (a table
or code block that would scroll sideways) is listed in ``data-overflow`` on ``<body>``.

    python scripts/screenshots.py            # writes docs/screenshots/<situation>.png

Needs ``chromium`` and ``npm`` on PATH (Debian: ``apt-get install chromium``; the icons need an
emoji font such as ``fonts-noto-color-emoji``). tests/test_comment_browser.py uses the same
functions to check that the comment really renders.
"""

from __future__ import annotations

import html
import json
import re
import shutil
import struct
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Callable
from pathlib import Path

from markdown_it import MarkdownIt

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "samples"
OUT = ROOT / "docs" / "screenshots"
WIDTH = 780  # a pull request comment's column on github.com (the page is exactly one comment wide)
MIN_HEIGHT = 600
MAX_HEIGHT = 8000

CHROMIUM_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync",
                  "--hide-scrollbars", "--force-device-scale-factor=1")

STYLE = """
body { margin: 0; background: #fff; color: #1f2328; }
.frame { box-sizing: border-box; width: 780px; margin: 0; border: 1px solid #d1d9e0; border-radius: 6px; }
.frame > header { background: #f6f8fa; border-bottom: 1px solid #d1d9e0; padding: 8px 16px;
  border-radius: 6px 6px 0 0; font: 14px/1.5 -apple-system, "Segoe UI", "Noto Sans", Helvetica,
  Arial, sans-serif, "Noto Color Emoji"; color: #59636e; }
.frame > header b { color: #1f2328; }
.markdown-body { padding: 16px; font-family: -apple-system, "Segoe UI", "Noto Sans", Helvetica, Arial,
  sans-serif, "Apple Color Emoji", "Segoe UI Emoji", "Noto Color Emoji"; font-size: 14px;
  line-height: 1.5; word-wrap: break-word; }
.markdown-body > :first-child { margin-top: 0 !important; }
.markdown-body h2 { font-size: 1.5em; font-weight: 600; padding-bottom: .3em;
  border-bottom: 1px solid #d1d9e0b3; margin: 24px 0 16px; line-height: 1.25; }
.markdown-body h3 { font-size: 1.25em; font-weight: 600; margin: 24px 0 16px; line-height: 1.25; }
.markdown-body p, .markdown-body blockquote, .markdown-body ul, .markdown-body ol,
.markdown-body table, .markdown-body pre, .markdown-body details { margin: 0 0 16px; }
.markdown-body blockquote { padding: 0 1em; color: #59636e; border-left: .25em solid #d1d9e0; }
.markdown-body ul, .markdown-body ol { padding-left: 2em; }
.markdown-body li + li { margin-top: .25em; }
.markdown-body code { padding: .2em .4em; font-size: 85%; background: #818b981f; border-radius: 6px;
  white-space: break-spaces;
  font-family: ui-monospace, SFMono-Regular, "SF Mono", Menlo, Consolas, "Liberation Mono", monospace; }
.markdown-body pre { padding: 16px; overflow: auto; font-size: 85%; line-height: 1.45;
  background: #f6f8fa; border-radius: 6px; word-wrap: normal; }
.markdown-body pre > code { padding: 0; background: transparent; font-size: 100%; white-space: pre;
  word-break: normal; }
.markdown-body table { display: block; width: max-content; max-width: 100%; overflow: auto;
  border-spacing: 0; border-collapse: collapse; }
.markdown-body th { font-weight: 600; }
.markdown-body th, .markdown-body td { padding: 6px 13px; border: 1px solid #d1d9e0; }
.markdown-body tr:nth-child(2n) { background: #f6f8fa; }
.markdown-body sub { color: #59636e; }
.markdown-body summary { cursor: pointer; }
.markdown-body pre.mermaid { background: #fff; text-align: center; }
"""

# Opens every <details>, draws the mermaid blocks, then notes on <body> what happened, how tall
# the comment is (data-rendered: "done" or the error; data-height: the comment's bottom edge) and
# what is wider than its box (data-overflow: a JSON list of {what, scroll, client, text}: an
# element whose content is wider than itself scrolls sideways on GitHub; one that reaches past
# the comment's right edge pushes it wider).
SCRIPT = """
document.querySelectorAll('details').forEach(d => d.open = true);
const overflowing = () => {
  const body = document.querySelector('.markdown-body');
  const out = [];
  const check = (el, what) => {
    if (el.scrollWidth > el.clientWidth + 1) {
      out.push({what: what, scroll: el.scrollWidth, client: el.clientWidth,
                text: el.textContent.slice(0, 80)});
    }
  };
  check(document.documentElement, 'page');
  check(document.querySelector('.frame'), 'comment');
  check(body, 'comment body');
  body.querySelectorAll('table, pre, blockquote, ul, ol, p, details').forEach(
    el => check(el, el.tagName.toLowerCase()));
  const right = body.getBoundingClientRect().right;
  body.querySelectorAll('*').forEach(el => {
    const box = el.getBoundingClientRect();
    if (box.width > 0 && box.right > right + 1) {
      out.push({what: 'past the comment: ' + el.tagName.toLowerCase(), scroll: Math.ceil(box.right),
                client: Math.floor(right), text: el.textContent.slice(0, 80)});
    }
  });
  return out;
};
const done = (what) => {
  document.body.dataset.rendered = what;
  const frame = document.querySelector('.frame');
  document.body.dataset.height = Math.ceil(frame.getBoundingClientRect().bottom + window.scrollY);
  document.body.dataset.overflow = JSON.stringify(overflowing());
};
if (typeof mermaid === 'undefined') { done('mermaid did not load'); }
else {
  mermaid.initialize({ startOnLoad: false, securityLevel: 'strict', theme: 'default' });
  mermaid.run({ querySelector: 'pre.mermaid' }).then(() => done('done'), e => done('error: ' + e));
}
"""


def markdown_to_html(markdown: str) -> str:
    """GitHub-flavoured markdown as HTML; ```mermaid fences become ``<pre class="mermaid">``."""
    md = MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"])
    rules = md.renderer.rules  # type: ignore[attr-defined]  # RendererHTML's
    default_fence = rules["fence"]

    def fence(tokens, idx, options, env):  # type: ignore[no-untyped-def]
        token = tokens[idx]
        if token.info.strip() == "mermaid":
            return f'<pre class="mermaid">{html.escape(token.content)}</pre>\n'
        return default_fence(tokens, idx, options, env)

    rules["fence"] = fence
    return md.render(markdown)


def page_html(markdown: str, mermaid_js: Path, *, author: str = "rayservice-impact") -> str:
    """A page that shows ``markdown`` as one comment of a pull request's conversation."""
    return (f'<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>{html.escape(author)}</title>'
            f"<style>{STYLE}</style></head>\n<body><div class=\"frame\"><header><b>{html.escape(author)}</b>"
            " <span>bot</span> commented</header>\n"
            f'<div class="markdown-body">\n{markdown_to_html(markdown)}</div></div>\n'
            f'<script src="{mermaid_js.resolve().as_uri()}"></script>\n<script>{SCRIPT}</script>\n'
            "</body></html>\n")


def fetch_mermaid(folder: Path, spec: str = "mermaid@11") -> Path:
    """mermaid's ``dist/mermaid.min.js`` from the npm registry (``npm pack``), unpacked into
    ``folder``; raises ``RuntimeError`` when npm cannot fetch it."""
    folder.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run(["npm", "pack", spec, "--pack-destination", str(folder), "--json",
                           "--silent"], capture_output=True, text=True, timeout=180, cwd=folder)
    if proc.returncode != 0:
        raise RuntimeError(f"npm pack {spec} failed: {(proc.stderr or proc.stdout).strip()[-500:]}")
    name = json.loads(proc.stdout)[0]["filename"]
    with tarfile.open(folder / name) as tar:
        member = tar.getmember("package/dist/mermaid.min.js")
        source = tar.extractfile(member)
        assert source is not None
        target = folder / "mermaid.min.js"
        target.write_bytes(source.read())
    (folder / name).unlink()
    return target


def chromium(*args: str, url: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """Headless chromium with a fresh profile, no network of its own, 5 s of virtual time."""
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if exe is None:
        raise RuntimeError("chromium is not installed")
    with tempfile.TemporaryDirectory(prefix="rsi-chromium-") as profile:
        return subprocess.run([exe, *CHROMIUM_FLAGS, f"--user-data-dir={profile}",
                               "--virtual-time-budget=5000", *args, url],
                              capture_output=True, text=True, timeout=timeout)


def dump_dom(page: Path, height: int = 2200) -> str:
    """The page's DOM once the scripts ran (``--dump-dom``)."""
    proc = chromium("--dump-dom", f"--window-size={WIDTH},{height}", url=page.resolve().as_uri())
    if "<body" not in proc.stdout:
        raise RuntimeError(f"chromium --dump-dom printed no page: {proc.stderr.strip()[-800:]}")
    return proc.stdout


def overflow(dom: str) -> list[dict[str, object]]:
    """What the page measured as wider than its box (``data-overflow``): [] when everything fits."""
    found = re.search(r'data-overflow="([^"]*)"', dom)
    if found is None:
        raise RuntimeError("the page did not measure its widths (no data-overflow)")
    items = json.loads(html.unescape(found.group(1)))
    assert isinstance(items, list)
    return items


def comment_height(dom: str) -> int | None:
    """Where the comment ends on the page, in CSS pixels (None: the page did not say)."""
    height = re.search(r'data-height="(\d+)"', dom)
    return int(height.group(1)) if height else None


def screenshot(page: Path, png: Path, height: int) -> None:
    png.parent.mkdir(parents=True, exist_ok=True)
    png.unlink(missing_ok=True)
    proc = chromium(f"--screenshot={png}", f"--window-size={WIDTH},{height}", url=page.resolve().as_uri())
    if not png.exists():
        raise RuntimeError(f"chromium wrote no screenshot: {proc.stderr.strip()[-800:]}")


def png_size(png: Path) -> tuple[int, int]:
    """(width, height) from the PNG's IHDR chunk."""
    data = png.read_bytes()[:24]
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError(f"{png} is not a PNG")
    width, height = struct.unpack(">II", data[16:24])
    return width, height


def render(markdown: str, mermaid_js: Path, png: Path, work: Path) -> str:
    """Draws ``markdown`` into ``png`` (as tall as the page) and returns the rendered DOM."""
    work.mkdir(parents=True, exist_ok=True)
    page = work / (png.stem + ".html")
    page.write_text(page_html(markdown, mermaid_js), encoding="utf-8")
    dom = dump_dom(page, 2200)
    if 'data-rendered="done"' not in dom:
        status = re.search(r'data-rendered="([^"]*)"', dom)
        raise RuntimeError(f"{png.stem}: the page did not finish rendering "
                           f"({status.group(1) if status else 'no status'})")
    # --screenshot draws a viewport of the window's size: as tall as the comment, nothing cut
    height = comment_height(dom)
    screenshot(page, png, min(MAX_HEIGHT, max(MIN_HEIGHT, height + 16)) if height else 2200)
    return dom


# --- the situations ----------------------------------------------------------------------------

def _pair(name: str, **options: object) -> str:
    import diffing

    pair = SAMPLES / name
    report = diffing.analyze([("before.yaml", (pair / "before.yaml").read_text())],
                             [("after.yaml", (pair / "after.yaml").read_text())], **options)  # type: ignore[arg-type]
    return diffing.render_markdown(report)


def multi_root(headroom: dict[str, int] | None = None) -> str:
    """A base change that reaches two environments: the GPU image bump of ``gpu-image-bump`` as
    rendered from ``overlays/dev`` and ``overlays/prod`` (namespaces ``ray-dev`` and ``ray-prod``,
    each object named by its root, as ``rayservice-impact git`` names a rendered object)."""
    import diffing

    pair = SAMPLES / "gpu-image-bump"
    before, after = (pair / "before.yaml").read_text(), (pair / "after.yaml").read_text()

    def side(text: str) -> list[diffing.Source]:  # a renderer's output: no lines of a file
        return [diffing.Source(f"overlays/{env} (kustomize)", text, lines=False, namespace=f"ray-{env}")
                for env in ("dev", "prod")]

    report = diffing.analyze(side(before), side(after), headroom=headroom)  # type: ignore[arg-type]
    return diffing.render_markdown(report)


def comment_body(markdown: str) -> str:
    """The sticky comment as GitHub stores it: marker, stamp, report, footer."""
    from app.github.comment import render_body

    return render_body(markdown, head_sha="9a8b7c6d5e4f", state="",
                       footer="rayservice-impact · base `3f2a1b7` (main) → merge `c4d2e19` of head "
                              "`9a8b7c6` · rendered from the repository tarballs")


# name → the comment's markdown. The GPU hold is drawn with the Action's `headroom:` input at 2
# GPUs, so its chart shows the line of what the cluster can reach (still a hold: it needs 4).
SITUATIONS: dict[str, Callable[[], str]] = {
    "gpu-image-bump-hold": lambda: _pair("gpu-image-bump", headroom={"nvidia.com/gpu": 2}),
    "serve-only-approve": lambda: _pair("serve-only"),
    "replicas-autoscaling-ignore": lambda: _pair("replicas-autoscaling"),
    # rendered with kustomize by the CLI: the reviewed expected.md is that output
    "gitops-overlay-image-bump": lambda: (SAMPLES / "gitops-overlay-image-bump" / "expected.md").read_text(),
    # standalone RayClusters: the autoscaler fight with its Argo CD rule, a rename orphaning GPUs
    "raycluster-autoscaler-fight-ignore": lambda: _pair("raycluster-autoscaler-fight"),
    "raycluster-group-rename-hold": lambda: _pair("raycluster-group-rename", headroom={"nvidia.com/gpu": 8}),
    # one base change, two environments: the whole pull request's extra first, production first
    "gitops-base-change-two-environments-hold": multi_root,
}


def main(argv: list[str]) -> int:
    sys.path.insert(0, str(ROOT))
    names = argv or list(SITUATIONS)
    with tempfile.TemporaryDirectory(prefix="rsi-screens-") as tmp:
        mermaid_js = fetch_mermaid(Path(tmp) / "npm")
        wide = 0
        for name in names:
            png = OUT / f"{name}.png"
            dom = render(comment_body(SITUATIONS[name]()), mermaid_js, png, Path(tmp) / "pages")
            width, height = png_size(png)
            too_wide = overflow(dom)
            wide += bool(too_wide)
            print(f"{png.relative_to(ROOT)}: {width}x{height}"
                  + "".join(f"\n  wider than its box: {o}" for o in too_wide))
    return 1 if wide else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
