"""Failures of the services the shell talks to (Argo CD, Kubernetes).

``UpstreamError`` means "the check could not run": callers turn it into a closed (exit 1)
or open (exit 0) answer, never into a verdict about the manifests.

    UpstreamError
    ├── ArgoCDError        (app.clients.argocd)
    └── KubernetesError    (app.clients.kubernetes)
"""

from __future__ import annotations


class UpstreamError(Exception):
    """An upstream service could not be reached, refused us, or answered nonsense."""

    service = "upstream"

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.status = status

    def __str__(self) -> str:
        return self.message

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.message!r}, status={self.status!r})"
