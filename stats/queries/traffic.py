"""Per-minute traffic and consumer progress read back for charts and tables.

These readers apply the rules of :mod:`stats.models.traffic` in one place: a minute the cluster was not collected
in is a gap (None); in a collected minute, an entity without a row of its own had nothing to report and reads as
zero; a NULL value (its broker was down) stays a gap. Brokers are the exception: every collection writes a row for
each broker it knows, so a broker without a row in a minute was not read, and that minute is a gap too.

Ranges longer than six hours are drawn per rollup bucket instead (:mod:`stats.queries.source` decides, and reads the
buckets not rolled up yet from the minute data): one point per bucket at its start, in the same units as the
minutes' points: counts as the average per collected minute of the bucket, lag and lag time as the bucket's peak.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from django.db.models import Count, F, Max, Q, QuerySet, Sum

from stats.charts import Point
from stats.models import (
    BlockedQueueMinute,
    BrokerMinute,
    BrokerRollup,
    ClientMinute,
    ClusterMinute,
    ClusterRollup,
    ConsumeMinute,
    ConsumeRollup,
    GroupMinute,
    OffsetMovedEvent,
    QueueLagMinute,
    Resolution,
    TopicMinute,
    TopicRollup,
)
from stats.queries.broadcast import ClientLag, broadcast_client_lags
from stats.queries.source import AS_CHARTS, Coverage, Pick, chosen, coverage, ratio

MINUTE = dt.timedelta(minutes=1)
# "Now" is a cluster's latest collection, as long as it is at most this old; a cluster whose collection stopped
# longer ago has no "now" (its old lag is not shown as current).
FRESH_FOR = dt.timedelta(minutes=5)


def minutes(since: dt.datetime, until: dt.datetime) -> list[dt.datetime]:
    """Every whole minute from ``since`` to ``until``, both included (``since`` rounded up to a minute)."""
    first = since.replace(second=0, microsecond=0)
    if first < since:
        first += MINUTE
    count = int((until - first) / MINUTE) + 1 if until >= first else 0
    return [first + i * MINUTE for i in range(count)]


def per_second(points: Iterable[Point]) -> list[Point]:
    """A per-minute count as a rate per second (TPS); gaps stay gaps."""
    return [(moment, None if value is None else value / 60) for moment, value in points]


def _collected(cluster_id: int, since: dt.datetime, until: dt.datetime) -> set[dt.datetime]:
    return set(
        ClusterMinute.objects.filter(cluster_id=cluster_id, minute__gte=since, minute__lte=until).values_list(
            "minute", flat=True
        )
    )


def _aligned(times: list[dt.datetime], collected: set[dt.datetime], values: Mapping[dt.datetime, float | None]):
    """One point per minute: the row's value, zero for a collected minute without a row, None for the rest."""
    return [(moment, values.get(moment, 0) if moment in collected else None) for moment in times]


def _rows_by_minute(queryset, fields: Iterable[str]) -> dict[dt.datetime, dict]:
    return {row["minute"]: row for row in queryset.values("minute", *fields)}


# --- series over a range ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TopicTraffic:
    """A topic's production per minute: messages stored, and their bytes."""

    put_nums: list[Point]
    put_size: list[Point]


def topic_traffic(
    cluster_id: int,
    topic: str,
    since: dt.datetime,
    until: dt.datetime,
    *,
    resolution: Resolution | Pick | None = AS_CHARTS,
) -> TopicTraffic:
    if resolution := chosen(since, until, resolution):
        return _topic_buckets(coverage(cluster_id, since, until, resolution), cluster_id, topic)
    times, collected = minutes(since, until), _collected(cluster_id, since, until)
    rows = _rows_by_minute(
        TopicMinute.objects.filter(cluster_id=cluster_id, topic=topic, minute__gte=since, minute__lte=until),
        ["put_nums", "put_size"],
    )
    return TopicTraffic(
        put_nums=_aligned(times, collected, {moment: row["put_nums"] for moment, row in rows.items()}),
        put_size=_aligned(times, collected, {moment: row["put_size"] for moment, row in rows.items()}),
    )


@dataclass(frozen=True)
class ConsumeSeries:
    """A group's consumption of one topic per minute: its rate (messages per second, master and slave reads
    together), and how far behind it is (messages, and seconds the oldest waiting message has waited)."""

    consume_tps: list[Point]
    lag: list[Point]
    lag_seconds: list[Point]


