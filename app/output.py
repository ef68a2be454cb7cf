"""What the commands answer with: the exit codes, the usage error and the report formats.

Shared by the command line (:mod:`app.cli`), the Argo CD hook (:mod:`app.hooks.argocd`), the
GitHub Action (:mod:`app.github.action`) and the PR comment (:mod:`app.github.comment`,
:mod:`app.github.post_comment`), which read the CLI's exit code back. docs/contract.md "Exit codes":
0 approve / ignore-differences, 3 hold, 2 invalid input or usage (the message names the file,
document and line), 1 unexpected internal error. The numbers are the core's
(:class:`diffing.vocab.ExitCode`, which ``Report.exit_code`` uses too), as plain ints;
:mod:`app.cli` decides which one a run ends with.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence

import diffing
from diffing.hints import Any
from diffing.vocab import ExitCode

EXIT_OK = int(ExitCode.OK)              # approve or ignore-differences (and --help, --version)
EXIT_INTERNAL = int(ExitCode.INTERNAL)  # an unexpected internal error; argocd-presync failing closed
EXIT_USAGE = int(ExitCode.USAGE)        # invalid input or usage
EXIT_HOLD = int(ExitCode.HOLD)          # hold
EXIT_INTERRUPTED = 130                  # Ctrl-C (128 + SIGINT), as shells report it

FORMATS = ("markdown", "json", "github", "sarif", "codequality")


class UsageError(Exception):
    """Bad command-line usage; exit code 2 (:data:`EXIT_USAGE`)."""


def package_version() -> str:
    """The installed distribution's version (``--version``, the SARIF tool version)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("rayservice-impact")
    except PackageNotFoundError:
        return "0 (not installed)"


def format_report(report: diffing.Report, fmt: str | None, locate: Any = None,
                  root_files: Any = None) -> str:
    """``report`` as ``--format`` ``fmt`` says (one of :data:`FORMATS`; ``None``: markdown on a
    terminal, else json). ``locate`` places findings on lines for the github, sarif and codequality
    formats, and names the pull request's file and line in the markdown's ways out; ``root_files``
    (a rendered root's label → the changed files it reads) gives codequality a file for what has
    no line (a root that failed to render)."""
    if fmt is None:
        fmt = "markdown" if sys.stdout.isatty() else "json"
    if fmt == "json":
        return json.dumps(report.to_dict(), indent=2, ensure_ascii=False) + "\n"
    if fmt == "codequality":
        from diffing.render.codequality import render_codequality

        issues = render_codequality(report, locate, root_files)
        return json.dumps(issues, indent=2, ensure_ascii=False) + "\n"
    if fmt in ("github", "sarif"):
        from diffing.render.annotations import annotate, render_github, render_sarif

        items = annotate(report, locate)
        if fmt == "github":
            return render_github(items)
        sarif = render_sarif(report, items, version=package_version())
        return json.dumps(sarif, indent=2, ensure_ascii=False) + "\n"
    return diffing.render_markdown(report, locate=locate)


def write_report(report: diffing.Report, fmt: str | None, outputs: Sequence[tuple[str, str]] = (),
                 locate: Any = None, root_files: Any = None) -> None:
    """``report`` on standard output as ``fmt`` says, and in each ``--output`` (format, file): one
    analysis for every format a job wants (the GitLab CI job writes markdown, JSON and Code Quality)."""
    for out_fmt, path in outputs:
        try:
            with open(path, "w", encoding="utf-8") as fh:
                fh.write(format_report(report, out_fmt, locate, root_files))
        except OSError as exc:
            raise UsageError(f"--output {out_fmt}={path}: cannot write it ({exc.strerror})") from None
    sys.stdout.write(format_report(report, fmt, locate, root_files))
