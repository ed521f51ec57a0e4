"""AdminBrokerProcessor of 4.9.4 for the sandbox broker: topics, subscription groups, configuration, runtime
figures, offsets and statistics, as mqadmin and the portal ask for them.

Responses are built the way the Java processor builds them, because the difference shows on the wire: a response
made from a header class carries an ``extFields`` object even when empty (GET_ALL_TOPIC_CONFIG), one made without
carries none, and a handler that sets SUCCESS without clearing the remark keeps "not set any response code"
(UPDATE_AND_CREATE_TOPIC). A slave refuses to change topics or groups with the captured remark.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from monitor.remoting import headers as h
from monitor.remoting.body import (
    KVTable,
    MessageQueue,
    SubscriptionGroupConfig,
    TopicConfig,
    TopicFilterType,
    TopicOffset,
    TopicStatsTable,
    parse_properties,
)
from monitor.remoting.codes import RequestCode, ResponseCode
from monitor.remoting.command import RemotingCommand
from monitor.remoting.errors import ProtocolError
from monitor.remoting.message import decode_messages
from monitor.sandbox.broker._common import mq_ordered, ordered
from monitor.sandbox.broker.tables import topic_problem
from monitor.sandbox.connection import Connection
from monitor.sandbox.stats import StatsNotFound

if TYPE_CHECKING:
    from monitor.sandbox.broker.core import Broker

NOT_SET = "not set any response code"
SLAVE_REFUSES = "Can't modify topic or subscription group from slave broker, please execute it from master broker."
_RUNTIME_TABLE_CAPACITY = 64  # StoreStatsService.getRuntimeInfo's HashMap(64), which the broker adds to


def human_bytes(count: int) -> str:
    """MixAll.humanReadableByteCount(bytes, false): "10.5 KiB"."""
    if count < 1024:
        return f"{count} B"
    exponent = min(int(math.log(count) / math.log(1024)), 6)
    return f"{count / 1024**exponent:.1f} {'KMGTPE'[exponent - 1]}iB"


class AdminProcessor:
    def __init__(self, broker: Broker):
        self.broker = broker

    def handlers(self) -> dict[int, object]:
        return {
            RequestCode.UPDATE_AND_CREATE_TOPIC: self.update_and_create_topic,
            RequestCode.DELETE_TOPIC_IN_BROKER: self.delete_topic,
            RequestCode.GET_ALL_TOPIC_CONFIG: self.get_all_topic_config,
            RequestCode.UPDATE_BROKER_CONFIG: self.update_broker_config,
            RequestCode.GET_BROKER_CONFIG: self.get_broker_config,
            RequestCode.SEARCH_OFFSET_BY_TIMESTAMP: self.search_offset_by_timestamp,
            RequestCode.GET_MAX_OFFSET: self.get_max_offset,
            RequestCode.GET_MIN_OFFSET: self.get_min_offset,
            RequestCode.GET_EARLIEST_MSG_STORETIME: self.get_earliest_msg_storetime,
            RequestCode.GET_BROKER_RUNTIME_INFO: self.get_broker_runtime_info,
            RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP: self.update_and_create_subscription_group,
            RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG: self.get_all_subscription_group,
            RequestCode.DELETE_SUBSCRIPTIONGROUP: self.delete_subscription_group,
            RequestCode.GET_TOPIC_STATS_INFO: self.get_topic_stats_info,
            RequestCode.GET_ALL_CONSUMER_OFFSET: self.get_all_consumer_offset,
            RequestCode.GET_ALL_DELAY_OFFSET: self.get_all_delay_offset,
            RequestCode.VIEW_BROKER_STATS_DATA: self.view_broker_stats_data,
        }

    def _slave_refusal(self, cmd: RemotingCommand) -> RemotingCommand | None:
        """validateSlave: a slave's tables are copies of its master's, so it refuses to change them."""
        if self.broker.is_slave:
            return cmd.make_response(ResponseCode.SYSTEM_ERROR, SLAVE_REFUSES)
        return None

    def _topic_refusal(self, cmd: RemotingCommand, topic: str) -> RemotingCommand | None:
        problem = topic_problem(topic)
        if problem is None and self.broker.topics.is_system_topic(topic):
            problem = f"The topic[{topic}] is conflict with system topic."
        return cmd.make_response(ResponseCode.SYSTEM_ERROR, problem) if problem else None

    # --- topics ----------------------------------------------------------------------------------------------------

    async def update_and_create_topic(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        refusal = self._slave_refusal(cmd)
        if refusal:
            return refusal
        header = h.CreateTopicRequestHeader.from_ext_fields(cmd.ext_fields)
        refusal = self._topic_refusal(cmd, header.topic)
        if refusal:
            return refusal
        try:
            filter_type = TopicFilterType[header.topic_filter_type]
        except KeyError:
            raise ProtocolError(f"unknown topicFilterType {header.topic_filter_type!r}") from None
        config = TopicConfig(
            topic_name=header.topic,
            read_queue_nums=header.read_queue_nums,
            write_queue_nums=header.write_queue_nums,
            perm=header.perm,
            topic_filter_type=filter_type,
            topic_sys_flag=header.topic_sys_flag or 0,
        )
        self.broker.topics.update(config)
        await self.broker.register_topic(config)
        return cmd.make_response(remark=NOT_SET)

    async def delete_topic(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        refusal = self._slave_refusal(cmd)
        if refusal:
            return refusal
        topic = h.DeleteTopicRequestHeader.from_ext_fields(cmd.ext_fields).topic
        refusal = self._topic_refusal(cmd, topic)
        if refusal:
            return refusal
        self.broker.topics.delete(topic)
        self.broker.store.delete_topic(topic)
        if self.broker.config["autoDeleteUnusedStats"]:
            self.broker.stats.on_topic_deleted(topic)
        return cmd.make_response()

    async def get_all_topic_config(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        return cmd.make_response(ext_fields={}, body=await self.broker.topics.all_topics_body())

    async def get_topic_stats_info(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        topic = h.GetTopicStatsInfoRequestHeader.from_ext_fields(cmd.ext_fields).topic
        config = self.broker.topics.get(topic)
        if config is None:
            return cmd.make_response(ResponseCode.TOPIC_NOT_EXIST, f"topic[{topic}] not exist")
        table = {}
        for queue_id in range(config.write_queue_nums):
            figures = self.broker.store.queue_figures(topic, queue_id)
            table[MessageQueue(topic, self.broker.broker_name, queue_id)] = TopicOffset(
                min_offset=figures.min_offset,
                max_offset=figures.max_offset,
                last_update_timestamp=figures.last_update_timestamp,
            )
        return cmd.make_response(body=TopicStatsTable(offset_table=mq_ordered(table)).encode())

    # --- subscription groups ---------------------------------------------------------------------------------------

    async def update_and_create_subscription_group(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        refusal = self._slave_refusal(cmd)
        if refusal:
            return refusal
        if cmd.body:
            self.broker.groups.update(SubscriptionGroupConfig.decode(cmd.body))
        return cmd.make_response()

    async def get_all_subscription_group(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        return cmd.make_response(body=await self.broker.groups.all_groups_body())

    async def delete_subscription_group(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        refusal = self._slave_refusal(cmd)
        if refusal:
            return refusal
        header = h.DeleteSubscriptionGroupRequestHeader.from_ext_fields(cmd.ext_fields)
        self.broker.groups.delete(header.group_name)
        if header.remove_offset:
            self.broker.offsets.remove_group(header.group_name)
        if self.broker.config["autoDeleteUnusedStats"]:
            self.broker.stats.on_group_deleted(header.group_name)
        return cmd.make_response()

    # --- configuration and runtime figures -------------------------------------------------------------------------

    async def get_broker_config(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        config = self.broker.config
        version = h.GetBrokerConfigResponseHeader(version=config.data_version.encode().decode())
        return cmd.make_response(ext_fields=version.to_ext_fields(), body=config.properties_text().encode())

    async def update_broker_config(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        if cmd.body:
            try:
                properties = parse_properties(cmd.body)
            except ProtocolError:
                return cmd.make_response(ResponseCode.SYSTEM_ERROR, "string2Properties error")
            await self.broker.update_config(properties)
        return cmd.make_response()

    async def get_broker_runtime_info(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        table = ordered(self.broker.runtime_info(), _RUNTIME_TABLE_CAPACITY)
        return cmd.make_response(body=KVTable(table=table).encode())

    async def view_broker_stats_data(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        header = h.ViewBrokerStatsDataRequestHeader.from_ext_fields(cmd.ext_fields)
        try:
            data = self.broker.stats.view_stats_data(header.stats_name, header.stats_key)
        except StatsNotFound as exc:
            return cmd.make_response(exc.response_code, str(exc))
        return cmd.make_response(body=data.encode())

    # --- offsets ---------------------------------------------------------------------------------------------------

    async def search_offset_by_timestamp(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        header = h.SearchOffsetRequestHeader.from_ext_fields(cmd.ext_fields)
        offset = self.broker.store.search_offset(header.topic, header.queue_id, header.timestamp)
        return cmd.make_response(ext_fields=h.OffsetResponseHeader(offset=offset).to_ext_fields())

    async def get_max_offset(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        header = h.TopicQueueRequestHeader.from_ext_fields(cmd.ext_fields)
        offset = self.broker.store.max_offset(header.topic, header.queue_id)
        return cmd.make_response(ext_fields=h.OffsetResponseHeader(offset=offset).to_ext_fields())

    async def get_min_offset(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        header = h.TopicQueueRequestHeader.from_ext_fields(cmd.ext_fields)
        offset = self.broker.store.min_offset(header.topic, header.queue_id)
        return cmd.make_response(ext_fields=h.OffsetResponseHeader(offset=offset).to_ext_fields())

    async def get_earliest_msg_storetime(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        header = h.TopicQueueRequestHeader.from_ext_fields(cmd.ext_fields)
        timestamp = self.broker.store.earliest_store_time(header.topic, header.queue_id)
        return cmd.make_response(ext_fields={"timestamp": str(timestamp)})

    async def get_all_consumer_offset(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        return cmd.make_response(body=await self.broker.offsets.all_offsets_body())

    async def get_all_delay_offset(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        return cmd.make_response(body=self.broker.schedule.offsets_wrapper().encode())


def earliest_message_time(broker: Broker) -> int:
    """DefaultMessageStore.getEarliestMessageTime: the store time at the commit log's minimum offset, read with a
    window of twice maxMessageSize, so it is -1 until that much has been written after the first record (which
    is why the captured broker, with 1.7 MB stored, reported -1)."""
    store = broker.store
    window = 2 * int(broker.config["maxMessageSize"])
    if store.commit_log_max_offset - store.commit_log_min_offset < window:
        return -1
    record = store.view_by_offset(store.commit_log_min_offset)
    return decode_messages(record, decompress=False)[0].store_timestamp if record else -1
