"""resetOffsetByTime: move a consumer group's committed offsets of a topic back (or forward) to a point in time;
skipAccumulatedMessage: move them past the whole backlog."""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field

from monitor.messages.offsets import NEWEST, online_languages, preview_reset, skip_backlog
from monitor.mqadmin.common import SubCommand, Timestamp, java_bool, parse_timestamp
from monitor.mqadmin.output import render_table
from monitor.remoting.admin import MQAdmin
from monitor.remoting.codes import ResponseCode
from monitor.remoting.errors import RemotingError


@dataclass
class QueueReset:
    """One queue after the reset. ``offset`` is where the group now is; the old method also says where it was
    (``consumer_offset``), the queue's end (``broker_offset``) and the offset found for the time
    (``timestamp_offset``), which is not applied without -f when it lies ahead of the committed offset."""

    broker_name: str
    queue_id: int
    offset: int
    broker_offset: int | None = None
    consumer_offset: int | None = None
    timestamp_offset: int | None = None


@dataclass
class ResetOffsetResult:
    group: str
    topic: str
    force: bool
    timestamp: Timestamp
    method: str  # "broker": the brokers reset the online consumers; "offsets": committed offsets rewritten directly
    queues: list[QueueReset] = field(default_factory=list)
    fallback_reason: str | None = None
    cplus: bool = False  # the brokers told the consumers in the C++ client's layout


def reset_offset_by_time(admin: MQAdmin, args: argparse.Namespace) -> ResetOffsetResult:
    """Ask the brokers to reset the group (they push the new offsets to its online consumers); when no consumer is
    online (CONSUMER_NOT_ONLINE) rewrite the committed offsets directly instead, as mqadmin does.

    A C++ client cannot read the Java layout of the new offsets: it keeps its own and commits them again, so the
    reset has no effect. mqadmin leaves it to the operator to say -c; here -c is also implied when every online
    consumer of the group is a C++ client."""
    languages = online_languages(admin, args.group)
    cplus = args.cplus or (bool(languages) and all(language == "CPP" for language in languages))
    result = ResetOffsetResult(args.group, args.topic, args.force, args.timestamp, "broker", cplus=cplus)
    try:
        table = admin.reset_offset_by_timestamp(args.topic, args.group, args.timestamp.millis, args.force, cplus=cplus)
    except RemotingError as exc:
        if exc.code != ResponseCode.CONSUMER_NOT_ONLINE:
            raise
        result.method = "offsets"
        result.fallback_reason = " ".join((exc.remark or "consumer not online").split())
        rollbacks = admin.reset_offset_by_timestamp_old(args.group, args.topic, args.timestamp.millis, args.force)
        result.queues = [
            QueueReset(
                r.broker_name, r.queue_id, r.rollback_offset, r.broker_offset, r.consumer_offset, r.timestamp_offset
            )
            for r in rollbacks
        ]
        return result
    result.queues = [QueueReset(mq.broker_name, mq.queue_id, offset) for mq, offset in sorted(table.items())]
    return result


def render_reset_offset(result: ResetOffsetResult, args: argparse.Namespace) -> str:
    summary = (
        f"rollback consumer offset by specified group[{result.group}], topic[{result.topic}], "
        f"force[{'true' if result.force else 'false'}], timestamp(string)[{result.timestamp.text}], "
        f"timestamp(long)[{result.timestamp.millis}]"
    )
    if result.method == "broker":
        return (
            summary
            + "\n"
            + render_table(
                ["#brokerName", "#queueId", "#offset"], [[q.broker_name, q.queue_id, q.offset] for q in result.queues]
            )
        )
    table = render_table(
        ["#brokerName", "#queueId", "#brokerOffset", "#consumerOffset", "#timestampOffset", "#rollbackOffset"],
        [
            [q.broker_name, q.queue_id, q.broker_offset, q.consumer_offset, q.timestamp_offset, q.offset]
            for q in result.queues
        ],
    )
    note = (
        f"No consumer of the group is online ({result.fallback_reason}); "
        "the committed offsets were rewritten directly (resetOffsetByTimeOld). Consumers pick them up when they start."
    )
    return f"{note}\n{summary}\n{table}"


