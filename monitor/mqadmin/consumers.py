"""Client subcommands: consumerProgress, consumerConnection, consumerStatus, producerConnection."""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass, field

from monitor.mqadmin.common import (
    MQAdminError,
    SubCommand,
    format_date,
    human_millis,
    parallel_map,
    version_desc,
)
from monitor.mqadmin.output import cell, join_blocks, render_properties, render_table
from monitor.remoting import body as b
from monitor.remoting.admin import MQAdmin
from monitor.remoting.errors import RemotingClientError, RemotingError
from stats.keys import RETRY_PREFIX

# ConsumerRunningInfo property names.
PROP_CONSUME_TYPE = "PROP_CONSUME_TYPE"
PROP_CONSUME_ORDERLY = "PROP_CONSUMEORDERLY"
PROP_CONSUMER_START_TIMESTAMP = "PROP_CONSUMER_START_TIMESTAMP"

# --- consumerProgress -----------------------------------------------------------------------------------------------


@dataclass
class QueueProgress:
    topic: str
    broker_name: str
    queue_id: int
    broker_offset: int
    consumer_offset: int
    diff: int
    last_timestamp: int
    client_ip: str | None = None  # with -s true: the client the queue is allocated to ("N/A" if none)
    inflight: int | None = None  # RocketMQ 5: pulled but not yet committed (None from 4.x brokers)


@dataclass
class GroupProgress:
    group: str
    queues: list[QueueProgress]
    consume_tps: float
    diff_total: int
    inflight_total: int | None = None


def _queue_allocation(admin: MQAdmin, group: str) -> dict[b.MessageQueue, str]:
    """Which client (by IP) holds each queue, from every client's running info; best effort, as in mqadmin: a
    client that does not answer, or answers what cannot be read (the C++ client writes ``"mqTable":}`` while it
    rebuilds its queues after a reset), holds nothing."""
    try:
        connections = admin.examine_consumer_connection_info(group).connection_set
    except RemotingError:
        return {}
    allocation = {}
    for conn in connections:
        try:
            info = admin.get_consumer_running_info(group, conn.client_id)
        except RemotingClientError:
            continue
        for mq in info.mq_table:
            allocation[mq] = conn.client_id.split("@")[0]
    return allocation


def group_progress(admin: MQAdmin, group: str, show_client_ip: bool) -> GroupProgress:
    stats = admin.examine_consume_stats(group)
    if not stats.offset_table:
        raise MQAdminError(
            f"no consume stats for group [{group}]: the brokers have no offsets for it"
            " (maybe the consumer has not consumed any message)"
        )
    allocation = _queue_allocation(admin, group) if show_client_ip else None
    queues = [
        QueueProgress(
            mq.topic,
            mq.broker_name,
            mq.queue_id,
            offset.broker_offset,
            offset.consumer_offset,
            offset.lag,
            offset.last_timestamp,
            None if allocation is None else allocation.get(mq, "N/A"),
            offset.inflight,
        )
        for mq, offset in sorted(stats.offset_table.items())
    ]
    inflights = [q.inflight for q in queues if q.inflight is not None]
    inflight_total = sum(inflights) if inflights else None
    return GroupProgress(group, queues, stats.consume_tps, sum(q.diff for q in queues), inflight_total)


@dataclass
class GroupSummary:
    """One row of consumerProgress without -g (mqadmin's GroupConsumeInfo); version and the consume kinds stay None
    while no consumer is online."""

    group: str
    count: int = 0
    version: str | None = None
    consume_type: b.ConsumeType | None = None
    message_model: b.MessageModel | None = None
    consume_tps: int = 0
    diff_total: int = 0


def _group_summary(admin: MQAdmin, group: str) -> GroupSummary:
    """A group that the brokers do not know or that has no consumer online still gets its row."""
    summary = GroupSummary(group)
    try:
        stats = admin.examine_consume_stats(group)
        summary.consume_tps = int(stats.consume_tps)
        summary.diff_total = stats.total_diff
    except RemotingError:
        pass
    try:
        cc = admin.examine_consumer_connection_info(group)
    except RemotingError:
        return summary
    summary.count = len(cc.connection_set)
    if cc.connection_set:
        summary.version = version_desc(min(conn.version for conn in cc.connection_set))
        summary.consume_type = cc.consume_type
        summary.message_model = cc.message_model
    return summary


def consumer_progress(admin: MQAdmin, args: argparse.Namespace) -> GroupProgress | list[GroupSummary]:
    if args.group:
        return group_progress(admin, args.group, args.show_client_ip)
    groups = [t[len(RETRY_PREFIX) :] for t in admin.fetch_all_topic_list().topic_list if t.startswith(RETRY_PREFIX)]
    return parallel_map(lambda group: _group_summary(admin, group), groups)


