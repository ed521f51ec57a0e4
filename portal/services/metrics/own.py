"""Our own consumer and producer families, under ``mqcloud_``: what the exporter cannot say.

- Lag per queue (``mqcloud_queue_lag`` with the queue's broker and consumer offsets): only the queues a group is
  behind on are stored, so a queue without a series has no lag. A broadcasting group's clients keep their own
  offsets: it has a series per queue and client (``client_id``) that is behind, each by the client's own account.
- Lag in seconds per (group, topic), the figure the portal's charts draw (the exporter's
  ``rocketmq_group_get_latency_by_storetime`` is the same in milliseconds). Lag in messages per (group, topic) is
  ``rocketmq_group_diff`` (per client for a broadcasting group): take ``max by (cluster, group, topic)``, which
  also drops ``countOfOnlineConsumers``, a label that changes when a client joins.
- Producers' send latency as the SDK reported it (:mod:`stats.histogram`): a gauge histogram of the latest fully
  reported minute per (producer group, topic, broker), its 674 buckets folded into :data:`LATENCY_BOUNDS` (each
  stored bucket lands in the first bound at or above its upper edge, so every count is under its ``le``), and the
  exact percentiles the portal's charts draw, merged from the same buckets.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Iterator
from itertools import chain

from django.db.models import Max
from prometheus_client.core import GaugeHistogramMetricFamily, GaugeMetricFamily

from portal.services.metrics.scope import ClusterScope
from stats.histogram import GAMMA, MIN_MS, OVERFLOW, empty, merge_into, percentile_from_counts
from stats.keys import retry_topic
from stats.models import ClientQueueLagMinute, ConsumeMinute, GroupMinute, ProducerMinute, QueueLagMinute
from stats.queries.producers import PERCENTILES
from stats.queries.traffic import FRESH_FOR

QUEUE_LABELS = ["cluster", "group", "topic", "broker", "queue_id", "client_id"]
PAIR_LABELS = ["cluster", "group", "topic"]
SEND_LABELS = ["cluster", "producer_group", "topic", "broker"]
#: The ``le`` bounds of the send-latency histogram, seconds.
LATENCY_BOUNDS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
QUANTILES = {**{str(q): q for q in PERCENTILES.values()}, "1": 1.0}


def _known(scope: ClusterScope, group: str, topic: str) -> bool:
    return group in scope.groups and (topic in scope.topics or topic == retry_topic(group))


def lag_families(scopes: list[ClusterScope]) -> Iterator[GaugeMetricFamily]:
    queue_lag = GaugeMetricFamily("mqcloud_queue_lag", "Messages a group is behind on one queue.", labels=QUEUE_LABELS)
    broker_offset = GaugeMetricFamily(
        "mqcloud_queue_broker_offset", "The lagging queue's end (max offset).", labels=QUEUE_LABELS
    )
    consumer_offset = GaugeMetricFamily(
        "mqcloud_queue_consumer_offset", "The group's committed offset on the lagging queue.", labels=QUEUE_LABELS
    )
    lag_seconds = GaugeMetricFamily(
        "mqcloud_consumer_lag_seconds",
        "How long the oldest unconsumed message has waited (absent when unknown: nothing consumed yet, or a "
        "broadcasting group).",
        labels=PAIR_LABELS,
    )
    blocked = GaugeMetricFamily(
        "mqcloud_consumer_blocked_queues", "Queues the group's clients are stuck on.", labels=["cluster", "group"]
    )
    for scope in scopes:
        if scope.minute is None:
            continue
        key = {"cluster_id": scope.cluster_id, "minute": scope.minute}
        fields = ("group", "topic", "broker_name", "queue_id", "client_id", "lag", "broker_offset", "consumer_offset")
        clustering = QueueLagMinute.objects.filter(**key, client_id="").values(*fields)
        for row in chain(clustering, ClientQueueLagMinute.objects.filter(**key).values(*fields)):
            if not _known(scope, row["group"], row["topic"]):
                continue
            labels = [
                scope.name,
                row["group"],
                row["topic"],
                row["broker_name"],
                str(row["queue_id"]),
                row["client_id"],
            ]
            queue_lag.add_metric(labels, row["lag"])
            broker_offset.add_metric(labels, row["broker_offset"])
            consumer_offset.add_metric(labels, row["consumer_offset"])
        pairs = dict.fromkeys(scope.subscriptions, 0.0)
        for group, topic, seconds in ConsumeMinute.objects.filter(**key).values_list("group", "topic", "lag_seconds"):
            if _known(scope, group, topic):
                pairs[group, topic] = seconds
        for (group, topic), seconds in sorted(pairs.items()):
            if seconds is not None:
                lag_seconds.add_metric([scope.name, group, topic], seconds)
        for group, queues in GroupMinute.objects.filter(**key).values_list("group", "blocked_queues"):
            if group in scope.groups and queues is not None:
                blocked.add_metric([scope.name, group], queues)
    yield from (queue_lag, broker_offset, consumer_offset, lag_seconds, blocked)


def _upper_edge_seconds(index: int) -> float:
    return MIN_MS * GAMMA**index / 1000


def bucket_bounds(counts: dict) -> list[tuple[str, float]]:
    """Sparse stored bucket counts as cumulative ``(le, count)`` pairs over :data:`LATENCY_BOUNDS` and ``+Inf``."""
    folded = [0] * (len(LATENCY_BOUNDS) + 1)
    for key, n in counts.items():
        index = int(key)
        slot = len(LATENCY_BOUNDS)
        if index < OVERFLOW:
            edge = _upper_edge_seconds(index)
            slot = next((i for i, bound in enumerate(LATENCY_BOUNDS) if edge <= bound), len(LATENCY_BOUNDS))
        folded[slot] += n
    cumulative, total = [], 0
    for bound, n in zip([*(repr(b) for b in LATENCY_BOUNDS), "+Inf"], folded, strict=True):
        total += n
        cumulative.append((bound, total))
    return cumulative


def latest_reported_minutes(scopes: Iterable[ClusterScope], now: dt.datetime) -> dict[int, dt.datetime]:
    """Per cluster, the latest minute producers reported, leaving out the minute still running (its reports are
    still coming in) and anything older than :data:`FRESH_FOR`."""
    running = now.replace(second=0, microsecond=0)
    return {
        row["cluster_id"]: row["latest"]
        for row in ProducerMinute.objects.filter(
            cluster_id__in=[scope.cluster_id for scope in scopes], minute__lt=running, minute__gte=now - FRESH_FOR
        )
        .values("cluster_id")
        .annotate(latest=Max("minute"))
    }


def producer_families(scopes: list[ClusterScope], now: dt.datetime) -> Iterator:
    histogram = GaugeHistogramMetricFamily(
        "mqcloud_producer_send_latency_seconds",
        "Send latency the producers' SDK reported for the latest reported minute.",
        labels=SEND_LABELS,
    )
    quantiles = GaugeMetricFamily(
        "mqcloud_producer_send_latency_ms",
        "Exact nearest-rank send-latency percentiles of the latest reported minute, ms (as the portal's charts).",
        labels=[*SEND_LABELS, "quantile"],
    )
    sends = GaugeMetricFamily("mqcloud_producer_sends", "Sends in the latest reported minute.", labels=SEND_LABELS)
    errors = GaugeMetricFamily(
        "mqcloud_producer_send_errors",
        "Failed sends in the latest reported minute, by exception.",
        labels=[*SEND_LABELS, "exception"],
    )
    minute_at = GaugeMetricFamily(
        "mqcloud_producer_report_minute_timestamp_seconds",
        "Start of the minute the producer families describe.",
        labels=["cluster"],
    )
    latest = latest_reported_minutes(scopes, now)
    for scope in scopes:
        minute = latest.get(scope.cluster_id)
        if minute is None:
            continue
        minute_at.add_metric([scope.name], minute.timestamp())
        merged: dict[tuple[str, str, str], dict] = {}
        failed: dict[tuple[str, str, str, str], int] = {}
        for row in ProducerMinute.objects.filter(cluster_id=scope.cluster_id, minute=minute).values(
            "producer_group", "topic", "broker_name", "count", "exceptions", "histogram"
        ):
            if row["producer_group"] not in scope.producer_groups or row["topic"] not in scope.topics:
                continue
            key = (row["producer_group"], row["topic"], row["broker_name"])
            total = merged.setdefault(key, {**empty(), "sends": 0})
            merge_into(total, row["histogram"])
            total["sends"] += row["count"]
            for exception, n in row["exceptions"].items():
                failed[(*key, exception)] = failed.get((*key, exception), 0) + n
        for key, total in sorted(merged.items()):
            labels = [scope.name, *key]
            histogram.add_metric(labels, bucket_bounds(total["counts"]), total["sum_ms"] / 1000)
            sends.add_metric(labels, total["sends"])
            for name, q in QUANTILES.items():
                value = percentile_from_counts(total["counts"], q, min_ms=total["min_ms"], max_ms=total["max_ms"])
                if value is not None:
                    quantiles.add_metric([*labels, name], value)
        for key, n in sorted(failed.items()):
            errors.add_metric([scope.name, *key], n)
    yield from (histogram, quantiles, sends, errors, minute_at)
