"""Consumers' reported consumption read back (:class:`stats.models.ConsumerClientMinute`, from the SDK's listener
container): for a consumer group over a range, per topic and per client, messages consumed per second, failures,
and consume-time percentiles. Histograms are merged first (:func:`stats.histogram.merge_into`, exact) and the
percentiles taken from the merged counts, as for producers (:mod:`stats.queries.producers`). The rate is over the
minutes a report covers, so a client that reported for ten minutes of an hour is not diluted by the other fifty."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

from stats.histogram import empty, merge_into, percentile_from_counts
from stats.models import ConsumerClientMinute


@dataclass
class ConsumeFigures:
    """What one topic or one client consumed over the range: messages, failures by class, minutes reported and
    the merged consume-time histogram."""

    name: str
    count: int = 0
    failure_count: int = 0
    failures: dict[str, int] = field(default_factory=dict)
    minutes: set[dt.datetime] = field(default_factory=set)
    histogram: dict = field(default_factory=empty)

    def add(self, row: dict) -> None:
        self.count += row["count"]
        self.failure_count += row["failure_count"]
        for name, n in row["failures"].items():
            self.failures[name] = self.failures.get(name, 0) + n
        self.minutes.add(row["minute"])
        merge_into(self.histogram, row["histogram"])

    @property
    def tps(self) -> float:
        return self.count / (60 * len(self.minutes)) if self.minutes else 0.0

    def percentile(self, q: float) -> float | None:
        merged = self.histogram
        return percentile_from_counts(merged["counts"], q, min_ms=merged["min_ms"], max_ms=merged["max_ms"])

    @property
    def p50_ms(self) -> float | None:
        return self.percentile(0.5)

    @property
    def p99_ms(self) -> float | None:
        return self.percentile(0.99)


@dataclass(frozen=True)
class GroupConsumption:
    topics: list[ConsumeFigures]
    clients: list[ConsumeFigures]
    last_minute: dt.datetime | None


def group_consumption(cluster_id: int, group: str, since: dt.datetime, until: dt.datetime) -> GroupConsumption:
    # ``until`` is the minute in progress (minute-aligned ranges): its reports count too.
    rows = ConsumerClientMinute.objects.filter(
        cluster_id=cluster_id, consumer_group=group, minute__gte=since, minute__lte=until
    ).values("topic", "client_id", "minute", "count", "failure_count", "failures", "histogram")
    topics: dict[str, ConsumeFigures] = {}
    clients: dict[str, ConsumeFigures] = {}
    last = None
    for row in rows.iterator():
        topics.setdefault(row["topic"], ConsumeFigures(row["topic"])).add(row)
        clients.setdefault(row["client_id"], ConsumeFigures(row["client_id"])).add(row)
        last = row["minute"] if last is None else max(last, row["minute"])
    return GroupConsumption(
        sorted(topics.values(), key=lambda f: f.name), sorted(clients.values(), key=lambda f: f.name), last
    )


def failures_by_group(cluster_id: int, minute: dt.datetime) -> dict[str, tuple[int, int]]:
    """Per consumer group of the cluster, (messages, failures) its SDK clients reported for ``minute``."""
    totals: dict[str, tuple[int, int]] = {}
    for group, count, failures in ConsumerClientMinute.objects.filter(cluster_id=cluster_id, minute=minute).values_list(
        "consumer_group", "count", "failure_count"
    ):
        seen, failed = totals.get(group, (0, 0))
        totals[group] = (seen + count, failed + failures)
    return totals
