"""Message trace rule: trace records the SDK's clients could not write (:class:`stats.models.TraceClientMinute`).

A client drops a trace record when its trace buffer is full (it never blocks or fails a send for its trace) and
counts as failed the records whose trace message the trace topic refused or lost; either way a message's timeline
has a gap. A topic warns when its clients, producers and consumers together, dropped or failed at least ``records``
trace records in the last ``window_minutes`` (counted from the current minute back, so the minute still being
reported is included when it arrives). Like the producer rule it reads what the clients sent, so it is judged even
when the cluster's collection did not run; a window without a drop or failure resolves the warning.
"""

from __future__ import annotations

import datetime as dt
from collections import defaultdict

from portal.models import Topic
from portal.models.warnings import WarningKind
from portal.services.warnings.rules.base import Context, cluster_rows, iso
from portal.services.warnings.rules.conditions import Condition, SubjectType
from stats.models import TraceClientMinute
from stats.models.tracing import PRODUCER

KIND = WarningKind.TRACE_FAILURES
TOPIC = SubjectType.TOPIC


def evaluate(ctx: Context) -> dict[str, list[Condition]]:
    return ctx.each_kind({KIND: lambda: trace_failure_conditions(ctx)})


def _window_start(ctx: Context, params: dict) -> dt.datetime:
    current = ctx.now.astimezone(dt.UTC).replace(second=0, microsecond=0)
    return current - dt.timedelta(minutes=int(params["window_minutes"]))


def trace_failure_conditions(ctx: Context) -> list[Condition]:
    default = ctx.params(KIND)
    registered = Topic.objects.filter(cluster=ctx.cluster).values_list("name", flat=True)
    params = {name: ctx.params(KIND, TOPIC, name) for name in registered}
    earliest = min([_window_start(ctx, p) for p in params.values()] + [_window_start(ctx, default)])
    rows: dict[str, list[tuple]] = defaultdict(list)
    for row in (
        cluster_rows(TraceClientMinute, ctx.cluster_id)
        .filter(minute__gte=earliest)
        .values_list("topic", "role", "group", "client_id", "minute", "written", "dropped", "failed")
    ):
        if row[4] >= _window_start(ctx, params.get(row[0], default)):
            rows[row[0]].append(row[1:])
    conditions = []
    for topic, reported in sorted(rows.items()):
        with ctx.judging(KIND, TOPIC, topic):
            topic_params = params.get(topic, default)
            lost = sum(row[5] + row[6] for row in reported)
            if not topic_params.get("enabled", True) or not lost or lost < topic_params["records"]:
                continue
            conditions.append(_condition(ctx, topic, reported, topic_params))
    return conditions


def _condition(ctx: Context, topic: str, rows: list[tuple], params: dict) -> Condition:
    """The figures: the topic's totals, and per client that dropped or failed records its group and counts."""
    clients: dict[tuple[str, str, str], list[int]] = {}
    for role, group, client_id, _minute, written, dropped, failed in rows:
        counts = clients.setdefault((role, group, client_id), [0, 0, 0])
        for position, n in enumerate((written, dropped, failed)):
            counts[position] += n
    losing = [
        {
            "producer_group" if role == PRODUCER else "consumer_group": group,
            "client_id": client_id,
            "trace_written": written,
            "trace_dropped": dropped,
            "trace_failed": failed,
        }
        for (role, group, client_id), (written, dropped, failed) in sorted(clients.items())
        if dropped or failed
    ]
    details = {
        "window_minutes": int(params["window_minutes"]),
        "since": iso(_window_start(ctx, params)),
        "trace_written": sum(row[4] for row in rows),
        "trace_dropped": sum(row[5] for row in rows),
        "trace_failed": sum(row[6] for row in rows),
        "losing_clients": losing,
        "last_loss_minute": iso(max(row[3] for row in rows if row[5] or row[6])),
        "threshold": params["records"],
    }
    return Condition(KIND, TOPIC, topic, details=details)
