"""PullMessageProcessor and QueryMessageProcessor of 4.9.4 for the sandbox broker.

A pull follows the Java checks in order (permission, group, topic, queue, subscription) and answers with the
store's GetMessageStatus as remark and the mapped response code. A pull that finds nothing new is held (long
polling) for the client's suspendTimeoutMillis, or shortPollingTimeMills with longPollingEnable off, and answered
as soon as a message arrives in its queue, as PullRequestHoldService does; the held request is then processed
again without suspension. Offsets the client reports in sysFlag are committed (not on a slave). A pull at an
offset that no longer makes sense moves the client (PULL_OFFSET_MOVED) and leaves an OFFSET_MOVED_EVENT message.

The master tells a consumer that lags more than ``suggest_slave_behind_bytes`` of commit log to read from the
slave (suggestWhichBrokerId = whichBrokerWhenConsumeSlowly, 1), and a slave serves pulls while slaveReadEnable.
"""

from __future__ import annotations

import asyncio
import logging
import struct
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from monitor.remoting import headers as h
from monitor.remoting.body import MessageModel, MessageQueue, PermName, SubscriptionGroupConfig, WireBean
from monitor.remoting.codes import RequestCode, ResponseCode
from monitor.remoting.command import RemotingCommand
from monitor.sandbox.broker._common import InnerMessage, now_ms
from monitor.sandbox.broker.send import FAQ
from monitor.sandbox.broker.tables import OFFSET_MOVED_EVENT
from monitor.sandbox.connection import Connection
from monitor.sandbox.store import GetMessageStatus, GetResult, PutMessageError

if TYPE_CHECKING:
    from monitor.sandbox.broker.core import Broker

log = logging.getLogger(__name__)

_COMMIT_OFFSET_FLAG = 0x1
_SUSPEND_FLAG = 0x2
_SUBSCRIPTION_FLAG = 0x4
_TAG = "TAG"
_PHYSICAL_OFFSET = struct.Struct(">q")
_SIZE = struct.Struct(">i")

_STATUS_CODES = {
    GetMessageStatus.FOUND: ResponseCode.SUCCESS,
    GetMessageStatus.MESSAGE_WAS_REMOVING: ResponseCode.PULL_RETRY_IMMEDIATELY,
    GetMessageStatus.NO_MATCHED_MESSAGE: ResponseCode.PULL_RETRY_IMMEDIATELY,
    GetMessageStatus.OFFSET_FOUND_NULL: ResponseCode.PULL_NOT_FOUND,
    GetMessageStatus.OFFSET_OVERFLOW_BADLY: ResponseCode.PULL_OFFSET_MOVED,
    GetMessageStatus.OFFSET_OVERFLOW_ONE: ResponseCode.PULL_NOT_FOUND,
    GetMessageStatus.OFFSET_TOO_SMALL: ResponseCode.PULL_OFFSET_MOVED,
}


@dataclass
class OffsetMovedEvent(WireBean):
    """The body of an OFFSET_MOVED_EVENT message."""

    consumer_group: str = ""
    message_queue: MessageQueue | None = None
    offset_request: int = 0
    offset_new: int = 0


class PullRequestHoldService:
    """Held pulls by queue; a put wakes those waiting below the queue's new end."""

    def __init__(self):
        self._held: dict[tuple[str, int], list[tuple[int, asyncio.Future[None]]]] = {}

    async def hold(self, topic: str, queue_id: int, offset: int, seconds: float) -> None:
        """Wait until a message at or after ``offset`` exists in the queue, or ``seconds`` passed."""
        future = asyncio.get_running_loop().create_future()
        waiting = self._held.setdefault((topic, queue_id), [])
        entry = (offset, future)
        waiting.append(entry)
        try:
            async with asyncio.timeout(seconds):
                await future
        except TimeoutError:
            pass
        finally:
            waiting.remove(entry)
            if not waiting:
                self._held.pop((topic, queue_id), None)

    def held(self, topic: str, queue_id: int) -> int:
        """How many pulls are waiting on the queue."""
        return len(self._held.get((topic, queue_id), ()))

    def notify(self, topic: str, queue_id: int, max_offset: int) -> None:
        for offset, future in self._held.get((topic, queue_id), ()):
            if max_offset > offset and not future.done():
                future.set_result(None)


def _last_record_offset(body: bytes) -> int:
    """The commit-log offset of the last record in a pull body (records carry their own offset at byte 28)."""
    position = last = 0
    while position < len(body):
        last = _PHYSICAL_OFFSET.unpack_from(body, position + 28)[0]
        position += _SIZE.unpack_from(body, position)[0]
    return last


