"""Merge requests as the dispatcher queues them, read from GitLab's webhook payloads.

A job is an :class:`app.github.change.PullRequest` (the dispatcher's unit: one queue per change,
newer heads supersede older ones): ``owner``/``repo`` are the TARGET project's namespace and path
(``platform/ray-gitops`` -> ``platform``, ``ray-gitops``), ``number`` the merge request's iid,
``head_sha`` its head, ``base_sha`` the target branch's tip when the event names it (a push to
it), ``base_ref`` the target branch. Everything else is read anew from the API when the job runs.

Payload shapes: GitLab docs user/project/integrations/webhook_events.md ("Merge request
events", "Comment events", "Push events").
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

from app.github.change import PayloadError, PullRequest

# Merge request hook actions that call for a judgement (``update`` only when the source branch
# moved, ``oldrev`` present, or the target branch changed; webhook_events.md, "Merge request events").
ANALYSED_ACTIONS = frozenset({"open", "reopen", "update"})
_GITLAB_TIME = re.compile(r"^(\d{4}-\d{2}-\d{2})[ T](\d{2}:\d{2}:\d{2})(?:\.\d+)?\s*"
                          r"(UTC|Z|[+-]\d{2}:?\d{2})?$")


def iso(value: Any) -> str:
    """A GitLab time as ``YYYY-MM-DDTHH:MM:SSZ`` (UTC): webhooks write ``2026-12-01 10:00:00 UTC``,
    the API ``2026-12-01T10:00:00.000Z``; both must order the same. "" when it is not a time."""
    text = str(value or "").strip()
    m = _GITLAB_TIME.match(text)
    if not m:
        return ""
    zone = m[3] or "Z"
    zone = "+00:00" if zone in ("UTC", "Z") else zone if ":" in zone else f"{zone[:3]}:{zone[3:]}"
    try:
        at = datetime.fromisoformat(f"{m[1]}T{m[2]}{zone}")
    except ValueError:
        return ""
    return at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def project_path(pr: PullRequest) -> str:
    return f"{pr.owner}/{pr.repo}"


def split_path(path: str) -> tuple[str, str]:
    owner, _, name = path.rpartition("/")
    if not owner or not name:
        raise PayloadError(f"not a project path: {path!r}")
    return owner, name


def _target_project(payload: dict[str, Any]) -> dict[str, Any]:
    attrs = payload.get("object_attributes") or {}
    target = attrs.get("target") if isinstance(attrs, dict) else None
    project = payload.get("project")
    if isinstance(target, dict) and target.get("path_with_namespace"):
        project = target
    if not isinstance(project, dict) or not project.get("path_with_namespace"):
        raise PayloadError("merge request payload without project.path_with_namespace")
    return project


def should_analyse(payload: dict[str, Any]) -> tuple[bool, str]:
    """(judge?, why not) for a Merge Request Hook."""
    attrs = payload.get("object_attributes")
    if not isinstance(attrs, dict):
        return False, "merge request payload without object_attributes"
    action = attrs.get("action")
    if action not in ANALYSED_ACTIONS:
        return False, f"merge request action {action!r} is not judged"
    if action == "update":
        changes = payload.get("changes")
        changes = changes if isinstance(changes, dict) else {}
        if not attrs.get("oldrev") and "target_branch" not in changes:
            return False, "an update that moved neither the source nor the target branch"
    return True, ""


def job_from_hook(payload: dict[str, Any]) -> PullRequest:
    """The job of a Merge Request Hook."""
    try:
        attrs = payload["object_attributes"]
        owner, name = split_path(str(_target_project(payload)["path_with_namespace"]))
        head = str((attrs.get("last_commit") or {}).get("id") or "")
        if not re.fullmatch(r"[0-9a-f]{40}|[0-9a-f]{64}", head):
            raise KeyError("object_attributes.last_commit.id")
        project = _target_project(payload)
        return PullRequest(owner=owner, repo=name, number=int(attrs["iid"]), base_sha="", head_sha=head,
                           updated_at=iso(attrs.get("updated_at")),
                           repo_url=str(project.get("git_http_url") or project.get("web_url") or ""),
                           base_ref=str(attrs.get("target_branch") or ""))
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise PayloadError(f"merge request payload without {exc}") from None


def job_from_api(project: str, mr: dict[str, Any], *, base_sha: str = "", repo_url: str = "") -> PullRequest:
    """The job of a merge request as ``GET merge_requests`` lists it (a push to its target branch)."""
    owner, name = split_path(project)
    return PullRequest(owner=owner, repo=name, number=int(mr["iid"]), base_sha=base_sha,
                       head_sha=str(mr.get("sha") or ""), updated_at=iso(mr.get("updated_at")),
                       repo_url=repo_url, base_ref=str(mr.get("target_branch") or ""))
