"""Who is connected and what consumers are doing: connections, running info, group membership, offset tables.

ConsumerRunningInfo comes from the client itself (the broker relays GET_CONSUMER_RUNNING_INFO), so the C++ client
answers in jsoncpp's style: pretty-printed, longs as strings, uninitialised ``lastLockTimestamp`` values, no
``cachedMsgSizeInMiB``. Those decode to the same types. Shapes follow org.apache.rocketmq.common.protocol.body and
``store/schedule/DelayOffsetSerializeWrapper`` (4.9.x).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from monitor.remoting.body._wire import WireBean, wire
from monitor.remoting.body.heartbeat import ConsumeFromWhere, ConsumeType, MessageModel, SubscriptionData
from monitor.remoting.body.route import MessageQueue

_INT64_LIMIT = 1 << 63


@dataclass
class Connection(WireBean):
    client_id: str = ""
    client_addr: str = ""
    language: str | None = None  # LanguageCode name: JAVA, CPP, GO, ...
    version: int = 0


@dataclass
class ConsumerConnection(WireBean):
    """GET_CONSUMER_CONNECTION_LIST answer: the group's live clients and the subscription the broker holds."""

    connection_set: list[Connection] = field(default_factory=list)
    subscription_table: dict[str, SubscriptionData] = field(default_factory=dict)
    consume_type: ConsumeType | None = None
    message_model: MessageModel | None = None
    consume_from_where: ConsumeFromWhere | None = None


@dataclass
class ProducerConnection(WireBean):
    connection_set: list[Connection] = field(default_factory=list)


@dataclass
class ProcessQueueInfo(WireBean):
    """A consumer's local view of one queue: committed offset, cached messages, lock state."""

    commit_offset: int = 0
    cached_msg_min_offset: int = 0
    cached_msg_max_offset: int = 0
    cached_msg_count: int = 0
    cached_msg_size_in_mib: int = wire("cachedMsgSizeInMiB", default=0)
    transaction_msg_min_offset: int = 0
    transaction_msg_max_offset: int = 0
    transaction_msg_count: int = 0
    locked: bool = False
    try_unlock_times: int = 0
    last_lock_timestamp: int = 0
    dropped: bool = wire("droped", default=False)
    last_pull_timestamp: int = 0
    last_consume_timestamp: int = 0

    def __post_init__(self) -> None:
        # The C++ client writes its offsets unsigned: "no offset yet" (-1) arrives as 2**64 - 1, which a Java long
        # cannot hold (RocketMQ 5's mqadmin fails on it); read as the signed 64-bit value it is.
        for name in ("commit_offset", "cached_msg_min_offset", "cached_msg_max_offset"):
            value = getattr(self, name)
            if value >= _INT64_LIMIT:
                setattr(self, name, value - 2 * _INT64_LIMIT)


@dataclass
class ConsumeStatus(WireBean):
    """Per-topic pull/consume rates a consumer reports (TPS per second, RT in milliseconds)."""

    pull_rt: float = wire("pullRT", default=0.0)
    pull_tps: float = wire("pullTPS", default=0.0)
    consume_rt: float = wire("consumeRT", default=0.0)
    consume_ok_tps: float = wire("consumeOKTPS", default=0.0)
    consume_failed_tps: float = wire("consumeFailedTPS", default=0.0)
    consume_failed_msgs: int = 0


@dataclass
class ConsumerRunningInfo(WireBean):
    """GET_CONSUMER_RUNNING_INFO answer, written by the consumer client (Java or C++)."""

    properties: dict[str, str] = field(default_factory=dict)
    subscription_set: list[SubscriptionData] = field(default_factory=list)
    mq_table: dict[MessageQueue, ProcessQueueInfo] = field(default_factory=dict)
    status_table: dict[str, ConsumeStatus] = field(default_factory=dict)
    jstack: str | None = None


@dataclass
class GetConsumerListByGroupResponseBody(WireBean):
    consumer_id_list: list[str] = field(default_factory=list)


@dataclass
class GroupList(WireBean):
    """QUERY_TOPIC_CONSUME_BY_WHO answer: the groups that consume a topic."""

    group_list: list[str] = field(default_factory=list)


@dataclass
class ResetOffsetBody(WireBean):
    """INVOKE_BROKER_TO_RESET_OFFSET answer and RESET_CONSUMER_CLIENT_OFFSET push: the new offset of each queue."""

    offset_table: dict[MessageQueue, int] = field(default_factory=dict)


@dataclass
class ConsumerOffsetSerializeWrapper(WireBean):
    """GET_ALL_CONSUMER_OFFSET answer: ``"topic@group"`` to queue id to committed offset."""

    offset_table: dict[str, dict[int, int]] = field(default_factory=dict)


@dataclass
class DelayOffsetSerializeWrapper(WireBean):
    """GET_ALL_DELAY_OFFSET answer: delay level to the schedule service's offset in SCHEDULE_TOPIC_XXXX."""

    offset_table: dict[int, int] = field(default_factory=dict)


__all__ = [
    "Connection",
    "ConsumeStatus",
    "ConsumerConnection",
    "ConsumerOffsetSerializeWrapper",
    "ConsumerRunningInfo",
    "DelayOffsetSerializeWrapper",
    "GetConsumerListByGroupResponseBody",
    "GroupList",
    "ProcessQueueInfo",
    "ProducerConnection",
    "ResetOffsetBody",
]