_CONSUME_TYPE_TEXT = {b.ConsumeType.CONSUME_ACTIVELY: "PULL", b.ConsumeType.CONSUME_PASSIVELY: "PUSH"}


def _last_time(millis: int) -> str:
    return "N/A" if millis == 0 else format_date(millis)


def render_consumer_progress(result: GroupProgress | list[GroupSummary], args: argparse.Namespace) -> str:
    if isinstance(result, list):
        rows = []
        for s in result:
            # Type and model as GroupConsumeInfo describes them: blank while offline, the model for push only.
            push = s.consume_type is b.ConsumeType.CONSUME_PASSIVELY
            rows.append(
                [
                    s.group,
                    s.count,
                    s.version or "OFFLINE",
                    _CONSUME_TYPE_TEXT.get(s.consume_type, ""),
                    s.message_model.name if push and s.message_model else "",
                    s.consume_tps,
                    s.diff_total,
                ]
            )
        return render_table(["#Group", "#Count", "#Version", "#Type", "#Model", "#TPS", "#Diff Total"], rows)
    five = result.inflight_total is not None  # a RocketMQ 5 broker: Inflight as mqadmin 5 shows it
    headers = ["#Topic", "#Broker Name", "#QID", "#Broker Offset", "#Consumer Offset"]
    if args.show_client_ip:
        headers.append("#Client IP")
    headers += ["#Diff", *(["#Inflight"] if five else []), "#LastTime"]
    rows = []
    for q in result.queues:
        row = [q.topic, q.broker_name, q.queue_id, q.broker_offset, q.consumer_offset]
        if args.show_client_ip:
            row.append(q.client_ip)
        rows.append([*row, q.diff, *([q.inflight] if five else []), _last_time(q.last_timestamp)])
    summary = f"Consume TPS: {result.consume_tps:.2f}\nDiff Total: {result.diff_total}"
    if five:
        summary += f"\nInflight Total: {result.inflight_total}"
    return join_blocks(render_table(headers, rows), summary)


def _show_client_ip(text: str) -> bool:
    """mqadmin shows client IPs only for ``-s true`` (any other value means no)."""
    return text.strip().lower() == "true"


def _consumer_progress_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-g", "--groupName", dest="group", help="consumer group name (default: every group)")
    parser.add_argument(
        "-s",
        "--showClientIP",
        dest="show_client_ip",
        type=_show_client_ip,
        default=False,
        help="Show Client IP per Queue (true|false)",
    )


# --- consumerConnection / producerConnection ------------------------------------------------------------------------


@dataclass
class ClientConnection:
    client_id: str
    client_addr: str
    language: str | None
    version: int
    version_desc: str


def _connections(connections: list[b.Connection]) -> list[ClientConnection]:
    return [
        ClientConnection(c.client_id, c.client_addr, c.language, c.version, version_desc(c.version))
        for c in connections
    ]


@dataclass
class Subscription:
    topic: str
    sub_expression: str


@dataclass
class ConsumerConnectionResult:
    connections: list[ClientConnection]
    subscriptions: list[Subscription]
    consume_type: b.ConsumeType | None
    message_model: b.MessageModel | None
    consume_from_where: b.ConsumeFromWhere | None


def consumer_connection(admin: MQAdmin, args: argparse.Namespace) -> ConsumerConnectionResult:
    cc = admin.examine_consumer_connection_info(args.group)
    return ConsumerConnectionResult(
        _connections(cc.connection_set),
        [Subscription(sd.topic, sd.sub_string) for sd in cc.subscription_table.values()],
        cc.consume_type,
        cc.message_model,
        cc.consume_from_where,
    )


def render_consumer_connection(result: ConsumerConnectionResult, args: argparse.Namespace) -> str:
    connections = render_table(
        ["#ClientId", "#ClientAddr", "#Language", "#Version"],
        [[c.client_id, c.client_addr, c.language, c.version_desc] for c in result.connections],
    )
    subscriptions = render_table(
        ["#Topic", "#SubExpression"], [[s.topic, s.sub_expression] for s in result.subscriptions]
    )
    kinds = (
        f"ConsumeType: {_name(result.consume_type)}\nMessageModel: {_name(result.message_model)}\n"
        f"ConsumeFromWhere: {_name(result.consume_from_where)}"
    )
    return join_blocks(connections, f"Below is subscription:\n{subscriptions}", kinds)


