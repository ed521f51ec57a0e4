"""Client heartbeats (HEART_BEAT) and the subscription/consumer enums they carry.

Java clients write enums by name (``"CONSUME_PASSIVELY"``); the C++ client writes their ordinals
(``"consumeType":1``) and ``subVersion`` as a string. Both decode to the same objects; enum values here are the
Java ordinals for that reason. Shapes follow org.apache.rocketmq.common.protocol.heartbeat (4.9.x).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from monitor.remoting.body._wire import WireBean, now_millis, wire


class ConsumeType(enum.Enum):
    CONSUME_ACTIVELY = 0  # pull consumer
    CONSUME_PASSIVELY = 1  # push consumer


class MessageModel(enum.Enum):
    BROADCASTING = 0
    CLUSTERING = 1


class ConsumeFromWhere(enum.Enum):
    CONSUME_FROM_LAST_OFFSET = 0
    CONSUME_FROM_LAST_OFFSET_AND_FROM_MIN_WHEN_BOOT_FIRST = 1  # deprecated in Java
    CONSUME_FROM_MIN_OFFSET = 2  # deprecated in Java
    CONSUME_FROM_MAX_OFFSET = 3  # deprecated in Java
    CONSUME_FROM_FIRST_OFFSET = 4
    CONSUME_FROM_TIMESTAMP = 5


@dataclass
class SubscriptionData(WireBean):
    """One topic subscription of a consumer group: the expression (``"*"``, ``"TagA || TagB"``) and its tags."""

    topic: str = ""
    sub_string: str = ""
    class_filter_mode: bool = False
    tags_set: list[str] = field(default_factory=list)
    code_set: list[int] = field(default_factory=list)
    sub_version: int = field(default_factory=now_millis)
    expression_type: str = "TAG"


@dataclass
class ProducerData(WireBean):
    group_name: str = ""


@dataclass
class ConsumerData(WireBean):
    group_name: str = ""
    consume_type: ConsumeType | None = None
    message_model: MessageModel | None = None
    consume_from_where: ConsumeFromWhere | None = None
    subscription_data_set: list[SubscriptionData] = field(default_factory=list)
    unit_mode: bool = False


@dataclass
class HeartbeatData(WireBean):
    client_id: str = wire("clientID", default="")
    producer_data_set: list[ProducerData] = field(default_factory=list)
    consumer_data_set: list[ConsumerData] = field(default_factory=list)


__all__ = [
    "ConsumeFromWhere",
    "ConsumeType",
    "ConsumerData",
    "HeartbeatData",
    "MessageModel",
    "ProducerData",
    "SubscriptionData",
]