def group_traffic(
    cluster_id: int,
    group: str,
    since: dt.datetime,
    until: dt.datetime,
    *,
    topics: Iterable[str] = (),
    resolution: Resolution | Pick | None = AS_CHARTS,
) -> dict[str, ConsumeSeries]:
    """By topic (sorted): each topic the group consumed or lagged on in the range, and each of ``topics`` (its
    subscriptions, shown even when they were idle the whole range)."""
    if resolution := chosen(since, until, resolution):
        return _group_buckets(coverage(cluster_id, since, until, resolution), cluster_id, group, topics)
    times, collected = minutes(since, until), _collected(cluster_id, since, until)
    by_topic: dict[str, dict[dt.datetime, dict]] = {topic: {} for topic in topics}
    rows = ConsumeMinute.objects.filter(cluster_id=cluster_id, group=group, minute__gte=since, minute__lte=until)
    for row in rows.values("topic", "minute", "consume_tps", "lag", "lag_seconds"):
        by_topic.setdefault(row["topic"], {})[row["minute"]] = row
    return {
        topic: ConsumeSeries(
            **{
                name: _aligned(times, collected, {moment: row[name] for moment, row in values.items()})
                for name in ("consume_tps", "lag", "lag_seconds")
            }
        )
        for topic, values in sorted(by_topic.items())
    }


@dataclass(frozen=True)
class Totals:
    """Messages stored (put) and served to consumers (get) per minute; ``brokers_down`` (clusters only) how many
    brokers did not answer the minute's collection."""

    put_nums: list[Point]
    get_nums: list[Point]
    brokers_down: list[Point] = field(default_factory=list)


def broker_traffic(
    cluster_id: int,
    broker_name: str,
    broker_id: int,
    since: dt.datetime,
    until: dt.datetime,
    *,
    resolution: Resolution | Pick | None = AS_CHARTS,
) -> Totals:
    if resolution := chosen(since, until, resolution):
        return _broker_buckets(coverage(cluster_id, since, until, resolution), cluster_id, broker_name, broker_id)
    rows = _rows_by_minute(
        BrokerMinute.objects.filter(
            cluster_id=cluster_id, broker_name=broker_name, broker_id=broker_id, minute__gte=since, minute__lte=until
        ),
        ["put_nums", "get_nums"],
    )
    times = minutes(since, until)
    return Totals(
        put_nums=[(moment, rows[moment]["put_nums"] if moment in rows else None) for moment in times],
        get_nums=[(moment, rows[moment]["get_nums"] if moment in rows else None) for moment in times],
    )


def cluster_traffic(
    cluster_id: int, since: dt.datetime, until: dt.datetime, *, resolution: Resolution | Pick | None = AS_CHARTS
) -> Totals:
    if resolution := chosen(since, until, resolution):
        return _cluster_buckets(coverage(cluster_id, since, until, resolution), cluster_id)
    rows = _rows_by_minute(
        ClusterMinute.objects.filter(cluster_id=cluster_id, minute__gte=since, minute__lte=until),
        ["put_nums", "get_nums", "brokers_down"],
    )
    times = minutes(since, until)

    def series(name: str) -> list[Point]:
        return [(moment, rows[moment][name] if moment in rows else None) for moment in times]

    return Totals(put_nums=series("put_nums"), get_nums=series("get_nums"), brokers_down=series("brokers_down"))


# --- series over a long range, per rollup bucket ------------------------------------------------------------------
# Each reads the rolled-up buckets' rows from a rollup table and aggregates the other buckets' minutes into rows of
# the same fields in SQL (Sum and Max skip NULLs, as sparkjobs.transforms.rollups does), then turns both alike into
# points.


def _topic_buckets(cover: Coverage, cluster_id: int, topic: str) -> TopicTraffic:
    figures = ("put_nums", "put_size")
    rows = {
        row["start"]: row
        for row in cover.rollups(TopicRollup.objects.filter(cluster_id=cluster_id, topic=topic)).values(
            "start", "minutes", *figures
        )
    }
    tail = cover.tail(
        TopicMinute.objects.filter(cluster_id=cluster_id, topic=topic), **{name: Sum(name) for name in figures}
    )
    for (start,), row in tail.items():
        rows[start] = {"minutes": cover.collected.get(start, 0), **row}
    return TopicTraffic(
        **{name: cover.points(rows, lambda row, name=name: ratio(row[name], row["minutes"])) for name in figures}
    )