def _name(value: b.ConsumeType | b.MessageModel | b.ConsumeFromWhere | None) -> str:
    return "null" if value is None else value.name


def _group_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-g", "--consumerGroup", dest="group", required=True, help="consumer group name")


def producer_connection(admin: MQAdmin, args: argparse.Namespace) -> list[ClientConnection]:
    connections = admin.examine_producer_connection_info(args.group, args.topic).connection_set
    if not connections:
        raise MQAdminError(f"producer group [{args.group}] has no connection to the brokers of topic [{args.topic}]")
    return _connections(connections)


def render_producer_connection(result: list[ClientConnection], args: argparse.Namespace) -> str:
    return render_table(
        ["#Index", "#ClientId", "#ClientAddr", "#Language", "#Version"],
        [[f"{i:04d}", c.client_id, c.client_addr, c.language, c.version_desc] for i, c in enumerate(result, 1)],
    )


def _producer_connection_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-g", "--producerGroup", dest="group", required=True, help="producer group name")
    parser.add_argument("-t", "--topic", required=True, help="topic name")


# --- consumerStatus -------------------------------------------------------------------------------------------------


@dataclass
class ClientStatus:
    client_id: str
    version_desc: str
    running_info: b.ConsumerRunningInfo | None = None
    error: str | None = None


@dataclass
class ConsumerStatusResult:
    """consumerStatus without -i: every client's running info and mqadmin's analysis of them."""

    clients: list[ClientStatus]
    same_subscription: bool | None = None  # None when no client answered
    warnings: list[str] = field(default_factory=list)


def _is_push(info: b.ConsumerRunningInfo) -> bool:
    return info.properties.get(PROP_CONSUME_TYPE) == b.ConsumeType.CONSUME_PASSIVELY.name


def _subscription_key(info: b.ConsumerRunningInfo) -> set[tuple]:
    # Java compares whole SubscriptionData objects, subVersion included, which is each client's own subscribe time
    # and so differs between healthy clients; the subscription itself is topic, expression and filter mode.
    return {(sd.topic, sd.sub_string, sd.expression_type, sd.class_filter_mode) for sd in info.subscription_set}


def _same_subscription(infos: dict[str, b.ConsumerRunningInfo]) -> bool:
    """ConsumerRunningInfo.analyzeSubscription: push consumers started over two minutes ago must all subscribe
    to the same thing, and to something."""
    first = infos[min(infos)]
    try:
        started = int(first.properties.get(PROP_CONSUMER_START_TIMESTAMP, ""))
    except ValueError:  # written by the client, which may be anything
        started = 0
    if not (_is_push(first) and time.time() * 1000 - started > 120_000):
        return True
    keys = [_subscription_key(info) for info in infos.values()]
    return all(key == keys[0] for key in keys) and bool(keys[0])


def _process_queue_warnings(client_id: str, info: b.ConsumerRunningInfo) -> list[str]:
    """ConsumerRunningInfo.analyzeProcessQueue: queues an orderly consumer cannot lock, queues a concurrent consumer
    has had cached messages in for over a minute without consuming."""
    if not _is_push(info):
        return []
    orderly = info.properties.get(PROP_CONSUME_ORDERLY, "").lower() == "true"
    now = int(time.time() * 1000)
    warnings = []
    for mq, pq in sorted(info.mq_table.items()):
        where = f"{client_id} {mq.topic}:{mq.broker_name}:{mq.queue_id}"
        if orderly and not pq.locked:
            warnings.append(f"{where} can't lock for a while, {now - pq.last_lock_timestamp}ms")
        elif orderly and pq.dropped and pq.try_unlock_times > 0:
            warnings.append(f"{where} unlock {pq.try_unlock_times} times, still failed")
        elif not orderly and now - pq.last_consume_timestamp > 60_000 and pq.cached_msg_count > 0:
            warnings.append(f"{where} can't consume for a while, maybe blocked, {now - pq.last_consume_timestamp}ms")
    return warnings


def consumer_status(admin: MQAdmin, args: argparse.Namespace) -> ConsumerStatusResult | b.ConsumerRunningInfo:
    if args.client_id:
        return admin.get_consumer_running_info(args.group, args.client_id, args.jstack)
    connections = admin.examine_consumer_connection_info(args.group).connection_set

    def status(conn: b.Connection) -> ClientStatus:
        result = ClientStatus(conn.client_id, version_desc(conn.version))
        try:
            result.running_info = admin.get_consumer_running_info(args.group, conn.client_id, args.jstack)
        except RemotingClientError as exc:
            result.error = str(exc)
        return result

    clients = parallel_map(status, connections)
    infos = {c.client_id: c.running_info for c in clients if c.running_info is not None}
    result = ConsumerStatusResult(clients)
    if infos:
        result.same_subscription = _same_subscription(infos)
        if result.same_subscription:
            result.warnings = [
                w for client_id in sorted(infos) for w in _process_queue_warnings(client_id, infos[client_id])
            ]
    return result


