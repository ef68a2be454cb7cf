"""Record every report the test suite makes, to show a refactoring changes no report.

A pytest plugin: ``REPORT_RECORD=out.json pytest -p scripts.report_record ...`` wraps
``diffing.analyze`` before any test module imports it and writes, per test and call, hashes of
the report as JSON, as Markdown and as annotations (GitHub + SARIF). Compare two recordings
with ``python -m scripts.report_record old.json new.json``.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sys
from collections import defaultdict
from typing import Any

_calls: dict[str, int] = defaultdict(int)
_out: dict[str, dict[str, str]] = {}
_current = ["<collect>"]


def norm(text: str) -> str:
    """Temporary directories and the checkout's own path differ between runs, not reports."""
    text = re.sub(r"/tmp/pytest-of-[^/]+/pytest-\d+/", "<tmp>/", text)
    text = re.sub(r"(/tmp/(base|final)|/work/main)(?=/)", "<repo>", text)
    return re.sub(r"/tmp/tmp[\w-]+", "<tmpdir>", text)


def digest(report: Any) -> dict[str, str]:
    """Hashes of the report as JSON, Markdown and annotations; with ``REPORT_RECORD_FULL`` set,
    the normalised JSON and Markdown themselves (to read what differs)."""
    import diffing
    from diffing.render.annotations import annotate, render_github, render_sarif

    texts = {
        "json": norm(json.dumps(report.to_dict(), sort_keys=True, indent=1, ensure_ascii=False)),
        "markdown": norm(diffing.render_markdown(report)),
    }
    if os.environ.get("REPORT_RECORD_FULL"):
        return texts
    items = annotate(report)
    texts["annotations"] = norm(render_github(items) + json.dumps(render_sarif(report, items, version="x"),
                                                                  sort_keys=True))
    return {k: hashlib.sha256(v.encode()).hexdigest()[:16] for k, v in texts.items()}


def pytest_configure(config: Any) -> None:
    if not os.environ.get("REPORT_RECORD"):
        return
    import importlib

    import diffing

    original = diffing.analyze
    home = importlib.import_module(original.__module__)

    def recording(*args: Any, **kwargs: Any) -> Any:
        report = original(*args, **kwargs)
        key = _current[0]
        _calls[key] += 1
        _out[f"{key}#{_calls[key]}"] = digest(report)
        return report

    diffing.analyze = recording
    home.analyze = recording


def pytest_runtest_setup(item: Any) -> None:
    _current[0] = item.nodeid


def pytest_unconfigure(config: Any) -> None:
    path = os.environ.get("REPORT_RECORD")
    if path and _out:
        with open(path, "w") as f:
            json.dump(_out, f, indent=0, sort_keys=True)


def compare(old_path: str, new_path: str) -> int:
    old = json.load(open(old_path))
    new = json.load(open(new_path))
    both = sorted(set(old) & set(new))
    bad: dict[str, list[str]] = defaultdict(list)
    for k in both:
        for part, value in old[k].items():
            if new[k].get(part) != value:
                bad[part].append(k)
    print(f"{len(old)} old, {len(new)} new, {len(both)} in both; "
          f"only old {len(set(old) - set(new))}, only new {len(set(new) - set(old))}")
    for part, keys in bad.items():
        print(f"{part}: {len(keys)} differ")
        for k in keys[:15]:
            print("   ", k)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(compare(sys.argv[1], sys.argv[2]))
