"""The consumer side of AdminBrokerProcessor (4.9.4): consume progress, connections, running info relayed to a
client, offset resets pushed to clients, and who consumes what; the portal's consumer pages are built from these.

GET_CONSUMER_RUNNING_INFO and INVOKE_BROKER_TO_RESET_OFFSET reach into the consumers themselves, over the
connections they opened to this broker (Broker2Client; every client the sandbox meets is recent enough, so
Broker2Client's checks for pre-3.1.8 clients are left out): the running-info request is the admin's request copied
(extFields and body) under the broker's own opaque, and its answer goes back to the admin as the client wrote it,
language included; a reset is pushed to every member oneway (RESET_CONSUMER_CLIENT_OFFSET).
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from monitor.remoting import headers as h
from monitor.remoting.body import (
    Connection,
    ConsumerConnection,
    ConsumeStats,
    ConsumeStatsList,
    GroupList,
    MessageQueue,
    OffsetWrapper,
    ProducerConnection,
    ResetOffsetBody,
    WireBean,
)
from monitor.remoting.codes import RequestCode, ResponseCode
from monitor.remoting.command import RemotingCommand
from monitor.remoting.errors import RemotingError, RemotingTimeoutError
from monitor.sandbox.broker._common import java_set_order, mq_ordered, ordered
from monitor.sandbox.broker.admin import NOT_SET
from monitor.sandbox.broker.clients import ClientChannelInfo
from monitor.sandbox.connection import Connection as ClientConnection
from monitor.sandbox.dispatch import exception_simple_desc

if TYPE_CHECKING:
    from monitor.sandbox.broker.core import Broker

log = logging.getLogger(__name__)

_CALL_CLIENT_TIMEOUT = 10.0  # Broker2Client.callClient
_RESET_TO_NOW = -1
# How many groups GET_BROKER_CONSUME_STATS goes through before letting other requests in (a few milliseconds).
_GROUPS_PER_SLICE = 200


@dataclass
class MessageQueueForC(WireBean):
    topic: str = ""
    broker_name: str = ""
    queue_id: int = 0
    offset: int = 0


@dataclass
class ResetOffsetBodyForC(WireBean):
    """The RESET_CONSUMER_CLIENT_OFFSET body the broker writes when the admin asking is a C++ client."""

    offset_table: list[MessageQueueForC] = field(default_factory=list)


def _connection(channel: ClientChannelInfo) -> Connection:
    return Connection(
        client_id=channel.client_id,
        client_addr=channel.connection.remote_addr,
        language=channel.language,
        version=channel.version,
    )


def _timeout_text(exc: RemotingTimeoutError) -> str:
    return f"org.apache.rocketmq.remoting.exception.RemotingTimeoutException: {exc}"


class ConsumerAdminProcessor:
    def __init__(self, broker: Broker):
        self.broker = broker

    def handlers(self) -> dict[int, object]:
        return {
            RequestCode.GET_CONSUME_STATS: self.get_consume_stats,
            RequestCode.GET_CONSUMER_CONNECTION_LIST: self.get_consumer_connection_list,
            RequestCode.GET_PRODUCER_CONNECTION_LIST: self.get_producer_connection_list,
            RequestCode.GET_CONSUMER_RUNNING_INFO: self.get_consumer_running_info,
            RequestCode.INVOKE_BROKER_TO_RESET_OFFSET: self.reset_offset,
            RequestCode.QUERY_TOPIC_CONSUME_BY_WHO: self.query_topic_consume_by_who,
            RequestCode.GET_BROKER_CONSUME_STATS: self.get_broker_consume_stats,
        }

    # --- progress --------------------------------------------------------------------------------------------------

    def _queue_offsets(self, group: str, topic: str, queue_count: int) -> dict[MessageQueue, OffsetWrapper]:
        """Each queue's end, the group's committed offset (0 if none) and the store time of the last message it
        consumed."""
        store, offsets = self.broker.store, self.broker.offsets
        table = {}
        for queue_id in range(queue_count):
            consumer_offset = max(offsets.query(group, topic, queue_id), 0)
            last = store.message_store_timestamp(topic, queue_id, consumer_offset - 1) if consumer_offset else 0
            table[MessageQueue(topic, self.broker.broker_name, queue_id)] = OffsetWrapper(
                broker_offset=max(store.max_offset(topic, queue_id), 0),
                consumer_offset=consumer_offset,
                last_timestamp=max(last, 0),
            )
        return table

    def _consumed_topics(self, group: str) -> list[str]:
        """The topics a group has offsets for, skipping those an online group no longer subscribes to."""
        consumers = self.broker.consumers
        topics = []
        for topic in java_set_order(self.broker.offsets.topics_of_group(group)):
            if self.broker.topics.get(topic) is None:
                continue
            if consumers.find_subscription(group, topic) is None and consumers.subscription_count(group) > 0:
                continue
            topics.append(topic)
        return topics

    async def get_consume_stats(self, conn: ClientConnection, cmd: RemotingCommand) -> RemotingCommand:
        header = h.GetConsumeStatsRequestHeader.from_ext_fields(cmd.ext_fields)
        group = header.consumer_group
        topics = [header.topic] if header.topic and header.topic.strip() else self._consumed_topics(group)
        table: dict[MessageQueue, OffsetWrapper] = {}
        tps = 0.0
        for topic in topics:
            config = self.broker.topics.get(topic)
            if config is None:
                continue
            table.update(self._queue_offsets(group, topic, config.read_queue_nums))
            tps = self.broker.stats.tps_group_get_nums(group, topic) + tps
        stats = ConsumeStats(offset_table=mq_ordered(table), consume_tps=tps)
        return cmd.make_response(body=stats.encode())

    async def get_broker_consume_stats(self, conn: ClientConnection, cmd: RemotingCommand) -> RemotingCommand:
        """fetchAllConsumeStatsInBroker: every subscription group, one ConsumeStats per topic it consumed.

        With 10,000 groups this is seconds of work and megabytes of body, so the groups are gone through in slices
        with the loop free to answer other requests in between (Java walks its live maps from a pool thread too),
        and the body is encoded on a worker thread."""
        is_order = h.GetConsumeStatsInBrokerHeader.from_ext_fields(cmd.ext_fields).is_order
        entries = []
        total_diff = 0
        for index, group in enumerate(self.broker.groups.names()):
            if index and not index % _GROUPS_PER_SLICE:
                await asyncio.sleep(0)
            per_topic = []
            for topic in self._consumed_topics(group):
                config = self.broker.topics.get(topic)
                if is_order and not config.order:
                    continue
                offsets = self._queue_offsets(group, topic, config.write_queue_nums)
                stats = ConsumeStats(
                    offset_table=mq_ordered(offsets), consume_tps=self.broker.stats.tps_group_get_nums(group, topic)
                )
                total_diff += stats.total_diff
                per_topic.append(stats)
            entries.append({group: per_topic})
        body = ConsumeStatsList(consume_stats_list=entries, broker_addr=self.broker.addr, total_diff=total_diff)
        return cmd.make_response(body=await asyncio.get_running_loop().run_in_executor(None, body.encode))

    async def query_topic_consume_by_who(self, conn: ClientConnection, cmd: RemotingCommand) -> RemotingCommand:
        """Online groups subscribed to the topic plus every group with offsets for it."""
        topic = h.QueryTopicConsumeByWhoRequestHeader.from_ext_fields(cmd.ext_fields).topic
        groups = self.broker.consumers.groups_of_topic(topic) + self.broker.offsets.groups_of_topic(topic)
        return cmd.make_response(body=GroupList(group_list=java_set_order(groups)).encode())

    # --- connections -----------------------------------------------------------------------------------------------

    async def get_consumer_connection_list(self, conn: ClientConnection, cmd: RemotingCommand) -> RemotingCommand:
        group = h.GetConsumerConnectionListRequestHeader.from_ext_fields(cmd.ext_fields).consumer_group
        info = self.broker.consumers.get(group)
        if info is None:
            return cmd.make_response(ResponseCode.CONSUMER_NOT_ONLINE, f"the consumer group[{group}] not online")
        body = ConsumerConnection(
            connection_set=[
                Connection(
                    client_id=c.client_id, client_addr=c.connection.remote_addr, language=c.language, version=c.version
                )
                for c in info.channels.values()
            ],
            subscription_table=ordered(info.subscriptions),
            consume_type=info.consume_type,
            message_model=info.message_model,
            consume_from_where=info.consume_from_where,
        )
        return cmd.make_response(body=body.encode())

    async def get_producer_connection_list(self, conn: ClientConnection, cmd: RemotingCommand) -> RemotingCommand:
        group = h.GetProducerConnectionListRequestHeader.from_ext_fields(cmd.ext_fields).producer_group
        channels = self.broker.producers.groups.get(group)
        if channels is None:
            return cmd.make_response(ResponseCode.SYSTEM_ERROR, f"the producer group[{group}] not exist")
        body = ProducerConnection(
            connection_set=[
                Connection(
                    client_id=c.client_id, client_addr=c.connection.remote_addr, language=c.language, version=c.version
                )
                for c in channels.values()
            ]
        )
        return cmd.make_response(body=body.encode())

    # --- calls into the clients ------------------------------------------------------------------------------------

    async def get_consumer_running_info(self, conn: ClientConnection, cmd: RemotingCommand) -> RemotingCommand:
        """callConsumer: relay the admin's request to the client and hand back the client's own answer."""
        header = h.GetConsumerRunningInfoRequestHeader.from_ext_fields(cmd.ext_fields)
        group, client_id = header.consumer_group, header.client_id
        channel = self.broker.consumers.find_channel(group, client_id)
        if channel is None:
            return cmd.make_response(ResponseCode.SYSTEM_ERROR, f"The Consumer <{group}> <{client_id}> not online")
        relayed = RemotingCommand(
            code=RequestCode.GET_CONSUMER_RUNNING_INFO,
            language="JAVA",
            ext_fields=dict(cmd.ext_fields or {}),
            body=cmd.body,
        )
        try:
            return await channel.connection.request(relayed, _CALL_CLIENT_TIMEOUT)
        except RemotingTimeoutError as exc:
            remark = f"consumer <{group}> <{client_id}> Timeout: {_timeout_text(exc)}"
            return cmd.make_response(ResponseCode.CONSUME_MSG_TIMEOUT, remark)
        except RemotingError as exc:
            remark = f"invoke consumer <{group}> <{client_id}> Exception: {exception_simple_desc(exc)}"
            return cmd.make_response(ResponseCode.SYSTEM_ERROR, remark)

    async def reset_offset(self, conn: ClientConnection, cmd: RemotingCommand) -> RemotingCommand:
        """Broker2Client.resetOffset: work out each queue's offset for the time (or the end, for -1) and push the
        table to every online member, who then move there and commit; the broker itself commits nothing."""
        header = h.ResetOffsetRequestHeader.from_ext_fields(cmd.ext_fields)
        broker, topic, group = self.broker, header.topic, header.group
        config = broker.topics.get(topic)
        if config is None:
            remark = f"[reset-offset] reset offset failed, no topic in this broker. topic={topic}"
            return cmd.make_response(ResponseCode.SYSTEM_ERROR, remark)
        table = {}
        for queue_id in range(config.write_queue_nums):
            consumer_offset = broker.offsets.query(group, topic, queue_id)
            if consumer_offset == -1:
                return cmd.make_response(ResponseCode.SYSTEM_ERROR, f"THe consumer group <{group}> not exist")
            if header.timestamp == _RESET_TO_NOW:
                offset = broker.store.max_offset(topic, queue_id)
            else:
                offset = broker.store.search_offset(topic, queue_id, header.timestamp)
            offset = max(offset, 0)
            chosen = offset if header.is_force or offset < consumer_offset else consumer_offset
            table[MessageQueue(topic, broker.broker_name, queue_id)] = chosen
        table = mq_ordered(table)
        if cmd.language == "CPP":
            push_body = ResetOffsetBodyForC(
                offset_table=[
                    MessageQueueForC(mq.topic, mq.broker_name, mq.queue_id, offset) for mq, offset in table.items()
                ]
            ).encode()
        else:
            push_body = ResetOffsetBody(offset_table=table).encode()
        info = broker.consumers.get(group)
        if info is None or not info.channels:
            remark = (
                f"Consumer not online, so can not reset offset, Group: {group} Topic: {topic} "
                f"Timestamp: {header.timestamp}"
            )
            return cmd.make_response(ResponseCode.CONSUMER_NOT_ONLINE, remark)
        push_header = h.ResetOffsetRequestHeader(topic=topic, group=group, timestamp=header.timestamp)
        for channel in list(info.channels.values()):
            push = RemotingCommand(
                code=RequestCode.RESET_CONSUMER_CLIENT_OFFSET,
                language="JAVA",
                ext_fields=push_header.to_ext_fields(),
                body=push_body,
            )
            try:
                await channel.connection.oneway(push)
            except RemotingError as exc:
                log.error("[reset-offset] reset offset exception. topic=%s, group=%s, error=%s", topic, group, exc)
        return cmd.make_response(remark=NOT_SET, body=ResetOffsetBody(offset_table=table).encode())
