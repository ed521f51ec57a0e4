"""Producer rule: send exceptions the producer SDK reported (:class:`stats.models.ProducerMinute`).

Unlike the collected tables, these rows come from the producers themselves, a minute after the minute they
describe, and do not depend on the cluster's collection running: the kind is always evaluated. A producer group
warns when its clients reported at least ``exceptions`` failed sends in the last ``window_minutes`` (counted from
the current minute back, so the minute still being reported is included when it arrives).
"""

from __future__ import annotations

import datetime as dt
from collections import Counter, defaultdict

from django.db.models import Sum

from portal.models import ProducerGroup
from portal.models.warnings import WarningKind
from portal.services.warnings.rules.base import Context, chunks, cluster_rows, iso
from portal.services.warnings.rules.conditions import Condition, SubjectType
from stats.models import ProducerMinute

GROUP = SubjectType.PRODUCER_GROUP


def evaluate(ctx: Context) -> dict[str, list[Condition]]:
    return {WarningKind.PRODUCE_ERRORS: produce_error_conditions(ctx)}


def _window_start(ctx: Context, params: dict) -> dt.datetime:
    current = ctx.now.astimezone(dt.UTC).replace(second=0, microsecond=0)
    return current - dt.timedelta(minutes=int(params["window_minutes"]))


def produce_error_conditions(ctx: Context) -> list[Condition]:
    default = ctx.params(WarningKind.PRODUCE_ERRORS)
    registered = ProducerGroup.objects.filter(cluster=ctx.cluster).values_list("name", flat=True)
    params = {name: ctx.params(WarningKind.PRODUCE_ERRORS, GROUP, name) for name in registered}
    earliest = min([_window_start(ctx, p) for p in params.values()] + [_window_start(ctx, default)])
    failures = (
        cluster_rows(ProducerMinute, ctx.cluster_id)
        .filter(minute__gte=earliest, exception_count__gt=0)
        .values_list("producer_group", "topic", "client_id", "broker_name", "minute", "exception_count", "exceptions")
    )
    found: dict[str, list[tuple]] = defaultdict(list)
    for group, topic, client_id, broker_name, minute, failed, exceptions in failures:
        group_params = params.get(group, default)
        if minute >= _window_start(ctx, group_params):
            found[group].append((topic, client_id, broker_name, minute, failed, exceptions))
    failing = {
        group: rows
        for group, rows in found.items()
        if params.get(group, default).get("enabled", True)
        and sum(row[4] for row in rows) >= params.get(group, default)["exceptions"]
    }
    if not failing:
        return []
    sends: dict[str, dict[dt.datetime, int]] = defaultdict(dict)
    for batch in chunks(sorted(failing)):
        totals = (
            cluster_rows(ProducerMinute, ctx.cluster_id)
            .filter(producer_group__in=batch, minute__gte=earliest)
            .values("producer_group", "minute")
            .annotate(total=Sum("count"))
        )
        for row in totals:
            sends[row["producer_group"]][row["minute"]] = row["total"]
    conditions = []
    for group, rows in sorted(failing.items()):
        with ctx.judging(WarningKind.PRODUCE_ERRORS, GROUP, group):
            conditions.append(_condition(ctx, group, rows, params.get(group, default), sends.get(group, {})))
    return conditions


def _condition(
    ctx: Context, group: str, rows: list[tuple], params: dict, sends_by_minute: dict[dt.datetime, int]
) -> Condition:
    start = _window_start(ctx, params)
    failed = sum(row[4] for row in rows)
    sent = sum(n for minute, n in sends_by_minute.items() if minute >= start)
    by_exception: Counter[str] = Counter()
    brokers_of: dict[str, set[str]] = defaultdict(set)
    for _topic, _client, broker_name, _minute, _failed, exceptions in rows:
        for name, n in (exceptions or {}).items():
            by_exception[name] += n
            brokers_of[name].add(broker_name)
    clients = sorted({row[1] for row in rows})
    topics = sorted({row[0] for row in rows})
    details = {
        "window_minutes": int(params["window_minutes"]),
        "since": iso(start),
        "failed": failed,
        "sent": sent,
        "exceptions": dict(by_exception.most_common()),
        "brokers": {name: sorted(brokers) for name, brokers in brokers_of.items()},
        "topics": topics,
        "clients": clients,
        "last_failure_minute": iso(max(row[3] for row in rows)),
        "threshold": params["exceptions"],
    }
    return Condition(WarningKind.PRODUCE_ERRORS, GROUP, group, details=details)
