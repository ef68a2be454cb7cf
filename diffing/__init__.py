"""rayservice-impact's analysis core: pure functions from manifest texts to a report.

>>> import diffing
>>> report = diffing.analyze(before_text, after_text, kuberay_version="1.7.0")  # doctest: +SKIP
>>> report.decision, report.exit_code                                           # doctest: +SKIP
('hold', 3)

Nothing here reads files, the network or the environment; :mod:`app` does that.

The names below are imported on first use (issue 24): ``import diffing`` itself loads nothing,
and a caller pays only for what it reads (a JSON report never loads the markdown renderer).
"""

from importlib import import_module as _import_module

_TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (diffing/hints.py)

if _TYPE_CHECKING:
    from typing import Any as _Any

    from diffing.errors import DiffingError, ManifestError, PolicyError, UnsupportedVersionError
    from diffing.kube.loading import Limits
    from diffing.kube.manifests import Source, live_objects, strip_server_fields
    from diffing.live import LiveCluster
    from diffing.pipeline import analyze
    from diffing.policy import Policy
    from diffing.rayservice.live import cluster_divergence
    from diffing.rayservice.rules import Category
    from diffing.render.markdown import render_markdown
    from diffing.report import Capacity, Change, Finding, Report, ResourceReport
    from diffing.versions import SUPPORTED as SUPPORTED_VERSIONS

# Each public name: the module that defines it and its name there.
_EXPORTS: dict[str, tuple[str, str]] = {
    "SUPPORTED_VERSIONS": ("diffing.versions", "SUPPORTED"),
    **{name: ("diffing.errors", name)
       for name in ("DiffingError", "ManifestError", "PolicyError", "UnsupportedVersionError")},
    "Limits": ("diffing.kube.loading", "Limits"),
    **{name: ("diffing.kube.manifests", name) for name in ("Source", "live_objects", "strip_server_fields")},
    "LiveCluster": ("diffing.live", "LiveCluster"),
    "analyze": ("diffing.pipeline", "analyze"),
    "Policy": ("diffing.policy", "Policy"),
    "cluster_divergence": ("diffing.rayservice.live", "cluster_divergence"),
    "Category": ("diffing.rayservice.rules", "Category"),
    "render_markdown": ("diffing.render.markdown", "render_markdown"),
    **{name: ("diffing.report", name)
       for name in ("Capacity", "Change", "Finding", "Report", "ResourceReport")},
}

__all__ = [
    "SUPPORTED_VERSIONS",
    "Capacity",
    "Category",
    "Change",
    "DiffingError",
    "Finding",
    "Limits",
    "LiveCluster",
    "ManifestError",
    "Policy",
    "PolicyError",
    "Report",
    "ResourceReport",
    "Source",
    "UnsupportedVersionError",
    "analyze",
    "cluster_divergence",
    "live_objects",
    "render_markdown",
    "strip_server_fields",
]


def __getattr__(name: str) -> "_Any":
    try:
        module, attr = _EXPORTS[name]
    except KeyError:
        raise AttributeError(f"module 'diffing' has no attribute {name!r}") from None
    value = getattr(_import_module(module), attr)
    globals()[name] = value  # once: later reads are plain module attributes
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
