"""Consumption that fails: messages sent back for retry, and messages reaching the group's dead-letter queue."""

from __future__ import annotations

import datetime as dt
from collections import defaultdict

from django.db.models import Max, Q, Sum

from portal.models.warnings import WarningKind
from portal.services.warnings.rules.base import Context, chunks, cluster_rows, iso
from portal.services.warnings.rules.conditions import Condition
from portal.services.warnings.rules.consumers.group_state import GROUP, GroupHealth, enabled
from stats.models import ConsumeMinute, GroupMinute

HOUR = dt.timedelta(hours=1)


def failure_conditions(ctx: Context) -> list[Condition]:
    """Groups that sent at least ``retries_per_hour`` messages back for retry (SNDBCK_PUT_NUMS) in the last hour."""
    minute = ctx.minute
    rows = (
        cluster_rows(ConsumeMinute, ctx.cluster_id)
        .filter(minute__gt=minute - HOUR, minute__lte=minute, sndbck_nums__gt=0)
        .values("group", "topic")
        .annotate(total=Sum("sndbck_nums"), last=Max("minute"))
    )
    per_group: dict[str, dict[str, int]] = defaultdict(dict)
    for row in rows:
        per_group[row["group"]][row["topic"]] = row["total"]
    if not per_group:
        return []
    latest = dict(
        cluster_rows(ConsumeMinute, ctx.cluster_id)
        .filter(minute=minute, sndbck_nums__gt=0)
        .values("group")
        .annotate(total=Sum("sndbck_nums"))
        .values_list("group", "total")
    )
    covered = len(ctx.collected_between(minute - HOUR, minute))
    conditions = []
    for group, topics in sorted(per_group.items()):
        with ctx.judging(WarningKind.CONSUME_FAILURES, GROUP, group):
            params = ctx.params(WarningKind.CONSUME_FAILURES, GROUP, group)
            total = sum(topics.values())
            if not enabled(params) or total < params["retries_per_hour"]:
                continue
            ordered = sorted(topics.items(), key=lambda item: -item[1])
            details = {
                "minute": iso(minute),
                "sent_back": total,
                "sent_back_latest_minute": latest.get(group, 0),
                "minutes_covered": covered,
                "threshold": params["retries_per_hour"],
                "topics": dict(ordered),
            }
            conditions.append(Condition(WarningKind.CONSUME_FAILURES, GROUP, group, details=details))
    return conditions


def dead_letter_conditions(ctx: Context, health: dict[str, GroupHealth]) -> list[Condition]:
    """Groups with at least ``messages_per_hour`` new messages in their dead-letter queue in the last hour.

    New ones are the collector's ``dlq_nums``, except where it saw a dead-letter queue for the first time (its
    count of new ones is then unknown, NULL): there, what the queue holds is new when the group was seen without a
    dead-letter queue the minute before (a group's first dead letters, the ones that matter most), or the growth
    since the total read before."""
    minute = ctx.minute
    window = cluster_rows(GroupMinute, ctx.cluster_id).filter(minute__gt=minute - HOUR, minute__lte=minute)
    found: dict[str, list] = {}
    sightings: list[tuple[str, dt.datetime, int]] = []
    for group, moment, nums, total in window.filter(
        Q(dlq_nums__gt=0) | Q(dlq_nums__isnull=True, dlq_total__gt=0)
    ).values_list("group", "minute", "dlq_nums", "dlq_total"):
        if nums is None:
            sightings.append((group, moment, total))
            continue
        entry = found.setdefault(group, [0, moment])
        entry[0] += nums
        entry[1] = max(entry[1], moment)
    history: dict[str, list[tuple]] = defaultdict(list)
    for batch in chunks(sorted({group for group, _, _ in sightings})):
        for group, moment, nums, total in (
            window.filter(group__in=batch).order_by("minute").values_list("group", "minute", "dlq_nums", "dlq_total")
        ):
            history[group].append((moment, nums, total))
    for group, moment, total in sightings:
        before = [row for row in history[group] if row[0] < moment]
        if not before:
            continue  # first seen when monitoring began: how many of them are new is unknown
        _, previous_nums, previous_total = before[-1]
        if previous_total is not None:
            new = total - previous_total
        elif previous_nums == 0:
            new = total  # it had no dead-letter queue
        else:
            continue
        if new > 0:
            entry = found.setdefault(group, [0, moment])
            entry[0] += new
            entry[1] = max(entry[1], moment)
    if not found:
        return []
    totals = {}
    for batch in chunks(sorted(found)):
        totals.update(
            cluster_rows(GroupMinute, ctx.cluster_id)
            .filter(group__in=batch, minute=minute)
            .values_list("group", "dlq_total")
        )
    conditions = []
    for group, (total, last) in sorted(found.items()):
        with ctx.judging(WarningKind.DEAD_LETTERS, GROUP, group):
            params = ctx.params(WarningKind.DEAD_LETTERS, GROUP, group)
            if not enabled(params) or total < params["messages_per_hour"]:
                continue
            overall = totals.get(group)
            details = {
                "minute": iso(minute),
                "dead_letters": total,
                "dead_letters_total": overall,
                "last_minute": iso(last),
                "threshold": params["messages_per_hour"],
            }
            conditions.append(Condition(WarningKind.DEAD_LETTERS, GROUP, group, details=details))
    return conditions
