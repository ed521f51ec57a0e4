"""Per-minute traffic and consumer progress read back for charts and tables.

These readers apply the rules of :mod:`stats.models.traffic` in one place: a minute the cluster was not collected
in is a gap (None); in a collected minute, an entity without a row of its own had nothing to report and reads as
zero; a NULL value (its broker was down) stays a gap. Brokers are the exception: every collection writes a row for
each broker it knows, so a broker without a row in a minute was not read, and that minute is a gap too.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from django.db.models import F, Max, Q, QuerySet

from stats.charts import Point
from stats.models import (
    BlockedQueueMinute,
    BrokerMinute,
    ClientMinute,
    ClusterMinute,
    ConsumeMinute,
    GroupMinute,
    OffsetMovedEvent,
    QueueLagMinute,
    TopicMinute,
)

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


def topic_traffic(cluster_id: int, topic: str, since: dt.datetime, until: dt.datetime) -> TopicTraffic:
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
    cluster_id: int, group: str, since: dt.datetime, until: dt.datetime, *, topics: Iterable[str] = ()
) -> dict[str, ConsumeSeries]:
    """By topic (sorted): each topic the group consumed or lagged on in the range, and each of ``topics`` (its
    subscriptions, shown even when they were idle the whole range)."""
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


def broker_traffic(cluster_id: int, broker_name: str, broker_id: int, since: dt.datetime, until: dt.datetime) -> Totals:
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


def cluster_traffic(cluster_id: int, since: dt.datetime, until: dt.datetime) -> Totals:
    rows = _rows_by_minute(
        ClusterMinute.objects.filter(cluster_id=cluster_id, minute__gte=since, minute__lte=until),
        ["put_nums", "get_nums", "brokers_down"],
    )
    times = minutes(since, until)

    def series(name: str) -> list[Point]:
        return [(moment, rows[moment][name] if moment in rows else None) for moment in times]

    return Totals(put_nums=series("put_nums"), get_nums=series("get_nums"), brokers_down=series("brokers_down"))


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
