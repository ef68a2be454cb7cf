"""Settings from the contract's environment variables, validated once at start."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import Field, SecretStr, ValidationError, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from diffing.versions import DEFAULT

from .environ import SettingsError  # the command line's reader (no pydantic) raises it too

__all__ = ["Settings", "SettingsError", "load_settings"]


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="RAYSERVICE_IMPACT_", extra="ignore",
                                      case_sensitive=False)

    kuberay_version: str = DEFAULT
    policy_file: Path | None = None
    # Bearer tokens of the analysis API, one per line (mount a Secret); unset = open, no live basis.
    api_tokens_file: Path | None = None
    max_body_bytes: int = Field(default=5 * 1024 * 1024, gt=0)
    github_webhook_secret: SecretStr | None = None
    github_api_url: str = "https://api.github.com"
    github_token: SecretStr | None = None
    github_app_id: str | None = None
    github_app_private_key_file: Path | None = None
    argocd_server: str | None = None
    argocd_token: SecretStr | None = None
    # GitLab merge requests (issue 23; docs/gitlab.md): the instance, the token (PAT, project or
    # group access token, scope api), the webhook's secret token, who may approve.
    gitlab_url: str = "https://gitlab.com"
    gitlab_token: SecretStr | None = None
    gitlab_webhook_secret: SecretStr | None = None
    gitlab_approve_level: int = Field(default=30, ge=10, le=50)  # 30 Developer, 40 Maintainer, 50 Owner
    # Findings as merge request diff threads (app/gitlab/inline.py): none, the holds, or all.
    gitlab_inline: Literal["off", "holds", "all"] = "off"
    fail_open: bool = False
    # Argo CD client and the live basis (issue 5; not in the contract's table; safe defaults).
    argocd_timeout_seconds: float = Field(default=10.0, gt=0)
    argocd_retries: int = Field(default=3, ge=0, le=10)
    argocd_ca_file: Path | None = None
    argocd_insecure: bool = False
    live_basis: Literal["auto", "off"] = "auto"
    kubernetes_timeout_seconds: float = Field(default=10.0, gt=0)
    termination_log: Path = Path("/dev/termination-log")
    # The hook's whole run, below the hook Pod's activeDeadlineSeconds (300 in deploy/argocd).
    hook_deadline_seconds: float = Field(default=240.0, gt=0)
    # Service tuning (not in the contract's table; safe defaults).
    analysis_timeout_seconds: float = Field(default=10.0, gt=0)
    analysis_workers: int = Field(default=2, ge=1, le=64)
    analysis_queue: int = Field(default=32, ge=1)
    log_level: str = "info"
    # GitHub flow tuning (issue 4; not in the contract's table; safe defaults).
    github_workers: int = Field(default=4, ge=1, le=64)
    github_max_pending: int = Field(default=1000, ge=1)
    github_retry_budget_seconds: float = Field(default=120.0, ge=0)
    github_write_interval_seconds: float = Field(default=1.0, ge=0)
    analysis_executor: Literal["process", "thread"] = "process"
    # Rendering of PR revisions (contract "Rendering").
    render: Literal["auto", "none"] = "auto"
    render_timeout_s: float = Field(default=60.0, gt=0)
    render_max_bytes: int = Field(default=50 * 1024 * 1024, gt=0)
    render_tarball_max_bytes: int = Field(default=200 * 1024 * 1024, gt=0)  # one downloaded revision
    analysis_cache_entries: int = Field(default=256, ge=0)
    # Slow clients: a request head must arrive within this time, and its body within the other.
    header_timeout_seconds: float = Field(default=10.0, gt=0)
    body_timeout_seconds: float = Field(default=30.0, gt=0)
    analysis_cache_bytes: int = Field(default=64 * 1024 * 1024, ge=0)
    # Rollout reporting (issue 22; docs/rollout.md): following a deployed change to the PR.
    rollout_deadline_minutes: float = Field(default=30.0, gt=0, le=24 * 60)
    rollout_write_interval_seconds: float = Field(default=10.0, ge=0)   # at most one GitHub write per watch
    argocd_webhook_secret: SecretStr | None = None  # POST /webhooks/argocd's shared secret
    # Where the Argo CD PreSync hook announces a sync it let through (the service's base URL): the
    # service then follows it, as it follows a notification (docs/rollout.md).
    rollout_service_url: str | None = None
    # Rollout watch on (it reads and writes the cluster: ConfigMaps and Leases of its namespace,
    # watches of the ray.io kinds, pods and events), off by default (docs/rollout-watch.md).
    rollout_watch: bool = False
    # Rollout watch, Kubernetes side (issue 22; docs/rollout-watch.md). The namespace of the
    # ConfigMaps and Leases that keep the watches (POD_NAMESPACE, from the downward API, wins).
    rollout_namespace: str = "rayservice-impact"
    rollout_cluster_wide: bool = False  # one watch per kind for the whole cluster, not per namespace
    rollout_max_objects: int = Field(default=20_000, ge=1)  # objects cached by all watches
    rollout_max_watches: int = Field(default=50, ge=5)  # concurrent watch streams (5 per namespace)
    rollout_retention_days: float = Field(default=7.0, gt=0)  # finished watch records kept this long

    @field_validator("kuberay_version")
    @classmethod
    def _known_version(cls, value: str) -> str:
        from diffing.versions import rules_for

        rules_for(value)  # raises UnsupportedVersionError with the supported list
        return value

    @field_validator("log_level")
    @classmethod
    def _level(cls, value: str) -> str:
        if value.lower() not in ("debug", "info", "warning", "error"):
            raise ValueError("must be one of debug, info, warning, error")
        return value.lower()

    @field_validator("github_api_url", "argocd_server", "rollout_service_url", "gitlab_url")
    @classmethod
    def _url(cls, value: str | None) -> str | None:
        if value is None:
            return None
        if not value.startswith(("http://", "https://")):
            raise ValueError("must start with http:// or https://")
        return value.rstrip("/")

    def render_options(self, *, repo_url: str | None = None) -> Any:
        """The renderers' options (limits, workers) from these settings."""
        from app.render.pipeline import RenderOptions
        from app.render.process import RenderLimits

        return RenderOptions(limits=RenderLimits(self.render_timeout_s, self.render_max_bytes),
                             repo_url=repo_url)

    def load_api_tokens(self) -> tuple[bytes, ...]:
        """The API tokens from ``api_tokens_file``; SettingsError naming the file when unusable."""
        if self.api_tokens_file is None:
            return ()
        try:
            text = self.api_tokens_file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise SettingsError(f"RAYSERVICE_IMPACT_API_TOKENS_FILE: {self.api_tokens_file}: cannot read "
                                f"it ({exc})") from None
        tokens = tuple(line.strip().encode() for line in text.splitlines()
                       if line.strip() and not line.lstrip().startswith("#"))
        if not tokens:
            raise SettingsError(f"RAYSERVICE_IMPACT_API_TOKENS_FILE: {self.api_tokens_file} holds no token")
        if any(len(t) < 16 for t in tokens):
            raise SettingsError("RAYSERVICE_IMPACT_API_TOKENS_FILE: every token must have at least 16 "
                                "characters")
        return tokens

    def load_policy(self) -> dict[str, Any] | None:
        """The policy mapping from ``policy_file``; raises SettingsError naming the file."""
        if self.policy_file is None:
            return None
        from app.files import read_policy

        return read_policy(str(self.policy_file), variable="RAYSERVICE_IMPACT_POLICY_FILE")


def load_settings(**overrides: Any) -> Settings:
    """Build settings from the environment; a bad value raises SettingsError naming it."""
    try:
        return Settings(**overrides)
    except ValidationError as exc:
        problems = []
        for err in exc.errors():
            field = ".".join(str(p) for p in err["loc"]) or "?"
            problems.append(f"RAYSERVICE_IMPACT_{field.upper()}: {err['msg']}")
        raise SettingsError("invalid configuration: " + "; ".join(problems)) from None
    except Exception as exc:  # UnsupportedVersionError raised inside a validator
        raise SettingsError(f"invalid configuration: {exc}") from None
