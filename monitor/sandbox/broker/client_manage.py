"""ClientManageProcessor and ConsumerManageProcessor of 4.9.4, plus the queue locks of AdminBrokerProcessor:
heartbeats, unregistration, group membership, committed offsets and orderly consumers' locks.

The C++ client writes its heartbeat enums as integers and some header values as JSON numbers; the body and header
types read both, so a C++ and a Java client register the same way.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from monitor.remoting import headers as h
from monitor.remoting.body import GetConsumerListByGroupResponseBody, HeartbeatData, PermName
from monitor.remoting.codes import RequestCode, ResponseCode
from monitor.remoting.command import RemotingCommand
from monitor.sandbox.broker.clients import (
    ClientChannelInfo,
    LockBatchRequestBody,
    LockBatchResponseBody,
    UnlockBatchRequestBody,
)
from monitor.sandbox.broker.tables import retry_topic
from monitor.sandbox.connection import Connection

if TYPE_CHECKING:
    from monitor.sandbox.broker.core import Broker

_READ_WRITE = PermName.PERM_READ | PermName.PERM_WRITE
_UNIT_SUB_FLAG = 0x2  # TopicSysFlag.buildSysFlag(false, true)


class ClientManageProcessor:
    def __init__(self, broker: Broker):
        self.broker = broker

    def handlers(self) -> dict[int, object]:
        return {
            RequestCode.HEART_BEAT: self.heart_beat,
            RequestCode.UNREGISTER_CLIENT: self.unregister_client,
            RequestCode.GET_CONSUMER_LIST_BY_GROUP: self.get_consumer_list_by_group,
            RequestCode.QUERY_CONSUMER_OFFSET: self.query_consumer_offset,
            RequestCode.UPDATE_CONSUMER_OFFSET: self.update_consumer_offset,
            RequestCode.LOCK_BATCH_MQ: self.lock_batch_mq,
            RequestCode.UNLOCK_BATCH_MQ: self.unlock_batch_mq,
        }

    async def heart_beat(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        """Register the connection's consumers and producers; a consumer group gets its retry topic here."""
        heartbeat = HeartbeatData.decode(cmd.body)
        channel = ClientChannelInfo(conn, heartbeat.client_id, cmd.language, cmd.version)
        broker = self.broker
        for data in heartbeat.consumer_data_set:
            group = broker.groups.find(data.group_name)
            notify = True
            if group is not None:
                notify = group.notify_consumer_ids_changed_enable
                sys_flag = _UNIT_SUB_FLAG if data.unit_mode else 0
                _, created = broker.topics.create_in_send_back(
                    retry_topic(data.group_name), group.retry_queue_nums, _READ_WRITE, sys_flag
                )
                if created:
                    await broker.register_broker_all(check_order_config=False)
            broker.consumers.register(channel, data, notify)
        for data in heartbeat.producer_data_set:
            broker.producers.register(data.group_name, channel)
        return cmd.make_response()

    async def unregister_client(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        """A client shutting down. Naming a consumer group looks it up, which auto-creates it: that is how the C++
        producer's consumerGroup "" becomes a subscription group."""
        header = h.UnregisterClientRequestHeader.from_ext_fields(cmd.ext_fields)
        if header.producer_group is not None:
            self.broker.producers.unregister(header.producer_group, conn)
        if header.consumer_group is not None:
            group = self.broker.groups.find(header.consumer_group)
            notify = group.notify_consumer_ids_changed_enable if group is not None else True
            self.broker.consumers.unregister(header.consumer_group, conn, notify)
        return cmd.make_response(ext_fields={})

    async def get_consumer_list_by_group(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        group = h.GetConsumerListByGroupRequestHeader.from_ext_fields(cmd.ext_fields).consumer_group
        info = self.broker.consumers.get(group)
        if info is not None and info.channels:
            body = GetConsumerListByGroupResponseBody(consumer_id_list=info.client_ids())
            return cmd.make_response(ext_fields={}, body=body.encode())
        return cmd.make_response(ResponseCode.SYSTEM_ERROR, f"no consumer for this group, {group}", ext_fields={})

    async def query_consumer_offset(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        """The committed offset; for a group that never committed, 0 while the queue still starts at 0 (everything
        here is "in memory", so checkInDiskByConsumeOffset is false), else QUERY_NOT_FOUND."""
        header = h.QueryConsumerOffsetRequestHeader.from_ext_fields(cmd.ext_fields)
        offset = self.broker.offsets.query(header.consumer_group, header.topic, header.queue_id)
        if offset < 0 and self.broker.store.min_offset(header.topic, header.queue_id) <= 0:
            offset = 0
        if offset >= 0:
            return cmd.make_response(ext_fields=h.QueryConsumerOffsetResponseHeader(offset=offset).to_ext_fields())
        remark = "Not found, V3_0_6_SNAPSHOT maybe this group consumer boot first"
        return cmd.make_response(ResponseCode.QUERY_NOT_FOUND, remark, ext_fields={})

    async def update_consumer_offset(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        header = h.UpdateConsumerOffsetRequestHeader.from_ext_fields(cmd.ext_fields)
        self.broker.offsets.commit(header.consumer_group, header.topic, header.queue_id, header.commit_offset)
        return cmd.make_response(ext_fields={})

    async def lock_batch_mq(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        request = LockBatchRequestBody.decode(cmd.body)
        locked = self.broker.locks.try_lock_batch(request.consumer_group, request.mq_set, request.client_id)
        return cmd.make_response(body=LockBatchResponseBody(lock_ok_mq_set=locked).encode())

    async def unlock_batch_mq(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        request = UnlockBatchRequestBody.decode(cmd.body)
        self.broker.locks.unlock_batch(request.consumer_group, request.mq_set, request.client_id)
        return cmd.make_response()
