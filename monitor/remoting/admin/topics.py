"""Topic calls to brokers: topic configs, per-queue offsets and the offset for a time."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable

from monitor.remoting import body as b
from monitor.remoting import headers as h
from monitor.remoting.admin.base import (
    DEFAULT_TOPIC,
    AdminBase,
)
from monitor.remoting.codes import RequestCode


class TopicAdmin(AdminBase):
    async def create_and_update_topic_config(self, broker_addr: str, config: b.TopicConfig) -> None:
        header = h.CreateTopicRequestHeader(
            topic=config.topic_name,
            default_topic=DEFAULT_TOPIC,
            read_queue_nums=config.read_queue_nums,
            write_queue_nums=config.write_queue_nums,
            perm=config.perm,
            topic_filter_type=config.topic_filter_type,
            topic_sys_flag=config.topic_sys_flag,
            order=config.order,
        )
        await self.call(broker_addr, self._command(RequestCode.UPDATE_AND_CREATE_TOPIC, header))

    async def delete_topic_in_broker(self, broker_addrs: Iterable[str], topic: str) -> None:
        header = h.DeleteTopicRequestHeader(topic=topic)
        for addr in broker_addrs:
            await self.call(addr, self._command(RequestCode.DELETE_TOPIC_IN_BROKER, header))

    async def get_all_topic_config(self, broker_addr: str) -> b.TopicConfigSerializeWrapper:
        response = await self.call(broker_addr, self._command(RequestCode.GET_ALL_TOPIC_CONFIG))
        return b.TopicConfigSerializeWrapper.decode(response.body)

    async def get_topic_stats_info(self, broker_addr: str, topic: str) -> b.TopicStatsTable:
        """Per-queue min/max offsets of the topic on one broker."""
        header = h.GetTopicStatsInfoRequestHeader(topic=topic)
        response = await self.call(broker_addr, self._command(RequestCode.GET_TOPIC_STATS_INFO, header))
        return b.TopicStatsTable.decode(response.body)

    async def examine_topic_stats(self, topic: str) -> b.TopicStatsTable:
        """Per-queue min/max offsets from every master that serves the topic, merged."""
        route = await self.examine_topic_route_info(topic)
        masters = [addr for addr in (bd.master_addr for bd in route.broker_datas) if addr]
        results = await asyncio.gather(*(self.get_topic_stats_info(addr, topic) for addr in masters))
        merged = b.TopicStatsTable()
        for table in results:
            merged.offset_table.update(table.offset_table)
            if table.topic_put_tps is not None:  # RocketMQ 5: each master's put TPS of the topic
                merged.topic_put_tps = (merged.topic_put_tps or 0.0) + table.topic_put_tps
        return merged

    async def query_topic_consume_by_who(self, broker_addr: str, topic: str) -> b.GroupList:
        header = h.QueryTopicConsumeByWhoRequestHeader(topic=topic)
        response = await self.call(broker_addr, self._command(RequestCode.QUERY_TOPIC_CONSUME_BY_WHO, header))
        return b.GroupList.decode(response.body)

    async def get_max_offset(self, broker_addr: str, topic: str, queue_id: int) -> int:
        header = h.TopicQueueRequestHeader(topic=topic, queue_id=queue_id)
        response = await self.call(broker_addr, self._command(RequestCode.GET_MAX_OFFSET, header))
        return h.OffsetResponseHeader.from_ext_fields(response.ext_fields).offset

    async def get_min_offset(self, broker_addr: str, topic: str, queue_id: int) -> int:
        header = h.TopicQueueRequestHeader(topic=topic, queue_id=queue_id)
        response = await self.call(broker_addr, self._command(RequestCode.GET_MIN_OFFSET, header))
        return h.OffsetResponseHeader.from_ext_fields(response.ext_fields).offset

    async def search_offset(self, broker_addr: str, topic: str, queue_id: int, timestamp: int) -> int:
        header = h.SearchOffsetRequestHeader(topic=topic, queue_id=queue_id, timestamp=timestamp)
        response = await self.call(broker_addr, self._command(RequestCode.SEARCH_OFFSET_BY_TIMESTAMP, header))
        return h.OffsetResponseHeader.from_ext_fields(response.ext_fields).offset
