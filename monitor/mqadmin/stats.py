"""Throughput and backlog subcommands: statsAll, brokerConsumeStats."""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field

from monitor.mqadmin.common import (
    SubCommand,
    format_date,
    java_bool,
    parallel_map,
    select_broker_addr,
)
from monitor.mqadmin.output import join_blocks, render_table
from monitor.remoting import body as b
from monitor.remoting.admin import MQAdmin
from monitor.remoting.codes import ResponseCode
from monitor.remoting.errors import RemotingError
from stats import keys

# --- statsAll -------------------------------------------------------------------------------------------------------


@dataclass
class GroupStats:
    group: str
    accumulation: int | None  # the group's backlog on the topic; None when the brokers gave no consume stats
    out_tps: float
    out_msg_24_hour: int


@dataclass
class TopicStats:
    topic: str
    in_tps: float
    in_msg_24_hour: int
    groups: list[GroupStats] = field(default_factory=list)  # empty: nobody consumes the topic


def _is_missing_stats(exc: RemotingError) -> bool:
    """A broker that has seen no traffic for a stats key answers SYSTEM_ERROR "The stats <NAME> <KEY> not exist"."""
    return exc.code == ResponseCode.SYSTEM_ERROR and keys.is_missing_stats_remark(exc.remark)


def _sum_24_hours(data: b.BrokerStatsData) -> int:
    """StatsAllSubCommand.compute24HourSum: the day window, else the hour, else the minute (a young broker has not
    filled the longer windows yet)."""
    for window in (data.stats_day, data.stats_hour, data.stats_minute):
        if window.sum:
            return window.sum
    return 0


def _stats(admin: MQAdmin, masters: list[str], name: str, key: str) -> tuple[float, int]:
    """Minute TPS and 24-hour count of one stats key summed over the masters; a key a broker does not have counts 0."""
    tps, total = 0.0, 0
    for addr in masters:
        try:
            data = admin.view_broker_stats_data(addr, name, key)
        except RemotingError as exc:
            if _is_missing_stats(exc):
                continue
            raise
        tps += data.stats_minute.tps
        total += _sum_24_hours(data)
    return tps, total


def _accumulation(admin: MQAdmin, group: str, topic: str) -> int | None:
    """The group's backlog on the topic, never negative. mqadmin prints 0 when the brokers refuse (a group that
    never consumed, a broadcast group without a retry topic); this keeps that as None, shown as "-"."""
    try:
        stats = admin.examine_consume_stats(group, topic)
    except RemotingError:
        return None
    return max(stats.total_diff, 0) if stats.offset_table else None


def topic_stats(admin: MQAdmin, topic: str) -> TopicStats | None:
    """In/out throughput of one topic and its consumer groups; None for a topic whose route has gone meanwhile."""
    try:
        route = admin.examine_topic_route_info(topic)
    except RemotingError as exc:
        if exc.code == ResponseCode.TOPIC_NOT_EXIST:
            return None
        raise
    masters = [bd.master_addr for bd in route.broker_datas if bd.master_addr]
    in_tps, in_total = _stats(admin, masters, keys.TOPIC_PUT_NUMS, keys.topic_key(topic))
    result = TopicStats(topic, in_tps, in_total)
    first = next((addr for addr in map(select_broker_addr, route.broker_datas) if addr), None)
    groups = admin.query_topic_consume_by_who(first, topic).group_list if first else []
    for group in groups:
        out_tps, out_total = _stats(admin, masters, keys.GROUP_GET_NUMS, keys.group_key(topic, group))
        result.groups.append(GroupStats(group, _accumulation(admin, group, topic), out_tps, out_total))
    return result


def stats_all(admin: MQAdmin, args: argparse.Namespace) -> list[TopicStats]:
    """Every application topic (not %RETRY%/%DLQ%), or only -t; with -a only topics with traffic in 24 hours, and
    of those only the groups with traffic unless the topic has no consumer at all."""
    topics = [
        t
        for t in admin.fetch_all_topic_list().topic_list
        if not keys.is_group_topic(t) and (not args.topic or t == args.topic)
    ]
    results = [r for r in parallel_map(lambda topic: topic_stats(admin, topic), topics) if r is not None]
    if not args.active_topic:
        return results
    active = []
    for r in results:
        if r.groups:
            r.groups = [g for g in r.groups if r.in_msg_24_hour > 0 or g.out_msg_24_hour > 0]
            if r.groups:
                active.append(r)
        elif r.in_msg_24_hour > 0:
            active.append(r)
    return active


