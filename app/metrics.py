"""Prometheus metrics, on a registry owned by one app (two apps in a process do not clash)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST

__all__ = ["CONTENT_TYPE_LATEST", "Metrics"]

_LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)


class Metrics:
    """The service's instruments; ``render()`` is the /metrics body."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self.requests = Counter("rayservice_impact_http_requests", "HTTP requests answered.",
                                ("method", "route", "status"), registry=r)
        self.latency = Histogram("rayservice_impact_http_request_duration_seconds",
                                 "Time from request start to the end of the answer.",
                                 ("method", "route", "status"), buckets=_LATENCY_BUCKETS, registry=r)
        self.analyses = Counter("rayservice_impact_analyses", "Reports produced, by overall decision.",
                                ("decision",), registry=r)
        self.rollouts = Counter("rayservice_impact_resource_rollouts",
                                "RayServices, RayClusters and RayJobs analysed, by kind, predicted "
                                "rollout and decision.",
                                ("kind", "rollout", "decision"), registry=r)
        self.accelerators = Counter("rayservice_impact_extra_accelerators_requested",
                                    "Extra accelerators the analysed rollouts need, summed.",
                                    ("resource",), registry=r)
        self.analysis_seconds = Histogram("rayservice_impact_analysis_duration_seconds",
                                          "Time a worker spent in one analysis.",
                                          buckets=_LATENCY_BUCKETS, registry=r)
        self.rejected = Counter("rayservice_impact_analyses_rejected",
                                "Analyses refused with 503, by reason.", ("reason",), registry=r)
        self.cache_hits = Counter("rayservice_impact_analysis_cache_hits",
                                  "Answers served from the result cache.", registry=r)
        self.in_flight = Gauge("rayservice_impact_analyses_in_flight",
                               "Analyses admitted and not yet finished.", registry=r)
        # The rollout watch (docs/rollout.md): what a deployed change did against its prediction.
        self.prediction_mismatch = Counter("rayservice_impact_prediction_mismatch",
                                           "Followed objects whose observed rollout or extra accelerators "
                                           "differ from the prediction, by kind and predicted rollout.",
                                           ("kind", "rollout"), registry=r)
        self.rollouts_followed = Counter("rayservice_impact_rollouts_followed",
                                         "Deployed changes followed to the end, by outcome "
                                         "(success | failure).", ("outcome",), registry=r)

    def observe_request(self, method: str, route: str, status: int, seconds: float) -> None:
        labels = (method, route, str(status))
        self.requests.labels(*labels).inc()
        self.latency.labels(*labels).observe(seconds)

    def observe_analysis(self, decision: str, rollouts: Iterable[tuple[str, str, str]],
                         accelerators: Mapping[str, int], seconds: float | None) -> None:
        self.analyses.labels(decision).inc()
        for kind, rollout, resource_decision in rollouts:
            self.rollouts.labels(kind, rollout, resource_decision).inc()
        for name, amount in accelerators.items():
            self.accelerators.labels(name).inc(amount)
        if seconds is not None:
            self.analysis_seconds.observe(seconds)

    def observe_rollout(self, outcome: str, mismatched: Iterable[tuple[str, str]]) -> None:
        """One followed change finished: its outcome, and (kind, predicted rollout) of every
        object that did not go as predicted."""
        self.rollouts_followed.labels(outcome).inc()
        for kind, rollout in mismatched:
            self.prediction_mismatch.labels(kind, rollout).inc()

    def render(self) -> bytes:
        return generate_latest(self.registry)