def _group_buckets(cover: Coverage, cluster_id: int, group: str, topics: Iterable[str]) -> dict[str, ConsumeSeries]:
    by_topic: dict[str, dict[dt.datetime, dict]] = {topic: {} for topic in topics}
    rolled = ConsumeRollup.objects.filter(cluster_id=cluster_id, group=group)
    for row in cover.rollups(rolled).values("topic", "start", "minutes", "get_nums", "lag_max", "lag_seconds_max"):
        by_topic.setdefault(row["topic"], {})[row["start"]] = row
    minutes_of = ConsumeMinute.objects.filter(cluster_id=cluster_id, group=group)
    tail = cover.tail(
        minutes_of, key=("topic",), get_nums=Sum("get_nums"), lag_max=Max("lag"), lag_seconds_max=Max("lag_seconds")
    )
    for (topic, start), row in tail.items():
        by_topic.setdefault(topic, {})[start] = {"minutes": cover.collected.get(start, 0), **row}
    return {
        topic: ConsumeSeries(
            consume_tps=cover.points(rows, lambda row: ratio(row["get_nums"], row["minutes"] * 60)),
            lag=cover.points(rows, lambda row: row["lag_max"]),
            lag_seconds=cover.points(rows, lambda row: row["lag_seconds_max"]),
        )
        for topic, rows in sorted(by_topic.items())
    }


def _answered(row: dict) -> int:
    return row["minutes"] - row["minutes_down"]


def _broker_buckets(cover: Coverage, cluster_id: int, broker_name: str, broker_id: int) -> Totals:
    """A broker has a row in every minute it was collected in, answering or not: a bucket without one is a gap, and
    its figures are averages over the minutes it answered."""
    broker = {"cluster_id": cluster_id, "broker_name": broker_name, "broker_id": broker_id}
    figures = ("put_nums", "get_nums")
    rows = {
        row["start"]: row
        for row in cover.rollups(BrokerRollup.objects.filter(**broker)).values(
            "start", "minutes", "minutes_down", *figures
        )
    }
    tail = cover.tail(
        BrokerMinute.objects.filter(**broker),
        minutes=Count("id"),
        minutes_down=Count("id", filter=Q(up=False)),
        **{name: Sum(name) for name in figures},
    )
    for (start,), row in tail.items():
        rows[start] = row
    return Totals(
        **{
            name: cover.points(rows, lambda row, name=name: ratio(row[name], _answered(row)), absent=None)
            for name in figures
        }
    )


def _cluster_buckets(cover: Coverage, cluster_id: int) -> Totals:
    """Traffic averaged over the bucket's complete minutes (no broker down); brokers down averaged over all its
    collected minutes (the brokers' minutes down, summed, per collected minute)."""
    figures = ("put_nums", "get_nums")
    rows = {
        row["start"]: {**row, "minutes_down": 0}
        for row in cover.rollups(ClusterRollup.objects.filter(cluster_id=cluster_id)).values(
            "start", "minutes", "collected_minutes", *figures
        )
    }
    tail = cover.tail(
        ClusterMinute.objects.filter(cluster_id=cluster_id),
        collected_minutes=Count("id"),
        incomplete=Count("id", filter=Q(put_nums__isnull=True) | Q(brokers_down__gt=0)),
        **{name: Sum(name) for name in figures},
    )
    for (start,), row in tail.items():
        incomplete = row.pop("incomplete")
        rows[start] = {**row, "minutes": row["collected_minutes"] - incomplete, "minutes_down": 0}
    down = [
        (row["start"], row["minutes_down"])
        for row in cover.rollups(BrokerRollup.objects.filter(cluster_id=cluster_id)).values("start", "minutes_down")
    ]
    down += [
        (start, row["minutes_down"])
        for (start,), row in cover.tail(
            BrokerMinute.objects.filter(cluster_id=cluster_id, up=False), minutes_down=Count("id")
        ).items()
    ]
    for start, minutes_down in down:
        if start in rows:  # (a broker's minute is always written with its cluster's)
            rows[start]["minutes_down"] += minutes_down
    return Totals(
        **{
            name: cover.points(rows, lambda row, name=name: ratio(row[name], row["minutes"]), absent=None)
            for name in figures
        },
        brokers_down=cover.points(rows, lambda row: row["minutes_down"] / row["collected_minutes"], absent=None),
    )


