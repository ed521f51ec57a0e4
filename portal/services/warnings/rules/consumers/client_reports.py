"""Consume failures the SDK's consumers reported (:class:`stats.models.ConsumerClientMinute`): a consumer group
warns when its SDK clients' listeners failed at least ``failures`` messages in the last ``window_minutes`` (counted
from the current minute back, so the minute still being reported is included when it arrives).

Like the producer rule, it reads what the clients sent, not the cluster's collection, so it is judged even when
the collection did not run; it sees only groups whose consumers run the SDK (the broker-side view of failures is
:mod:`.failures`: messages sent back for retry).
"""

from __future__ import annotations

import datetime as dt
from collections import Counter, defaultdict

from portal.models import ConsumerGroup
from portal.models.warnings import WarningKind
from portal.services.warnings.rules.base import Context, cluster_rows, iso
from portal.services.warnings.rules.conditions import Condition
from portal.services.warnings.rules.consumers.group_state import GROUP
from stats.models import ConsumerClientMinute

KIND = WarningKind.CLIENT_CONSUME_FAILURES


def _window_start(ctx: Context, params: dict) -> dt.datetime:
    current = ctx.now.astimezone(dt.UTC).replace(second=0, microsecond=0)
    return current - dt.timedelta(minutes=int(params["window_minutes"]))


def client_failure_conditions(ctx: Context) -> list[Condition]:
    default = ctx.params(KIND)
    registered = ConsumerGroup.objects.filter(cluster=ctx.cluster).values_list("name", flat=True)
    params = {name: ctx.params(KIND, GROUP, name) for name in registered}
    earliest = min([_window_start(ctx, p) for p in params.values()] + [_window_start(ctx, default)])
    rows: dict[str, list[tuple]] = defaultdict(list)
    for group, topic, client_id, minute, count, failed, failures in (
        cluster_rows(ConsumerClientMinute, ctx.cluster_id)
        .filter(minute__gte=earliest)
        .values_list("consumer_group", "topic", "client_id", "minute", "count", "failure_count", "failures")
    ):
        if minute >= _window_start(ctx, params.get(group, default)):
            rows[group].append((topic, client_id, minute, count, failed, failures))
    conditions = []
    for group, reported in sorted(rows.items()):
        with ctx.judging(KIND, GROUP, group):
            group_params = params.get(group, default)
            failed = sum(row[4] for row in reported)
            if not group_params.get("enabled", True) or not failed or failed < group_params["failures"]:
                continue
            conditions.append(_condition(ctx, group, reported, group_params))
    return conditions


def _condition(ctx: Context, group: str, rows: list[tuple], params: dict) -> Condition:
    failing = [row for row in rows if row[4]]
    by_exception: Counter[str] = Counter()
    by_topic: Counter[str] = Counter()
    for topic, _client, _minute, _count, failed, failures in failing:
        by_exception.update(failures)
        by_topic[topic] += failed
    details = {
        "window_minutes": int(params["window_minutes"]),
        "since": iso(_window_start(ctx, params)),
        "failed_messages": sum(by_topic.values()),
        "consumed": sum(row[3] for row in rows),
        "failures": dict(by_exception.most_common()),
        "topics": dict(by_topic.most_common()),
        "clients": sorted({row[1] for row in failing}),
        "last_failure_minute": iso(max(row[2] for row in failing)),
        "threshold": params["failures"],
    }
    return Condition(KIND, GROUP, group, details=details)
