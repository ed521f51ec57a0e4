"""SendMessageProcessor of 4.9.4 for the sandbox broker: SEND_MESSAGE (the C++ client), SEND_MESSAGE_V2 and
SEND_BATCH_MESSAGE (the Java client), batches, topic auto-creation from TBW102, retry and DLQ topics, and
CONSUMER_SEND_MSG_BACK.

Every send answer carries MSG_REGION and TRACE_ON in its extFields, errors included, because the Java processor
adds them before it checks anything; a stored message gets the CLUSTER property and loses WAIT, exactly as
SendMessageProcessor rewrites properties (see monitor.sandbox.store.stored_properties).
"""

from __future__ import annotations

import random
import time
from typing import TYPE_CHECKING

from monitor.remoting import headers as h
from monitor.remoting.body import PermName, TopicConfig, TopicFilterType
from monitor.remoting.codes import RequestCode, ResponseCode
from monitor.remoting.command import RemotingCommand
from monitor.remoting.message import decode_messages, decode_properties
from monitor.sandbox.broker._common import InnerMessage, now_ms
from monitor.sandbox.broker.schedule import DELAY
from monitor.sandbox.broker.tables import (
    NOT_ALLOWED_SEND_TOPICS,
    RETRY_GROUP_TOPIC_PREFIX,
    SCHEDULE_TOPIC,
    dlq_topic,
    retry_topic,
    topic_problem,
)
from monitor.sandbox.connection import Connection
from monitor.sandbox.store import (
    PutMessageError,
    PutMessageStatus,
    PutResult,
    java_properties_string,
    stored_properties,
)

if TYPE_CHECKING:
    from monitor.sandbox.broker.core import Broker

FAQ = "\nSee http://rocketmq.apache.org/docs/faq/ for further details."
_READ_WRITE = PermName.PERM_READ | PermName.PERM_WRITE
_MULTI_TAGS_FLAG = 0x2
_UNIT_FLAG, _UNIT_SUB_FLAG = 0x1, 0x2
_V3_4_9 = 121  # MQVersion ordinal: from here on a send may carry its own maxReconsumeTimes
_DLQ_NUMS_PER_GROUP = 1
_RANDOM_BOUND = 99999999
RETRY_TOPIC = "RETRY_TOPIC"
ORIGIN_MESSAGE_ID = "ORIGIN_MESSAGE_ID"


def topic_config_text(config: TopicConfig) -> str:
    """TopicConfig.toString, which some remarks embed."""
    return (
        f"TopicConfig [topicName={config.topic_name}, readQueueNums={config.read_queue_nums}, "
        f"writeQueueNums={config.write_queue_nums}, perm={config.perm_text}, "
        f"topicFilterType={config.topic_filter_type.name}, topicSysFlag={config.topic_sys_flag}, "
        f"order={'true' if config.order else 'false'}]"
    )


def _random_queue(count: int) -> int:
    return random.randrange(_RANDOM_BOUND) % count


