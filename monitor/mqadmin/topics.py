"""Topic subcommands: topicList, topicRoute, topicStatus, updateTopic, deleteTopic."""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field

from monitor.mqadmin.common import (
    MQAdminError,
    PartialFailure,
    SubCommand,
    add_target,
    broker_name_of,
    human_millis,
    java_bool,
    master_addrs,
    on_each_broker,
    parallel_map,
    select_broker_addr,
)
from monitor.mqadmin.output import cell, join_blocks, render_table
from monitor.remoting import body as b
from monitor.remoting.admin import ORDER_TOPIC_NAMESPACE, MQAdmin
from monitor.remoting.errors import RemotingClientError, RemotingError
from stats import keys

# TopicSysFlag bits.
FLAG_UNIT = 0x1
FLAG_UNIT_SUB = 0x2

# --- topicList ------------------------------------------------------------------------------------------------------


@dataclass
class TopicRow:
    topic: str
    cluster: str | None = None
    consumer_groups: list[str] = field(default_factory=list)


def _topic_cluster_and_groups(admin: MQAdmin, info: b.ClusterInfo, topic: str) -> TopicRow:
    """The cluster of the topic's first broker and the groups consuming it. A topic the brokers no longer know
    (route gone, stats refused) keeps an empty row, as in mqadmin; a broker that cannot be reached is an error."""
    row = TopicRow(topic)
    try:
        route = admin.examine_topic_route_info(topic)
        if route.broker_datas:
            first = route.broker_datas[0]
            row.cluster = next((c for c, names in info.cluster_addr_table.items() if first.broker_name in names), None)
            addr = select_broker_addr(first)
            if addr:
                row.consumer_groups = admin.query_topic_consume_by_who(addr, topic).group_list
    except RemotingError:
        pass
    return row


def topic_list(admin: MQAdmin, args: argparse.Namespace) -> list[str] | list[TopicRow]:
    """Topic names; with -c, application topics (no %RETRY%/%DLQ%) with their cluster and consumer groups."""
    topics = admin.fetch_all_topic_list().topic_list
    if not args.cluster_model:
        return topics
    info = admin.examine_broker_cluster_info()
    wanted = [t for t in topics if not keys.is_group_topic(t)]
    return parallel_map(lambda topic: _topic_cluster_and_groups(admin, info, topic), wanted)


def render_topic_list(result: list[str] | list[TopicRow], args: argparse.Namespace) -> str:
    if not args.cluster_model:
        return "\n".join(result)
    rows = [[row.cluster or "", row.topic, group] for row in result for group in (row.consumer_groups or [""])]
    return render_table(["#Cluster Name", "#Topic", "#Consumer Group"], rows)


def _topic_list_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "-c",
        "--clusterModel",
        dest="cluster_model",
        action="store_true",
        help="with the cluster and the consumer groups of each topic",
    )


# --- topicRoute -----------------------------------------------------------------------------------------------------


def topic_route(admin: MQAdmin, args: argparse.Namespace) -> b.TopicRouteData:
    return admin.examine_topic_route_info(args.topic)


def render_topic_route(route: b.TopicRouteData, args: argparse.Namespace) -> str:
    """mqadmin's list format (``topicRoute -l``); the route as JSON is what ``--json`` prints."""
    queues = {qd.broker_name: qd for qd in route.queue_datas}
    rows, total_read, total_write = [], 0, 0
    for bd in sorted(route.broker_datas, key=lambda bd: bd.broker_name):
        qd = queues.get(bd.broker_name, b.QueueData(broker_name=bd.broker_name))
        total_read += qd.read_queue_nums
        total_write += qd.write_queue_nums
        addrs = ", ".join(f"{broker_id}={addr}" for broker_id, addr in sorted(bd.broker_addrs.items()))
        rows.append([bd.cluster, bd.broker_name, "{" + addrs + "}", qd.read_queue_nums, qd.write_queue_nums, qd.perm])
    headers = ["#ClusterName", "#BrokerName", "#BrokerAddrs", "#ReadQueue", "#WriteQueue", "#Perm"]
    table = render_table(headers, [*rows, ["Total:", str(len(queues)), "", total_read, total_write, None]])
    lines = table.split("\n")
    return "\n".join([*lines[:-1], "-" * len(lines[0]), lines[-1]])


def _topic_route_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-t", "--topic", required=True, help="topic name")
    parser.add_argument(
        "-l", "--list", action="store_true", help="list format (always used here; accepted for mqadmin compatibility)"
    )


# --- topicStatus ----------------------------------------------------------------------------------------------------


@dataclass
class QueueStatus:
    broker_name: str
    queue_id: int
    min_offset: int
    max_offset: int
    last_update_timestamp: int


