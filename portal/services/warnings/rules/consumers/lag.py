"""Consumer lag is judged on messages behind AND time behind. Time behind is the age of the oldest waiting message
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

from django.db.models import Q

from portal.models.warnings import WarningKind
from portal.services.warnings.rules.base import HISTORY, Context, chunks, cluster_rows, iso
from portal.services.warnings.rules.conditions import Condition, Severity
from portal.services.warnings.rules.consumers.group_state import CARRY, GROUP, QUEUES_IN_DETAILS, GroupHealth, enabled
from stats.models import ConsumeMinute, QueueLagMinute

# A lagging group's movement is measured over up to this much history.
TREND = dt.timedelta(minutes=5)


class LagState:
    STOPPED = "stopped"
    STALLED = "stalled"
    FALLING_BEHIND = "falling_behind"
    CATCHING_UP = "catching_up"
    CONSUMING = "consuming"  # first minute over the threshold: no trend yet


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


def lag_conditions(ctx: Context, health: dict[str, GroupHealth]) -> list[Condition]:
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
        if not enabled(params[group]):
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
    health: GroupHealth | None,
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
