"""Stored time series, one module per kind of sample."""

from stats.models.consumers import ConsumerClientMinute
from stats.models.health import BrokerProbe, NameServerProbe
from stats.models.jobs import JobRun, JobState
from stats.models.producers import ProducerMinute
from stats.models.rankings import RANKING_SUBJECT, Ranking, RankingKind
from stats.models.rollups import (
    LATENCY_GRAINS,
    RESOLUTION_LENGTH,
    ROLLUP_MODELS,
    BrokerRollup,
    ClusterRollup,
    ConsumeRollup,
    ProducerLatencyRollup,
    Resolution,
    ServerRollup,
    TopicRollup,
)
from stats.models.servers import SERVER_SLOT, ServerDiskSample, ServerSample, slot_start
from stats.models.tracing import TraceClientMinute
from stats.models.traffic import (
    BlockedQueueMinute,
    BrokerMinute,
    ClientMinute,
    ClientQueueLagMinute,
    ClusterMinute,
    ConsumeMinute,
    GroupMinute,
    OffsetMovedEvent,
    QueueLagMinute,
    TopicMinute,
)

__all__ = [
    "LATENCY_GRAINS",
    "RANKING_SUBJECT",
    "RESOLUTION_LENGTH",
    "ROLLUP_MODELS",
    "SERVER_SLOT",
    "BlockedQueueMinute",
    "BrokerMinute",
    "BrokerProbe",
    "BrokerRollup",
    "ClientMinute",
    "ClientQueueLagMinute",
    "ClusterMinute",
    "ClusterRollup",
    "ConsumeMinute",
    "ConsumeRollup",
    "ConsumerClientMinute",
    "GroupMinute",
    "JobRun",
    "JobState",
    "NameServerProbe",
    "OffsetMovedEvent",
    "ProducerLatencyRollup",
    "ProducerMinute",
    "QueueLagMinute",
    "Ranking",
    "RankingKind",
    "Resolution",
    "ServerDiskSample",
    "ServerRollup",
    "ServerSample",
    "TopicMinute",
    "TopicRollup",
    "TraceClientMinute",
    "slot_start",
]
