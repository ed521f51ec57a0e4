"""Offset errors: the OFFSET_MOVED_EVENT messages a master writes when a consumer asks for an offset outside a
queue (below its first message or past its end), read with the wire client's pull.

The read position of each event queue is kept in the collector's memory and moved past what was read, so every
event is read once; the stored events are keyed by where each event message sits, so even a position lost (a
cycle that failed before saving its memory) stores nothing twice. A position that fell out of the queue (messages
expired, or a new broker) moves to the broker's suggestion, as a consumer would. A cycle reads at most
:data:`MAX_PULLS` batches per queue, so a first read of a long backlog spreads over a few cycles.
"""

from __future__ import annotations

import datetime as dt
import logging
from dataclasses import dataclass

from monitor.collect.requests import UNREACHABLE, BrokerDown, Requests
from monitor.remoting.admin import AsyncMQAdmin, PullStatus
from monitor.remoting.body import MessageQueue, WireBean
from monitor.remoting.errors import ProtocolError, RemotingError
from stats import keys
from stats.models import OffsetMovedEvent

logger = logging.getLogger(__name__)

BATCH = 32
MAX_PULLS = 32
# OFFSET_MOVED_EVENT has one queue on every broker (TopicConfigManager creates it with 1 read/write queue).
EVENT_QUEUE_ID = 0


@dataclass
class OffsetMovedEventBody(WireBean):
    """The body of an OFFSET_MOVED_EVENT message (org.apache.rocketmq.common.protocol.topic.OffsetMovedEvent)."""

    consumer_group: str = ""
    message_queue: MessageQueue | None = None
    offset_request: int = 0
    offset_new: int = 0


async def read_events(
    admin: AsyncMQAdmin,
    requests: Requests,
    cluster_id: int,
    broker_name: str,
    addr: str,
    position: int | None,
) -> tuple[list[OffsetMovedEvent], int | None]:
    """The events after ``position`` (None: from the start of the queue) in one master's event queue, and the
    position to read from next time (unchanged if the master could not be read)."""
    events: list[OffsetMovedEvent] = []
    offset = position if position is not None else 0
    for _ in range(MAX_PULLS):
        try:
            result = await requests.send(
                addr, lambda at=offset: admin.pull_message(addr, keys.OFFSET_MOVED_EVENT_TOPIC, EVENT_QUEUE_ID, at)
            )
        except (RemotingError, BrokerDown, *UNREACHABLE) as exc:
            logger.warning("reading offset events of %s (%s) failed: %s", broker_name, addr, exc)
            break
        if result.status is PullStatus.OFFSET_ILLEGAL:
            offset = result.next_begin_offset
            continue
        if result.status is not PullStatus.FOUND:
            break
        for message in result.messages:
            event = _event(cluster_id, broker_name, message)
            if event is not None:
                events.append(event)
        offset = result.next_begin_offset
    return events, offset


def _event(cluster_id: int, broker_name: str, message) -> OffsetMovedEvent | None:
    try:
        body = OffsetMovedEventBody.decode(message.body)
    except (ProtocolError, ValueError) as exc:
        logger.warning("unreadable OFFSET_MOVED_EVENT at %s/%s: %s", broker_name, message.queue_offset, exc)
        return None
    queue = body.message_queue or MessageQueue("", "", -1)
    return OffsetMovedEvent(
        cluster_id=cluster_id,
        broker_name=broker_name,
        queue_id=message.queue_id,
        queue_offset=message.queue_offset,
        stored_at=dt.datetime.fromtimestamp(message.store_timestamp / 1000, tz=dt.UTC),
        group=body.consumer_group,
        topic=queue.topic,
        event_broker_name=queue.broker_name,
        event_queue_id=queue.queue_id,
        offset_request=body.offset_request,
        offset_new=body.offset_new,
    )
