"""Producers' reported sends read back: per-minute latency percentiles (p50/p90/p99/max), sends and exceptions of a
producer group or a topic, in total, per broker and per client, and the group's clients with their last report.

Percentiles are never averaged: the histograms of every row in a point (clients, brokers, topics of one minute) are
merged first (their sparse bucket counts added, exact) and the percentile is taken from the merged counts with
:func:`stats.histogram.percentile_from_counts`, so any percentile shown is within the histogram's 1% of the exact
nearest-rank percentile of all the sends it covers. A minute without any report is a gap (None): producers report
only minutes they sent in, so nothing can be said about the others.

Ranges longer than six hours are drawn per rollup bucket (:func:`stats.queries.source.resolution_for`): a bucket the
hourly job has rolled up is read from :class:`~stats.models.ProducerLatencyRollup` (whose histograms are merged
the same way), the others from their minute rows, so a week is 169 points per line whatever was sent. Sends and
exceptions of a bucket are per reported minute, as a minute's are. No rollup keeps a topic's sends per broker, so
over such ranges a topic's per-broker series are its sends and exceptions only, summed in SQL (its latency per
broker is not drawn anywhere).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from dataclasses import dataclass, field

from django.db.models import Count, Max, Q, QuerySet, Sum

from stats.charts import Point
from stats.histogram import empty, merge_into, percentile_from_counts
from stats.models import ProducerLatencyRollup, ProducerMinute
from stats.queries.source import Coverage, bucket_start, by_bucket, coverage, resolution_for
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


_ROLLUP_COLUMNS = ("start", "minutes", "count", "exception_count", "histogram")


class _Merged:
    """The reports of one point merged: bucket counts added, min/max kept exact, sends and exceptions summed over
    its reported minutes (minute rows each count their minute once; a rollup row brings its ``minutes``)."""

    __slots__ = ("exceptions", "histogram", "reported", "rolled_minutes", "sends")

    def __init__(self) -> None:
        self.histogram = empty()
        self.sends = 0
        self.exceptions = 0
        self.reported: set[dt.datetime] = set()
        self.rolled_minutes = 0

    @property
    def minutes(self) -> int:
        return len(self.reported) + self.rolled_minutes

    def add(self, row: dict) -> None:
        if "minute" in row:
            self.reported.add(row["minute"])
        else:
            self.rolled_minutes += row["minutes"]
        self.sends += row["count"]
        self.exceptions += row["exception_count"]
        merge_into(self.histogram, row["histogram"])

    @property
    def max_ms(self) -> float | None:
        """The slowest send of the point; None when none of its sends recorded a latency."""
        return self.histogram["max_ms"] if self.histogram["counts"] else None

    def percentile(self, q: float) -> float | None:
        merged = self.histogram
        return percentile_from_counts(merged["counts"], q, min_ms=merged["min_ms"], max_ms=merged["max_ms"])


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
        sends=points(lambda m: _per_minute(m.sends, m.minutes)),
        exceptions=points(lambda m: _per_minute(m.exceptions, m.minutes)),
    )


def _per_minute(value: int, minutes: int) -> float:
    """A point's count per reported minute (a minute's own count as it is)."""
    return value if minutes == 1 else value / minutes


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
    reports = ProducerMinute.objects.filter(cluster_id=cluster_id, producer_group=group)
    if resolution := resolution_for(since, until):
        rollups = ProducerLatencyRollup.objects.filter(cluster_id=cluster_id, producer_group=group, topic="")
        return _bucketed(
            coverage(cluster_id, since, until, resolution),
            reports,
            total=rollups.filter(client_id="", broker_name=""),
            by_broker=rollups.filter(client_id="").exclude(broker_name=""),
            by_client=rollups.filter(broker_name="").exclude(client_id=""),
        )
    return _latency(reports.filter(minute__gte=since, minute__lte=until).values(*_COLUMNS), since, until)


def topic_latency(cluster_id: int, topic: str, since: dt.datetime, until: dt.datetime) -> ProducerLatency:
    """The sends of every producer group to a topic."""
    reports = ProducerMinute.objects.filter(cluster_id=cluster_id, topic=topic)
    if resolution := resolution_for(since, until):
        return _bucketed(
            coverage(cluster_id, since, until, resolution),
            reports,
            total=ProducerLatencyRollup.objects.filter(
                cluster_id=cluster_id, producer_group="", topic=topic, client_id="", broker_name=""
            ),
        )
    return _latency(reports.filter(minute__gte=since, minute__lte=until).values(*_COLUMNS), since, until)


def _bucketed(
    cover: Coverage,
    reports: QuerySet,
    *,
    total: QuerySet,
    by_broker: QuerySet | None = None,
    by_client: QuerySet | None = None,
) -> ProducerLatency:
    """Per bucket of ``cover``: the rolled-up buckets from the rollup rows of each grain (``by_broker`` None: no
    rollup of that grain, sends and exceptions per broker summed in SQL instead; ``by_client`` None: no series per
    client), the others from their minute ``reports`` merged here (histograms cannot be merged in SQL; these are the
    hours the job has not rolled up yet)."""
    merged: dict[str, dict] = {"total": {}, "broker_name": {}, "client_id": {}}
    for name, rollups in (("total", total), ("broker_name", by_broker), ("client_id", by_client)):
        if rollups is None:
            continue
        key = () if name == "total" else (name,)
        for row in cover.rollups(rollups).values(*key, *_ROLLUP_COLUMNS):
            series = merged[name] if name == "total" else merged[name].setdefault(row[name], {})
            series.setdefault(row["start"], _Merged()).add(row)
    for row in cover.minutes(reports).values(*_COLUMNS):
        start = bucket_start(row["minute"], cover.resolution)
        if start in cover.rolled:
            continue
        merged["total"].setdefault(start, _Merged()).add(row)
        for name, rollups in (("broker_name", by_broker), ("client_id", by_client)):
            if rollups is not None:
                merged[name].setdefault(row[name], {}).setdefault(start, _Merged()).add(row)
    if by_broker is None:
        merged["broker_name"] = _sends_by_broker(cover, reports)
    in_range = reports.filter(minute__gte=cover.starts[0], minute__lt=cover.starts[-1] + cover.length)
    return ProducerLatency(
        total=_series(cover.starts, merged["total"]),
        by_broker={name: _series(cover.starts, points) for name, points in sorted(merged["broker_name"].items())},
        by_client={name: _series(cover.starts, points) for name, points in sorted(merged["client_id"].items())},
        exceptions=_exceptions(in_range, merged["broker_name"]),
        clients=_last_reports(in_range) if by_client is not None else [],
    )


def _sends_by_broker(cover: Coverage, reports: QuerySet) -> dict[str, dict[dt.datetime, _Merged]]:
    """Sends and exceptions per broker and bucket, summed in SQL from the minute reports (no latency)."""
    in_range = reports.filter(minute__gte=cover.starts[0], minute__lt=cover.starts[-1] + cover.length)
    by_broker: dict[str, dict[dt.datetime, _Merged]] = {}
    sums = by_bucket(
        in_range,
        cover.resolution,
        key=("broker_name",),
        count=Sum("count"),
        exception_count=Sum("exception_count"),
        minutes=Count("minute", distinct=True),
    )
    for (broker, start), row in sums.items():
        by_broker.setdefault(broker, {}).setdefault(start, _Merged()).add({**row, "histogram": {"counts": {}}})
    return by_broker


def _exceptions(reports: QuerySet, brokers) -> dict[str, dict[str, int]]:
    """Failed sends per broker and exception class over the reports (every broker of ``brokers`` listed)."""
    exceptions: dict[str, dict[str, int]] = {name: {} for name in brokers}
    for row in reports.filter(exception_count__gt=0).values("broker_name", "exceptions"):
        failed = exceptions.setdefault(row["broker_name"], {})
        for name, n in row["exceptions"].items():
            failed[name] = failed.get(name, 0) + n
    return {name: dict(sorted(failed.items())) for name, failed in sorted(exceptions.items())}


def _last_reports(reports: QuerySet) -> list[ClientReport]:
    """Each client's last reported minute among ``reports`` (found in SQL), as the clients table lists it."""
    latest = reports.order_by().values("client_id").annotate(latest=Max("minute"))
    which = Q()
    for row in latest:
        which |= Q(client_id=row["client_id"], minute=row["latest"])
    if not which:
        return []
    rows: dict[str, list[dict]] = {}
    for row in reports.filter(which).order_by("client_id", "topic", "broker_name").values(*_COLUMNS):
        rows.setdefault(row["client_id"], []).append(row)
    return [_client_report(client, latest) for client, latest in sorted(rows.items())]


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