MQ_DETAIL_HEADERS = [
    "#Topic",
    "#Broker Name",
    "#QID",
    "#Cached Msgs",
    "#Cached MiB",
    "#Locked",
    "#Dropped",
    "#Last Pull",
    "#Last Consume",
]
RATE_HEADERS = [
    "#Topic",
    "#Pull RT",
    "#Pull TPS",
    "#Consume RT",
    "#ConsumeOK TPS",
    "#ConsumeFailed TPS",
    "#ConsumeFailedMsgsInHour",
]


def render_running_info(info: b.ConsumerRunningInfo) -> str:
    """ConsumerRunningInfo.formatString, with the per-queue details as a table instead of Java's toString."""
    subscriptions = "\n".join(
        f"{i:03d} Topic: {sd.topic:<40} ClassFilter: {cell(sd.class_filter_mode):<8} SubExpression: {sd.sub_string}"
        for i, sd in enumerate(sorted(info.subscription_set, key=lambda sd: sd.topic), 1)
    )
    queues = sorted(info.mq_table.items())
    offsets = render_table(
        ["#Topic", "#Broker Name", "#QID", "#Consumer Offset"],
        [[mq.topic, mq.broker_name, mq.queue_id, pq.commit_offset] for mq, pq in queues],
    )
    details = render_table(
        MQ_DETAIL_HEADERS,
        [
            [
                mq.topic,
                mq.broker_name,
                mq.queue_id,
                pq.cached_msg_count,
                pq.cached_msg_size_in_mib,
                pq.locked,
                pq.dropped,
                human_millis(pq.last_pull_timestamp),
                human_millis(pq.last_consume_timestamp),
            ]
            for mq, pq in queues
        ],
    )
    rates = render_table(
        RATE_HEADERS,
        [
            [topic, s.pull_rt, s.pull_tps, s.consume_rt, s.consume_ok_tps, s.consume_failed_tps, s.consume_failed_msgs]
            for topic, s in sorted(info.status_table.items())
        ],
    )
    return join_blocks(
        "#Consumer Properties#\n" + render_properties(info.properties, width=40, separator=": "),
        "#Consumer Subscription#\n" + subscriptions,
        "#Consumer Offset#\n" + offsets,
        "#Consumer MQ Detail#\n" + details,
        "#Consumer RT&TPS#\n" + rates,
        "#Consumer jstack#\n" + info.jstack if info.jstack else None,
    )


def render_consumer_status(result: ConsumerStatusResult | b.ConsumerRunningInfo, args: argparse.Namespace) -> str:
    if isinstance(result, b.ConsumerRunningInfo):
        return render_running_info(result)
    table = render_table(
        ["#Index", "#ClientId", "#Version", "#Status"],
        [[i, c.client_id, c.version_desc, c.error or "OK"] for i, c in enumerate(result.clients, 1)],
    )
    if result.same_subscription is None:
        return table
    if not result.same_subscription:
        return join_blocks(table, "WARN: Different subscription in the same group of consumer!!!")
    return join_blocks(
        table, "Same subscription in the same group of consumer\n\nRebalance OK", "\n".join(result.warnings)
    )


def _consumer_status_args(parser: argparse.ArgumentParser) -> None:
    _group_args(parser)
    parser.add_argument("-i", "--clientId", dest="client_id", help="The consumer's client id")
    parser.add_argument(
        "-s", "--jstack", action="store_true", help="Run jstack command in the consumer progress (Java clients)"
    )


COMMANDS = [
    SubCommand(
        "consumerProgress",
        "Query consumers's progress, speed",
        _consumer_progress_args,
        consumer_progress,
        render_consumer_progress,
    ),
    SubCommand(
        "consumerConnection",
        "Query consumer's socket connection, client version and subscription",
        _group_args,
        consumer_connection,
        render_consumer_connection,
    ),
    SubCommand(
        "consumerStatus",
        "Query consumer's internal data structure",
        _consumer_status_args,
        consumer_status,
        render_consumer_status,
    ),
    SubCommand(
        "producerConnection",
        "Query producer's socket connection and client version",
        _producer_connection_args,
        producer_connection,
        render_producer_connection,
    ),
]
