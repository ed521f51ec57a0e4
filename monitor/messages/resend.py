"""Resend a stored message: to its original topic, or to a consumer group's retry topic so that only that group
consumes it again.

Where a message came from. A message a consumer gave up on is stored again by the broker (consumerSendMsgBack) in
``%RETRY%group`` and, after the group's max reconsume times, in ``%DLQ%group``; each copy carries the original topic
in RETRY_TOPIC and the first copy's id in ORIGIN_MESSAGE_ID (5.x pop consumers: DLQ_ORIGIN_TOPIC and
DLQ_ORIGIN_MESSAGE_ID). A delayed message waits in SCHEDULE_TOPIC_XXXX with its destination in REAL_TOPIC.

Sending to ``%RETRY%group``. The broker keeps such a message in the retry topic while its reconsume times are below
the group's max (SendMessageProcessor.handleRetryAndDLQ), and every push consumer of the group pulls its retry topic;
a consumer shows the message under the topic named in RETRY_TOPIC (DefaultMQPushConsumerImpl.resetRetryAndNamespace),
so the resent message reaches the group's listener as a message of the original topic, and no other group sees it.

Idempotence. The caller gives each resend a deterministic producer id (send.make_uniq_key from its operation and
item); after a crash it asks :func:`already_sent` whether the broker's index holds that id in the target topic
before sending again.
"""

from __future__ import annotations

from typing import Literal, NamedTuple

from monitor.messages.send import SendResult, send_message
from monitor.remoting.admin import MQAdmin, retry_topic
from monitor.remoting.message import MessageExt

RETRY_PREFIX = "%RETRY%"
DLQ_PREFIX = "%DLQ%"
SCHEDULE_TOPIC = "SCHEDULE_TOPIC_XXXX"

# Properties that belong to one delivery of a message (the broker's, a consumer's or a transaction's bookkeeping),
# not to the message: a resend starts a new delivery, so it drops them and the broker sets its own. A delay or
# timer is dropped too: a resent message is for now.
DELIVERY_PROPERTIES = frozenset(
    {
        "UNIQ_KEY",
        "WAIT",
        "DELAY",
        "RETRY_TOPIC",
        "ORIGIN_MESSAGE_ID",
        "DLQ_ORIGIN_TOPIC",
        "DLQ_ORIGIN_MESSAGE_ID",
        "REAL_TOPIC",
        "REAL_QID",
        "RECONSUME_TIME",
        "MAX_RECONSUME_TIMES",
        "CONSUME_START_TIME",
        "CLUSTER",
        "MIN_OFFSET",
        "MAX_OFFSET",
        "MSG_REGION",
        "TRACE_ON",
        "TRAN_MSG",
        "PGROUP",
        "TRAN_PREPARED_QUEUE_OFFSET",
        "TRANSACTION_CHECK_TIMES",
        "CHECK_IMMUNITY_TIME_IN_SECONDS",
        "__transactionId__",
        "INNER_MULTI_DISPATCH",
        "INNER_MULTI_QUEUE_OFFSET",
        "POP_CK",
        "POP_CK_OFFSET",
        "TIMER_DELAY_SEC",
        "TIMER_DELIVER_MS",
        "TIMER_DELAY_MS",
        "TIMER_ENQUEUE_MS",
        "TIMER_DEQUEUE_MS",
        "TIMER_ROLL_TIMES",
        "TIMER_OUT_MS",
        "TIMER_DEL_UNIQKEY",
        "TIMER_DELAY_LEVEL",
        "__STARTDELIVERTIME",
    }
)


class Origin(NamedTuple):
    topic: str  # the topic the producer sent to
    msg_id: str  # the id of the first copy (offset id or producer id, as the broker or client recorded it)


def is_group_topic(topic: str) -> bool:
    """A retry or dead-letter topic of a consumer group."""
    return topic.startswith((RETRY_PREFIX, DLQ_PREFIX))


def origin_of(msg: MessageExt) -> Origin:
    """The topic and id a retry, dead-letter or delayed copy stands for; a plain message stands for itself."""
    props = msg.properties
    topic = props.get("RETRY_TOPIC") or props.get("DLQ_ORIGIN_TOPIC")
    if not topic and msg.real_topic and not is_group_topic(msg.real_topic):
        topic = msg.real_topic
    msg_id = props.get("ORIGIN_MESSAGE_ID") or props.get("DLQ_ORIGIN_MESSAGE_ID") or msg.uniq_key or msg.msg_id
    return Origin(topic or msg.topic, msg_id)


def resend_topic(msg: MessageExt, to: Literal["origin", "retry"], group: str | None) -> str:
    """The topic a resend goes to; raises ValueError when it cannot be told."""
    if to == "retry":
        if not group:
            raise ValueError("a resend to a retry topic needs the consumer group")
        return retry_topic(group)
    if to != "origin":
        raise ValueError(f"resend to {to!r}: say 'origin' or 'retry'")
    topic = origin_of(msg).topic
    if is_group_topic(topic) or topic == SCHEDULE_TOPIC:
        raise ValueError(f"message {msg.msg_id} in {msg.topic} does not say which topic it came from")
    return topic


def resend(
    admin: MQAdmin, msg: MessageExt, *, to: Literal["origin", "retry"], group: str | None = None, uniq_key: str
) -> SendResult:
    """Send a copy of ``msg`` (body, flag, tags, keys and user properties) under the producer id ``uniq_key``:
    ``to="origin"``, to the topic it was first sent to; ``to="retry"``, to ``%RETRY%group``, carrying the original
    topic (RETRY_TOPIC) and id (ORIGIN_MESSAGE_ID) as the broker's own retries do. Either way a fresh delivery:
    reconsume times 0, no delay. Sends once; see :func:`already_sent`."""
    topic = resend_topic(msg, to, group)
    properties = {name: value for name, value in msg.properties.items() if name not in DELIVERY_PROPERTIES}
    if to == "retry":
        origin = origin_of(msg)
        properties["RETRY_TOPIC"] = origin.topic
        properties["ORIGIN_MESSAGE_ID"] = origin.msg_id
    return send_message(admin, topic, msg.body, properties=properties, uniq_key=uniq_key, flag=msg.flag)


def already_sent(admin: MQAdmin, topic: str, uniq_key: str) -> MessageExt | None:
    """The copy of ``topic`` stored under producer id ``uniq_key``, if the broker's index has one (QUERY_MESSAGE by
    unique key on every broker of the topic); None otherwise. The index is written a moment after the store, so
    ask this of a send that may have happened before a crash, not of one a millisecond old."""
    found = admin.query_message_by_uniq_key(topic, uniq_key)
    return found[0] if found else None
