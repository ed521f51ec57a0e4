"""Browse a consumer group's retry topic (%RETRY%group: messages waiting for another delivery) and dead-letter
topic (%DLQ%group: messages the group failed more than its max reconsume times), each entry with the topic and id
of the message it stands for.

The broker stores every retry and dead-letter copy with the original topic in RETRY_TOPIC and the first copy's id in
ORIGIN_MESSAGE_ID (resend.origin_of reads them), so a dead letter can be shown as "order 123 of topic Orders" and
resent there. Both topics are read like any topic (4.9.4 and 5.x create the DLQ readable and writable); a group that
has never retried anything has neither, which is no dead letters rather than an error.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal

from monitor.messages.resend import DLQ_PREFIX, Origin, origin_of
from monitor.messages.search import CancelFn, ProgressFn, by_time_range, queue_range
from monitor.remoting.admin import MQAdmin, retry_topic
from monitor.remoting.codes import ResponseCode
from monitor.remoting.errors import RemotingError
from monitor.remoting.message import MessageExt

Kind = Literal["retry", "dlq"]


def dlq_topic(group: str) -> str:
    return DLQ_PREFIX + group


def letters_topic(group: str, kind: Kind) -> str:
    if kind == "retry":
        return retry_topic(group)
    if kind == "dlq":
        return dlq_topic(group)
    raise ValueError(f"{kind!r}: say 'retry' or 'dlq'")


@dataclass(frozen=True)
class DeadLetter:
    message: MessageExt
    origin: Origin  # the topic and id of the message this copy stands for

    @property
    def origin_topic(self) -> str:
        return self.origin.topic

    @property
    def origin_msg_id(self) -> str:
        return self.origin.msg_id


def _exists(admin: MQAdmin, topic: str) -> bool:
    try:
        admin.examine_topic_route_info(topic)
    except RemotingError as exc:
        if exc.code == ResponseCode.TOPIC_NOT_EXIST:
            return False
        raise
    return True


def browse(
    admin: MQAdmin,
    group: str,
    kind: Kind = "dlq",
    *,
    begin_ms: int | None = None,
    end_ms: int | None = None,
    newest: int | None = None,
    progress: ProgressFn = None,
    cancelled: CancelFn = None,
) -> Iterator[DeadLetter]:
    """The group's retry or dead-letter entries: those stored within [begin_ms, end_ms] (end None: now), oldest
    first per queue, or the ``newest`` N, newest first. Give a time range or ``newest``, not both."""
    if (newest is None) == (begin_ms is None):
        raise ValueError("give either a time range (begin_ms, end_ms) or newest, not both")
    topic = letters_topic(group, kind)
    if not _exists(admin, topic):
        return
    if newest is not None:
        messages = newest_messages(admin, topic, newest, progress=progress, cancelled=cancelled)
    else:
        messages = by_time_range(admin, topic, begin_ms, end_ms, progress=progress, cancelled=cancelled)
    for msg in messages:
        yield DeadLetter(msg, origin_of(msg))


def newest_messages(
    admin: MQAdmin, topic: str, count: int, *, progress: ProgressFn = None, cancelled: CancelFn = None
) -> list[MessageExt]:
    """The ``count`` most recently stored messages of the topic, newest first: the last ``count`` of each queue,
    merged by store time (then commit-log offset)."""
    if count < 1:
        raise ValueError(f"newest must be 1 or more, not {count}")
    found: list[MessageExt] = []
    for mq, offsets in sorted(admin.examine_topic_stats(topic).offset_table.items()):
        begin = max(offsets.min_offset, offsets.max_offset - count)
        found.extend(
            queue_range(
                admin,
                topic,
                mq.broker_name,
                mq.queue_id,
                begin,
                offsets.max_offset,
                progress=progress,
                cancelled=cancelled,
            )
        )
    found.sort(key=lambda m: (m.store_timestamp, m.commit_log_offset), reverse=True)
    return found[:count]
