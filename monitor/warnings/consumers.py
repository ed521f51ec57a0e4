"""Consumer group rules: lag, blocked queues, offset errors, subscriptions that differ, retries and dead letters.

They read the cluster's latest collected minute (:mod:`stats.models.traffic`) with a few set-based queries for
the whole cluster, never one per group. Where a figure could not be read this minute (its master was down: the
value is NULL), the latest figure known within :data:`CARRY` stands in, so a broker outage does not resolve and
re-fire every consumer warning of the cluster.

Consumer lag is judged on messages behind AND time behind. Time behind is the age of the oldest waiting message
(from the store time of the last consumed message); where that is unknown (a broadcasting group, whose offsets
live in its clients, or a group that has consumed nothing yet), it is how long the lag has stayed over the
message threshold, read from the stored history. The summary then says what the group is doing, judged from its
committed offsets over the last few minutes (the brokers' pull counts miss reads served by a slave):

* stopped: no client online;
* stalled: clients online, but the offsets did not move while messages wait;
* falling behind: the offsets move, but the backlog grows;
* slow but catching up: the backlog shrinks (with the time it takes to clear at this pace).
"""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from dataclasses import dataclass, field

from django.conf import settings
from django.db.models import Count, Max, Q, Sum

from monitor.warnings.base import (
    HISTORY,
    Context,
    chunks,
    cluster_rows,
    iso,
)
from monitor.warnings.conditions import Condition, Severity, SubjectType
from portal.models.warnings import WarningKind
from stats.models import (
    BlockedQueueMinute,
    ClientMinute,
    ConsumeMinute,
    GroupMinute,
    OffsetMovedEvent,
    QueueLagMinute,
)

# A lagging group's movement is measured over up to this much history.
TREND = dt.timedelta(minutes=5)
# A value not read this minute is taken from the latest minute it was read in, if that is this recent.
CARRY = dt.timedelta(minutes=5)
# An OFFSET_MOVED_EVENT keeps its group's warning open this long.
OFFSET_EVENT_WINDOW = dt.timedelta(minutes=10)
HOUR = dt.timedelta(hours=1)
# Queues listed in a condition's details (the summary names the first few).
QUEUES_IN_DETAILS = 20
OFFSET_EVENTS_READ = 5000

GROUP = SubjectType.CONSUMER_GROUP


class LagState:
    STOPPED = "stopped"
    STALLED = "stalled"
    FALLING_BEHIND = "falling_behind"
    CATCHING_UP = "catching_up"
    CONSUMING = "consuming"  # first minute over the threshold: no trend yet


@dataclass
class _Health:
    clients: int | None
    message_model: str
    consistent: bool | None


def evaluate(ctx: Context) -> dict[str, list[Condition]]:
    """Every consumer kind, or nothing when the cluster has no recent collection."""
    if ctx.minute is None:
        return {}
    health = _health(ctx)
    return ctx.each_kind(
        {
            WarningKind.CONSUMER_LAG: lambda: lag_conditions(ctx, health),
            WarningKind.CLIENT_BLOCKED: lambda: blocked_conditions(ctx),
            WarningKind.OFFSET_MOVED: lambda: offset_moved_conditions(ctx),
            WarningKind.SUBSCRIPTION_MISMATCH: lambda: subscription_conditions(ctx, health),
            WarningKind.CONSUME_FAILURES: lambda: failure_conditions(ctx),
            WarningKind.DEAD_LETTERS: lambda: dead_letter_conditions(ctx, health),
        }
    )


def _health(ctx: Context) -> dict[str, _Health]:
    """GroupMinute of the latest minute by group (a group without a row had no client online)."""
    rows = (
        cluster_rows(GroupMinute, ctx.cluster_id)
        .filter(minute=ctx.minute)
        .values_list("group", "clients", "message_model", "subscription_consistent")
    )
    return {group: _Health(clients, model, consistent) for group, clients, model, consistent in rows}


def _enabled(params: dict) -> bool:
    return bool(params.get("enabled", True))


# --- consumer lag -------------------------------------------------------------------------------------------------


@dataclass
class _TopicLag:
    lag: int
    age: float | None  # seconds the oldest waiting message has waited (None: unknown)
    age_measured: bool  # False: age is how long the lag has stayed over the threshold
    get_nums: int | None
    measured_at: dt.datetime  # the minute the lag was read in (earlier than the latest when carried over)


@dataclass
class _GroupLag:
    group: str
    params: dict
    topics: dict[str, _TopicLag] = field(default_factory=dict)