class SendProcessor:
    def __init__(self, broker: Broker):
        self.broker = broker

    def handlers(self) -> dict[int, object]:
        return {
            RequestCode.SEND_MESSAGE: self.send_message,
            RequestCode.SEND_MESSAGE_V2: self.send_message,
            RequestCode.SEND_BATCH_MESSAGE: self.send_message,
            RequestCode.CONSUMER_SEND_MSG_BACK: self.consumer_send_msg_back,
        }

    async def send_message(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        if cmd.code == RequestCode.SEND_MESSAGE:
            header = h.SendMessageRequestHeader.from_ext_fields(cmd.ext_fields)
        else:
            header = h.SendMessageRequestHeaderV2.from_ext_fields(cmd.ext_fields).to_v1()
        config = self.broker.config
        region = {"MSG_REGION": str(config["regionId"]), "TRACE_ON": "true" if config["traceOn"] else "false"}

        def answer(code: int, remark: str | None) -> RemotingCommand:
            return cmd.make_response(code, remark, ext_fields=dict(region))

        start = int(config["startAcceptSendRequestTimeStamp"])
        if start and now_ms() < start:
            return answer(ResponseCode.SYSTEM_ERROR, f"broker unable to service, until {start}")
        topic_config, refusal = await self._check(conn, header)
        if refusal is not None:
            return answer(*refusal)
        queue_id = header.queue_id if header.queue_id >= 0 else _random_queue(topic_config.write_queue_nums)
        topic, refusal = (header.topic, None) if header.batch else await self._retry_or_dlq(cmd, header)
        if refusal is not None:  # asyncSendBatchMessage has no handleRetryAndDLQ: a batch stays where it was sent
            return answer(*refusal)
        # The answer names the queue asked for (or drawn) even when the message went to the DLQ's queue instead:
        # handleRetryAndDLQ moves the message, the response header keeps the first queueIdInt.
        answered_queue_id = queue_id
        if topic != header.topic:
            queue_id = _random_queue(_DLQ_NUMS_PER_GROUP)
        sys_flag = header.sys_flag
        if topic_config.topic_filter_type is TopicFilterType.MULTI_TAG:
            sys_flag |= _MULTI_TAGS_FLAG
        try:
            if header.batch:
                result = self._put_batch(conn, cmd, header, topic, queue_id, sys_flag)
                stored_topic = topic
            else:
                message = self._inner(conn, cmd, header, topic, queue_id, sys_flag)
                result = self.broker.put_message(message)
                stored_topic = message.topic
        except PutMessageError as exc:
            return answer(*self._put_failure(exc))
        self._count_put(stored_topic, result)
        response_header = h.SendMessageResponseHeader(
            msg_id=result.msg_id, queue_id=answered_queue_id, queue_offset=result.queue_offset
        )
        return cmd.make_response(ext_fields={**region, **response_header.to_ext_fields()})

    async def _check(
        self, conn: Connection, header: h.SendMessageRequestHeader
    ) -> tuple[TopicConfig | None, tuple[int, str] | None]:
        """AbstractSendMessageProcessor.msgCheck: topic name, permission, auto-creation, queue id."""
        broker, topic = self.broker, header.topic
        existing = broker.topics.get(topic)
        if (
            not PermName.is_writeable(int(broker.config["brokerPermission"]))
            and existing is not None
            and existing.order
        ):
            return None, (ResponseCode.NO_PERMISSION, f"the broker[{broker.host}] sending message is forbidden")
        problem = topic_problem(topic)
        if problem is not None:
            return None, (ResponseCode.SYSTEM_ERROR, problem)
        if topic in NOT_ALLOWED_SEND_TOPICS:
            return None, (ResponseCode.NO_PERMISSION, f"Sending message to topic[{topic}] is forbidden.")
        config = existing
        if config is None:
            sys_flag = 0
            if header.unit_mode:
                sys_flag = _UNIT_SUB_FLAG if topic.startswith(RETRY_GROUP_TOPIC_PREFIX) else _UNIT_FLAG
            queue_nums = header.default_topic_queue_nums
            config = broker.topics.create_in_send(topic, header.default_topic, queue_nums, sys_flag)
            if config is None and topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
                config, _ = broker.topics.create_in_send_back(topic, 1, _READ_WRITE, sys_flag)
            if config is None:
                return None, (ResponseCode.TOPIC_NOT_EXIST, f"topic[{topic}] not exist, apply first please!{FAQ}")
            await broker.register_broker_all(check_order_config=False)
        if header.queue_id >= max(config.write_queue_nums, config.read_queue_nums):
            remark = (
                f"request queueId[{header.queue_id}] is illegal, {topic_config_text(config)} "
                f"Producer: {conn.remote_addr}"
            )
            return None, (ResponseCode.SYSTEM_ERROR, remark)
        return config, None

    async def _retry_or_dlq(
        self, cmd: RemotingCommand, header: h.SendMessageRequestHeader
    ) -> tuple[str, tuple[int, str] | None]:
        """handleRetryAndDLQ: a message sent to a retry topic that has been consumed too often goes to the DLQ."""
        topic = header.topic
        if not topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
            return topic, None
        group_name = topic[len(RETRY_GROUP_TOPIC_PREFIX) :]
        group = self.broker.groups.find(group_name)
        if group is None:
            remark = f"subscription group not exist, {group_name} {FAQ}"
            return topic, (ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST, remark)
        max_times = group.retry_max_times
        if cmd.version >= _V3_4_9 and header.max_reconsume_times is not None:
            max_times = header.max_reconsume_times
        if (header.reconsume_times or 0) < max_times:
            return topic, None
        dlq = dlq_topic(group_name)
        _, created = self.broker.topics.create_in_send_back(dlq, _DLQ_NUMS_PER_GROUP, _READ_WRITE, 0)
        if created:
            await self.broker.register_broker_all(check_order_config=False)
        return dlq, None

    def _inner(
        self,
        conn: Connection,
        cmd: RemotingCommand,
        header: h.SendMessageRequestHeader,
        topic: str,
        queue_id: int,
        sys_flag: int,
    ) -> InnerMessage:
        sent = header.properties or ""
        properties = decode_properties(sent)
        properties["CLUSTER"] = self.broker.cluster_name
        return InnerMessage(
            topic=topic,
            queue_id=queue_id,
            body=cmd.body,
            properties=properties,
            properties_string=stored_properties(sent, self.broker.cluster_name),
            flag=header.flag,
            sys_flag=sys_flag,
            born_timestamp=header.born_timestamp,
            born_host=conn.remote_addr,
            reconsume_times=header.reconsume_times or 0,
        )

    def _put_batch(
        self,
        conn: Connection,
        cmd: RemotingCommand,
        header: h.SendMessageRequestHeader,
        topic: str,
        queue_id: int,
        sys_flag: int,
    ) -> PutResult:
        started = time.monotonic()
        try:
            result = self.broker.store.put_messages_batch(
                topic,
                queue_id,
                cmd.body,
                stored_properties(header.properties or "", self.broker.cluster_name, batch=True),
                sys_flag,
                header.born_timestamp,
                conn.remote_addr,
                header.reconsume_times or 0,
            )
        except PutMessageError:
            self.broker.store_stats.record_put_failed()
            raise
        self.broker.messages_stored(topic, queue_id, result.msg_num, result.wrote_bytes, started)
        return result

    def _count_put(self, topic: str, result: PutResult) -> None:
        stats = self.broker.stats
        if topic == SCHEDULE_TOPIC:
            stats.inc_queue_put_nums(topic, result.queue_id, result.msg_num, 1)
            stats.inc_queue_put_size(topic, result.queue_id, result.wrote_bytes)
        stats.inc_topic_put_nums(topic, result.msg_num, 1)
        stats.inc_topic_put_size(topic, result.wrote_bytes)
        stats.inc_broker_put_nums(result.msg_num)

    async def consumer_send_msg_back(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        """A consumer gave up on a message for now: store it again for the group's retry topic with a delay level
        (3 + reconsumeTimes unless the consumer chose one), or in the group's DLQ once it was retried
        maxReconsumeTimes times (or the consumer asked for that with a negative level)."""
        broker = self.broker
        header = h.ConsumerSendMsgBackRequestHeader.from_ext_fields(cmd.ext_fields)
        group = broker.groups.find(header.group)
        if group is None:
            remark = f"subscription group not exist, {header.group} {FAQ}"
            return cmd.make_response(ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST, remark)
        if not PermName.is_writeable(int(broker.config["brokerPermission"])):
            return cmd.make_response(
                ResponseCode.NO_PERMISSION, f"the broker[{broker.host}] sending message is forbidden"
            )
        if group.retry_queue_nums <= 0:
            return cmd.make_response()
        topic = retry_topic(header.group)
        queue_id = _random_queue(group.retry_queue_nums)
        sys_flag = _UNIT_SUB_FLAG if header.unit_mode else 0
        config, created = broker.topics.create_in_send_back(topic, group.retry_queue_nums, _READ_WRITE, sys_flag)
        if created:
            await broker.register_broker_all(check_order_config=False)
        if not config.writeable:
            return cmd.make_response(ResponseCode.NO_PERMISSION, f"the topic[{topic}] sending message is forbidden")
        record = broker.store.view_by_offset(header.offset)
        if record is None:
            return cmd.make_response(ResponseCode.SYSTEM_ERROR, f"look message by offset failed, {header.offset}")
        original = decode_messages(record, decompress=False)[0]
        properties = dict(original.properties)
        properties.setdefault(RETRY_TOPIC, original.topic)
        properties["WAIT"] = "false"
        max_times = group.retry_max_times
        if cmd.version >= _V3_4_9 and header.max_reconsume_times is not None:
            max_times = header.max_reconsume_times
        delay_level = header.delay_level
        if original.reconsume_times >= max_times or delay_level < 0:
            topic, queue_id = dlq_topic(header.group), _random_queue(_DLQ_NUMS_PER_GROUP)
            _, created = broker.topics.create_in_send_back(topic, _DLQ_NUMS_PER_GROUP, _READ_WRITE, 0)
            if created:
                await broker.register_broker_all(check_order_config=False)
            properties[DELAY] = "0"
        else:
            properties[DELAY] = str(delay_level or 3 + original.reconsume_times)
        properties.setdefault(ORIGIN_MESSAGE_ID, original.msg_id)
        message = InnerMessage(
            topic=topic,
            queue_id=queue_id,
            body=original.body,
            properties=properties,
            properties_string=java_properties_string(properties),
            flag=original.flag,
            sys_flag=original.sys_flag,
            born_timestamp=original.born_timestamp,
            born_host=original.born_host,
            reconsume_times=original.reconsume_times + 1,
        )
        try:
            result = broker.put_message(message)
        except PutMessageError as exc:
            return cmd.make_response(ResponseCode.SYSTEM_ERROR, exc.status.value)
        if message.topic == SCHEDULE_TOPIC:
            broker.stats.inc_topic_put_nums(message.topic)
            broker.stats.inc_topic_put_size(message.topic, result.wrote_bytes)
            broker.stats.inc_queue_put_nums(message.topic, message.queue_id)
            broker.stats.inc_queue_put_size(message.topic, message.queue_id, result.wrote_bytes)
        broker.stats.inc_send_back_nums(header.group, properties[RETRY_TOPIC])
        return cmd.make_response()

    def _put_failure(self, exc: PutMessageError) -> tuple[int, str]:
        if exc.status is PutMessageStatus.SERVICE_NOT_AVAILABLE:
            ratio = self.broker.disk_ratio()  # SendMessageProcessor.diskUtil prints the fraction
            return ResponseCode.SERVICE_NOT_AVAILABLE, (
                "service not available now. It may be caused by one of the following reasons: the broker's disk is "
                f"full [CL: {ratio:5.2f} CQ: {ratio:5.2f} INDEX: {ratio:5.2f}], messages are put to the slave, "
                "message store has been shut down, etc."
            )
        limit = self.broker.config["maxMessageSize"]
        return ResponseCode.MESSAGE_ILLEGAL, (
            "the message is illegal, maybe msg body or properties length not matched. "
            f"msg body length limit {limit}B, msg properties length limit 32KB."
        )
