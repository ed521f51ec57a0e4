"""Consumer-group calls: consume stats, connections, running info, committed offsets and resets."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from monitor.remoting import body as b
from monitor.remoting import headers as h
from monitor.remoting.admin.base import (
    RESET_TO_NOW,
    AdminBase,
    retry_topic,
)
from monitor.remoting.codes import RequestCode, ResponseCode
from monitor.remoting.errors import (
    RemotingError,
)


@dataclass
class RollbackStats:
    """One queue of a direct offset reset, named as RocketMQ's admin RollbackStats: where the queue ends, where
    the group was, the offset found for the time, and where the group is now."""

    broker_name: str
    queue_id: int
    broker_offset: int
    consumer_offset: int
    timestamp_offset: int
    rollback_offset: int


class ConsumerAdmin(AdminBase):
    async def _group_broker_addrs(self, group: str, topic: str | None = None) -> list[str]:
        """The masters serving the group's retry topic; with ``topic``, those serving the topic when the group has
        no retry topic (a group that never had a push consumer), as RocketMQ 5's admin does."""
        try:
            route = await self.examine_topic_route_info(retry_topic(group))
        except RemotingError as exc:
            if topic is None or exc.code != ResponseCode.TOPIC_NOT_EXIST:
                raise
            route = await self.examine_topic_route_info(topic)
        return [addr for addr in (bd.master_addr for bd in route.broker_datas) if addr]

    async def get_consume_stats(self, broker_addr: str, group: str, topic: str | None = None) -> b.ConsumeStats:
        header = h.GetConsumeStatsRequestHeader(consumer_group=group, topic=topic)
        response = await self.call(broker_addr, self._command(RequestCode.GET_CONSUME_STATS, header))
        return b.ConsumeStats.decode(response.body)

    async def examine_consume_stats(self, group: str, topic: str | None = None) -> b.ConsumeStats:
        """Consume stats of a group from every master serving its retry topic (or ``topic``), merged (what
        consumerProgress shows). Consume TPS read from masters alone misses reads served by slaves; the collectors add
        those."""
        addrs = await self._group_broker_addrs(group, topic)
        parts = await asyncio.gather(*(self.get_consume_stats(addr, group, topic) for addr in addrs))
        merged = b.ConsumeStats()
        for part in parts:
            merged.offset_table.update(part.offset_table)
            merged.consume_tps += part.consume_tps
        return merged

    async def get_consumer_connection_list(self, broker_addr: str, group: str) -> b.ConsumerConnection:
        """The group's clients connected to one broker (every client connects to every broker it uses). A group
        without any is RemotingError CONSUMER_NOT_ONLINE."""
        header = h.GetConsumerConnectionListRequestHeader(consumer_group=group)
        response = await self.call(broker_addr, self._command(RequestCode.GET_CONSUMER_CONNECTION_LIST, header))
        return b.ConsumerConnection.decode(response.body)

    async def examine_consumer_connection_info(self, group: str) -> b.ConsumerConnection:
        addrs = await self._group_broker_addrs(group)
        if not addrs:
            raise RemotingError(ResponseCode.CONSUMER_NOT_ONLINE, f"the consumer group[{group}] not online")
        return await self.get_consumer_connection_list(addrs[0], group)

    async def examine_producer_connection_info(self, group: str, topic: str) -> b.ProducerConnection:
        route = await self.examine_topic_route_info(topic)
        header = h.GetProducerConnectionListRequestHeader(producer_group=group)
        merged = b.ProducerConnection()
        for addr in (bd.master_addr for bd in route.broker_datas):
            if addr:
                response = await self.call(addr, self._command(RequestCode.GET_PRODUCER_CONNECTION_LIST, header))
                merged.connection_set.extend(b.ProducerConnection.decode(response.body).connection_set)
        return merged

    async def get_consumer_id_list_by_group(self, broker_addr: str, group: str) -> list[str]:
        header = h.GetConsumerListByGroupRequestHeader(consumer_group=group)
        response = await self.call(broker_addr, self._command(RequestCode.GET_CONSUMER_LIST_BY_GROUP, header))
        return b.GetConsumerListByGroupResponseBody.decode(response.body).consumer_id_list

    async def get_consumer_running_info(
        self, group: str, client_id: str, jstack: bool = False, broker_addr: str | None = None
    ) -> b.ConsumerRunningInfo:
        """The broker relays this to the client's own connection and returns the client's answer."""
        header = h.GetConsumerRunningInfoRequestHeader(consumer_group=group, client_id=client_id, jstack_enable=jstack)
        addr = broker_addr or (await self._group_broker_addrs(group) or [None])[0]
        if addr is None:
            raise RemotingError(ResponseCode.CONSUMER_NOT_ONLINE, f"the consumer group[{group}] not online")
        response = await self.call(addr, self._command(RequestCode.GET_CONSUMER_RUNNING_INFO, header))
        return b.ConsumerRunningInfo.decode(response.body)

    async def query_consumer_offset(self, broker_addr: str, group: str, topic: str, queue_id: int) -> int:
        header = h.QueryConsumerOffsetRequestHeader(consumer_group=group, topic=topic, queue_id=queue_id)
        response = await self.call(broker_addr, self._command(RequestCode.QUERY_CONSUMER_OFFSET, header))
        return h.QueryConsumerOffsetResponseHeader.from_ext_fields(response.ext_fields).offset

    async def update_consumer_offset(self, broker_addr: str, group: str, topic: str, queue_id: int, offset: int):
        header = h.UpdateConsumerOffsetRequestHeader(
            consumer_group=group, topic=topic, queue_id=queue_id, commit_offset=offset
        )
        await self.call(broker_addr, self._command(RequestCode.UPDATE_CONSUMER_OFFSET, header))

    async def reset_offset_by_timestamp(
        self, topic: str, group: str, timestamp: int, is_force: bool = True, *, cplus: bool = False
    ) -> dict[b.MessageQueue, int]:
        """Ask each master to reset the group's offsets and notify its online consumers (INVOKE_BROKER_TO_RESET_OFFSET).
        Raises RemotingError CONSUMER_NOT_ONLINE when no consumer is online; see reset_offset_by_timestamp_old.

        The broker tells the clients in the layout the request's language asks for: ``cplus`` sends it as C++ (as
        mqadmin's ``-c`` does), for C++ clients, which cannot read the Java layout and keep their old offsets."""
        route = await self.examine_topic_route_info(topic)
        header = h.ResetOffsetRequestHeader(topic=topic, group=group, timestamp=timestamp, is_force=is_force)
        table: dict[b.MessageQueue, int] = {}
        for addr in (bd.master_addr for bd in route.broker_datas):
            if addr:
                cmd = self._command(RequestCode.INVOKE_BROKER_TO_RESET_OFFSET, header)
                if cplus:
                    cmd.language = "CPP"
                response = await self.call(addr, cmd)
                if response.body:
                    table.update(b.ResetOffsetBody.decode(response.body).offset_table)
        return table

    async def reset_offset_by_timestamp_old(
        self, group: str, topic: str, timestamp: int, force: bool = True
    ) -> list[RollbackStats]:
        """mqadmin's resetOffsetByTimestampOld, for a group with no consumer online: on each master of the topic,
        find the offset for the time (the max offset for -1, "now") in every queue the group has consumed (every
        readable queue if it has consumed none there) and commit it, unless it lies ahead of the committed offset
        and force is off."""
        route = await self.examine_topic_route_info(topic)
        read_queues = {qd.broker_name: qd.read_queue_nums for qd in route.queue_datas}
        rollbacks = []
        for bd in route.broker_datas:
            addr = bd.master_addr
            if addr is None:
                continue
            stats = await self.get_consume_stats(addr, group)
            queues = {mq: off for mq, off in stats.offset_table.items() if mq.topic == topic}
            if not queues:
                topic_offsets = (await self.examine_topic_stats(topic)).offset_table
                for queue_id in range(read_queues.get(bd.broker_name, 0)):
                    mq = b.MessageQueue(topic, bd.broker_name, queue_id)
                    known = topic_offsets.get(mq, b.TopicOffset())
                    queues[mq] = b.OffsetWrapper(broker_offset=known.max_offset, consumer_offset=known.min_offset)
            for mq, off in sorted(queues.items()):
                if timestamp == RESET_TO_NOW:
                    target = await self.get_max_offset(addr, topic, mq.queue_id)
                else:
                    target = await self.search_offset(addr, topic, mq.queue_id, timestamp)
                offset = off.consumer_offset
                if force or target <= off.consumer_offset:
                    await self.update_consumer_offset(addr, group, topic, mq.queue_id, target)
                    offset = target
                rollbacks.append(
                    RollbackStats(mq.broker_name, mq.queue_id, off.broker_offset, off.consumer_offset, target, offset)
                )
        return rollbacks