@dataclass
class TopicStatus:
    """The queues, and their totals over the whole topic: ``total_messages`` is what the brokers still store
    (max minus min offset, summed), ``total_max_offset`` how many messages the topic has ever received."""

    queues: list[QueueStatus]
    topic_put_tps: float | None  # RocketMQ 5 brokers report it; None from 4.x
    total_min_offset: int
    total_max_offset: int
    total_messages: int


def topic_status(admin: MQAdmin, args: argparse.Namespace) -> TopicStatus:
    stats = admin.examine_topic_stats(args.topic)
    queues = [
        QueueStatus(mq.broker_name, mq.queue_id, off.min_offset, off.max_offset, off.last_update_timestamp)
        for mq, off in sorted(stats.offset_table.items())
    ]
    total_min, total_max = sum(q.min_offset for q in queues), sum(q.max_offset for q in queues)
    return TopicStatus(queues, stats.topic_put_tps, total_min, total_max, total_max - total_min)


def render_topic_status(result: TopicStatus, args: argparse.Namespace) -> str:
    rows = [
        [q.broker_name, q.queue_id, q.min_offset, q.max_offset, human_millis(q.last_update_timestamp)]
        for q in result.queues
    ]
    table = render_table(["#Broker Name", "#QID", "#Min Offset", "#Max Offset", "#Last Updated"], rows)
    totals = f"Total Messages: {result.total_messages}"
    put_tps = None if result.topic_put_tps is None else f"Topic Put TPS: {cell(result.topic_put_tps)}"
    return join_blocks(table, totals, put_tps)


def _topic_only_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-t", "--topic", required=True, help="topic name")


# --- updateTopic ----------------------------------------------------------------------------------------------------


@dataclass
class UpdateTopicResult:
    topic_config: b.TopicConfig
    brokers: list[str] = field(default_factory=list)  # where the topic was created or updated
    order_conf: str | None = None  # the name server's ORDER_TOPIC_CONFIG value, for -o true


def _merge_order_conf(old: str | None, entry: str) -> str:
    """createOrUpdateOrderConf for one broker: replace that broker's ``name:queueNums`` item, keep the others."""
    items = {}
    for item in (old or "").split(";"):
        if item.strip():
            items[item.split(":")[0]] = item
    items[entry.split(":")[0]] = entry
    return ";".join(items.values())


def _update_order_conf(admin: MQAdmin, args: argparse.Namespace, queue_nums: int) -> str:
    """Record the ordered topic's queues in the name servers: every broker of the cluster for -c, or this broker's
    entry merged into the existing value for -b."""
    info = admin.examine_broker_cluster_info()
    if args.broker_addr:
        entry = f"{broker_name_of(info, args.broker_addr)}:{queue_nums}"
        order_conf = _merge_order_conf(admin.get_kv_config(ORDER_TOPIC_NAMESPACE, args.topic), entry)
    else:
        names = sorted(set(info.cluster_addr_table.get(args.cluster_name, [])))
        order_conf = ";".join(f"{name}:{queue_nums}" for name in names)
    admin.put_kv_config(ORDER_TOPIC_NAMESPACE, args.topic, order_conf)
    return order_conf


def update_topic(admin: MQAdmin, args: argparse.Namespace) -> UpdateTopicResult:
    config = b.TopicConfig(
        topic_name=args.topic,
        read_queue_nums=args.read_queue_nums,
        write_queue_nums=args.write_queue_nums,
        perm=args.perm,
        topic_sys_flag=(FLAG_UNIT if args.unit else 0) | (FLAG_UNIT_SUB if args.has_unit_sub else 0),
        order=args.order,
    )
    result = UpdateTopicResult(config)
    addrs = [args.broker_addr] if args.broker_addr else master_addrs(admin, args.cluster_name)
    on_each_broker(addrs, lambda addr: admin.create_and_update_topic_config(addr, config), result)
    if args.order:
        try:
            result.order_conf = _update_order_conf(admin, args, config.write_queue_nums)
        except (RemotingClientError, MQAdminError) as exc:
            raise PartialFailure(result, [f"topic created, but its orderConf was not set: {exc}"]) from None
    return result


def _topic_config_text(config: b.TopicConfig) -> str:
    """TopicConfig.toString, the line mqadmin ends with."""
    return (
        f"TopicConfig [topicName={config.topic_name}, readQueueNums={config.read_queue_nums}, "
        f"writeQueueNums={config.write_queue_nums}, perm={config.perm_text}, "
        f"topicFilterType={config.topic_filter_type.name}, topicSysFlag={config.topic_sys_flag}, "
        f"order={'true' if config.order else 'false'}]"
    )


