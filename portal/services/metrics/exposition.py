"""One scrape: a fresh :class:`StoredMetrics` collector in a fresh registry (no process-wide metric state, so two
portal processes answer alike and a deleted topic's series cannot linger in memory), rendered in the format the
scraper asked for (OpenMetrics when its ``Accept`` names it, else the Prometheus text format 0.0.4), gzipped when its
``Accept-Encoding`` allows. prometheus_client chooses both, exactly as its own HTTP handler does."""

from __future__ import annotations

import datetime as dt
import gzip
from dataclasses import dataclass

from django.utils import timezone
from prometheus_client import CollectorRegistry
from prometheus_client.exposition import choose_encoder, gzip_accepted
from prometheus_client.registry import Collector

from portal.services.metrics import exporter, health, own
from portal.services.metrics.scope import scopes


class StoredMetrics(Collector):
    """Every family, built from the registry and the stored stats at ``now``."""

    def __init__(self, now: dt.datetime) -> None:
        self.now = now

    def collect(self):
        clusters = scopes(self.now)
        yield from exporter.topic_families(clusters)
        yield from exporter.consumer_families(clusters)
        yield from exporter.broker_families(clusters)
        yield from exporter.runtime_families(clusters)
        yield from own.lag_families(clusters)
        yield from own.producer_families(clusters, self.now)
        yield from health.collection_families(clusters)
        yield from health.probe_families(clusters, self.now)
        yield from health.server_families(clusters, self.now)
        yield from health.warning_families(clusters)


@dataclass(frozen=True)
class Scrape:
    body: bytes
    content_type: str
    content_encoding: str  # "" or "gzip"


def scrape(accept: str, accept_encoding: str, *, now: dt.datetime | None = None) -> Scrape:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(StoredMetrics(now or timezone.now()))
    encoder, content_type = choose_encoder(accept)
    body = encoder(registry)
    if gzip_accepted(accept_encoding):
        return Scrape(gzip.compress(body, compresslevel=6), content_type, "gzip")
    return Scrape(body, content_type, "")
