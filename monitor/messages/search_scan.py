"""Reading a topic's queues straight through with pulls: a queue's offset range, or a window of store time.

This is the search that cannot miss anything: every message of the window is pulled, 32 at a time, as mqadmin's
pull consumer does (TOOLS_CONSUMER, no offset commit, from the master). It serves time-range searches, exports,
and the key search where the index cannot tell messages apart any more (see search_index).

Where a queue's window starts comes from SEARCH_OFFSET_BY_TIMESTAMP, which does not answer "the first message
stored at or after the time": 4.9.4's ConsumeQueue.getOffsetInQueueByTime binary-searches one consume-queue file
and answers an exact hit or the nearer neighbour. With several messages stored in the same millisecond the hit
can be any of them, so the scan steps back until it sees a message stored before the window. Store times never
go backwards in a queue (the commit log stamps them under its put lock), so the first message stored after the
window ends the scan.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

from monitor.messages.search_progress import Tracker
from monitor.remoting import body as b
from monitor.remoting.admin import MQAdmin, PullStatus
from monitor.remoting.message import MessageExt

PULL_BATCH = 32  # what a broker hands out per pull from memory (maxTransferCountOnMessageInMemory)


def broker_addr(bd: b.BrokerData) -> str | None:
    """BrokerData.selectBrokerAddr: the master, else any member that is up."""
    return bd.master_addr or next(iter(bd.broker_addrs.values()), None)


@dataclass(frozen=True)
class QueueRef:
    topic: str
    broker_name: str
    addr: str
    queue_id: int

    @property
    def label(self) -> str:
        return f"{self.broker_name} queue {self.queue_id}"


def topic_queues(
    admin: MQAdmin, topic: str, broker_name: str | None = None, queue_id: int | None = None
) -> list[QueueRef]:
    """The readable queues of `topic` (one broker's, one queue), from its route; an unknown broker or queue is a
    ValueError naming what the route holds."""
    route = admin.examine_topic_route_info(topic)
    addrs = {bd.broker_name: broker_addr(bd) for bd in route.broker_datas}
    queues = []
    for qd in sorted(route.queue_datas, key=lambda qd: qd.broker_name):
        addr = addrs.get(qd.broker_name)
        if addr is None or (broker_name is not None and qd.broker_name != broker_name):
            continue
        ids = range(qd.read_queue_nums)
        if queue_id is not None:
            if queue_id not in ids:
                raise ValueError(
                    f"{topic} has no readable queue {queue_id} on {qd.broker_name} (queues 0..{len(ids) - 1})"
                )
            ids = [queue_id]
        queues.extend(QueueRef(topic, qd.broker_name, addr, qid) for qid in ids)
    if broker_name is not None and not queues:
        known = ", ".join(sorted(addrs)) or "none"
        raise ValueError(f"broker {broker_name} does not serve {topic} (brokers: {known})")
    return queues


def pull_range(
    admin: MQAdmin, ref: QueueRef, begin: int, end: int, tracker: Tracker, on_batch: Callable[[int], None]
) -> Iterator[MessageExt]:
    """The messages of one queue at offsets [begin, end), pulled in batches; `on_batch(next_offset)` after each.
    Offsets the broker no longer holds are skipped where it says the queue continues."""
    offset = begin
    while offset < end:
        tracker.check()
        result = admin.pull_message(ref.addr, ref.topic, ref.queue_id, offset, PULL_BATCH)
        if result.status is PullStatus.NO_NEW_MSG:
            return
        for msg in result.messages:
            if msg.queue_offset >= end:
                return
            yield msg
        if result.next_begin_offset <= offset:
            return
        offset = result.next_begin_offset
        on_batch(offset)


def _message_at(admin: MQAdmin, ref: QueueRef, offset: int) -> MessageExt | None:
    result = admin.pull_message(ref.addr, ref.topic, ref.queue_id, offset, 1)
    return result.messages[0] if result.status is PullStatus.FOUND and result.messages else None


def _window_start(admin: MQAdmin, ref: QueueRef, begin_ms: int, low: int, high: int, tracker: Tracker) -> int:
    """An offset at or before the first message of the queue stored at or after `begin_ms`."""
    start = min(max(admin.search_offset(ref.addr, ref.topic, ref.queue_id, begin_ms), low), high - 1)
    while start > low:
        tracker.check()
        msg = _message_at(admin, ref, start)
        if msg is None or msg.store_timestamp < begin_ms:
            return start
        start = max(low, start - PULL_BATCH)
    return start


def scan_queue(
    admin: MQAdmin,
    ref: QueueRef,
    begin_ms: int,
    end_ms: int,
    tracker: Tracker,
    on_fraction: Callable[[float], None],
) -> Iterator[MessageExt]:
    """The queue's messages stored within [begin_ms, end_ms], oldest first, up to the queue's end when the scan
    started; `on_fraction(f)` says how far through the queue's window the scan is."""
    tracker.check()
    low = admin.get_min_offset(ref.addr, ref.topic, ref.queue_id)
    high = admin.get_max_offset(ref.addr, ref.topic, ref.queue_id)
    if high <= low:
        return
    start = _window_start(admin, ref, begin_ms, low, high, tracker)
    span = high - start

    def on_batch(offset: int) -> None:
        on_fraction((offset - start) / span)

    for msg in pull_range(admin, ref, start, high, tracker, on_batch):
        if msg.store_timestamp > end_ms:
            return
        if msg.store_timestamp >= begin_ms:
            yield msg
