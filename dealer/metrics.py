"""Prometheus metrics, on request (``DEALER_METRICS_PORT``, extra ``[metrics]``); every
report is a no-op until :meth:`Metrics.enable`, so the default pays nothing."""

from __future__ import annotations

from typing import Any

from dealer.extras import missing

PASS_BUCKETS = (0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)
"""Seconds a pass took."""
LATENESS_BUCKETS = (0.1, 0.5, 1, 5, 15, 60, 300, 900, 3600, 21600, 86400)
"""Seconds a deadline fired after it was due (a day late: the daemon was down)."""


class Metrics:
    """The daemon's counters, histograms and gauges (no-ops until :meth:`enable`)."""

    def __init__(self) -> None:
        self.registry: Any = None

    def enable(self) -> Any:
        """Create the metrics in a registry of their own and return it (idempotent)."""
        if self.registry is not None:
            return self.registry
        try:
            from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
        except ImportError as exc:
            raise missing("metrics", "metrics (DEALER_METRICS_PORT)") from exc
        registry = CollectorRegistry()
        self._messages = Counter(
            "dealer_messages", "Stored messages handled, by outcome "
            "(applied, rejected, ignored, failed, held; quarantined: a mail stored unapplied, its "
            "sender not authenticated).", ["outcome"], registry=registry)
        self._deadlines = Counter("dealer_deadlines_fired", "Deadlines fired.", registry=registry)
        self._lateness = Histogram(
            "dealer_deadline_lateness_seconds", "How long after its due time a deadline fired.",
            buckets=LATENESS_BUCKETS, registry=registry)
        self._posts = Counter(
            "dealer_posts", "Delivery attempts at posts, by outcome (delivered, retried, "
            "parked, unparked: a parked post tried again on its own, dropped).", ["outcome"], registry=registry)
        self._parked = Gauge("dealer_posts_parked", "Posts parked after a long outage (retried on their own after a backoff; `dealer outbox retry` re-queues them now).",
                             registry=registry)
        self._passes = Histogram("dealer_pass_duration_seconds", "How long a pass took.",
                                 buckets=PASS_BUCKETS, registry=registry)
        self.registry = registry
        return registry

    def message(self, outcome: str) -> None:
        """A stored message ended its pass ``outcome``."""
        if self.registry is not None:
            self._messages.labels(outcome).inc()

    def deadline_fired(self, lateness_seconds: float) -> None:
        """A deadline fired ``lateness_seconds`` after its due time."""
        if self.registry is not None:
            self._deadlines.inc()
            self._lateness.observe(max(lateness_seconds, 0.0))

    def post(self, outcome: str) -> None:
        """A post was ``delivered``, ``retried`` (it failed and waits), ``parked`` or ``dropped``."""
        if self.registry is not None:
            self._posts.labels(outcome).inc()

    def parked(self, count: int) -> None:
        """The number of parked posts now."""
        if self.registry is not None:
            self._parked.set(count)

    def pass_took(self, seconds: float) -> None:
        """A pass took ``seconds``."""
        if self.registry is not None:
            self._passes.observe(seconds)


METRICS = Metrics()
"""The daemon's metrics (one per process)."""


def serve(port: int, address: str = "") -> Any:
    """Enable the metrics and serve them over HTTP on ``port`` (``/metrics``)."""
    from prometheus_client import start_http_server

    registry = METRICS.enable()
    return start_http_server(port, addr=address or "0.0.0.0", registry=registry)
