"""rayservice-impact's analysis core: pure functions from manifest texts to a report.

>>> import diffing
>>> report = diffing.analyze(before_text, after_text, kuberay_version="1.7.0")  # doctest: +SKIP
>>> report.decision, report.exit_code                                           # doctest: +SKIP
('hold', 3)

Nothing here reads files, the network or the environment; :mod:`app` does that.
"""

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
