"""rayservice-impact's analysis core: pure functions from manifest texts to a report.

>>> import diffing
>>> report = diffing.analyze(before_text, after_text, kuberay_version="1.7.0")  # doctest: +SKIP
>>> report.decision, report.exit_code                                           # doctest: +SKIP
('hold', 3)

Nothing here reads files, the network or the environment; :mod:`app` does that.
"""

from .analysis import analyze, cluster_divergence
from .errors import DiffingError, ManifestError, PolicyError, UnsupportedVersionError
from .kuberay import SUPPORTED as SUPPORTED_VERSIONS
from .kuberay import Category
from .live import LiveCluster
from .loading import Limits
from .manifests import Source, live_objects, strip_server_fields
from .policy import Policy
from .render.markdown import render_markdown
from .report import Capacity, Change, Finding, Report, ResourceReport

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
