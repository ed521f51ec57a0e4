"""Offset and throughput figures: consume progress, topic offsets, broker-wide consume stats, stats windows.

``offsetTable`` maps here are keyed by :class:`MessageQueue`, which fastjson writes as object keys; they keep the
broker's (hash) order so a re-encoded body is identical. Shapes follow org.apache.rocketmq.common.admin and
``protocol/body`` (4.9.x).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from monitor.remoting.body._wire import WireBean
from monitor.remoting.body.route import MessageQueue


@dataclass
class OffsetWrapper(WireBean):
    broker_offset: int = 0
    consumer_offset: int = 0
    last_timestamp: int = 0
    pull_offset: int | None = None  # RocketMQ 5: where the group's pulls have got to (None from 4.x brokers)

    @property
    def lag(self) -> int:
        """Messages not yet consumed in this queue (``brokerOffset - consumerOffset``, as mqadmin's Diff)."""
        return self.broker_offset - self.consumer_offset

    @property
    def inflight(self) -> int | None:
        """Messages pulled but not yet committed (``pullOffset - consumerOffset``, mqadmin 5's Inflight); None when
        the broker does not report pull offsets."""
        return None if self.pull_offset is None else self.pull_offset - self.consumer_offset


@dataclass
class ConsumeStats(WireBean):
    """GET_CONSUME_STATS answer: per-queue progress of one consumer group, and its consume TPS."""

    offset_table: dict[MessageQueue, OffsetWrapper] = field(default_factory=dict)
    consume_tps: float = 0.0

    @property
    def total_diff(self) -> int:
        """Java's ``computeTotalDiff()``: the group's lag over all queues."""
        return sum(offset.lag for offset in self.offset_table.values())


@dataclass
class TopicOffset(WireBean):
    min_offset: int = 0
    max_offset: int = 0
    last_update_timestamp: int = 0


@dataclass
class TopicStatsTable(WireBean):
    """GET_TOPIC_STATS_INFO answer: min/max offset of every queue of a topic, and (RocketMQ 5) the topic's put TPS."""

    offset_table: dict[MessageQueue, TopicOffset] = field(default_factory=dict)
    topic_put_tps: float | None = None


@dataclass
class ConsumeStatsList(WireBean):
    """GET_BROKER_CONSUME_STATS answer: a list of single-entry maps ``{group: [ConsumeStats, one per topic]}``."""

    consume_stats_list: list[dict[str, list[ConsumeStats]]] = field(default_factory=list)
    broker_addr: str | None = None
    total_diff: int = 0

    def by_group(self) -> dict[str, list[ConsumeStats]]:
        """The list folded into one map, group name to its ConsumeStats."""
        merged: dict[str, list[ConsumeStats]] = {}
        for entry in self.consume_stats_list:
            for group, stats in entry.items():
                merged.setdefault(group, []).extend(stats)
        return merged


@dataclass
class BrokerStatsItem(WireBean):
    sum: int = 0
    tps: float = 0.0
    avgpt: float = 0.0


@dataclass
class BrokerStatsData(WireBean):
    """VIEW_BROKER_STATS_DATA answer: one stats key over the last minute, hour and day."""

    stats_minute: BrokerStatsItem = field(default_factory=BrokerStatsItem)
    stats_hour: BrokerStatsItem = field(default_factory=BrokerStatsItem)
    stats_day: BrokerStatsItem = field(default_factory=BrokerStatsItem)


__all__ = [
    "BrokerStatsData",
    "BrokerStatsItem",
    "ConsumeStats",
    "ConsumeStatsList",
    "OffsetWrapper",
    "TopicOffset",
    "TopicStatsTable",
]
