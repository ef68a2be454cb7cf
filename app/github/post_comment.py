"""Post the CLI's result to a pull request from CI (the composite GitHub Action runs this).

    rayservice-impact git "$BASE" "$HEAD" --format markdown > impact.md; echo $? > code
    rayservice-impact git "$BASE" "$HEAD" --format json > impact.json
    python -m app.github.post_comment --repo OWNER/REPO --pr N --sha "$HEAD" \\
        --markdown impact.md --json impact.json --exit-code "$(cat code)"

Leaves the same sticky comment and ``rayservice-impact`` commit status as the webhook service.
The token comes from ``GITHUB_TOKEN`` (or ``RAYSERVICE_IMPACT_GITHUB_TOKEN``), the API URL from
``--api-url``, ``RAYSERVICE_IMPACT_GITHUB_API_URL`` or ``GITHUB_API_URL`` (set by Actions, GHES too).
Exit status: 0 posted, 1 GitHub refused or could not be reached, 2 usage.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import httpx

from app.clients.github import GitHubClient, RetryPolicy, static_token

from .change import PullRequest
from .comment import Verdict, verdict_for_error, verdict_for_markdown, verdict_for_no_change
from .flow import publish_verdict


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m app.github.post_comment", description=__doc__.split("\n")[0])
    p.add_argument("--repo", required=True, help="OWNER/REPO")
    p.add_argument("--pr", required=True, type=int, help="pull request number")
    p.add_argument("--sha", required=True, help="head commit SHA that gets the status")
    p.add_argument("--base-sha", default="", help="base commit SHA (shown in the comment's footer)")
    p.add_argument("--markdown", required=True, type=Path, help="the CLI's --format markdown output")
    p.add_argument("--json", type=Path, help="the CLI's --format json output (summary, no-change detection)")
    p.add_argument("--exit-code", required=True, type=int, help="the CLI's exit code")
    p.add_argument("--error-file", type=Path, help="the CLI's standard error, shown when it failed")
    p.add_argument("--api-url", default=None)
    p.add_argument("--retry-budget", type=float, default=60.0, help="seconds of retries per call")
    return p


def verdict_from_files(markdown: str, report_json: str | None, exit_code: int, error: str = "") -> Verdict:
    """The gate and comment for one CLI run (exit 0 approve/ignore, 3 hold, else could not analyse)."""
    if exit_code not in (0, 3):
        return verdict_for_error(error.strip() or f"rayservice-impact exited with {exit_code}")
    report: dict[str, Any] = {}
    if report_json:
        try:
            report = json.loads(report_json)
        except ValueError:
            report = {}
    if report and not report.get("resources"):
        return verdict_for_no_change()
    return verdict_for_markdown(markdown, exit_code, str(report.get("summary") or ""))


async def post(args: argparse.Namespace, token: str, api_url: str,
               transport: httpx.AsyncBaseTransport | None = None) -> str:
    owner, _, repo = args.repo.partition("/")
    pr = PullRequest(owner, repo, args.pr, args.base_sha, args.sha)
    verdict = verdict_from_files(
        args.markdown.read_text(encoding="utf-8", errors="replace"),
        args.json.read_text(encoding="utf-8") if args.json and args.json.exists() else None,
        args.exit_code,
        args.error_file.read_text(encoding="utf-8", errors="replace")
        if args.error_file and args.error_file.exists() else "")
    footer = "rayservice-impact" + (f" · base `{args.base_sha[:7]}`" if args.base_sha else "") + \
        f" → head `{args.sha[:7]}`"
    async with httpx.AsyncClient(transport=transport, timeout=30, follow_redirects=True) as http:
        gh = GitHubClient(http, api_url, static_token(token),
                          retry=RetryPolicy(budget=args.retry_budget, write_interval=0.0))
        outcome = await publish_verdict(gh, pr, verdict, footer=footer)
    if outcome.state == "failed" or outcome.comment == "failed":
        raise RuntimeError(f"status {outcome.state}, comment {outcome.comment}")
    return f"{verdict.state}: {verdict.description} (comment {outcome.comment})"


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if "/" not in args.repo:
        print("post_comment: --repo must be OWNER/REPO", file=sys.stderr)
        return 2
    token = os.environ.get("GITHUB_TOKEN") or os.environ.get("RAYSERVICE_IMPACT_GITHUB_TOKEN")
    if not token:
        print("post_comment: set GITHUB_TOKEN (or RAYSERVICE_IMPACT_GITHUB_TOKEN)", file=sys.stderr)
        return 2
    api_url = (args.api_url or os.environ.get("RAYSERVICE_IMPACT_GITHUB_API_URL")
               or os.environ.get("GITHUB_API_URL") or "https://api.github.com").rstrip("/")
    try:
        print(f"rayservice-impact: {asyncio.run(post(args, token, api_url))}")
    except (RuntimeError, OSError) as exc:
        print(f"post_comment: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
