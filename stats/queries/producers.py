"""Producers' reported sends read back: per-minute latency percentiles (p50/p90/p99/max), sends and exceptions of a
producer group or a topic, in total, per broker and per client, and the group's clients with their last report.

Percentiles are never averaged: the histograms of every row in a point (clients, brokers, topics of one minute) are
merged first (their sparse bucket counts added, exact) and the percentile is taken from the merged counts with
:func:`stats.histogram.percentile_from_counts`, so any percentile shown is within the histogram's 1% of the exact
nearest-rank percentile of all the sends it covers. A minute without any report is a gap (None): producers report
only minutes they sent in, so nothing can be said about the others.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from dataclasses import dataclass, field

from stats.charts import Point
from stats.histogram import percentile_from_counts
from stats.models import ProducerMinute
from stats.queries.traffic import minutes

PERCENTILES = {"p50": 0.5, "p90": 0.9, "p99": 0.99}
_COLUMNS = (
    "minute",
    "producer_group",
    "topic",
    "client_id",
    "client_addr",
    "broker_name",
    "count",
    "exception_count",
    "exceptions",
    "histogram",
)


class _Merged:
    """The reports of one point merged: bucket counts added, min/max kept exact, sends and exceptions summed."""

    __slots__ = ("counts", "exceptions", "max_ms", "min_ms", "sends")

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}
        self.sends = 0
        self.exceptions = 0
        self.min_ms: float | None = None
        self.max_ms: float | None = None

    def add(self, row: dict) -> None:
        self.sends += row["count"]
        self.exceptions += row["exception_count"]
        histogram = row["histogram"]
        counts = self.counts
        for index, n in histogram["counts"].items():
            counts[index] = counts.get(index, 0) + n
        if histogram["counts"]:
            low, high = histogram["min_ms"], histogram["max_ms"]
            self.min_ms = low if self.min_ms is None else min(self.min_ms, low)
            self.max_ms = high if self.max_ms is None else max(self.max_ms, high)

    def percentile(self, q: float) -> float | None:
        return percentile_from_counts(self.counts, q, min_ms=self.min_ms, max_ms=self.max_ms)


@dataclass(frozen=True)
class LatencySeries:
    """Per minute: send-latency percentiles and maximum (ms), sends, and sends that failed."""

    p50: list[Point]
    p90: list[Point]
    p99: list[Point]
    max: list[Point]
    sends: list[Point]
    exceptions: list[Point]


def _series(times: list[dt.datetime], merged: dict[dt.datetime, _Merged]) -> LatencySeries:
    def points(value) -> list[Point]:
        return [(moment, value(merged[moment]) if moment in merged else None) for moment in times]

    return LatencySeries(
        **{name: points(lambda m, q=q: m.percentile(q)) for name, q in PERCENTILES.items()},
        max=points(lambda m: m.max_ms),
        sends=points(lambda m: m.sends),
        exceptions=points(lambda m: m.exceptions),
    )


@dataclass(frozen=True)
class ClientReport:
    """A client's last reported minute in the range: what it sent then, over all its topics and brokers."""

    client_id: str
    client_addr: str
    minute: dt.datetime
    topics: list[str]
    brokers: list[str]
    sends: int
    exceptions: int
    p99_ms: float | None
    max_ms: float | None


@dataclass(frozen=True)
class ProducerLatency:
    """Everything reported in a range: the total, the same per broker and per client (by name, sorted), the
    exceptions per broker over the whole range (``{broker: {exception class: sends}}``, every broker reported,
    empty for those without), and each client's last report (by client id)."""

    total: LatencySeries
    by_broker: dict[str, LatencySeries] = field(default_factory=dict)
    by_client: dict[str, LatencySeries] = field(default_factory=dict)
    exceptions: dict[str, dict[str, int]] = field(default_factory=dict)
    clients: list[ClientReport] = field(default_factory=list)


def group_latency(cluster_id: int, group: str, since: dt.datetime, until: dt.datetime) -> ProducerLatency:
    """A producer group's sends over all its topics."""
    rows = ProducerMinute.objects.filter(
        cluster_id=cluster_id, producer_group=group, minute__gte=since, minute__lte=until
    ).values(*_COLUMNS)
    return _latency(rows, since, until)


def topic_latency(cluster_id: int, topic: str, since: dt.datetime, until: dt.datetime) -> ProducerLatency:
    """The sends of every producer group to a topic."""
    rows = ProducerMinute.objects.filter(
        cluster_id=cluster_id, topic=topic, minute__gte=since, minute__lte=until
    ).values(*_COLUMNS)
    return _latency(rows, since, until)


def _latency(rows: Iterable[dict], since: dt.datetime, until: dt.datetime) -> ProducerLatency:
    total: dict[dt.datetime, _Merged] = {}
    by_broker: dict[str, dict[dt.datetime, _Merged]] = {}
    by_client: dict[str, dict[dt.datetime, _Merged]] = {}
    exceptions: dict[str, dict[str, int]] = {}
    last: dict[str, list[dict]] = {}  # client -> the rows of its latest minute
    for row in rows:
        moment = row["minute"]
        for merged in (
            total.setdefault(moment, _Merged()),
            by_broker.setdefault(row["broker_name"], {}).setdefault(moment, _Merged()),
            by_client.setdefault(row["client_id"], {}).setdefault(moment, _Merged()),
        ):
            merged.add(row)
        failed = exceptions.setdefault(row["broker_name"], {})
        for name, n in row["exceptions"].items():
            failed[name] = failed.get(name, 0) + n
        latest = last.setdefault(row["client_id"], [row])
        if moment > latest[0]["minute"]:
            last[row["client_id"]] = [row]
        elif moment == latest[0]["minute"] and latest[0] is not row:
            latest.append(row)
    times = minutes(since, until)
    return ProducerLatency(
        total=_series(times, total),
        by_broker={name: _series(times, points) for name, points in sorted(by_broker.items())},
        by_client={name: _series(times, points) for name, points in sorted(by_client.items())},
        exceptions={name: dict(sorted(failed.items())) for name, failed in sorted(exceptions.items())},
        clients=[_client_report(client, latest) for client, latest in sorted(last.items())],
    )


def _client_report(client_id: str, rows: list[dict]) -> ClientReport:
    merged = _Merged()
    for row in rows:
        merged.add(row)
    return ClientReport(
        client_id=client_id,
        client_addr=rows[-1]["client_addr"],
        minute=rows[0]["minute"],
        topics=sorted({row["topic"] for row in rows}),
        brokers=sorted({row["broker_name"] for row in rows}),
        sends=merged.sends,
        exceptions=merged.exceptions,
        p99_ms=merged.percentile(PERCENTILES["p99"]),
        max_ms=merged.max_ms,
    )
