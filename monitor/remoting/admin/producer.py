"""Producing: one SEND_MESSAGE_V2 to one broker, with the header a Java producer sends.

The portal sends a few messages of its own (a test message, a resend of a dead letter, a redelivery to a group's
retry topic); it does so exactly as DefaultMQProducerImpl.sendKernelImpl does, so that brokers, consumers and the
broker's index treat them like any producer's messages. Choosing the broker and queue, the message id (UNIQ_KEY)
and compression are the caller's (monitor/messages/send.py); this is only the request.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass

from monitor.remoting import headers as h
from monitor.remoting.admin.base import DEFAULT_TOPIC, AdminBase
from monitor.remoting.codes import RequestCode, ResponseCode
from monitor.remoting.message import encode_properties

# The producer group named in the request; brokers use it only to check transactional messages, which these are not.
TOOLS_PRODUCER_GROUP = "TOOLS_PRODUCER"
# DefaultMQProducer.defaultTopicQueueNums: the queues a topic auto-created from TBW102 gets.
DEFAULT_TOPIC_QUEUE_NUMS = 4

# Answers the Java client takes as a stored message (SendStatus other than SEND_OK): the message is in the commit
# log, only the flush or the copy to the slave was late.
_SEND_STATUS = {
    ResponseCode.SUCCESS: "SEND_OK",
    ResponseCode.FLUSH_DISK_TIMEOUT: "FLUSH_DISK_TIMEOUT",
    ResponseCode.FLUSH_SLAVE_TIMEOUT: "FLUSH_SLAVE_TIMEOUT",
    ResponseCode.SLAVE_NOT_AVAILABLE: "SLAVE_NOT_AVAILABLE",
}


@dataclass(frozen=True)
class SendResponse:
    """The broker's answer to a send: the SendStatus name, the offset message id (store host + commit-log offset)
    and where the message went (a send to a retry topic may land in the DLQ's queue 0)."""

    status: str
    offset_msg_id: str
    queue_id: int
    queue_offset: int


class ProducerAdmin(AdminBase):
    async def send_message(
        self,
        broker_addr: str,
        topic: str,
        queue_id: int,
        body: bytes,
        properties: Mapping[str, str],
        *,
        flag: int = 0,
        sys_flag: int = 0,
        reconsume_times: int = 0,
        max_reconsume_times: int | None = None,
        producer_group: str = TOOLS_PRODUCER_GROUP,
        timeout: float | None = None,
    ) -> SendResponse:
        """SEND_MESSAGE_V2 of one message to ``queue_id`` of ``topic`` on ``broker_addr`` (a master).

        ``properties`` go as given (UNIQ_KEY, TAGS, KEYS included). For a retry topic (%RETRY%group) the broker
        compares ``reconsume_times`` with ``max_reconsume_times`` (the group's retryMaxTimes when None) and stores
        the message in the group's DLQ when it has reached it (SendMessageProcessor.handleRetryAndDLQ). A refusal
        raises RemotingError with the broker's code and remark."""
        header = h.SendMessageRequestHeaderV2(
            a=producer_group,
            b=topic,
            c=DEFAULT_TOPIC,
            d=DEFAULT_TOPIC_QUEUE_NUMS,
            e=queue_id,
            f=sys_flag,
            g=int(time.time() * 1000),
            h=flag,
            i=encode_properties(dict(properties)),
            j=reconsume_times,
            k=False,
            l=max_reconsume_times,
            m=False,
        )
        cmd = self._command(RequestCode.SEND_MESSAGE_V2, header, body)
        response = await self.call(broker_addr, cmd, *_SEND_STATUS, timeout=timeout)
        answer = h.SendMessageResponseHeader.from_ext_fields(response.ext_fields)
        return SendResponse(
            _SEND_STATUS[ResponseCode(response.code)], answer.msg_id, answer.queue_id, answer.queue_offset
        )
