"""Post the CLI's result to a pull request from CI (the composite GitHub Action runs this).

    rayservice-impact git "$BASE" "$HEAD" --format markdown > impact.md; echo $? > code
    rayservice-impact git "$BASE" "$HEAD" --format json > impact.json
    python -m app.github.post_comment --repo OWNER/REPO --pr N --sha "$HEAD" \\
        --markdown impact.md --json impact.json --exit-code "$(cat code)"

Leaves the same sticky comment and ``rayservice-impact`` commit status as the webhook service
(without ``--pr``: the status only, as for a merge queue's group). ``--comment`` is the
repository's comment mode (:mod:`.repo_config`: ``always``, ``on-change``, ``on-hold``; the Action
reads it from ``.github/rayservice-impact.yml`` at the base commit, or takes its ``comment:``
input). The token comes from
``GITHUB_TOKEN`` (or ``RAYSERVICE_IMPACT_GITHUB_TOKEN``), the API URL from ``--api-url``,
``RAYSERVICE_IMPACT_GITHUB_API_URL`` or ``GITHUB_API_URL`` (set by Actions, GHES too).
Exit status: 0 posted, or not posted because the token is read-only (GitHub answered the first
write with 403, as for a pull request from a fork: a ``::notice::`` says so); 1 GitHub refused
otherwise or could not be reached; 2 usage.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import httpx

from app.clients.github import GitHubClient, GitHubError, GitHubRetryExhausted, RetryPolicy, static_token
from app.output import EXIT_HOLD, EXIT_OK

from .change import PullRequest
from .comment import Verdict, numbers_digest, verdict_for_error, verdict_for_markdown, verdict_for_no_change
from .flow import post_sticky_comment
from .repo_config import ALWAYS, MODES


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m app.github.post_comment", description=__doc__.split("\n")[0])
    p.add_argument("--repo", required=True, help="OWNER/REPO")
    p.add_argument("--pr", type=int, default=None,
                   help="pull request number (without it: the status only, e.g. for a merge group)")
    p.add_argument("--sha", required=True, help="head commit SHA that gets the status")
    p.add_argument("--base-sha", default="", help="base commit SHA (shown in the comment's footer)")
    p.add_argument("--markdown", required=True, type=Path, help="the CLI's --format markdown output")
    p.add_argument("--json", type=Path, help="the CLI's --format json output (summary, no-change detection)")
    p.add_argument("--exit-code", required=True, type=int, help="the CLI's exit code")
    p.add_argument("--error-file", type=Path, help="the CLI's standard error, shown when it failed")
    p.add_argument("--note-file", type=Path, help="markdown shown in a warning box above the report")
    p.add_argument("--footer-file", type=Path, help="the comment's last line (default: the commits)")
    p.add_argument("--comment", choices=MODES, default=ALWAYS,
                   help="when to comment: always (default), on-change, on-hold (the status is always posted)")
    p.add_argument("--api-url", default=None)
    p.add_argument("--retry-budget", type=float, default=60.0, help="seconds of retries per call")
    return p


def verdict_from_files(markdown: str, report_json: str | None, exit_code: int, error: str = "",
                       note: str = "") -> Verdict:
    """The gate and comment for one CLI run (exit 0 approve/ignore, 3 hold, else could not analyse);
    ``note``: the warning the comment will carry (part of what its numbers stand for)."""
    if exit_code not in (EXIT_OK, EXIT_HOLD):
        return verdict_for_error(error.strip() or f"rayservice-impact exited with {exit_code}")
    report: dict[str, Any] = {}
    if report_json:
        try:
            report = json.loads(report_json)
        except ValueError:
            report = {}
    if report and not report.get("resources"):
        return verdict_for_no_change()
    verdict = verdict_for_markdown(markdown, exit_code, str(report.get("summary") or ""))
    if not report:
        return verdict
    return dataclasses.replace(verdict, numbers=numbers_digest(report, note),
                               touches=any(r.get("action") != "unchanged" for r in report["resources"]))


class ReadOnly(Exception):
    """The token cannot write here (GitHub answered the first write with a plain 403)."""


def _read(path: Path | None) -> str:
    return path.read_text(encoding="utf-8", errors="replace") if path and path.exists() else ""


def _is_read_only(exc: GitHubError) -> bool:
    # A rate limit is a 403 too, but the client retries those; what is left is a missing permission.
    return exc.status == 403 and not isinstance(exc, GitHubRetryExhausted)


async def post(args: argparse.Namespace, token: str, api_url: str,
               transport: httpx.AsyncBaseTransport | None = None) -> str:
    owner, _, repo = args.repo.partition("/")
    if args.pr is None:
        pr = PullRequest(owner, repo, 0, args.base_sha, args.sha, merge_group_ref="(status only)")
    else:
        pr = PullRequest(owner, repo, args.pr, args.base_sha, args.sha)
    markdown = _read(args.markdown)
    note = _read(args.note_file).strip()
    verdict = verdict_from_files(
        markdown, args.json.read_text(encoding="utf-8") if args.json and args.json.exists() else None,
        args.exit_code, _read(args.error_file), note)
    if note and verdict.markdown:
        verdict = dataclasses.replace(verdict, markdown=f"> [!WARNING]\n> {note}\n\n{verdict.markdown}")
    footer = _read(args.footer_file).strip() or ("rayservice-impact" + (
        f" · base `{args.base_sha[:7]}`" if args.base_sha else "") + f" → head `{args.sha[:7]}`")
    async with httpx.AsyncClient(transport=transport, timeout=30, follow_redirects=True) as http:
        gh = GitHubClient(http, api_url, static_token(token),
                          retry=RetryPolicy(budget=args.retry_budget, write_interval=0.0))
        comment, wrote, failure = "none", False, ""
        if not pr.is_merge_group:
            try:
                comment = await post_sticky_comment(gh, pr, verdict, footer=footer, comment_mode=args.comment)
                wrote = comment in ("created", "updated")
            except GitHubError as exc:
                if _is_read_only(exc):
                    raise ReadOnly(str(exc)) from None
                comment, failure = "failed", str(exc)
        try:
            await gh.create_status(pr.owner, pr.repo, pr.head_sha, verdict.state, verdict.description)
        except GitHubError as exc:
            if _is_read_only(exc) and not wrote and not failure:
                raise ReadOnly(str(exc)) from None
            raise RuntimeError(f"status not posted ({exc}); comment {comment}") from None
    if failure:
        raise RuntimeError(f"comment not posted ({failure}); status {verdict.state} posted")
    return f"{verdict.state}: {verdict.description} (comment {comment})"


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
    except ReadOnly as exc:
        print(f"::notice title=rayservice-impact::not posted: the token cannot write to {args.repo} ({exc}); "
              "the report is in the job summary and the job's outcome is the verdict")
        return 0
    except (RuntimeError, OSError) as exc:
        print(f"post_comment: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
