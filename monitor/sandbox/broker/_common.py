"""Small pieces the broker's parts share: Java's clock and DataVersion step, the iteration order of the Java
maps behind the broker's bodies, so that a body lists its entries in the order a 4.9.4 broker writes them, and the
cache of bodies built from whole tables."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Hashable, Iterable, Mapping
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
    """MessageQueue.hashCode (brokerName, queueId, topic with prime 31), a signed 32-bit int. Java wraps after
    every step; wrapping once at the end gives the same bits (arithmetic modulo 2**32), for a fraction of the cost
    in GET_BROKER_CONSUME_STATS, which hashes every queue of every group."""
    return _int32(961 * (31 + java_string_hash(mq.broker_name)) + 31 * mq.queue_id + java_string_hash(mq.topic))


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
    unique = list(dict.fromkeys(items))
    return unique if len(unique) < 2 else java_hashmap_order(unique)


class EncodedBodies:
    """Bodies built from a whole table (GET_ALL_TOPIC_CONFIG, REGISTER_BROKER, GET_ALL_SUBSCRIPTIONGROUP_CONFIG),
    kept for as long as the table stays the same.

    With 10,000 entries a body is over a megabyte of fastjson and a few hundred milliseconds to build, yet the
    monitor asks for it every collection, slaves every few seconds and the name-server registration every 30 s,
    while the table itself rarely changes. ``state`` identifies the table's content: a body is reused until it
    changes. A body is built on a worker thread from a snapshot taken on the loop, so the broker keeps answering
    meanwhile (the build holds the GIL only in slices), and requests arriving during a build share it."""

    def __init__(self):
        self._state: Hashable = None
        self._bodies: dict[str, bytes] = {}
        self._building: dict[str, asyncio.Future[bytes]] = {}

    async def get(self, state: Hashable, kind: str, prepare: Callable[[], Callable[[], bytes]]) -> bytes:
        """The ``kind`` body for a table in ``state``. On a miss ``prepare()`` runs on the loop: it takes what the
        body needs from the table (which must not change under the worker) and returns the function that builds
        the body on the worker thread."""
        if state != self._state:
            self._state, self._bodies, self._building = state, {}, {}
        body = self._bodies.get(kind)
        if body is not None:
            return body
        loop = asyncio.get_running_loop()
        building = self._building.get(kind)
        if building is None or building.get_loop() is not loop:  # none yet, or left behind by a stopped loop
            building = self._building[kind] = loop.run_in_executor(None, prepare())
            building.add_done_callback(lambda done: self._built(state, kind, done))
        return await asyncio.shield(building)

    def _built(self, state: Hashable, kind: str, done: asyncio.Future[bytes]) -> None:
        if self._building.get(kind) is done:
            del self._building[kind]
        if state == self._state and not done.cancelled() and done.exception() is None:
            self._bodies[kind] = done.result()