class PullProcessor:
    def __init__(self, broker: Broker):
        self.broker = broker
        self.hold_service = PullRequestHoldService()

    def handlers(self) -> dict[int, object]:
        return {
            RequestCode.PULL_MESSAGE: self.pull_message,
            RequestCode.QUERY_MESSAGE: self.query_message,
            RequestCode.VIEW_MESSAGE_BY_ID: self.view_message_by_id,
        }

    async def pull_message(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        response, held = self._process(conn, cmd, allow_suspend=True)
        if held is None:
            return response
        topic, queue_id, offset, seconds = held
        await self.hold_service.hold(topic, queue_id, offset, seconds)
        response, _ = self._process(conn, cmd, allow_suspend=False)
        return response

    def _process(
        self, conn: Connection, cmd: RemotingCommand, *, allow_suspend: bool
    ) -> tuple[RemotingCommand, tuple[str, int, int, float] | None]:
        """processRequest: the response, or (when the pull is to be held) what to wait for."""
        started = time.monotonic()
        broker = self.broker
        header = h.PullMessageRequestHeader.from_ext_fields(cmd.ext_fields)
        response, held = self._pull(conn, cmd, header, allow_suspend)
        commit = allow_suspend and header.sys_flag & _COMMIT_OFFSET_FLAG and not broker.is_slave
        if commit:
            broker.offsets.commit(header.consumer_group, header.topic, header.queue_id, header.commit_offset)
        if response.code == ResponseCode.SUCCESS:
            broker.stats.inc_group_get_latency(
                header.consumer_group, header.topic, header.queue_id, int((time.monotonic() - started) * 1000)
            )
        return response, held

    def _pull(
        self, conn: Connection, cmd: RemotingCommand, header: h.PullMessageRequestHeader, allow_suspend: bool
    ) -> tuple[RemotingCommand, tuple[str, int, int, float] | None]:
        broker, config = self.broker, self.broker.config

        def refuse(code: int, remark: str) -> tuple[RemotingCommand, None]:
            return cmd.make_response(code, remark, ext_fields={}), None

        if not PermName.is_readable(int(config["brokerPermission"])):
            return refuse(ResponseCode.NO_PERMISSION, f"the broker[{broker.host}] pulling message is forbidden")
        group_name, topic, queue_id = header.consumer_group, header.topic, header.queue_id
        group = broker.groups.find(group_name)
        if group is None:
            remark = f"subscription group [{group_name}] does not exist, {FAQ}"
            return refuse(ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST, remark)
        if not group.consume_enable:
            return refuse(ResponseCode.NO_PERMISSION, f"subscription group no permission, {group_name}")
        topic_config = broker.topics.get(topic)
        if topic_config is None:
            remark = f"topic[{topic}] not exist, apply first please! {FAQ}"
            return refuse(ResponseCode.TOPIC_NOT_EXIST, remark)
        if not topic_config.readable:
            return refuse(ResponseCode.NO_PERMISSION, f"the topic[{topic}] pulling message is forbidden")
        if not 0 <= queue_id < topic_config.read_queue_nums:
            remark = (
                f"queueId[{queue_id}] is illegal, topic:[{topic}] topicConfig.readQueueNums:"
                f"[{topic_config.read_queue_nums}] consumer:[/{conn.remote_addr}]"
            )
            return refuse(ResponseCode.SYSTEM_ERROR, remark)
        if header.sys_flag & _SUBSCRIPTION_FLAG:
            expression, expression_type = header.subscription, header.expression_type or _TAG
        else:
            consumer = broker.consumers.get(group_name)
            if consumer is None:
                return refuse(ResponseCode.SUBSCRIPTION_NOT_EXIST, f"the consumer's group info not exist{FAQ}")
            if not group.consume_broadcast_enable and consumer.message_model is MessageModel.BROADCASTING:
                remark = f"the consumer group[{group_name}] can not consume by broadcast way"
                return refuse(ResponseCode.NO_PERMISSION, remark)
            subscription = consumer.subscriptions.get(topic)
            if subscription is None:
                return refuse(ResponseCode.SUBSCRIPTION_NOT_EXIST, f"the consumer's subscription not exist{FAQ}")
            if subscription.sub_version < header.sub_version:
                return refuse(ResponseCode.SUBSCRIPTION_NOT_LATEST, "the consumer's subscription not latest")
            expression, expression_type = subscription.sub_string, subscription.expression_type
        if expression_type != _TAG and not config["enablePropertyFilter"]:
            remark = f"The broker does not support consumer to filter message by {expression_type}"
            return refuse(ResponseCode.SYSTEM_ERROR, remark)

        started = time.monotonic()
        result = broker.store.get_message(topic, queue_id, header.queue_offset, header.max_msg_nums, expression)
        found = result.status is GetMessageStatus.FOUND
        broker.store_stats.record_get(found, result.message_count, int((time.monotonic() - started) * 1000))
        code = self._response_code(result, header.queue_offset)
        suggest = self._suggested_broker(result, group)
        held = None
        if code == ResponseCode.SUCCESS:
            broker.stats.inc_group_get_nums(group_name, topic, result.message_count)
            broker.stats.inc_group_get_size(group_name, topic, len(result.body))
            broker.stats.inc_broker_get_nums(result.message_count)
        elif code == ResponseCode.PULL_NOT_FOUND and allow_suspend and header.sys_flag & _SUSPEND_FLAG:
            millis = header.suspend_timeout_millis if config["longPollingEnable"] else config["shortPollingTimeMills"]
            held = (topic, queue_id, header.queue_offset, int(millis) / 1000)
        elif code == ResponseCode.PULL_OFFSET_MOVED:
            if not broker.is_slave or config["offsetCheckInSlave"]:
                self._offset_moved(group_name, topic, queue_id, header.queue_offset, result.next_begin_offset)
            else:
                code, suggest = ResponseCode.PULL_RETRY_IMMEDIATELY, group.broker_id
        response_header = h.PullMessageResponseHeader(
            suggest_which_broker_id=suggest,
            next_begin_offset=result.next_begin_offset,
            min_offset=result.min_offset,
            max_offset=result.max_offset,
        )
        body = result.body if code == ResponseCode.SUCCESS else b""
        response = cmd.make_response(code, result.status.value, ext_fields=response_header.to_ext_fields(), body=body)
        return response, held

    @staticmethod
    def _response_code(result: GetResult, requested_offset: int) -> int:
        if result.status in (GetMessageStatus.NO_MATCHED_LOGIC_QUEUE, GetMessageStatus.NO_MESSAGE_IN_QUEUE):
            return ResponseCode.PULL_OFFSET_MOVED if requested_offset != 0 else ResponseCode.PULL_NOT_FOUND
        return _STATUS_CODES[result.status]

    def _suggested_broker(self, result: GetResult, group: SubscriptionGroupConfig) -> int:
        """Which broker the consumer should pull from next: with slaveReadEnable, the slave
        (whichBrokerWhenConsumeSlowly) once the pulled messages lag the commit log's end by more than the
        sandbox's threshold, else the group's brokerId; without it, always the master."""
        broker = self.broker
        if not broker.config["slaveReadEnable"]:
            return 0
        if result.message_count:
            behind = broker.store.commit_log_max_offset - _last_record_offset(result.body)
            if behind > broker.suggest_slave_behind_bytes:
                return group.which_broker_when_consume_slowly
        return group.broker_id

    def _offset_moved(self, group: str, topic: str, queue_id: int, requested: int, new_offset: int) -> None:
        """generateOffsetMovedEvent: a message to OFFSET_MOVED_EVENT telling where the group was moved."""
        event = OffsetMovedEvent(
            consumer_group=group,
            message_queue=MessageQueue(topic, self.broker.broker_name, queue_id),
            offset_request=requested,
            offset_new=new_offset,
        )
        message = InnerMessage(
            topic=OFFSET_MOVED_EVENT,
            queue_id=0,
            body=event.encode(),
            properties={"TAGS": group, "DELAY": "0", "KEYS": group},
            born_timestamp=now_ms(),
            born_host=self.broker.addr,
        )
        try:
            self.broker.put_message(message)
        except PutMessageError as exc:
            log.warning("generateOffsetMovedEvent failed for %s: %s", event, exc)

    # --- QueryMessageProcessor -------------------------------------------------------------------------------------

    async def query_message(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        header = h.QueryMessageRequestHeader.from_ext_fields(cmd.ext_fields)
        max_num = header.max_num
        if cmd.ext("_UNIQUE_KEY_QUERY") == "true":
            max_num = int(self.broker.config["defaultQueryMaxNum"])
        batch_limit = int(self.broker.config["maxMsgsNumBatch"])
        result = self.broker.store.query_by_key(
            header.topic, header.key, max_num, header.begin_timestamp, header.end_timestamp, batch_limit
        )
        figures = h.QueryMessageResponseHeader(
            index_last_update_timestamp=result.index_last_update_timestamp,
            index_last_update_phyoffset=result.index_last_update_phyoffset,
        ).to_ext_fields()
        if result.message_count:
            return cmd.make_response(ext_fields=figures, body=result.body)
        remark = "can not find message, maybe time range not correct"
        return cmd.make_response(ResponseCode.QUERY_NOT_FOUND, remark, ext_fields=figures)

    async def view_message_by_id(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        offset = h.ViewMessageRequestHeader.from_ext_fields(cmd.ext_fields).offset
        record = self.broker.store.view_by_offset(offset)
        if record is None:
            return cmd.make_response(ResponseCode.SYSTEM_ERROR, f"can not find message by the offset, {offset}")
        return cmd.make_response(body=record)
