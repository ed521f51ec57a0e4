"""Send one message to a topic the way a Java producer does: a writable queue of a master from the topic's route,
a producer id (UNIQ_KEY) in the format of MessageClientIDSetter, bodies over 4 KiB deflated.

The id matters beyond display: Java tools (mqadmin queryMsgById, the Dashboard) look a UNIQ_KEY up in the broker's
index from a time they read out of the id itself (MessageClientIDSetter.getNearlyTimeFromID, then QUERY_MESSAGE from
that time minus one second), so an id that is not in that format is an id they cannot find. :func:`make_uniq_key`
builds ids in the format from a seed and a time, so that an operation retried after a crash sends its messages
under the same ids and can ask the index whether they are already there (see resend.already_sent).
"""

from __future__ import annotations

import datetime
import hashlib
import os
import random
import struct
import time
import zlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from monitor.remoting import body as b
from monitor.remoting.admin import MQAdmin
from monitor.remoting.message import COMPRESSED_FLAG

# DefaultMQProducer.compressMsgBodyOverHowmuch and zipCompressLevel.
COMPRESS_OVER = 4 * 1024
_ZLIB_LEVEL = 5
# Java's MessageClientIDSetter id: producer ip (4) + pid (2) + class-loader hash (4) + ms since the start of the
# month (4) + counter (2), as uppercase hex.
_FIXED_PART = 10


@dataclass(frozen=True)
class SendResult:
    """What a producer's SendResult says: ``msg_id`` is the producer id (UNIQ_KEY), ``offset_msg_id`` the store id
    (store host + commit-log offset) that queryMsgById takes. ``status`` is the SendStatus name: the message is
    stored in every case; FLUSH_DISK_TIMEOUT, FLUSH_SLAVE_TIMEOUT and SLAVE_NOT_AVAILABLE say a copy was late."""

    msg_id: str
    offset_msg_id: str
    broker_name: str
    queue_id: int
    queue_offset: int
    topic: str = ""
    status: str = "SEND_OK"


def _month_start_ms(at_ms: int) -> int:
    """The start of the local month holding ``at_ms`` (MessageClientIDSetter.setStartTime uses the JVM's zone)."""
    moment = datetime.datetime.fromtimestamp(at_ms / 1000)
    return int(moment.replace(day=1, hour=0, minute=0, second=0, microsecond=0).timestamp() * 1000)


def make_uniq_key(seed: str, at_ms: int) -> str:
    """A producer id in MessageClientIDSetter's format, the same for the same seed and time.

    The time part is ``at_ms`` (take a time from before the send, e.g. when the operation was approved: tools look
    the id up from that time on); the digest of ``seed`` (e.g. "operation 42 item 7") fills the producer part and
    the counter, so two seeds never share an id."""
    digest = hashlib.sha256(seed.encode()).digest()
    span = (at_ms - _month_start_ms(at_ms)) & 0xFFFFFFFF
    return (digest[:_FIXED_PART] + struct.pack(">I", span) + digest[_FIXED_PART : _FIXED_PART + 2]).hex().upper()


def new_uniq_key() -> str:
    """A fresh producer id for a message sent once (a test message)."""
    return make_uniq_key(os.urandom(16).hex(), int(time.time() * 1000))


def writable_queues(route: b.TopicRouteData) -> list[tuple[str, str, int]]:
    """(broker name, master address, queue id) of every queue a producer may write: the queues of each writable
    broker entry that has a master (TopicPublishInfo as MQClientInstance builds it)."""
    masters = {bd.broker_name: bd.master_addr for bd in route.broker_datas if bd.master_addr}
    return [
        (qd.broker_name, masters[qd.broker_name], queue_id)
        for qd in sorted(route.queue_datas, key=lambda qd: qd.broker_name)
        if b.PermName.is_writeable(qd.perm) and qd.broker_name in masters
        for queue_id in range(qd.write_queue_nums)
    ]


def _pick_queue(admin: MQAdmin, topic: str, queue: b.MessageQueue | None) -> tuple[str, str, int]:
    queues = writable_queues(admin.examine_topic_route_info(topic))
    if queue is not None:
        queues = [q for q in queues if (q[0], q[2]) == (queue.broker_name, queue.queue_id)]
        if not queues:
            raise ValueError(f"{queue.broker_name} queue {queue.queue_id} is not a writable queue of topic {topic}")
    if not queues:
        raise ValueError(f"topic {topic} has no writable queue on a master")
    return random.choice(queues)


def message_properties(
    properties: Mapping[str, str] | None, tags: str | None, keys: Iterable[str], uniq_key: str
) -> dict[str, str]:
    """The properties a producer sends: the given ones, then TAGS, KEYS (space-separated, as the index splits them),
    WAIT (the Java default) and the producer id."""
    result = dict(properties or {})
    if tags:
        result["TAGS"] = tags
    keys = list(keys)
    for key in keys:
        if not key or any(c.isspace() for c in key):
            raise ValueError(f"message key {key!r} must be non-empty and without spaces (spaces separate keys)")
    if keys:
        result["KEYS"] = " ".join(keys)
    result.setdefault("WAIT", "true")
    result["UNIQ_KEY"] = uniq_key
    return result


def send_message(
    admin: MQAdmin,
    topic: str,
    body: bytes,
    *,
    tags: str | None = None,
    keys: Iterable[str] = (),
    properties: Mapping[str, str] | None = None,
    uniq_key: str | None = None,
    queue: b.MessageQueue | None = None,
    flag: int = 0,
    reconsume_times: int = 0,
    max_reconsume_times: int | None = None,
) -> SendResult:
    """Send one message to ``topic`` (to ``queue`` when given, else a random writable queue) and return where it
    was stored. One attempt, no retry on another broker: a caller that must not send twice checks the index
    (resend.already_sent) before trying again. A refusal raises RemotingError with the broker's code and remark."""
    if not body:
        raise ValueError("the message body is empty (producers refuse such a message)")
    uniq_key = uniq_key or new_uniq_key()
    sent_properties = message_properties(properties, tags, keys, uniq_key)
    broker_name, addr, queue_id = _pick_queue(admin, topic, queue)
    sys_flag = 0
    if len(body) > COMPRESS_OVER:
        body, sys_flag = zlib.compress(body, _ZLIB_LEVEL), COMPRESSED_FLAG
    response = admin.send_message(
        addr,
        topic,
        queue_id,
        body,
        sent_properties,
        flag=flag,
        sys_flag=sys_flag,
        reconsume_times=reconsume_times,
        max_reconsume_times=max_reconsume_times,
    )
    return SendResult(
        msg_id=uniq_key,
        offset_msg_id=response.offset_msg_id,
        broker_name=broker_name,
        queue_id=response.queue_id,
        queue_offset=response.queue_offset,
        topic=topic,
        status=response.status,
    )