def lag_conditions(ctx: Context, health: dict[str, _Health]) -> list[Condition]:
    minute = ctx.minute
    now_rows = (
        cluster_rows(ConsumeMinute, ctx.cluster_id)
        .filter(Q(lag__gt=0) | Q(lag__isnull=True), minute=minute)
        .values_list("group", "topic", "lag", "lag_seconds", "get_nums")
    )
    measured: dict[tuple[str, str], tuple[int, float | None, int | None]] = {}
    unknown: set[tuple[str, str]] = set()
    params: dict[str, dict] = {}
    for group, topic, lag, lag_seconds, get_nums in now_rows:
        if group not in params:
            params[group] = ctx.params(WarningKind.CONSUMER_LAG, GROUP, group)
        if not _enabled(params[group]):
            continue
        if lag is None:
            unknown.add((group, topic))
        elif lag > params[group]["messages"]:
            measured[group, topic] = (lag, lag_seconds, get_nums)
    if not measured and not unknown:
        return []
    # History of the groups concerned: enough for the trend, for carrying unknown lags over, and for how long a lag
    # of unknown age has stayed over the threshold.
    groups = {group for group, _ in measured} | {group for group, _ in unknown}
    # (No further back than the collected minutes listed: a lag's unknown age is counted over those only.)
    longest = min(
        HISTORY,
        max(
            [TREND, CARRY]
            + [dt.timedelta(seconds=params[g]["seconds"]) + dt.timedelta(minutes=1) for g, _ in measured if g in params]
        ),
    )
    history: dict[tuple[str, str], dict[dt.datetime, int | None]] = defaultdict(dict)
    ages: dict[tuple[str, str, dt.datetime], float | None] = {}
    for batch in chunks(sorted(groups)):
        rows = (
            cluster_rows(ConsumeMinute, ctx.cluster_id)
            .filter(group__in=batch, minute__gte=minute - longest, minute__lt=minute)
            .values_list("group", "topic", "minute", "lag", "lag_seconds")
        )
        for group, topic, moment, lag, lag_seconds in rows:
            history[group, topic][moment] = lag
            ages[group, topic, moment] = lag_seconds
    earlier = [moment for moment in ctx.collected if minute - longest <= moment < minute]

    lagging: dict[str, _GroupLag] = {}
    for (group, topic), (lag, lag_seconds, get_nums) in measured.items():
        age, age_measured = lag_seconds, lag_seconds is not None
        if age is None:
            age = _over_since(history.get((group, topic), {}), earlier, minute, params[group]["messages"])
        entry = lagging.setdefault(group, _GroupLag(group, params[group]))
        entry.topics[topic] = _TopicLag(lag, age, age_measured, get_nums, minute)
    for group, topic in unknown:
        carried = _carried(history.get((group, topic), {}), earlier, minute)
        if carried is None or carried[1] <= params[group]["messages"]:
            continue
        moment, lag = carried
        # The age read then, grown by the time since; else how long the lag has been over the threshold.
        age = ages.get((group, topic, moment))
        measured_then = age is not None
        if measured_then:
            age += (minute - moment).total_seconds()
        else:
            age = _over_since(history.get((group, topic), {}), earlier, moment, params[group]["messages"])
            age += (minute - moment).total_seconds()
        entry = lagging.setdefault(group, _GroupLag(group, params[group]))
        entry.topics[topic] = _TopicLag(lag, age, measured_then, None, moment)

    over = {
        group: entry
        for group, entry in lagging.items()
        if any(t.age is not None and t.age > entry.params["seconds"] for t in entry.topics.values())
    }
    if not over:
        return []
    base = next((moment for moment in earlier if moment >= minute - TREND), None)
    queues = _queue_lags(ctx, sorted(over), [minute] if base is None else [base, minute])
    conditions = []
    for group, entry in sorted(over.items()):
        with ctx.judging(WarningKind.CONSUMER_LAG, GROUP, group):
            conditions.append(_lag_condition(ctx, entry, health.get(group), queues.get(group, {}), history, base))
    return conditions


def _over_since(
    history: dict[dt.datetime, int | None], earlier: list[dt.datetime], until: dt.datetime, messages: int
) -> float:
    """Seconds the lag has stayed over ``messages`` up to ``until`` (over then), walking back over the collected
    minutes; a minute whose lag is unknown neither breaks nor extends the run; a collected minute without a row
    had no lag."""
    since = until
    for moment in reversed([m for m in earlier if m < until]):
        lag = history.get(moment, 0)
        if lag is None:
            continue
        if lag <= messages:
            break
        since = moment
    return (until - since).total_seconds()