def _reset_offset_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-g", "--group", required=True, help="consumer group")
    parser.add_argument("-t", "--topic", required=True, help="topic")
    parser.add_argument(
        "-s",
        "--timestamp",
        required=True,
        type=parse_timestamp,
        help="now | epoch milliseconds | yyyy-MM-dd#HH:mm:ss:SSS (local time)",
    )
    parser.add_argument(
        "-f",
        "--force",
        type=java_bool,
        default=True,
        help="also move offsets forward when the time lies ahead of the committed offset (true|false, default true)",
    )
    parser.add_argument(
        "-c",
        "--cplus",
        action="store_true",
        help="tell the consumers in the C++ client's layout (implied when every online consumer is a C++ client)",
    )


# --- skipAccumulatedMessage -----------------------------------------------------------------------------------------


@dataclass
class SkippedQueue:
    broker_name: str
    queue_id: int
    previous_offset: int | None  # where the group was (None: it had no offset there)
    offset: int  # where it is now: the queue's end
    skipped: int | None  # messages skipped (None: unknown, the group had no offset there)


def _skipped(broker_name: str, queue_id: int, previous: int | None, offset: int) -> SkippedQueue:
    return SkippedQueue(
        broker_name, queue_id, previous, offset, None if previous is None else max(offset - previous, 0)
    )


@dataclass
class SkipResult:
    group: str
    topic: str
    online: bool  # the brokers told the online clients; else the committed offsets were written directly
    cplus: bool
    queues: list[SkippedQueue] = field(default_factory=list)


def skip_accumulated_message(admin: MQAdmin, args: argparse.Namespace) -> SkipResult:
    """Move the group past every message of the topic stored so far (monitor.messages.offsets.skip_backlog: a
    reset to the newest message, through the brokers when clients are online, else by writing the offsets). The
    offsets before come from the preview read just before, so the output says how many messages were skipped."""
    before = {
        (p.broker_name, p.queue_id): p.current_offset for p in preview_reset(admin, args.group, args.topic, NEWEST)
    }
    outcome = skip_backlog(admin, args.group, args.topic)
    queues = [
        _skipped(q.broker_name, q.queue_id, before.get((q.broker_name, q.queue_id)), q.offset) for q in outcome.queues
    ]
    return SkipResult(args.group, args.topic, outcome.online, outcome.cplus, queues)


def render_skip(result: SkipResult, args: argparse.Namespace) -> str:
    table = render_table(
        ["#brokerName", "#queueId", "#previousOffset", "#offset", "#skipped"],
        [[q.broker_name, q.queue_id, q.previous_offset, q.offset, q.skipped] for q in result.queues],
    )
    if result.online:
        layout = " in the C++ client's layout" if result.cplus else ""
        return f"The brokers moved the online consumers of [{result.group}] to the newest message{layout}.\n{table}"
    note = (
        f"No consumer of [{result.group}] is online: the committed offsets were rewritten directly. "
        "Consumers pick them up when they start."
    )
    return f"{note}\n{table}"


def _skip_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-g", "--group", required=True, help="set the consumer group")
    parser.add_argument("-t", "--topic", required=True, help="set the topic")


COMMANDS = [
    SubCommand(
        "resetOffsetByTime",
        "Reset consumer offset by timestamp (without client restart)",
        _reset_offset_args,
        reset_offset_by_time,
        render_reset_offset,
    ),
    SubCommand(
        "skipAccumulatedMessage",
        "Skip all messages that are accumulated (not consumed) currently",
        _skip_args,
        skip_accumulated_message,
        render_skip,
    ),
]
