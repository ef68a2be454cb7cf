"""The report as markdown (diffing/render/markdown.py): a truncated comment keeps the verdict."""

from __future__ import annotations

import diffing
from tests.builders import dump, edited, sample


def test_markdown_truncation_keeps_the_verdict() -> None:
    before = "".join("---\n" + dump(edited(sample("llm-serve"), lambda o, i=i: o["metadata"].__setitem__(
        "name", f"llm-{i}"))) for i in range(40))
    after = before.replace("ray-llm:2.52.0-py311-cu128", "ray-llm:2.53.0-py311-cu128")
    report = diffing.analyze(before, after)
    full = diffing.render_markdown(report)
    short = diffing.render_markdown(report, max_chars=6000)
    assert len(full) > 6000 >= len(short)
    assert short.startswith("## 🔴 rayservice-impact: **hold**")
    assert "truncated" in short
    assert diffing.render_markdown(report, max_chars=len(full)) == full
