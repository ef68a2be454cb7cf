"""The ``RAYSERVICE_IMPACT_*`` variables the command line reads, without the service's settings stack.

:class:`app.settings.Settings` validates every variable of the service with pydantic-settings,
whose import alone takes several times as long as a whole ``analyze`` run on small files (issue
24). The commands that analyse (``analyze``, ``git``, and ``argocd-presync``'s analysis options)
read four of them, here, as ``Settings`` reads them: the name in any case, the same defaults, the
same checks, and a bad value named in a :class:`SettingsError`. A variable that only the service
reads does not stop a command-line run.
"""

from __future__ import annotations

import math
import os

from diffing.hints import Any

PREFIX = "RAYSERVICE_IMPACT_"


class SettingsError(Exception):
    """A configuration value that is not valid; the message names the variable."""


def variable(name: str) -> str | None:
    """``RAYSERVICE_IMPACT_<NAME>``'s value, the name matched in any case (``Settings`` has
    ``case_sensitive=False``); None when unset."""
    wanted = PREFIX + name.upper()
    if wanted in os.environ:
        return os.environ[wanted]
    return next((value for key, value in os.environ.items() if key.upper() == wanted), None)


def _positive(name: str, kind: type[int] | type[float]) -> Any:
    """A number greater than 0, or None when unset (the renderers' own default then)."""
    text = variable(name)
    if text is None:
        return None
    try:
        value = kind(text.strip())
    except ValueError:
        raise SettingsError(f"invalid configuration: {PREFIX}{name.upper()}: {text!r} is not "
                            f"{'an integer' if kind is int else 'a number'}") from None
    if not (math.isfinite(value) and value > 0):
        raise SettingsError(f"invalid configuration: {PREFIX}{name.upper()}: must be greater than 0")
    return value


def kuberay_version() -> str:
    """``RAYSERVICE_IMPACT_KUBERAY_VERSION``, checked as ``Settings`` checks it, or the default."""
    from diffing.errors import UnsupportedVersionError
    from diffing.versions import DEFAULT, rules_for

    version = variable("kuberay_version")
    if version is None:
        return DEFAULT
    try:
        rules_for(version)
    except UnsupportedVersionError as exc:
        raise SettingsError(f"invalid configuration: {PREFIX}KUBERAY_VERSION: {exc}") from None
    return version


def policy_file() -> str | None:
    """``RAYSERVICE_IMPACT_POLICY_FILE``: the policy's path, None when unset."""
    return variable("policy_file")


def render_options(*, kustomize: str | None = None) -> Any:
    """The renderers' options, as :meth:`app.settings.Settings.render_options` builds them from
    ``RAYSERVICE_IMPACT_RENDER_TIMEOUT_S`` and ``_RENDER_MAX_BYTES`` (unset: the renderers'
    defaults, which are ``Settings``' defaults too)."""
    from app.render.pipeline import RenderOptions
    from app.render.process import RenderLimits

    limits = {"timeout_s": _positive("render_timeout_s", float),
              "max_bytes": _positive("render_max_bytes", int)}
    return RenderOptions(kustomize=kustomize,
                         limits=RenderLimits(**{k: v for k, v in limits.items() if v is not None}))
