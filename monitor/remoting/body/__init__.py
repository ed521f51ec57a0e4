"""Typed RocketMQ remoting bodies.

Brokers and name servers answer admin requests with fastjson bodies whose shapes are Java classes
(TopicRouteData, ConsumeStats, ...). These dataclasses carry the same names in snake_case and one mechanism
(:mod:`._wire`) maps them to the wire both ways, so callers work with objects instead of dicts, reading is tolerant of
other clients and newer brokers, and ``encode()`` gives back the bytes a real 4.9 broker would send (a sandbox broker
relies on that).

Modules by area: ``route`` (name server data, topic config), ``heartbeat`` (client heartbeats, consumer enums),
``stats`` (offsets and throughput), ``consumer`` (connections, running info, offset tables), ``admin``
(subscription groups, runtime info, Properties text).
"""

from monitor.remoting.body._wire import WireBean
from monitor.remoting.body.admin import (
    BrokerRuntimeInfo,
    KVTable,
    SubscriptionGroupConfig,
    SubscriptionGroupWrapper,
    format_properties,
    parse_properties,
)
from monitor.remoting.body.consumer import (
    Connection,
    ConsumerConnection,
    ConsumerOffsetSerializeWrapper,
    ConsumerRunningInfo,
    ConsumeStatus,
    DelayOffsetSerializeWrapper,
    GetConsumerListByGroupResponseBody,
    GroupList,
    ProcessQueueInfo,
    ProducerConnection,
    ResetOffsetBody,
)
from monitor.remoting.body.heartbeat import (
    ConsumeFromWhere,
    ConsumerData,
    ConsumeType,
    HeartbeatData,
    MessageModel,
    ProducerData,
    SubscriptionData,
)
from monitor.remoting.body.route import (
    MASTER_ID,
    BrokerData,
    ClusterInfo,
    DataVersion,
    MessageQueue,
    PermName,
    QueueData,
    RegisterBrokerBody,
    TopicConfig,
    TopicConfigSerializeWrapper,
    TopicFilterType,
    TopicList,
    TopicRouteData,
)
from monitor.remoting.body.stats import (
    BrokerStatsData,
    BrokerStatsItem,
    ConsumeStats,
    ConsumeStatsList,
    OffsetWrapper,
    TopicOffset,
    TopicStatsTable,
)

__all__ = [
    "MASTER_ID",
    "BrokerData",
    "BrokerRuntimeInfo",
    "BrokerStatsData",
    "BrokerStatsItem",
    "ClusterInfo",
    "Connection",
    "ConsumeFromWhere",
    "ConsumeStats",
    "ConsumeStatsList",
    "ConsumeStatus",
    "ConsumeType",
    "ConsumerConnection",
    "ConsumerData",
    "ConsumerOffsetSerializeWrapper",
    "ConsumerRunningInfo",
    "DataVersion",
    "DelayOffsetSerializeWrapper",
    "GetConsumerListByGroupResponseBody",
    "GroupList",
    "HeartbeatData",
    "KVTable",
    "MessageModel",
    "MessageQueue",
    "OffsetWrapper",
    "PermName",
    "ProcessQueueInfo",
    "ProducerConnection",
    "ProducerData",
    "QueueData",
    "RegisterBrokerBody",
    "ResetOffsetBody",
    "SubscriptionData",
    "SubscriptionGroupConfig",
    "SubscriptionGroupWrapper",
    "TopicConfig",
    "TopicConfigSerializeWrapper",
    "TopicFilterType",
    "TopicList",
    "TopicOffset",
    "TopicRouteData",
    "TopicStatsTable",
    "WireBean",
    "format_properties",
    "parse_properties",
]
