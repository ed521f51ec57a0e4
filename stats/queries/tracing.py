"""Which SDK clients trace a topic, from their reports' trace counts (:class:`stats.models.TraceClientMinute`): for
the topic page's list of tracing clients and the message page's "does anything trace this topic?" note."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from django.db.models import Max, Sum

from stats.models import TraceClientMinute

# How far back a client counts as tracing: its reports arrive a minute after the minute they describe, and a quiet
# minute (nothing sent or consumed) has no report.
RECENT = dt.timedelta(minutes=5)


@dataclass(frozen=True)
class TracingClient:
    """One client's trace records for the topic since ``since``, summed over its minutes."""

    role: str  # stats.models.tracing.PRODUCER or CONSUMER
    group: str
    client_id: str
    client_addr: str
    written: int
    dropped: int
    failed: int
    last_minute: dt.datetime


def _recent(cluster_id: int, topic: str, now: dt.datetime):
    return TraceClientMinute.objects.filter(cluster_id=cluster_id, topic=topic, minute__gte=now - RECENT)


def tracing_clients(cluster_id: int, topic: str, now: dt.datetime) -> list[TracingClient]:
    """The clients that reported trace counts for ``topic`` in the last :data:`RECENT` (writing, or trying to: a
    client whose every record was dropped is listed too), producers first, by group and client id."""
    rows = (
        _recent(cluster_id, topic, now)
        .values("role", "group", "client_id")
        .annotate(
            written=Sum("written"),
            dropped=Sum("dropped"),
            failed=Sum("failed"),
            last_minute=Max("minute"),
            client_addr=Max("client_addr"),
        )
        .order_by("-role", "group", "client_id")
    )
    return [TracingClient(**row) for row in rows]


def topic_is_traced(cluster_id: int, topic: str, now: dt.datetime) -> bool:
    """Whether any client wrote a trace record for ``topic`` in the last :data:`RECENT`."""
    return _recent(cluster_id, topic, now).filter(written__gt=0).exists()
