"""Subscription group subcommands: updateSubGroup, deleteSubGroup."""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field

from monitor.mqadmin.common import (
    PartialFailure,
    SubCommand,
    add_target,
    java_bool,
    master_addrs,
    on_each_broker,
)
from monitor.mqadmin.output import cell
from monitor.mqadmin.topics import DeleteTopicResult, delete_topic_in_cluster, delete_topic_lines
from monitor.remoting import body as b
from monitor.remoting.admin import MQAdmin
from monitor.remoting.errors import RemotingClientError
from stats.keys import DLQ_PREFIX, RETRY_PREFIX

# --- updateSubGroup -------------------------------------------------------------------------------------------------


@dataclass
class UpdateSubGroupResult:
    config: b.SubscriptionGroupConfig
    brokers: list[str] = field(default_factory=list)  # where the group was created or updated


def update_sub_group(admin: MQAdmin, args: argparse.Namespace) -> UpdateSubGroupResult:
    """Create or update the group on one broker or every master of a cluster. As in mqadmin, a broker that fails
    does not stop the others; the failures are reported at the end."""
    config = b.SubscriptionGroupConfig(
        group_name=args.group,
        consume_enable=args.consume_enable,
        consume_from_min_enable=args.consume_from_min_enable,
        consume_broadcast_enable=args.consume_broadcast_enable,
        retry_queue_nums=args.retry_queue_nums,
        retry_max_times=args.retry_max_times,
        broker_id=args.broker_id,
        which_broker_when_consume_slowly=args.which_broker_when_consume_slowly,
        notify_consumer_ids_changed_enable=args.notify_consumer_ids_changed,
    )
    result = UpdateSubGroupResult(config)
    addrs = [args.broker_addr] if args.broker_addr else master_addrs(admin, args.cluster_name)
    on_each_broker(addrs, lambda addr: admin.create_and_update_subscription_group_config(addr, config), result)
    return result


def render_update_sub_group(result: UpdateSubGroupResult, args: argparse.Namespace) -> str:
    c = result.config
    lines = [f"create subscription group to {addr} success." for addr in result.brokers]
    lines.append(
        f"SubscriptionGroupConfig [groupName={c.group_name}, consumeEnable={cell(c.consume_enable)}, "
        f"consumeFromMinEnable={cell(c.consume_from_min_enable)}, "
        f"consumeBroadcastEnable={cell(c.consume_broadcast_enable)}, retryQueueNums={c.retry_queue_nums}, "
        f"retryMaxTimes={c.retry_max_times}, brokerId={c.broker_id}, "
        f"whichBrokerWhenConsumeSlowly={c.which_broker_when_consume_slowly}, "
        f"notifyConsumerIdsChangedEnable={cell(c.notify_consumer_ids_changed_enable)}]"
    )
    return "\n".join(lines)


def _update_sub_group_args(parser: argparse.ArgumentParser) -> None:
    add_target(parser, "create the subscription group")
    parser.add_argument("-g", "--groupName", dest="group", required=True, help="consumer group name")
    # mqadmin's defaults: a new SubscriptionGroupConfig with broadcast and from-min consumption switched off.
    parser.add_argument(
        "-s", "--consumeEnable", dest="consume_enable", type=java_bool, default=True, help="consume enable (true)"
    )
    parser.add_argument(
        "-m",
        "--consumeFromMinEnable",
        dest="consume_from_min_enable",
        type=java_bool,
        default=False,
        help="from min offset (false)",
    )
    parser.add_argument(
        "-d",
        "--consumeBroadcastEnable",
        dest="consume_broadcast_enable",
        type=java_bool,
        default=False,
        help="broadcast (false)",
    )
    parser.add_argument(
        "-q", "--retryQueueNums", dest="retry_queue_nums", type=int, default=1, help="retry queue nums (1)"
    )
    parser.add_argument(
        "-r", "--retryMaxTimes", dest="retry_max_times", type=int, default=16, help="retry max times (16)"
    )
    parser.add_argument("-i", "--brokerId", dest="broker_id", type=int, default=0, help="consume from which broker id")
    parser.add_argument(
        "-w",
        "--whichBrokerWhenConsumeSlowly",
        dest="which_broker_when_consume_slowly",
        type=int,
        default=1,
        help="which broker id when consume slowly",
    )
    parser.add_argument(
        "-a",
        "--notifyConsumerIdsChanged",
        dest="notify_consumer_ids_changed",
        type=java_bool,
        default=True,
        help="notify consumerId changed (true)",
    )


# --- deleteSubGroup -------------------------------------------------------------------------------------------------


@dataclass
class DeleteSubGroupResult:
    group: str
    cluster: str | None
    brokers: list[str] = field(default_factory=list)  # where the group was deleted
    topics: list[DeleteTopicResult] = field(default_factory=list)  # its %RETRY% and %DLQ% topics, with -c


def delete_sub_group(admin: MQAdmin, args: argparse.Namespace) -> DeleteSubGroupResult:
    """Delete the group on one broker, or on every master of a cluster and then (like mqadmin) its retry and
    dead-letter topics in that cluster and the name servers; the topics stay while a master still has the group."""
    result = DeleteSubGroupResult(args.group, args.cluster_name)
    if args.broker_addr:
        admin.delete_subscription_group(args.broker_addr, args.group, args.remove_offset)
        result.brokers.append(args.broker_addr)
        return result
    errors = []
    for addr in master_addrs(admin, args.cluster_name):
        try:
            admin.delete_subscription_group(addr, args.group, args.remove_offset)
            result.brokers.append(addr)
        except RemotingClientError as exc:
            errors.append(str(exc))
    if errors:
        raise PartialFailure(result, [*errors, "retry and dead-letter topics kept"])
    for topic in (RETRY_PREFIX + args.group, DLQ_PREFIX + args.group):
        try:
            result.topics.append(delete_topic_in_cluster(admin, topic, args.cluster_name))
        except PartialFailure as failure:
            result.topics.append(failure.result)
            errors += [f"{topic}: {error}" for error in failure.errors]
        except RemotingClientError as exc:
            errors.append(f"{topic}: {exc}")
    if errors:
        raise PartialFailure(result, errors)
    return result


def render_delete_sub_group(result: DeleteSubGroupResult, args: argparse.Namespace) -> str:
    if result.cluster is None:
        return f"delete subscription group [{result.group}] from broker [{result.brokers[0]}] success."
    lines = [
        f"delete subscription group [{result.group}] from broker [{addr}] in cluster [{result.cluster}] success."
        for addr in result.brokers
    ]
    for topic in result.topics:
        lines += delete_topic_lines(topic)
    return "\n".join(lines)


def _delete_sub_group_args(parser: argparse.ArgumentParser) -> None:
    add_target(parser, "delete the subscription group")
    parser.add_argument("-g", "--groupName", dest="group", required=True, help="subscription group name")
    parser.add_argument(
        "-r", "--removeOffset", dest="remove_offset", type=java_bool, default=False, help="remove offset (true|false)"
    )


COMMANDS = [
    SubCommand(
        "updateSubGroup",
        "Update or create subscription group",
        _update_sub_group_args,
        update_sub_group,
        render_update_sub_group,
    ),
    SubCommand(
        "deleteSubGroup",
        "Delete subscription group from broker",
        _delete_sub_group_args,
        delete_sub_group,
        render_delete_sub_group,
    ),
]
