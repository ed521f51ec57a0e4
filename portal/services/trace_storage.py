"""How fast a cluster's trace topic grows: bytes (and trace messages) stored per day, from the per-minute
TOPIC_PUT_SIZE / TOPIC_PUT_NUMS figures the collector keeps for each topic (``stats.models.TopicMinute``, summed
over the masters that hold it). Tracing writes several records per traced message (a send, then a pair per consume
attempt), so switching it on for a busy topic shows here first.

The collector leaves RocketMQ's system topics out, RMQ_SYS_TRACE_TOPIC among them: a cluster tracing into the
default topic has no figures, only one with a custom trace topic (an ordinary topic) does; ``collected`` says
which, so the page can say why there is no figure rather than show a zero."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

from django.db.models import Sum
from django.db.models.functions import TruncDate
from django.utils import timezone

from portal.models import Cluster
from portal.models.validation import is_system_topic
from stats.models import TopicMinute

DAYS = 7


@dataclass(frozen=True)
class TraceDay:
    day: dt.date
    bytes: int
    messages: int


@dataclass
class TraceStorage:
    trace_topic: str
    collected: bool  # False: the collector skips this topic (a system topic), so no figure can exist
    days: list[TraceDay] = field(default_factory=list)  # oldest first; days without a row had no trace written

    @property
    def bytes_per_day(self) -> int | None:
        """The mean over the days with figures; None without any."""
        return sum(day.bytes for day in self.days) // len(self.days) if self.days else None


def trace_storage(cluster: Cluster, *, now: dt.datetime | None = None) -> TraceStorage:
    """The trace topic's bytes and messages per day over the last :data:`DAYS` days (in the current time zone);
    today's day is partial."""
    topic = cluster.trace_topic
    storage = TraceStorage(topic, collected=not is_system_topic(topic))
    if not storage.collected:
        return storage
    today = timezone.localdate(now or timezone.now())
    start = timezone.make_aware(dt.datetime.combine(today - dt.timedelta(days=DAYS - 1), dt.time()))
    rows = (
        TopicMinute.objects.filter(cluster_id=cluster.pk, topic=topic, minute__gte=start)
        .annotate(day=TruncDate("minute", tzinfo=timezone.get_current_timezone()))
        .values("day")
        .annotate(size=Sum("put_size"), count=Sum("put_nums"))
        .order_by("day")
    )
    storage.days = [TraceDay(row["day"], row["size"] or 0, row["count"] or 0) for row in rows]
    return storage
