"""queryMsgTraceById: a message's trace, printed as RocketMQ's QueryMsgTraceByIdSubCommand prints it.

mqadmin prints, for each Pub record of the message, a ``#Type #ProducerGroup #ClientHost #SendTime #CostTimes
#Status`` table of one row, then for each consumer group (in the iteration order of Java's HashMap, reproduced
here) its SubAfter records as ``Sub`` rows; SubBefore, EndTransaction and Recall records are not printed. The
client host is the IP of the client that wrote the trace. Unlike mqadmin, which reads at most 64 trace messages,
every trace message of the id is read (monitor.trace.reader); a SubAfter without its group (the layout before 4.7,
5.x CLOUD clients) takes the group of its SubBefore, where mqadmin would print an empty one. ``--json`` prints the
whole timeline (monitor.trace.timeline): sends, consume attempts, transaction ends and recalls.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass

from monitor.mqadmin.common import SubCommand, format_date, parse_timestamp, time_range
from monitor.remoting.admin import MQAdmin
from monitor.remoting.javahash import java_hashmap_order
from monitor.trace import reader
from monitor.trace.records import RMQ_SYS_TRACE_TOPIC, TraceType
from monitor.trace.timeline import MessageTimeline

_ROW = "%-10s %-20s %-20s %-20s %-10s %-10s"  # QueryMsgTraceByIdSubCommand's printf format


@dataclass(frozen=True)
class TraceQuery:
    timeline: MessageTimeline

    def json_fields(self) -> MessageTimeline:
        return self.timeline


def query_msg_trace_by_id(admin: MQAdmin, args: argparse.Namespace) -> TraceQuery:
    begin_ms, end_ms = time_range(args.begin, args.end)
    return TraceQuery(
        reader.read_timeline(admin, args.msg_id.strip(), trace_topic=args.trace_topic, begin_ms=begin_ms, end_ms=end_ms)
    )


def render_trace(result: TraceQuery, args: argparse.Namespace) -> str:
    lines: list[str] = []
    timeline = result.timeline
    attempts = {leg.request_id: leg for legs in timeline.consumers.values() for leg in legs}
    subs: dict[str, list[list[str]]] = {}
    for entry in timeline.entries:
        record = entry.record
        time_text = format_date(record.timestamp or 0)
        row = [entry.client_host, time_text, f"{record.cost_ms or 0}ms", "success" if record.success else "failed"]
        if record.trace_type is TraceType.Pub:
            lines += [
                _ROW % ("#Type", "#ProducerGroup", "#ClientHost", "#SendTime", "#CostTimes", "#Status"),
                _ROW % ("Pub", record.group, *row),
                "",
            ]
        elif record.trace_type is TraceType.SubAfter:
            attempt = attempts[record.request_id or ""]
            group = attempt.consumer_group
            if record.timestamp is None:  # no end time in this layout: the attempt's start
                row[1] = format_date(attempt.time or 0)
            subs.setdefault(group, []).append(["Sub", group, *row])
    for group in java_hashmap_order(list(subs)):
        lines.append(_ROW % ("#Type", "#ConsumerGroup", "#ClientHost", "#ConsumerTime", "#CostTimes", "#Status"))
        lines += [_ROW % tuple(row) for row in subs[group]]
        lines.append("")
    return "\n".join(lines) + "\n" if lines else ""  # ends in a blank line, as mqadmin's output does


def _arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-i", "--msgId", dest="msg_id", required=True, help="Message Id")
    parser.add_argument(
        "-t",
        "--traceTopic",
        dest="trace_topic",
        default=RMQ_SYS_TRACE_TOPIC,
        help=f"The name value of message trace topic (default {RMQ_SYS_TRACE_TOPIC})",
    )
    parser.add_argument(
        "-b",
        "--beginTimestamp",
        dest="begin",
        type=parse_timestamp,
        help="traces stored at or after: epoch milliseconds | yyyy-MM-dd#HH:mm:ss:SSS (local time); default: the start",
    )
    parser.add_argument(
        "-e", "--endTimestamp", dest="end", type=parse_timestamp, help="traces stored at or before; default: now"
    )


COMMANDS = [
    SubCommand("queryMsgTraceById", "query a message trace", _arguments, query_msg_trace_by_id, render_trace),
]
