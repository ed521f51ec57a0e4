"""The send template, in the spirit of the Spring Boot starter's ``RocketMQTemplate``: one call per way of sending,
the message built from a topic, a body and its options, on the SDK :class:`~monitor.sdk.producer.Producer` (so every
send is recorded and reported like any other).

Bodies: ``bytes`` as they are, ``str`` as UTF-8, anything else as JSON (UTF-8). Options of every send: ``tags``
(one tag: RocketMQ filters on it), ``keys`` (a string or several, indexed by the broker for queries by key),
``delay_level`` (1-18, the broker's ``messageDelayLevel``: 1 s, 5 s, 10 s, 30 s, 1 min ... 2 h) and ``properties``
(user properties).

Orderly sends take a sharding key and pick the queue as the Java client's ``SelectMessageQueueByHash`` does
(``abs(key.hashCode()) % queues``, Java's String hash), so Python and Java producers of one topic put a key's
messages in the same queue. Batches are sent message by message (``send_sync`` each, recorded like any send): the
C++ client's own batch marks itself ``batch="1"``, which a 4.x broker reads as false and stores the whole encoded
batch as one message (apache/rocketmq-client-cpp#363), so its consumers would get one garbled message. Transactional
sends do not exist here: the C++ client binding ``rocketmq==0.4.4`` has no transaction producer (docs/sdk.md).
"""

from __future__ import annotations

import ctypes
import json
from collections.abc import Callable, Iterable, Mapping

from rocketmq.client import Message, SendResult

from monitor.sdk.producer import Producer

Body = bytes | str | object


def java_string_hash(text: str) -> int:
    """Java's ``String.hashCode()`` (UTF-16 code units, 32-bit signed)."""
    value = 0
    data = text.encode("utf-16-be")
    for index in range(0, len(data), 2):
        value = (31 * value + int.from_bytes(data[index : index + 2], "big")) & 0xFFFFFFFF
    return value - (1 << 32) if value >= 1 << 31 else value


def hash_selector(size: int, _message, key_hash) -> int:
    """The queue of a sharding key as Java's SelectMessageQueueByHash chooses it (``abs(hash % queues)``), from the
    key's hash that the client hands the selector as a pointer to a C int."""
    return abs(ctypes.cast(key_hash, ctypes.POINTER(ctypes.c_int))[0]) % size


class ProducerTemplate:
    def __init__(self, producer: Producer):
        self.producer = producer

    def message(
        self,
        topic: str,
        body: Body,
        *,
        tags: str | None = None,
        keys: str | Iterable[str] | None = None,
        delay_level: int | None = None,
        properties: Mapping[str, str] | None = None,
    ) -> Message:
        message = Message(topic)
        message.set_body(_encode(body))
        if tags:
            message.set_tags(tags)
        if keys:
            message.set_keys(keys if isinstance(keys, str) else " ".join(keys))
        if delay_level:
            if not 1 <= delay_level <= 18:
                raise ValueError("delay_level is one of the broker's 18 levels: 1 to 18")
            message.set_delay_time_level(delay_level)
        for name, value in (properties or {}).items():
            message.set_property(name, value)
        return message

    def send(self, topic: str, body: Body, **options) -> SendResult:
        """Send and wait for the broker's answer."""
        return self.producer.send_sync(self.message(topic, body, **options))

    def send_async(
        self,
        topic: str,
        body: Body,
        on_success: Callable[[SendResult], None],
        on_exception: Callable[[Exception], None],
        **options,
    ) -> None:
        """Send without waiting: ``on_success(result)`` or ``on_exception(error)`` later, on the client's thread."""
        self.producer.send_async(self.message(topic, body, **options), on_success, on_exception)

    def send_oneway(self, topic: str, body: Body, **options) -> None:
        """Send without any answer (no result, no error once the message is on the socket)."""
        self.producer.send_oneway(self.message(topic, body, **options))

    def send_orderly(self, topic: str, body: Body, sharding_key: str, **options) -> SendResult:
        """Send to the queue of ``sharding_key``: the messages of one key are consumed in the order sent."""
        return self.producer.send_orderly(
            self.message(topic, body, **options),
            java_string_hash(sharding_key),
            retry_times=0,
            queue_selector=hash_selector,
        )

    def send_batch(self, topic: str, bodies: Iterable[Body], **options) -> list[SendResult]:
        """Send several messages of one topic (same options for each), in order, one request each (see the module);
        the first failure raises, the messages before it are sent."""
        return [self.send(topic, body, **options) for body in bodies]


def _encode(body: Body) -> bytes:
    if isinstance(body, bytes):
        return body
    if isinstance(body, str):
        return body.encode()
    return json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode()
