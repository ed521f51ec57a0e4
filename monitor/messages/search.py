"""Finding messages: by key, by unique key (the producer's msgId), by either message id, by queue offset and by
store-time range over a topic's queues.

Every search that can return many messages is a generator with no result cap: a key is searched through the
brokers' index in slices until nothing can be missing (search_index), a time range is read through with pulls
(search_scan). They report their progress and poll for a cancel between two broker requests (search_progress).
The portal, its API and the mqadmin CLI all search through these functions.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

from monitor.messages.search_index import search_index
from monitor.messages.search_progress import CancelFn, Progress, ProgressFn, SearchCancelled, Tracker
from monitor.messages.search_scan import pull_range, scan_queue, topic_queues
from monitor.remoting.admin import MQAdmin, PullStatus
from monitor.remoting.message import MessageExt, decode_offset_msg_id

__all__ = [
    "CancelFn",
    "InvalidMessageId",
    "MessageNotFound",
    "Progress",
    "ProgressFn",
    "SearchCancelled",
    "by_id",
    "by_key",
    "by_queue_offset",
    "by_time_range",
    "by_unique_key",
    "is_offset_id",
    "queue_range",
]


class InvalidMessageId(ValueError):
    """An id that is not an offset id of this cluster, given without the topic that would let it be looked up
    as a producer's id (UNIQ_KEY)."""


class MessageNotFound(LookupError):
    pass


def _check_range(begin_ms: int, end_ms: int | None) -> None:
    if begin_ms < 0 or (end_ms is not None and end_ms < begin_ms):
        raise ValueError(f"time range {begin_ms}..{end_ms} is empty or negative")


def by_key(
    admin: MQAdmin,
    topic: str,
    key: str,
    begin_ms: int = 0,
    end_ms: int | None = None,
    *,
    progress: ProgressFn = None,
    cancelled: CancelFn = None,
) -> Iterator[MessageExt]:
    """Every message of `topic` whose KEYS hold `key`, stored within [begin_ms, end_ms] (end None: no end), each
    once, broker by broker (newest answers first within a broker; callers sort if they need an order)."""
    if not key:
        raise ValueError("no message key given")
    _check_range(begin_ms, end_ms)
    tracker = Tracker(progress, cancelled)
    yield from search_index(admin, topic, key, lambda m: key in m.keys, begin_ms, end_ms, tracker)
    tracker.report(1.0, force=True)


def by_unique_key(
    admin: MQAdmin,
    topic: str,
    uniq_key: str,
    begin_ms: int = 0,
    end_ms: int | None = None,
    *,
    progress: ProgressFn = None,
    cancelled: CancelFn = None,
) -> Iterator[MessageExt]:
    """The messages of `topic` whose UNIQ_KEY (the msgId a producer's send returned) is `uniq_key`: usually one,
    more when a producer's retry stored it again. Searched like a key, since the index holds both alike."""
    if not uniq_key:
        raise ValueError("no message id given")
    _check_range(begin_ms, end_ms)
    tracker = Tracker(progress, cancelled)
    yield from search_index(admin, topic, uniq_key, lambda m: m.uniq_key == uniq_key, begin_ms, end_ms, tracker)
    tracker.report(1.0, force=True)


def is_offset_id(admin: MQAdmin, msg_id: str, topic: str | None = None) -> bool:
    """Whether `msg_id` is read as an offset id (True) or looked up as a producer's id in `topic` (False).

    Both ids are 16 bytes of hex, so the bytes alone do not tell them apart: a producer's id (client IP, pid,
    class-loader hash, time, counter) read as an offset id names a made-up store host. An id is an offset id only
    when the store host it names is a broker of the cluster, so no other address is ever connected to; otherwise,
    as mqadmin 5 does, it is looked up by unique key in `topic`. Without a topic such an id is an
    InvalidMessageId."""
    try:
        addr, _ = decode_offset_msg_id(msg_id)
    except ValueError as exc:
        if topic is None:
            raise InvalidMessageId(str(exc)) from None
        return False
    if admin.is_cluster_broker(addr):
        return True
    if topic is None:
        raise InvalidMessageId(
            f"{msg_id!r} is not an offset message id of this cluster (the store host it would name, {addr}, is not"
            " one of its brokers)"
        )
    return False


def by_id(admin: MQAdmin, msg_id: str, topic: str | None = None) -> list[MessageExt]:
    """The message an id names: an offset id of this cluster is read from its broker (VIEW_MESSAGE_BY_ID), any
    other id is looked up as a UNIQ_KEY in `topic` (every copy a producer's retry stored; empty if none)."""
    msg_id = msg_id.strip()
    if is_offset_id(admin, msg_id, topic):
        return [admin.view_message(msg_id)]
    return list(by_unique_key(admin, topic, msg_id))


def by_queue_offset(admin: MQAdmin, topic: str, broker_name: str, queue_id: int, offset: int) -> MessageExt:
    """The message at one queue offset, pulled as mqadmin's queryMsgByOffset pulls it (from the master)."""
    (ref,) = topic_queues(admin, topic, broker_name, queue_id)
    result = admin.pull_message(ref.addr, topic, queue_id, offset, 1)
    if result.status is not PullStatus.FOUND or not result.messages:
        raise MessageNotFound(
            f"no message at offset {offset} of {topic}:{broker_name}:{queue_id}"
            f" ({result.status.name}; the queue holds offsets {result.min_offset} to {result.max_offset - 1})"
        )
    return result.messages[0]


def by_time_range(
    admin: MQAdmin,
    topic: str,
    begin_ms: int,
    end_ms: int | None,
    *,
    broker_name: str | None = None,
    queue_id: int | None = None,
    progress: ProgressFn = None,
    cancelled: CancelFn = None,
) -> Iterator[MessageExt]:
    """Every message of the topic (one broker's queues, one queue) stored within [begin_ms, end_ms] (end None:
    now), queue by queue, oldest first in each queue."""
    end_ms = int(time.time() * 1000) if end_ms is None else end_ms
    _check_range(begin_ms, end_ms)
    tracker = Tracker(progress, cancelled)
    queues = topic_queues(admin, topic, broker_name, queue_id)
    for number, ref in enumerate(queues):

        def on_fraction(fraction: float, number: int = number, label: str = ref.label) -> None:
            tracker.report((number + min(fraction, 1.0)) / len(queues), label)

        for msg in scan_queue(admin, ref, begin_ms, end_ms, tracker, on_fraction):
            tracker.found += 1
            yield msg
        tracker.report((number + 1) / len(queues), ref.label, force=True)
    tracker.report(1.0, force=True)


def queue_range(
    admin: MQAdmin,
    topic: str,
    broker_name: str,
    queue_id: int,
    begin_offset: int,
    end_offset: int,
    *,
    progress: ProgressFn = None,
    cancelled: CancelFn = None,
) -> Iterator[MessageExt]:
    """The messages of one queue at offsets [begin_offset, end_offset), oldest first; offsets the broker no
    longer holds are skipped."""
    (ref,) = topic_queues(admin, topic, broker_name, queue_id)
    tracker = Tracker(progress, cancelled)
    span = max(end_offset - begin_offset, 1)

    def on_batch(offset: int) -> None:
        tracker.report((offset - begin_offset) / span, ref.label)

    for msg in pull_range(admin, ref, begin_offset, end_offset, tracker, on_batch):
        tracker.found += 1
        yield msg
    tracker.report(1.0, force=True)
