"""Reading a topic's queues in order: printMsg (every queue, optionally a time range and a tag expression) and
consumeMessage (every queue or one, from an offset or a time, at most -c messages), as mqadmin's pull consumer
prints them. Nothing is committed: the pulls are an admin's reads, not a consumer group's progress.

The pulls are monitor.messages.search.queue_range, the same reads the portal's searches make.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field

from monitor.messages import search
from monitor.messages.present import body_views
from monitor.messages.search_scan import QueueRef, topic_queues
from monitor.mqadmin.common import (
    MQAdminError,
    SubCommand,
    java_bool,
    parse_timestamp,
    time_range,
)
from monitor.mqadmin.messages import FoundMessage
from monitor.mqadmin.output import join_blocks
from monitor.remoting.admin import MQAdmin
from monitor.remoting.message import MessageExt

CONSUME_COUNT = 128  # ConsumeMessageCommand's messageCount default


@dataclass
class QueueRead:
    """One queue's read: the offsets it covered, [begin_offset, end_offset), and the messages found there."""

    broker_name: str
    queue_id: int
    begin_offset: int
    end_offset: int
    messages: list[FoundMessage] = field(default_factory=list)


def _bounds(admin: MQAdmin, topic: str, queue: QueueRef, begin_ms: int, end_ms: int | None) -> tuple[int, int]:
    """The queue's offsets to read: from the first message stored at or after `begin_ms` (else the oldest) up to,
    not including, the first stored at or after `end_ms` (else the queue's end), as mqadmin's searchOffset gives
    them."""
    begin = admin.get_min_offset(queue.addr, topic, queue.queue_id)
    end = admin.get_max_offset(queue.addr, topic, queue.queue_id)
    if begin_ms > 0:
        begin = max(begin, admin.search_offset(queue.addr, topic, queue.queue_id, begin_ms))
    if end_ms is not None:
        end = min(end, admin.search_offset(queue.addr, topic, queue.queue_id, end_ms))
    return begin, end


def _tags(expression: str) -> set[str] | None:
    """``TagA || TagB`` as a set of tags; ``*`` (or nothing) is every message."""
    tags = {tag.strip() for tag in expression.split("||") if tag.strip()}
    return None if not tags or "*" in tags else tags


def _read(admin: MQAdmin, topic: str, queue: QueueRef, begin: int, end: int, tags: set[str] | None) -> QueueRead:
    read = QueueRead(queue.broker_name, queue.queue_id, begin, end)
    if end > begin:
        for msg in search.queue_range(admin, topic, queue.broker_name, queue.queue_id, begin, end):
            if tags is None or msg.tags in tags:
                read.messages.append(FoundMessage(msg, queue.broker_name))
    return read


# --- printMsg -------------------------------------------------------------------------------------------------------


def print_msg(admin: MQAdmin, args: argparse.Namespace) -> list[QueueRead]:
    """Every queue of the topic, each from the first message stored at -b up to the first stored at -e; only
    messages whose tag matches -s."""
    begin_ms, end_ms = time_range(args.begin, args.end)
    tags = _tags(args.sub_expression)
    reads = []
    for queue in topic_queues(admin, args.topic):
        begin, end = _bounds(admin, args.topic, queue, begin_ms, end_ms)
        reads.append(_read(admin, args.topic, queue, begin, end, tags))
    return reads


def _java_message(msg: MessageExt, broker_name: str | None) -> str:
    """MessageExt.toString without the body's bytes (the body follows as BODY:)."""
    props = "{" + ", ".join(f"{k}={v}" for k, v in msg.properties.items()) + "}"
    return (
        f"MessageExt [brokerName={broker_name}, queueId={msg.queue_id}, storeSize={msg.store_size}, "
        f"queueOffset={msg.queue_offset}, sysFlag={msg.sys_flag}, bornTimestamp={msg.born_timestamp}, "
        f"bornHost=/{msg.born_host}, storeTimestamp={msg.store_timestamp}, storeHost=/{msg.store_host}, "
        f"msgId={msg.msg_id}, commitLogOffset={msg.commit_log_offset}, bodyCRC={msg.body_crc}, "
        f"reconsumeTimes={msg.reconsume_times}, preparedTransactionOffset={msg.prepared_transaction_offset}, "
        f"toString()=Message{{topic='{msg.topic}', flag={msg.flag}, properties={props}}}]"
    )


