"""GitHub webhook intake (issue 4). Placeholder until the GitHub integration lands."""

from __future__ import annotations

from typing import Any


def build_router(settings: Any, **_: Any) -> Any:
    """The /webhooks/github router, or None while the integration is not built."""
    return None
