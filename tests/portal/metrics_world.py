"""Helpers of the /metrics tests (their fixtures are in :mod:`tests.portal.metrics_fixtures`): stored minutes written
the way the collector writes them, and a scrape through the real view with a real scrape token, parsed back with
prometheus_client's own parser."""

from __future__ import annotations

import datetime as dt

from django.utils import timezone
from prometheus_client.parser import text_string_to_metric_families

from portal.models import Cluster
from stats.models import ClusterMinute
from stats.store.traffic import MinuteSamples, store_minute


def this_minute() -> dt.datetime:
    return timezone.now().replace(second=0, microsecond=0)


def ago(minutes: int) -> dt.datetime:
    return this_minute() - dt.timedelta(minutes=minutes)


def collected(minutes_ago: int, cluster: Cluster, **rows) -> dt.datetime:
    minute = ago(minutes_ago)
    store_minute(MinuteSamples(cluster=ClusterMinute(cluster_id=cluster.pk, minute=minute, seconds=1.5), **rows))
    return minute


def scrape(client, token: str, **headers) -> dict[str, dict[tuple, float]]:
    """name -> {sorted label items: value} of every sample, as Prometheus would read it."""
    response = client.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {token}", **headers)
    assert response.status_code == 200, response.content
    samples: dict[str, dict[tuple, float]] = {}
    for family in text_string_to_metric_families(response.content.decode()):
        for sample in family.samples:
            samples.setdefault(sample.name, {})[tuple(sorted(sample.labels.items()))] = sample.value
    return samples


def labels(**values) -> tuple:
    return tuple(sorted(values.items()))
