"""Stored time series, one module per kind of sample."""

from stats.models.health import BrokerProbe, NameServerProbe
from stats.models.servers import SERVER_SLOT, ServerDiskSample, ServerSample, slot_start
from stats.models.traffic import (
    BlockedQueueMinute,
    BrokerMinute,
    ClientMinute,
    ClusterMinute,
    ConsumeMinute,
    GroupMinute,
    OffsetMovedEvent,
    QueueLagMinute,
    TopicMinute,
)

__all__ = [
    "SERVER_SLOT",
    "BlockedQueueMinute",
    "BrokerMinute",
    "BrokerProbe",
    "ClientMinute",
    "ClusterMinute",
    "ConsumeMinute",
    "GroupMinute",
    "NameServerProbe",
    "OffsetMovedEvent",
    "QueueLagMinute",
    "ServerDiskSample",
    "ServerSample",
    "TopicMinute",
    "slot_start",
]