# --- the latest collected minute ----------------------------------------------------------------------------------


def latest_minute(cluster_id: int, now: dt.datetime) -> dt.datetime | None:
    """The cluster's latest collected minute, if it is recent enough to stand for "now" (:data:`FRESH_FOR`)."""
    latest = ClusterMinute.objects.filter(cluster_id=cluster_id, minute__lte=now).aggregate(latest=Max("minute"))
    moment = latest["latest"]
    return moment if moment is not None and now - moment <= FRESH_FOR else None


def topic_consumers(cluster_id: int, topic: str, now: dt.datetime) -> tuple[dt.datetime | None, dict]:
    """The cluster's latest minute (None: no recent collection, nothing known) and by group name, the
    :class:`ConsumeMinute` of each group that consumed or lagged on the topic then. A group not in it had
    nothing to consume and no lag."""
    minute = latest_minute(cluster_id, now)
    if minute is None:
        return None, {}
    rows = ConsumeMinute.objects.filter(cluster_id=cluster_id, topic=topic, minute=minute).order_by("group")
    return minute, {row.group: row for row in rows}


@dataclass(frozen=True)
class GroupNow:
    """A consumer group in its cluster's latest collected minute (``minute`` None: no recent collection, and
    everything else empty). ``health`` is None when the group had no client online and no dead letter."""

    minute: dt.datetime | None
    consumes: list[ConsumeMinute] = field(default_factory=list)
    queue_lags: list[QueueLagMinute] = field(default_factory=list)
    health: GroupMinute | None = None
    clients: list[ClientMinute] = field(default_factory=list)
    blocked: list[BlockedQueueMinute] = field(default_factory=list)
    #: A broadcasting group's answering clients' own lags, per topic (empty for other groups).
    client_lags: list[ClientLag] = field(default_factory=list)


def group_now(cluster_id: int, group: str, now: dt.datetime) -> GroupNow:
    minute = latest_minute(cluster_id, now)
    if minute is None:
        return GroupNow(minute=None)
    key = {"cluster_id": cluster_id, "group": group, "minute": minute}
    return GroupNow(
        minute=minute,
        consumes=list(ConsumeMinute.objects.filter(**key).order_by("topic")),
        queue_lags=list(
            QueueLagMinute.objects.filter(**key).order_by("-lag", "topic", "broker_name", "queue_id", "client_id")
        ),
        health=GroupMinute.objects.filter(**key).first(),
        clients=list(ClientMinute.objects.filter(**key).order_by("client_id")),
        blocked=list(BlockedQueueMinute.objects.filter(**key).order_by("topic", "broker_name", "queue_id")),
        client_lags=broadcast_client_lags(cluster_id, minute, [group]),
    )


def offset_moves(cluster_id: int, group: str, since: dt.datetime, limit: int = 50) -> list[OffsetMovedEvent]:
    """A group's latest offset moves since ``since``, newest first: each is a consumer that asked for an offset
    outside its queue and was moved (its messages were skipped or read again)."""
    return list(
        OffsetMovedEvent.objects.filter(cluster_id=cluster_id, group=group, stored_at__gte=since).order_by(
            "-stored_at", "topic", "event_broker_name", "event_queue_id"
        )[:limit]
    )


def lagging_now(now: dt.datetime, *, groups: Mapping[int, Iterable[str]] | None = None) -> QuerySet[ConsumeMinute]:
    """Who is lagging now: every (group, topic) behind in its cluster's latest collected minute (clusters not
    collected recently are left out), longest-waiting first; those whose wait is unknown follow, by message count.
    ``groups`` limits it to these group names by cluster id (None: every group of every cluster)."""
    latest = (
        ClusterMinute.objects.filter(minute__lte=now, minute__gte=now - FRESH_FOR)
        .values("cluster_id")
        .annotate(latest=Max("minute"))
    )
    current = Q()
    for row in latest:
        scope = Q(cluster_id=row["cluster_id"], minute=row["latest"])
        if groups is not None:
            names = list(groups.get(row["cluster_id"], ()))
            if not names:
                continue
            scope &= Q(group__in=names)
        current |= scope
    if not current:
        return ConsumeMinute.objects.none()
    return ConsumeMinute.objects.filter(current, lag__gt=0).order_by(
        F("lag_seconds").desc(nulls_last=True), "-lag", "cluster_id", "group", "topic"
    )
