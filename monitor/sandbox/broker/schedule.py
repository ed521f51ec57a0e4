"""ScheduleMessageService for the sandbox broker: delayed messages (DELAY property, and every consumer retry)
wait in SCHEDULE_TOPIC_XXXX, queue ``level - 1``, until their level's delay has passed since they were stored,
and are then written to their real topic.

Delays are the broker's messageDelayLevel ("1s 5s 10s 30s 1m ...") multiplied by ``time_scale``: a sandbox
retry should arrive while a test or a demo is still watching, not 10 s later, so the sandbox default shortens
them (see :class:`~monitor.sandbox.broker.core.Broker`). Delivery follows messageTimeup of 4.9.4: the stored
properties are written again unchanged (so a delivered message still shows DELAY, REAL_TOPIC and REAL_QID, as a
real one does), topic and queue come from REAL_TOPIC / REAL_QID, and the statistics count a SCHEDULE_CONSUMER
pull and a put to the real topic. Each level's progress is its offset in the schedule queue (GET_ALL_DELAY_OFFSET,
scheduleMessageOffset_<level> in the runtime info). Only a master delivers; a slave keeps its master's offsets.

Instead of Java's 100 ms polling timers, one task sleeps until the earliest due message or until a new delayed
message is stored.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from monitor.remoting.body import DelayOffsetSerializeWrapper
from monitor.remoting.message import MessageExt, decode_messages
from monitor.sandbox.broker._common import InnerMessage, now_ms, ordered
from monitor.sandbox.broker.tables import SCHEDULE_TOPIC
from monitor.sandbox.store import PutMessageError, java_properties_string

if TYPE_CHECKING:
    from monitor.sandbox.broker.core import Broker

log = logging.getLogger(__name__)

SCHEDULE_CONSUMER_GROUP = "SCHEDULE_CONSUMER"
REAL_TOPIC = "REAL_TOPIC"
REAL_QUEUE_ID = "REAL_QID"
DELAY = "DELAY"
_OFFSET_TABLE_CAPACITY = 64  # ConcurrentHashMap(32)
_BATCH = 32


class ScheduleMessageService:
    def __init__(self, broker: Broker, delay_levels_ms: list[int], time_scale: float):
        self.broker = broker
        self.delays_ms = {level: int(ms * time_scale) for level, ms in enumerate(delay_levels_ms, start=1)}
        self.offset_table: dict[int, int] = {}
        self._wakeup = asyncio.Event()

    @property
    def max_level(self) -> int:
        return len(self.delays_ms)

    def wake(self) -> None:
        """A delayed message was stored: look again at once (called on the broker's loop)."""
        self._wakeup.set()

    def offsets_wrapper(self) -> DelayOffsetSerializeWrapper:
        return DelayOffsetSerializeWrapper(offset_table=ordered(self.offset_table, _OFFSET_TABLE_CAPACITY))

    def adopt(self, wrapper: DelayOffsetSerializeWrapper) -> None:
        """SlaveSynchronize.syncDelayOffset: a slave takes its master's progress."""
        self.offset_table = dict(wrapper.offset_table)

    def running_stats(self) -> dict[str, str]:
        """buildRunningStats: scheduleMessageOffset_<level> = "<delivered offset>,<queue max offset>"."""
        store = self.broker.store
        return {
            f"scheduleMessageOffset_{level}": f"{offset},{store.max_offset(SCHEDULE_TOPIC, level - 1)}"
            for level, offset in self.offset_table.items()
        }

    async def run(self) -> None:
        """Deliver whatever is due, then sleep until the next message is due or a new one arrives."""
        while True:
            self._wakeup.clear()
            next_due = None
            for level in self.delays_ms:
                due = self._deliver_level(level)
                if due is not None:
                    next_due = due if next_due is None else min(next_due, due)
            timeout = None if next_due is None else max(next_due - now_ms(), 1) / 1000
            try:
                async with asyncio.timeout(timeout):
                    await self._wakeup.wait()
            except TimeoutError:
                pass

    def _deliver_level(self, level: int) -> int | None:
        """Deliver the level's due messages; returns when the next one is due (None if none is waiting)."""
        store = self.broker.store
        queue_id = level - 1
        offset = self.offset_table.get(level, 0)
        while offset < store.max_offset(SCHEDULE_TOPIC, queue_id):
            result = store.get_message(SCHEDULE_TOPIC, queue_id, offset, _BATCH)
            if not result.message_count:
                offset = max(offset, result.next_begin_offset)
                self.offset_table[level] = offset
                continue
            for message in decode_messages(result.body, decompress=False):
                now = now_ms()
                due = message.store_timestamp + self.delays_ms[level]
                if due > now + self.delays_ms[level]:  # correctDeliverTimestamp: stored "in the future"
                    due = now
                if due > now:  # waiting: Java's timer task still records where the level stands (updateOffset)
                    self.offset_table[level] = offset
                    return due
                if not self._deliver(level, message):
                    return now_ms() + 100  # DELAY_FOR_A_WHILE, then try again
                offset = message.queue_offset + 1
                self.offset_table[level] = offset
        return None

    def _deliver(self, level: int, message: MessageExt) -> bool:
        properties = dict(message.properties)
        stored = java_properties_string(properties)
        try:
            queue_id = int(properties.get(REAL_QUEUE_ID, ""))
        except ValueError:
            log.error("delayed message at %s has no usable REAL_QID; skipping it", message.msg_id)
            return True
        inner = InnerMessage(
            topic=properties.get(REAL_TOPIC, ""),
            queue_id=queue_id,
            body=message.body,
            flag=message.flag,
            properties={key: value for key, value in properties.items() if key != DELAY},
            properties_string=stored,
            sys_flag=message.sys_flag,
            born_timestamp=message.born_timestamp,
            born_host=message.born_host,
            reconsume_times=message.reconsume_times,
        )
        try:
            put = self.broker.put_message(inner)
        except PutMessageError as exc:
            log.warning("ScheduleMessageService put message failed: %s", exc)
            return False
        if self.broker.config["enableScheduleMessageStats"]:
            stats = self.broker.stats
            stats.inc_queue_get_nums(SCHEDULE_CONSUMER_GROUP, SCHEDULE_TOPIC, level - 1, put.msg_num)
            stats.inc_queue_get_size(SCHEDULE_CONSUMER_GROUP, SCHEDULE_TOPIC, level - 1, put.wrote_bytes)
            stats.inc_group_get_nums(SCHEDULE_CONSUMER_GROUP, SCHEDULE_TOPIC, put.msg_num)
            stats.inc_group_get_size(SCHEDULE_CONSUMER_GROUP, SCHEDULE_TOPIC, put.wrote_bytes)
            stats.inc_topic_put_nums(inner.topic, put.msg_num, 1)
            stats.inc_topic_put_size(inner.topic, put.wrote_bytes)
            stats.inc_broker_put_nums(put.msg_num)
        return True