def _carried(
    history: dict[dt.datetime, int | None], earlier: list[dt.datetime], minute: dt.datetime
) -> tuple[dt.datetime, int] | None:
    """The latest lag read within :data:`CARRY` before ``minute``."""
    for moment in reversed(earlier):
        if moment < minute - CARRY:
            return None
        lag = history.get(moment, 0)
        if lag is not None:
            return moment, lag
    return None


@dataclass(frozen=True)
class _QueueLag:
    topic: str
    broker_name: str
    queue_id: int
    lag: int
    consumer_offset: int
    broker_offset: int
    client_id: str


_QUEUE_FIELDS = ("topic", "broker_name", "queue_id", "lag", "consumer_offset", "broker_offset", "client_id")


def _queue_lags(
    ctx: Context, groups: list[str], minutes: list[dt.datetime]
) -> dict[str, dict[dt.datetime, list[_QueueLag]]]:
    found: dict[str, dict[dt.datetime, list[_QueueLag]]] = defaultdict(lambda: defaultdict(list))
    for batch in chunks(groups):
        rows = cluster_rows(QueueLagMinute, ctx.cluster_id).filter(group__in=batch, minute__in=minutes)
        rows = rows.values_list("group", "minute", *_QUEUE_FIELDS)
        for group, moment, *rest in rows:
            found[group][moment].append(_QueueLag(*rest))
    return found


def _lag_condition(
    ctx: Context,
    entry: _GroupLag,
    health: _Health | None,
    queues: dict[dt.datetime, list[_QueueLag]],
    history: dict[tuple[str, str], dict[dt.datetime, int | None]],
    base: dt.datetime | None,
) -> Condition:
    minute = ctx.minute
    group, topics = entry.group, entry.topics
    lag = sum(t.lag for t in topics.values())
    clients = health.clients if health is not None else 0
    broadcasting = health is not None and health.message_model == "BROADCASTING"
    now_queues = sorted(queues.get(minute, []), key=lambda q: (-q.lag, q.topic, q.broker_name, q.queue_id))

    # Movement over [base, minute]: committed offsets of the queues lagging at both ends, and the lag itself.
    consumed = produced = lag_change = None
    elapsed = (minute - base).total_seconds() if base is not None else 0.0
    if base is not None:
        before = {(q.topic, q.broker_name, q.queue_id): q for q in queues.get(base, [])}
        common = [
            (q, before[q.topic, q.broker_name, q.queue_id])
            for q in now_queues
            if (q.topic, q.broker_name, q.queue_id) in before
        ]
        if common:
            consumed = sum(max(0, q.consumer_offset - b.consumer_offset) for q, b in common)
            produced = sum(max(0, q.broker_offset - b.broker_offset) for q, b in common)
        lag_before = [history.get((group, topic), {}).get(base, 0) for topic in topics]
        if None not in lag_before and all(t.measured_at == minute for t in topics.values()):
            lag_change = lag - sum(lag_before)
    pulled = [t.get_nums for t in topics.values()]
    pulled_last_minute = None if None in pulled else sum(pulled)

    if clients == 0:
        state = LagState.STOPPED
    elif consumed is not None:
        if consumed == 0:
            state = LagState.STALLED
        elif lag_change is not None and lag_change < 0:
            state = LagState.CATCHING_UP
        else:
            state = LagState.FALLING_BEHIND
    elif pulled_last_minute == 0:
        state = LagState.STALLED
    else:
        state = LagState.CONSUMING

    consumed_rate = consumed / elapsed if consumed is not None and elapsed else None
    produced_rate = produced / elapsed if produced is not None and elapsed else None
    change_per_minute = lag_change / (elapsed / 60) if lag_change is not None and elapsed else None

    # How far, how long, what it is doing, where (the summary is worded from these figures).
    ordered = sorted(topics.items(), key=lambda item: -item[1].lag)
    ages = [t.age for t in topics.values() if t.age is not None]
    age = max(ages) if ages else None
    age_measured = all(t.age_measured for t in topics.values())
    details = {
        "minute": iso(minute),
        "state": state,
        "lag": lag,
        "lag_seconds": age,
        "age_measured": age_measured,
        "broadcasting": broadcasting,
        "clients": clients,
        "trend_seconds": elapsed or None,
        "consumed_per_second": consumed_rate,
        "produced_per_second": produced_rate,
        "lag_change_per_minute": change_per_minute,
        "pulled_last_minute": pulled_last_minute,
        "thresholds": {"messages": entry.params["messages"], "seconds": entry.params["seconds"]},
        "topics": {
            topic: {
                "lag": t.lag,
                "lag_seconds": t.age,
                "age_measured": t.age_measured,
                "measured_at": iso(t.measured_at),
            }
            for topic, t in ordered
        },
        "queues": [
            {
                "topic": q.topic,
                "broker_name": q.broker_name,
                "queue_id": q.queue_id,
                "lag": q.lag,
                "consumer_offset": q.consumer_offset,
                "broker_offset": q.broker_offset,
                "client_id": q.client_id,
            }
            for q in now_queues[:QUEUES_IN_DETAILS]
        ],
        "lagging_queues": len(now_queues),
    }
    severity = Severity.CRITICAL if state in (LagState.STOPPED, LagState.STALLED) else Severity.WARNING
    return Condition(WarningKind.CONSUMER_LAG, GROUP, group, details=details, severity=severity)


