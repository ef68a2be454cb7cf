"""Markdown for humans: verdict first. (Placeholder replaced below.)"""

from __future__ import annotations

import json

from ..report import Report


def render_markdown(report: Report, *, max_chars: int | None = None) -> str:
    return "```json\n" + json.dumps(report.to_dict(), indent=2) + "\n```\n"
