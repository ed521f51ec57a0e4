"""Reading a message's trace from the trace topic of a cluster.

A tracing client writes its records as ordinary messages of the trace topic (RMQ_SYS_TRACE_TOPIC, or the custom
topic the client was given), batched: one trace message carries up to ~118 KB of records of many messages, and its
KEYS list every traced message's id and keys. So a message's records are found with a key query on the trace topic
(monitor.messages.search.by_key, on every broker, sliced until complete), keeping the records of that message.
The trace messages are read oldest first, so records appear in the order their clients wrote them.
"""

from __future__ import annotations

from collections.abc import Iterable

from monitor.messages import search
from monitor.remoting.admin import MQAdmin
from monitor.remoting.message import MessageExt
from monitor.trace.records import RMQ_SYS_TRACE_TOPIC, MalformedTraceRecord, TraceRecord, decode_body
from monitor.trace.timeline import MessageTimeline, TraceEntry, build_timeline

__all__ = ["client_ip", "entries_of", "read_entries", "read_timeline", "read_timelines_by_key"]


def client_ip(born_host: str) -> str:
    """``127.0.0.1:49540`` -> ``127.0.0.1``; ``[::1]:49540`` -> ``::1`` (MessageExt.getBornHostString)."""
    host = born_host.rsplit(":", 1)[0] if ":" in born_host else born_host
    return host[1:-1] if host.startswith("[") and host.endswith("]") else host


def entries_of(messages: Iterable[MessageExt]) -> tuple[list[TraceEntry], list[MalformedTraceRecord]]:
    """Every record of these trace messages, oldest message first, and the records that could not be read."""
    entries: list[TraceEntry] = []
    malformed: list[MalformedTraceRecord] = []
    ordered = sorted(messages, key=lambda m: (m.store_timestamp, m.store_host, m.commit_log_offset))
    for message in ordered:
        host = client_ip(message.born_host)
        for result in decode_body(message.body):
            if isinstance(result, TraceRecord):
                entries.append(TraceEntry(result, host))
            else:
                malformed.append(result)
    return entries, malformed


def read_entries(
    admin: MQAdmin,
    key: str,
    *,
    trace_topic: str = RMQ_SYS_TRACE_TOPIC,
    begin_ms: int = 0,
    end_ms: int | None = None,
    progress: search.ProgressFn = None,
    cancelled: search.CancelFn = None,
) -> tuple[list[TraceEntry], list[MalformedTraceRecord]]:
    """The records of every trace message whose KEYS hold ``key`` (a message id or a message key), stored within
    [begin_ms, end_ms], on every broker of the cluster; with the unreadable records of those messages."""
    messages = search.by_key(admin, trace_topic, key, begin_ms, end_ms, progress=progress, cancelled=cancelled)
    return entries_of(messages)


def read_timeline(
    admin: MQAdmin,
    msg_id: str,
    *,
    trace_topic: str = RMQ_SYS_TRACE_TOPIC,
    begin_ms: int = 0,
    end_ms: int | None = None,
    progress: search.ProgressFn = None,
    cancelled: search.CancelFn = None,
) -> MessageTimeline:
    """The trace timeline of one message, by the id its producer gave it (UNIQ_KEY, what clients call msgId).
    ``malformed`` holds the unreadable records of the trace messages read (whose message they were is unknown)."""
    entries, malformed = read_entries(
        admin,
        msg_id,
        trace_topic=trace_topic,
        begin_ms=begin_ms,
        end_ms=end_ms,
        progress=progress,
        cancelled=cancelled,
    )
    return build_timeline(msg_id, entries, malformed)


def read_timelines_by_key(
    admin: MQAdmin,
    key: str,
    *,
    trace_topic: str = RMQ_SYS_TRACE_TOPIC,
    begin_ms: int = 0,
    end_ms: int | None = None,
    progress: search.ProgressFn = None,
    cancelled: search.CancelFn = None,
) -> dict[str, MessageTimeline]:
    """The timelines of every traced message whose keys hold ``key``, by message id. Consume records carry the
    message's keys too, so a message appears even when only its consumers traced it."""
    entries, malformed = read_entries(
        admin,
        key,
        trace_topic=trace_topic,
        begin_ms=begin_ms,
        end_ms=end_ms,
        progress=progress,
        cancelled=cancelled,
    )
    ids = sorted({entry.record.msg_id for entry in entries if key in entry.record.key_list})
    return {msg_id: build_timeline(msg_id, entries, malformed) for msg_id in ids}
