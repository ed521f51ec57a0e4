"""Move a consumer group's offsets on a topic to a point in time, or past the whole backlog, with a preview.

Two ways, chosen as mqadmin resetOffsetByTime chooses them:

* Clients online: INVOKE_BROKER_TO_RESET_OFFSET to each master. The broker finds each queue's offset for the time
  (its max offset for NEWEST) and pushes the new offsets to every online client of the group
  (RESET_CONSUMER_CLIENT_OFFSET), which starts consuming from there and commits them; a 5.x broker also writes them
  itself. The push is in the Java layout unless the request says C++: a C++ client cannot read the Java layout and
  keeps its old offsets, so C++ is asked for when every online client of the group is a C++ client.
* No client online (the broker answers CONSUMER_NOT_ONLINE): the committed offsets are written directly
  (UPDATE_CONSUMER_OFFSET per queue, resetOffsetByTimestampOld); the clients read them when they start.

A 4.9 broker resets every queue of the topic at once; resetting one queue is therefore done only for a group whose
clients are offline (an online client would overwrite a written offset with its own at its next commit).
"""

from __future__ import annotations

from dataclasses import dataclass

from monitor.remoting import body as b
from monitor.remoting.admin import RESET_TO_NOW, MQAdmin, retry_topic
from monitor.remoting.codes import ResponseCode
from monitor.remoting.errors import RemotingError

NEWEST = RESET_TO_NOW
"""The time that means "after the newest message": skip the backlog."""


@dataclass(frozen=True)
class QueueResetPreview:
    """One queue before a reset: its first and end offsets, where the group is (None: the broker has no offset of
    the group there) and where the reset would put it. ``target_offset - current_offset`` messages are skipped
    (positive) or consumed again (negative)."""

    broker_name: str
    queue_id: int
    min_offset: int
    max_offset: int
    current_offset: int | None
    target_offset: int


@dataclass(frozen=True)
class QueueReset:
    broker_name: str
    queue_id: int
    offset: int  # where the group is now


@dataclass(frozen=True)
class ResetOutcome:
    """``online``: the brokers told the online clients (in the C++ layout when ``cplus``); otherwise the committed
    offsets were written directly."""

    online: bool
    queues: list[QueueReset]
    cplus: bool = False


def _masters(admin: MQAdmin, topic: str) -> dict[str, str]:
    route = admin.examine_topic_route_info(topic)
    return {bd.broker_name: bd.master_addr for bd in route.broker_datas if bd.master_addr}


def _check_queue(queue: b.MessageQueue | None, topic: str) -> None:
    if queue is not None and queue.topic != topic:
        raise ValueError(f"queue {queue} is not a queue of topic {topic}")


def preview_reset(
    admin: MQAdmin, group: str, topic: str, timestamp_ms: int, *, queue: b.MessageQueue | None = None
) -> list[QueueResetPreview]:
    """Per queue of the topic (or only ``queue``): offsets now and after a reset to ``timestamp_ms`` (or NEWEST),
    as the broker computes them (the offset of the first message stored at or after the time, the end offset for
    NEWEST, 0 where the broker finds none)."""
    _check_queue(queue, topic)
    masters = _masters(admin, topic)
    table = admin.examine_topic_stats(topic).offset_table
    current: dict[b.MessageQueue, int] = {}
    for addr in masters.values():
        try:
            stats = admin.get_consume_stats(addr, group, topic)
        except RemotingError as exc:  # 5.x: a group the broker does not know
            if exc.code != ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST:
                raise
            continue
        current.update({mq: w.consumer_offset for mq, w in stats.offset_table.items() if mq.topic == topic})
    previews = []
    for mq, offsets in sorted(table.items()):
        if (queue is not None and mq != queue) or mq.broker_name not in masters:
            continue
        if timestamp_ms == NEWEST:
            target = offsets.max_offset
        else:
            target = max(admin.search_offset(masters[mq.broker_name], topic, mq.queue_id, timestamp_ms), 0)
        previews.append(
            QueueResetPreview(
                mq.broker_name, mq.queue_id, offsets.min_offset, offsets.max_offset, current.get(mq), target
            )
        )
    if queue is not None and not previews:
        raise ValueError(f"{queue.broker_name} queue {queue.queue_id} is not a queue of topic {topic}")
    return previews


def online_languages(admin: MQAdmin, group: str) -> list[str]:
    """The client language (JAVA, CPP, ...) of each online client of the group; empty when none is online."""
    try:
        connections = admin.examine_consumer_connection_info(group).connection_set
    except RemotingError as exc:
        if exc.code in (ResponseCode.CONSUMER_NOT_ONLINE, ResponseCode.TOPIC_NOT_EXIST):
            return []
        raise
    return [c.language or "" for c in connections]


def apply_reset(
    admin: MQAdmin, group: str, topic: str, timestamp_ms: int, *, queue: b.MessageQueue | None = None
) -> ResetOutcome:
    """Reset the group's offsets of ``topic`` (or only ``queue``) to ``timestamp_ms`` (or NEWEST): through the
    brokers when its clients are online, else by writing the committed offsets (see the module's notes)."""
    _check_queue(queue, topic)
    languages = online_languages(admin, group)
    if queue is not None:
        if languages:
            raise ValueError(
                f"{group} has clients online: brokers reset every queue of a topic at once; stop the clients to"
                " reset one queue, or reset the whole topic"
            )
        (row,) = preview_reset(admin, group, topic, timestamp_ms, queue=queue)
        admin.update_consumer_offset(
            _masters(admin, topic)[row.broker_name], group, topic, row.queue_id, row.target_offset
        )
        return ResetOutcome(False, [QueueReset(row.broker_name, row.queue_id, row.target_offset)])
    cplus = bool(languages) and all(language == "CPP" for language in languages)
    if languages:
        try:
            table = admin.reset_offset_by_timestamp(topic, group, timestamp_ms, True, cplus=cplus)
        except RemotingError as exc:  # the clients went away since we looked
            if exc.code != ResponseCode.CONSUMER_NOT_ONLINE:
                raise
        else:
            queues = [QueueReset(mq.broker_name, mq.queue_id, offset) for mq, offset in sorted(table.items())]
            return ResetOutcome(True, queues, cplus)
    rollbacks = admin.reset_offset_by_timestamp_old(group, topic, timestamp_ms, True)
    return ResetOutcome(False, [QueueReset(r.broker_name, r.queue_id, r.rollback_offset) for r in rollbacks])


def skip_backlog(admin: MQAdmin, group: str, topic: str) -> ResetOutcome:
    """Move the group past every message of the topic stored so far."""
    return apply_reset(admin, group, topic, NEWEST)


def skip_retry_backlog(admin: MQAdmin, group: str) -> ResetOutcome:
    """Move the group past every message waiting in its retry topic (%RETRY%group)."""
    return apply_reset(admin, group, retry_topic(group), NEWEST)
