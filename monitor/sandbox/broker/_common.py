"""Small pieces the broker's parts share: Java's clock and DataVersion step, and the iteration order of the Java
maps behind the broker's bodies, so that a body lists its entries in the order a 4.9.4 broker writes them."""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TypeVar

from monitor.remoting.body import DataVersion, MessageQueue
from monitor.remoting.javahash import java_hashmap_order, java_string_hash

K = TypeVar("K")
V = TypeVar("V")

# Topic and subscription-group tables are ConcurrentHashMap(1024), consumer offsets ConcurrentHashMap(512) of
# ConcurrentHashMap(32): their tables start at these sizes.
TOPIC_TABLE_CAPACITY = 2048
GROUP_TABLE_CAPACITY = 2048
OFFSET_TABLE_CAPACITY = 1024
OFFSET_QUEUE_CAPACITY = 64


@dataclass
class InnerMessage:
    """MessageExtBrokerInner: a message on its way into the store, as the send, send-back and schedule paths
    build it. ``properties`` is the Java properties map the broker consults (DELAY, WAIT...); what is stored is
    ``properties_string`` when given (the Java paths often set it before changing the map) or else the map."""

    topic: str
    queue_id: int
    body: bytes
    properties: dict[str, str] = field(default_factory=dict)
    properties_string: str | None = None
    flag: int = 0
    sys_flag: int = 0
    born_timestamp: int = 0
    born_host: str = "127.0.0.1:0"
    reconsume_times: int = 0


def now_ms() -> int:
    """System.currentTimeMillis()."""
    return time.time_ns() // 1_000_000


def next_version(version: DataVersion) -> None:
    """DataVersion.nextVersion: a new timestamp and the next counter."""
    version.timestamp = now_ms()
    version.counter += 1


def ordered(mapping: Mapping[K, V], capacity: int = 16) -> dict[K, V]:
    """``mapping`` (in insertion order) re-ordered as a Java hash map of that table size iterates it."""
    return {key: mapping[key] for key in java_hashmap_order(mapping, initial_capacity=capacity)}


def _int32(value: int) -> int:
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value & 0x80000000 else value


def message_queue_hash(mq: MessageQueue) -> int:
    """MessageQueue.hashCode (brokerName, queueId, topic with prime 31), a signed 32-bit int."""
    result = 31 + java_string_hash(mq.broker_name)
    result = 31 * _int32(result) + mq.queue_id
    return _int32(31 * _int32(result) + java_string_hash(mq.topic))


def mq_ordered(mapping: Mapping[MessageQueue, V]) -> dict[MessageQueue, V]:
    """A ``HashMap<MessageQueue, V>`` filled in ``mapping``'s order, in its iteration order: the offset tables of
    ConsumeStats, TopicStatsTable and ResetOffsetBody are such maps. The hash codes are handed to the HashMap
    model as non-negative ints, whose Long hash is the int's own bits, so they land in Integer's buckets."""
    keys = list(mapping)
    codes = [message_queue_hash(mq) & 0xFFFFFFFF for mq in keys]
    by_code: dict[int, list[MessageQueue]] = {}
    for code, mq in zip(codes, keys, strict=True):
        by_code.setdefault(code, []).append(mq)
    order = java_hashmap_order(by_code, peak_size=len(keys))
    return {mq: mapping[mq] for code in order for mq in by_code[code]}


def java_set_order(items: Iterable[str]) -> list[str]:
    """A HashSet<String> filled in ``items``' order, as it iterates (GroupList, consumer id lists...)."""
    return java_hashmap_order(dict.fromkeys(items))