def render_update_topic(result: UpdateTopicResult, args: argparse.Namespace) -> str:
    lines = [f"create topic to {addr} success." for addr in result.brokers]
    if result.order_conf is not None:
        scope = "broker" if args.broker_addr else "cluster"
        lines.append(f"set {scope} orderConf. isOrder=true, orderConf=[{result.order_conf}]")
    lines.append(_topic_config_text(result.topic_config))
    return "\n".join(lines)


def _update_topic_args(parser: argparse.ArgumentParser) -> None:
    add_target(parser, "create the topic")
    parser.add_argument("-t", "--topic", required=True, help="topic name")
    parser.add_argument("-r", "--readQueueNums", dest="read_queue_nums", type=int, default=8, help="read queue nums")
    parser.add_argument("-w", "--writeQueueNums", dest="write_queue_nums", type=int, default=8, help="write queue nums")
    parser.add_argument(
        "-p", "--perm", type=int, default=6, choices=(2, 4, 6), help="topic's permission: 2 W, 4 R, 6 RW"
    )
    parser.add_argument("-o", "--order", type=java_bool, default=False, help="ordered topic (true|false)")
    parser.add_argument("-u", "--unit", type=java_bool, default=False, help="is unit topic (true|false)")
    parser.add_argument(
        "-s", "--hasUnitSub", dest="has_unit_sub", type=java_bool, default=False, help="has unit sub (true|false)"
    )


# --- deleteTopic ----------------------------------------------------------------------------------------------------


@dataclass
class DeleteTopicResult:
    topic: str
    cluster: str | None
    brokers: list[str] = field(default_factory=list)  # brokers the topic was deleted from
    name_servers: list[str] = field(default_factory=list)  # name servers the route was deleted from


def delete_topic_in_cluster(admin: MQAdmin, topic: str, cluster: str) -> DeleteTopicResult:
    """Delete on every master of the cluster, then in every name server. mqadmin also sends the deletion to the
    slaves, which refuse it ("Can't modify topic or subscription group from slave broker") and so abort the command
    before the name servers are cleaned; slaves follow their master, so only masters are asked here. The name
    servers are left alone if any master failed, so the route keeps pointing at the broker that still has the topic.
    """
    result = DeleteTopicResult(topic, cluster)
    errors = []
    for addr in master_addrs(admin, cluster):
        try:
            admin.delete_topic_in_broker([addr], topic)
            result.brokers.append(addr)
        except RemotingClientError as exc:
            errors.append(str(exc))
    if errors:
        raise PartialFailure(result, [*errors, "topic route left in the name servers"])
    admin.delete_topic_in_name_server(topic, cluster)
    result.name_servers = list(admin.namesrv_addrs)
    return result


def delete_topic(admin: MQAdmin, args: argparse.Namespace) -> DeleteTopicResult:
    if args.cluster_name:
        return delete_topic_in_cluster(admin, args.topic, args.cluster_name)
    admin.delete_topic_in_broker([args.broker_addr], args.topic)
    return DeleteTopicResult(args.topic, None, [args.broker_addr])


def delete_topic_lines(result: DeleteTopicResult) -> list[str]:
    lines = [f"delete topic [{result.topic}] from broker [{addr}] success." for addr in result.brokers]
    if result.cluster is None:
        lines.append("The name servers still route the topic; -c deletes it from a whole cluster and the name servers.")
    elif result.name_servers:
        lines.append(f"delete topic [{result.topic}] from cluster [{result.cluster}] success.")
        lines.append(f"delete topic [{result.topic}] from NameServer success.")
    return lines


def render_delete_topic(result: DeleteTopicResult, args: argparse.Namespace) -> str:
    return "\n".join(delete_topic_lines(result))


def _delete_topic_args(parser: argparse.ArgumentParser) -> None:
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument(
        "-c", "--clusterName", dest="cluster_name", help="delete from every master of this cluster and the name servers"
    )
    group.add_argument("-b", "--brokerAddr", dest="broker_addr", help="delete from this broker only")
    parser.add_argument("-t", "--topic", required=True, help="topic name")


COMMANDS = [
    SubCommand("topicList", "Fetch all topic list from name server", _topic_list_args, topic_list, render_topic_list),
    SubCommand("topicRoute", "Examine topic route info", _topic_route_args, topic_route, render_topic_route),
    SubCommand("topicStatus", "Examine topic Status info", _topic_only_args, topic_status, render_topic_status),
    SubCommand("updateTopic", "Update or create topic", _update_topic_args, update_topic, render_update_topic),
    SubCommand(
        "deleteTopic", "Delete topic from broker and NameServer", _delete_topic_args, delete_topic, render_delete_topic
    ),
]
