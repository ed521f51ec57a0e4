"""Queues in trouble: a client that stopped consuming a queue while messages wait (blocked), and queues whose
consumer offset was out of range and moved by the broker (OFFSET_MOVED_EVENT)."""

from __future__ import annotations

import datetime as dt
from collections import defaultdict

from django.conf import settings
from django.db.models import Count, Max

from portal.models.warnings import WarningKind
from portal.services.warnings.rules.base import Context, cluster_rows, iso
from portal.services.warnings.rules.conditions import Condition
from portal.services.warnings.rules.consumers.group_state import GROUP, QUEUES_IN_DETAILS, enabled
from stats.models import BlockedQueueMinute, OffsetMovedEvent

# An OFFSET_MOVED_EVENT keeps its group's warning open this long.
OFFSET_EVENT_WINDOW = dt.timedelta(minutes=10)
OFFSET_EVENTS_READ = 5000


def blocked_conditions(ctx: Context) -> list[Condition]:
    """Queues a client has not consumed from for longer than the group's threshold while messages wait. The
    collector keeps only queues blocked longer than CONSUMER_BLOCKED_SECONDS, so a row says at least that."""
    minute = ctx.minute
    floor = float(settings.CONSUMER_BLOCKED_SECONDS)
    rows = (
        cluster_rows(BlockedQueueMinute, ctx.cluster_id)
        .filter(minute=minute)
        .values_list(
            "group", "topic", "broker_name", "queue_id", "client_id", "last_consumed_at", "cached_messages", "lag"
        )
    )
    by_group: dict[str, list[tuple]] = defaultdict(list)
    for group, topic, broker_name, queue_id, client_id, last, cached, lag in rows:
        blocked_for = max(floor, (minute - last).total_seconds() if last is not None else 0.0)
        by_group[group].append((blocked_for, topic, broker_name, queue_id, client_id, last, cached, lag))
    conditions = []
    for group, queues in sorted(by_group.items()):
        with ctx.judging(WarningKind.CLIENT_BLOCKED, GROUP, group):
            params = ctx.params(WarningKind.CLIENT_BLOCKED, GROUP, group)
            queues = sorted((q for q in queues if q[0] > params["seconds"]), key=lambda q: (-q[0], q[1:5]))
            if not enabled(params) or not queues:
                continue
            clients = sorted({q[4] for q in queues})
            details = {
                "minute": iso(minute),
                "threshold_seconds": params["seconds"],
                "clients": clients,
                "queues": [
                    {
                        "topic": topic,
                        "broker_name": broker_name,
                        "queue_id": queue_id,
                        "client_id": client_id,
                        "blocked_seconds": blocked_for,
                        "last_consumed_at": iso(last),
                        "cached_messages": cached,
                        "lag": lag,
                    }
                    for blocked_for, topic, broker_name, queue_id, client_id, last, cached, lag in queues[
                        :QUEUES_IN_DETAILS
                    ]
                ],
                "blocked_queues": len(queues),
            }
            conditions.append(Condition(WarningKind.CLIENT_BLOCKED, GROUP, group, details=details))
    return conditions


def offset_moved_conditions(ctx: Context) -> list[Condition]:
    """Groups with an OFFSET_MOVED_EVENT in the last :data:`OFFSET_EVENT_WINDOW`."""
    since = ctx.now - OFFSET_EVENT_WINDOW
    events = cluster_rows(OffsetMovedEvent, ctx.cluster_id).filter(stored_at__gt=since)
    totals = {
        row["group"]: (row["events"], row["last"])
        for row in events.values("group").annotate(events=Count("pk"), last=Max("stored_at"))
    }
    latest: dict[str, dict[tuple[str, str, int], tuple]] = defaultdict(dict)
    rows = events.order_by("-stored_at").values_list(
        "group", "topic", "event_broker_name", "event_queue_id", "offset_request", "offset_new", "stored_at"
    )[:OFFSET_EVENTS_READ]
    for group, topic, broker_name, queue_id, requested, new, stored_at in rows:
        latest[group].setdefault((topic, broker_name, queue_id), (requested, new, stored_at))
    conditions = []
    for group, (events_count, last) in sorted(totals.items()):
        with ctx.judging(WarningKind.OFFSET_MOVED, GROUP, group):
            if not enabled(ctx.params(WarningKind.OFFSET_MOVED, GROUP, group)):
                continue
            queues = sorted(latest.get(group, {}).items())
            details = {
                "events": events_count,
                "window_seconds": OFFSET_EVENT_WINDOW.total_seconds(),
                "last_event_at": iso(last),
                "queues": [
                    {
                        "topic": topic,
                        "broker_name": broker_name,
                        "queue_id": queue_id,
                        "offset_request": requested,
                        "offset_new": new,
                        "stored_at": iso(stored_at),
                    }
                    for (topic, broker_name, queue_id), (requested, new, stored_at) in queues[:QUEUES_IN_DETAILS]
                ],
                "moved_queues": len(queues),
            }
            conditions.append(Condition(WarningKind.OFFSET_MOVED, GROUP, group, details=details))
    return conditions