def _body(msg: MessageExt, args: argparse.Namespace) -> str:
    if not getattr(args, "print_body", True):
        return "NOT PRINT BODY"
    if args.charset.lower().replace("-", "") == "utf8":
        text = body_views(msg.body).text
        return text if text is not None else f"(not UTF-8, hex) {msg.body.hex()}"
    try:
        return msg.body.decode(args.charset)
    except (LookupError, UnicodeDecodeError):
        return f"(not {args.charset}, hex) {msg.body.hex()}"


def _message_lines(read: QueueRead, args: argparse.Namespace) -> list[str]:
    return [
        f"MSGID: {m.message.uniq_key or m.message.msg_id} {_java_message(m.message, m.broker_name)} "
        f"BODY: {_body(m.message, args)}"
        for m in read.messages
    ]


def render_print_msg(result: list[QueueRead], args: argparse.Namespace) -> str:
    blocks = []
    for read in result:
        queue = f"MessageQueue [topic={args.topic}, brokerName={read.broker_name}, queueId={read.queue_id}]"
        header = f"minOffset={read.begin_offset}, maxOffset={read.end_offset}, {queue}"
        blocks.append("\n".join([header, *_message_lines(read, args), "-" * 56]))
    return "\n".join(blocks)


def _time_args(parser: argparse.ArgumentParser, begin: str) -> None:
    forms = "epoch milliseconds | yyyy-MM-dd#HH:mm:ss:SSS (local time)"
    parser.add_argument(begin, "--beginTimestamp", dest="begin", type=parse_timestamp, help=f"Begin timestamp: {forms}")
    parser.add_argument("-e", "--endTimestamp", dest="end", type=parse_timestamp, help=f"End timestamp: {forms}")


def _print_msg_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-t", "--topic", required=True, help="topic name")
    parser.add_argument("-c", "--charsetName", dest="charset", default="UTF-8", help="CharsetName (eg: UTF-8, GBK)")
    parser.add_argument(
        "-s", "--subExpression", dest="sub_expression", default="*", help="Subscribe Expression (eg: TagA || TagB)"
    )
    _time_args(parser, "-b")
    parser.add_argument(
        "-d",
        "--printBody",
        dest="print_body",
        type=java_bool,
        default=True,
        help="print body (true|false, default true)",
    )


# --- consumeMessage -------------------------------------------------------------------------------------------------


def consume_message(admin: MQAdmin, args: argparse.Namespace) -> list[QueueRead]:
    """At most -c messages, oldest first queue by queue: every queue of the topic, or with -b and -i one queue
    (from offset -o with it), each limited to the time range -s..-e."""
    if args.queue_id is not None and args.broker_name is None:
        raise MQAdminError("Please set the brokerName before queueId!")
    if args.offset is not None and args.queue_id is None:
        raise MQAdminError("Please set queueId before offset!")
    if args.count <= 0:
        raise MQAdminError("Please input a positive messageNumber!")
    begin_ms, end_ms = time_range(args.begin, args.end)
    left = args.count
    reads = []
    for queue in topic_queues(admin, args.topic, args.broker_name, args.queue_id):
        if left == 0:
            break
        begin, end = _bounds(admin, args.topic, queue, begin_ms, end_ms)
        if args.offset is not None:
            begin = max(begin, args.offset)
        end = max(begin, min(end, begin + left))
        read = _read(admin, args.topic, queue, begin, end, None)
        left -= len(read.messages)
        reads.append(read)
    return reads


def render_consume_message(result: list[QueueRead], args: argparse.Namespace) -> str:
    blocks = []
    for read in result:
        queue = f"MessageQueue [topic={args.topic}, brokerName={read.broker_name}, queueId={read.queue_id}]"
        lines = ["Consume ok", *_message_lines(read, args)] if read.messages else []
        lines.append(f"{queue} print msg finished. offsets {read.begin_offset} to {read.end_offset}")
        blocks.append("\n".join(lines))
    return join_blocks(*blocks)


def _consume_message_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-t", "--topic", required=True, help="Topic name")
    parser.add_argument("-b", "--brokerName", dest="broker_name", help="Broker name")
    parser.add_argument("-i", "--queueId", dest="queue_id", type=int, help="Queue Id")
    parser.add_argument("-o", "--offset", type=int, help="Queue offset")
    parser.add_argument(
        "-c", "--MessageNumber", dest="count", type=int, default=CONSUME_COUNT, help="Number of message to be consumed"
    )
    _time_args(parser, "-s")
    parser.set_defaults(charset="UTF-8", print_body=True)


COMMANDS = [
    SubCommand("printMsg", "Print Message Detail", _print_msg_args, print_msg, render_print_msg),
    SubCommand("consumeMessage", "Consume message", _consume_message_args, consume_message, render_consume_message),
]
