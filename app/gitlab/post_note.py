"""Post the CI job's result to its merge request (deploy/gitlab/rayservice-impact.yml runs this).

    python -m app.gitlab.post_note --plan "$CI_PROJECT_DIR/rayservice-impact.plan.json"

The twin of :mod:`app.github.post_comment`: one sticky note and a ``rayservice-impact`` commit status,
written through the webhook service's own pieces (:class:`app.clients.gitlab.GitLabClient`,
:class:`app.forge.gitlab.GitLabForge`, :func:`app.forge.publish.publish`), so the note is the same
note, found and edited in place. The plan and the reports are what :mod:`app.gitlab.ci` left in
the plan's folder.

* The token is ``RAYSERVICE_IMPACT_GITLAB_TOKEN``: a project (or group) access token, or a
  personal one, with the ``api`` scope and at least the Developer role (notes and commit
  statuses are API writes). ``CI_JOB_TOKEN`` cannot write notes or statuses (GitLab's docs,
  "CI/CD job token": it reaches a short list of endpoints, none of them these).
* The API is ``--api-url``, else ``CI_API_V4_URL`` (set by the runner; self-managed too).
* The status goes on ``CI_COMMIT_SHA``, the commit the pipeline ran on (the merged result in a
  merged results pipeline), so it joins this pipeline rather than starting one of its own on the
  source branch's head. ``failed`` on hold (GitLab has no ``error`` state).
* The note's ordering stamp is ``CI_PIPELINE_CREATED_AT``: a late job of an older pipeline never
  overwrites a newer pipeline's note.
* No approvals here: a hold is cleared by a change, or by the webhook service's
  ``/rayservice-impact approve`` (docs/gitlab.md); the job's exit status stays the verdict.

Exit status: 0 posted (or nothing to post, said so); 1 GitLab refused or could not be reached;
2 usage (no plan, no token).
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import os
import secrets
import sys
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx

from app.clients.gitlab import GitLabClient, RetryPolicy
from app.clients.upstream import UpstreamError
from app.forge import Change
from app.forge.gitlab import GitLabForge
from app.forge.publish import publish
from app.github.post_comment import verdict_from_files

from .ci import JSON, MARKDOWN, TOKEN_VARIABLE

STDERR = "rayservice-impact.stderr.txt"


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m app.gitlab.post_note", description=__doc__.split("\n")[0])
    p.add_argument("--plan", required=True, type=Path, help="rayservice-impact.plan.json of app.gitlab.ci")
    p.add_argument("--api-url", default=None, help="GitLab's API, e.g. https://gitlab.com/api/v4 "
                                                   "(default: $CI_API_V4_URL)")
    p.add_argument("--retry-budget", type=float, default=60.0, help="seconds of retries per call")
    return p


def _read(path: Path) -> str:
    return path.read_text(encoding="utf-8", errors="replace") if path.exists() else ""


def _base_url(api_url: str) -> str:
    """``https://host/prefix/api/v4`` → ``https://host/prefix`` (the client adds ``/api/v4``)."""
    api_url = api_url.rstrip("/")
    return api_url[: -len("/api/v4")] if api_url.endswith("/api/v4") else api_url


async def post(plan: dict[str, Any], folder: Path, token: str, api_url: str, env: dict[str, str], *,
               retry_budget: float = 60.0, transport: httpx.AsyncBaseTransport | None = None) -> str:
    markdown = _read(folder / MARKDOWN)
    note = "\n>\n> ".join(str(n) for n in plan.get("notes") or [])
    verdict = verdict_from_files(markdown, _read(folder / JSON) or None, int(plan["exit_code"]),
                                 _read(folder / STDERR), note)
    if note and verdict.markdown:
        verdict = dataclasses.replace(verdict, markdown=f"> [!warning]\n> {note}\n\n{verdict.markdown}")
    iid = int(plan["iid"])
    project = str(plan["project"])
    created = env.get("CI_PIPELINE_CREATED_AT") or datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    change = Change(f"{project}!{iid}", iid, str(plan["head_sha"]),
                    env.get("CI_MERGE_REQUEST_TARGET_BRANCH_NAME", ""), created)
    range_args = [str(a) for a in plan.get("range_args") or []]
    base = range_args[0].split("...")[0] if range_args else ""
    async with httpx.AsyncClient(transport=transport, timeout=30) as http:
        gl = GitLabClient(http, _base_url(api_url), token,
                          retry=RetryPolicy(budget=retry_budget))
        forge = GitLabForge(gl, project, iid, str(plan["sha"]), web_url=env.get("CI_JOB_URL", ""))
        mode = str(plan.get("comment") or "always")
        quiet = verdict.state == "success" and (mode == "on-hold"
                                                or (mode == "on-change" and not verdict.touches))
        if quiet and await forge.find_sticky() is None:
            await forge.set_status(verdict)  # the mode asks for no note yet: the status only
            return f"{verdict.state}: {verdict.description} (no note: comment {mode})"
        # A key of this run only: the CI route takes no approvals, so none verifies (the job's exit
        # status is the verdict); the service's approvals are its own.
        outcome = await publish(forge, change, verdict, footer=str(plan.get("footer") or ""),
                                key=secrets.token_bytes(32), base=(change.base_ref, base))
    if outcome.comment == "failed" or outcome.state == "failed":
        raise RuntimeError(f"note {outcome.comment}, status {outcome.state}: see the lines above")
    return f"{outcome.state}: {outcome.description} (note {outcome.comment})"


def main(argv: Sequence[str] | None = None) -> int:
    import logging

    logging.basicConfig(level=logging.INFO, format="rayservice-impact: %(message)s")
    args = build_parser().parse_args(argv)
    env = dict(os.environ)
    try:
        plan = json.loads(args.plan.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        print(f"post_note: cannot read the plan {args.plan}: {exc}", file=sys.stderr)
        return 2
    if not isinstance(plan, dict) or not plan.get("post") or not plan.get("iid"):
        skip = plan.get("skip") if isinstance(plan, dict) else ""
        print(f"rayservice-impact: {skip or 'nothing to post'}")
        return 0
    token = env.get(TOKEN_VARIABLE, "")
    if not token:
        print(f"post_note: set {TOKEN_VARIABLE} (a project access token with the api scope)", file=sys.stderr)
        return 2
    api_url = args.api_url or env.get("CI_API_V4_URL") or ""
    if not api_url.startswith(("https://", "http://")):
        print("post_note: no GitLab API URL (--api-url or CI_API_V4_URL)", file=sys.stderr)
        return 2
    try:
        said = asyncio.run(post(plan, args.plan.parent, token, api_url, env, retry_budget=args.retry_budget))
    except (RuntimeError, UpstreamError, OSError) as exc:
        print(f"post_note: {exc}", file=sys.stderr)
        return 1
    print(f"rayservice-impact: {said}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