def render_stats_all(result: list[TopicStats], args: argparse.Namespace) -> str:
    rows = []
    for t in result:
        if not t.groups:
            rows.append([t.topic, "", 0, t.in_tps, "", t.in_msg_24_hour, "NO_CONSUMER"])
        for g in t.groups:
            accumulation = "-" if g.accumulation is None else g.accumulation
            rows.append([t.topic, g.group, accumulation, t.in_tps, g.out_tps, t.in_msg_24_hour, g.out_msg_24_hour])
    headers = ["#Topic", "#Consumer Group", "#Accumulation", "#InTPS", "#OutTPS", "#InMsg24Hour", "#OutMsg24Hour"]
    return render_table(headers, rows)


def _stats_all_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-a", "--activeTopic", dest="active_topic", action="store_true", help="print active topic only")
    parser.add_argument("-t", "--topic", help="print select topic only")


# --- brokerConsumeStats ---------------------------------------------------------------------------------------------


@dataclass
class BrokerQueueStats:
    topic: str
    group: str
    broker_name: str
    queue_id: int
    broker_offset: int
    consumer_offset: int
    diff: int
    last_timestamp: int


@dataclass
class BrokerConsumeStatsResult:
    broker_addr: str
    queues: list[BrokerQueueStats]
    diff_total: int


def broker_consume_stats(admin: MQAdmin, args: argparse.Namespace) -> BrokerConsumeStatsResult:
    """Every group's queues on one broker with a backlog of at least -l messages. Like mqadmin, queues never
    consumed (no last consume time) are left out; the total is the broker's own."""
    stats = admin.fetch_consume_stats_in_broker(args.broker_addr, args.order)
    queues = []
    for group, per_topic in stats.by_group().items():
        for consume_stats in per_topic:
            for mq, off in sorted(consume_stats.offset_table.items()):
                if off.lag >= args.level and off.last_timestamp > 0:
                    queues.append(
                        BrokerQueueStats(
                            mq.topic,
                            group,
                            mq.broker_name,
                            mq.queue_id,
                            off.broker_offset,
                            off.consumer_offset,
                            off.lag,
                            off.last_timestamp,
                        )
                    )
    return BrokerConsumeStatsResult(args.broker_addr, queues, stats.total_diff)


def render_broker_consume_stats(result: BrokerConsumeStatsResult, args: argparse.Namespace) -> str:
    headers = ["#Topic", "#Group", "#Broker Name", "#QID", "#Broker Offset", "#Consumer Offset", "#Diff", "#LastTime"]
    rows = [
        [
            q.topic,
            q.group,
            q.broker_name,
            q.queue_id,
            q.broker_offset,
            q.consumer_offset,
            q.diff,
            format_date(q.last_timestamp),
        ]
        for q in result.queues
    ]
    return join_blocks(render_table(headers, rows), f"Diff Total: {result.diff_total}")


def _broker_consume_stats_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-b", "--brokerAddr", dest="broker_addr", required=True, help="Broker address")
    parser.add_argument(
        "-t",
        "--timeoutMillis",
        dest="timeout_millis",
        type=int,
        default=50_000,
        help="request timeout in milliseconds (default 50000: a broker with many groups takes a while)",
    )
    parser.add_argument("-l", "--level", type=int, default=0, help="threshold of print diff")
    parser.add_argument("-o", "--order", type=java_bool, default=False, help="order topic (true|false)")


COMMANDS = [
    SubCommand("statsAll", "Topic and Consumer tps stats", _stats_all_args, stats_all, render_stats_all),
    SubCommand(
        "brokerConsumeStats",
        "Fetch broker consume stats data",
        _broker_consume_stats_args,
        broker_consume_stats,
        render_broker_consume_stats,
        timeout=lambda args: args.timeout_millis / 1000,
    ),
]