# --- blocked clients ----------------------------------------------------------------------------------------------


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
            if not _enabled(params) or not queues:
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


# --- offset errors ------------------------------------------------------------------------------------------------


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
            if not _enabled(ctx.params(WarningKind.OFFSET_MOVED, GROUP, group)):
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


# --- subscriptions ------------------------------------------------------------------------------------------------


def subscription_conditions(ctx: Context, health: dict[str, _Health]) -> list[Condition]:
    """Groups whose clients do not all subscribe alike (judged by the collector from each client's own report).
    A group whose clients could not all be asked this minute keeps its latest verdict of the last few minutes, as
    long as the same clients are online (one that left may have been the odd one out)."""
    minute = ctx.minute
    judged: dict[str, dt.datetime] = {g: minute for g, h in health.items() if h.consistent is False}
    unknown = [g for g, h in health.items() if h.consistent is None and h.clients and h.clients > 1]
    for batch in chunks(unknown):
        rows = (
            cluster_rows(GroupMinute, ctx.cluster_id)
            .filter(
                group__in=batch,
                minute__gte=minute - CARRY,
                minute__lt=minute,
                subscription_consistent__isnull=False,
            )
            .order_by("group", "-minute")
            .values_list("group", "minute", "subscription_consistent")
        )
        verdicts: dict[str, tuple[dt.datetime, bool]] = {}
        for group, moment, consistent in rows:
            verdicts.setdefault(group, (moment, consistent))
        judged.update({group: moment for group, (moment, consistent) in verdicts.items() if not consistent})
    judged = {g: m for g, m in judged.items() if _enabled(ctx.params(WarningKind.SUBSCRIPTION_MISMATCH, GROUP, g))}
    if not judged:
        return []
    clients: dict[str, list[tuple[str, dict, str]]] = defaultdict(list)
    online: dict[str, set[str]] = defaultdict(set)
    for batch in chunks(sorted(judged)):
        rows = (
            cluster_rows(ClientMinute, ctx.cluster_id)
            .filter(group__in=batch, minute__in={minute, *judged.values()})
            .values_list("group", "minute", "client_id", "subscription", "error")
        )
        for group, moment, client_id, subscription, error in rows:
            if judged.get(group) == moment:
                clients[group].append((client_id, subscription, error))
            if moment == minute:
                online[group].add(client_id)
    judged = {
        g: m for g, m in judged.items() if m == minute or {client[0] for client in clients.get(g, [])} == online[g]
    }
    conditions = []
    for group, moment in sorted(judged.items()):
        with ctx.judging(WarningKind.SUBSCRIPTION_MISMATCH, GROUP, group):
            members = sorted(clients.get(group, []), key=lambda member: member[0])
            details = {
                "minute": iso(moment),
                "verdict_carried": moment != minute,  # not all clients reachable now: an earlier minute's verdict
                "clients": [
                    {"client_id": client_id, "subscription": subscription, "error": error}
                    for client_id, subscription, error in members
                ],
            }
            conditions.append(Condition(WarningKind.SUBSCRIPTION_MISMATCH, GROUP, group, details=details))
    return conditions


# --- retries and dead letters -------------------------------------------------------------------------------------


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
            if not _enabled(params) or total < params["retries_per_hour"]:
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


def dead_letter_conditions(ctx: Context, health: dict[str, _Health]) -> list[Condition]:
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
            if not _enabled(params) or total < params["messages_per_hour"]:
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
