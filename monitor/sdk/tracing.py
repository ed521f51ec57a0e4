"""Message trace written by the SDK, as RocketMQ's Java client writes it (its AsyncTraceDispatcher and trace hooks):
a Pub record per successful send, a SubBefore before and a SubAfter after each message a listener consumes, encoded
by :func:`monitor.trace.records.encode_record` (the 4.9.4 layout) and stored as messages of the cluster's trace
topic whose KEYS are the traced messages' ids and keys, so the portal's message page and ``queryMsgTraceById`` find
them.

The send and consume paths only append a record to a bounded buffer (:data:`DEFAULT_BUFFER` records, as Java's
queue of 1024 contexts holds about as many): a full buffer drops the record and counts it, it never blocks or fails
the application's call. A daemon thread takes the buffer every :data:`POLL_INTERVAL`, packs records into trace
messages of up to :data:`MAX_TRACE_MESSAGE_BYTES` (Java's maxMsgSize less 10 000) and sends a message once it is
full or its first record has waited :data:`FLUSH_WAIT`, synchronously, with a producer of its own (group
``_INNER_TRACE_PRODUCER-<group>``, as Java's). A trace message that cannot be sent is counted with its records
(failed). Records written, dropped and failed are counted per topic and minute in the client's recorder, so they
go to the portal in the per-minute reports.

Which topics are traced (:class:`TraceSwitch`): those configured locally, and those whose trace switch is on in the
portal (the bootstrap's ``traced_topics``, followed every minute, so switching a topic's trace in the portal starts
or stops its records within a refresh).
"""

from __future__ import annotations

import collections
import ctypes
import itertools
import logging
import os
import threading
import time
import uuid
from collections.abc import Callable, Iterable

from rocketmq import client as rmq
from rocketmq.exceptions import ffi_check
from rocketmq.ffi import _CStatus, dll

from monitor.trace.records import (
    CONSUME_RETURN_TYPES,
    RMQ_SYS_TRACE_TOPIC,
    TraceRecord,
    TraceType,
    encode_record,
    trace_message_keys,
)

log = logging.getLogger("monitor.sdk")

TRACE_PRODUCER_PREFIX = "_INNER_TRACE_PRODUCER"  # TraceConstants.GROUP_NAME_PREFIX
DEFAULT_BUFFER = 2048
MAX_TRACE_MESSAGE_BYTES = 128_000 - 10_000
# A message's properties are stored with a 16-bit length: a trace message's KEYS stay below it.
MAX_TRACE_KEYS_CHARS = 30_000
POLL_INTERVAL = 0.1  # Java's pollingTimeMil
FLUSH_WAIT = 0.5  # Java's waitTimeThresholdMil
DEFAULT_REGION = "DefaultRegion"  # a broker's regionId unless configured; the C++ client does not return it
TRACE_SEND_TIMEOUT_MS = 5000  # Java's trace producer's sendMsgTimeout

# Not declared by the 0.4.4 binding: the trace producer's own instance name.
dll.SetProducerInstanceName.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
dll.SetProducerInstanceName.restype = _CStatus

# send(trace_topic, body, keys): sends one trace message, raising on failure.
TraceSender = Callable[[str, bytes, str], None]
# count(topic, field, n): counts n records of topic as "written", "dropped" or "failed".
TraceCounter = Callable[[str, str, int], None]


class TraceSwitch:
    """Which topics a client traces and where records go: ``local`` (True: every topic; or topic names) and what
    the portal's bootstrap answer says (:meth:`apply`); ``trace_topic`` given locally wins over the portal's."""

    def __init__(self, local: bool | Iterable[str] = False, trace_topic: str | None = None):
        self._all = local is True
        self._local = frozenset() if isinstance(local, bool) else frozenset(local)
        self._portal: frozenset[str] = frozenset()
        self._local_topic = trace_topic
        self._portal_topic: str | None = None

    def apply(self, settings: dict) -> None:
        self._portal = frozenset(settings.get("traced_topics") or ())
        self._portal_topic = settings.get("trace_topic") or None

    def traced(self, topic: str) -> bool:
        return self._all or topic in self._local or topic in self._portal

    @property
    def any(self) -> bool:
        return bool(self._all or self._local or self._portal)

    @property
    def trace_topic(self) -> str:
        return self._local_topic or self._portal_topic or RMQ_SYS_TRACE_TOPIC


class _Segment:
    """The records of the trace message being packed."""

    def __init__(self) -> None:
        self.texts: list[str] = []
        self.records: list[TraceRecord] = []
        self.topics: collections.Counter[str] = collections.Counter()
        self.size = 0
        self.keys_chars = 0
        self.first_added = 0.0

    def add(self, topic: str, record: TraceRecord) -> None:
        text = encode_record(record)
        if not self.records:
            self.first_added = time.monotonic()
        self.texts.append(text)
        self.records.append(record)
        self.topics[topic] += 1
        self.size += len(text.encode())
        self.keys_chars += len(record.msg_id) + len(record.keys or "") + 2

    @property
    def full(self) -> bool:
        return self.size >= MAX_TRACE_MESSAGE_BYTES or self.keys_chars >= MAX_TRACE_KEYS_CHARS


class TraceDispatcher:
    """The bounded buffer and the thread writing it to the trace topic (see the module)."""

    def __init__(
        self,
        send: TraceSender,
        trace_topic: Callable[[], str],
        *,
        count: TraceCounter | None = None,
        capacity: int = DEFAULT_BUFFER,
        flush_wait: float = FLUSH_WAIT,
    ):
        self._send = send
        self._trace_topic = trace_topic
        self._count = count
        self._capacity = capacity
        self._flush_wait = flush_wait
        self._buffer: collections.deque[tuple[str, TraceRecord]] = collections.deque()
        self._segment = _Segment()
        self._stopped = threading.Event()
        self._thread: threading.Thread | None = None
        self.written = 0  # records in trace messages the broker took
        self.dropped = 0  # records lost to a full buffer
        self.failed = 0  # records in trace messages that could not be sent
        self.messages = 0  # trace messages sent

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="mqcloud-sdk-trace", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        """Write what is buffered (bounded by ``timeout``), then stop the thread."""
        self._stopped.set()
        if self._thread is not None:
            self._thread.join(timeout)

    def append(self, topic: str, record: TraceRecord) -> bool:
        """Buffer one record of ``topic``; False (and counted) when the buffer is full. Never blocks."""
        if len(self._buffer) >= self._capacity:
            self.dropped += 1
            self._counted(topic, "dropped", 1)
            return False
        self._buffer.append((topic, record))
        return True

    @property
    def buffered(self) -> int:
        return len(self._buffer)

    def _run(self) -> None:
        while True:
            stopping = self._stopped.wait(POLL_INTERVAL)
            try:
                self._drain()
                segment = self._segment
                if segment.records and (stopping or time.monotonic() - segment.first_added >= self._flush_wait):
                    self._write()
            except Exception:  # a bug here must not end tracing for the life of the application
                log.exception("writing message trace failed")
            if stopping:
                return

    def _drain(self) -> None:
        buffer = self._buffer
        while buffer:
            topic, record = buffer.popleft()
            self._segment.add(topic, record)
            if self._segment.full:
                self._write()

    def _write(self) -> None:
        segment, self._segment = self._segment, _Segment()
        trace_topic = self._trace_topic()
        body = "".join(segment.texts).encode()
        try:
            self._send(trace_topic, body, trace_message_keys(segment.records))
        except Exception as error:
            self.failed += len(segment.records)
            for topic, n in segment.topics.items():
                self._counted(topic, "failed", n)
            log.warning("could not write %d trace records to %s: %s", len(segment.records), trace_topic, error)
            return
        self.messages += 1
        self.written += len(segment.records)
        for topic, n in segment.topics.items():
            self._counted(topic, "written", n)

    def _counted(self, topic: str, field: str, n: int) -> None:
        if self._count is not None:
            try:
                self._count(topic, field, n)
            except Exception:  # counting must never break a send or the trace thread
                log.exception("counting trace records of %s failed", topic)


class ClientTracing:
    """One SDK client's tracing: the switch, and once a topic is traced, the dispatcher and its own producer
    (created then, kept until the client stops). ``count`` goes to the client's recorder."""

    def __init__(
        self,
        group: str,
        switch: TraceSwitch,
        *,
        count: TraceCounter | None = None,
        capacity: int = DEFAULT_BUFFER,
        flush_wait: float = FLUSH_WAIT,
    ):
        self.group = group
        self.switch = switch
        self._count = count
        self._capacity = capacity
        self._flush_wait = flush_wait
        self._namesrv_addrs = ""
        self._credentials: tuple[str, str, str] | None = None
        self._lock = threading.Lock()
        self._producer = None
        self.dispatcher: TraceDispatcher | None = None

    def start(self, namesrv_addrs: str, credentials: tuple[str, str, str] | None = None) -> None:
        self._namesrv_addrs, self._credentials = namesrv_addrs, credentials
        if self.switch.any:
            self._ensure_started()

    def apply(self, settings: dict) -> None:
        """Follow the portal's answer (traced topics, trace topic); start writing if a topic is traced now."""
        self.switch.apply(settings)
        if self.switch.any and self._namesrv_addrs:
            self._ensure_started()

    def traced(self, topic: str) -> bool:
        return self.dispatcher is not None and self.switch.traced(topic)

    def append(self, topic: str, record: TraceRecord) -> None:
        dispatcher = self.dispatcher
        if dispatcher is not None:
            dispatcher.append(topic, record)

    def stop(self, timeout: float = 5.0) -> None:
        """Write what is buffered (bounded by ``timeout``), then stop the trace producer."""
        with self._lock:
            dispatcher, self.dispatcher = self.dispatcher, None
        if dispatcher is not None:
            dispatcher.stop(timeout)
        with self._lock:
            producer, self._producer = self._producer, None
        if producer is not None:
            try:
                producer.shutdown()
            except Exception:  # stopping tracing must not fail the application's shutdown
                log.exception("stopping the trace producer of %s failed", self.group)

    def _ensure_started(self) -> None:
        with self._lock:
            if self.dispatcher is not None:
                return
            try:
                self._producer = _trace_producer(self.group, self._namesrv_addrs, self._credentials)
            except Exception:  # tracing must never stop the client: its records are not written, and say so
                log.exception("could not start the trace producer of %s; message trace is not written", self.group)
                return
            dispatcher = TraceDispatcher(
                self._send, lambda: self.switch.trace_topic, count=self._count, capacity=self._capacity,
                flush_wait=self._flush_wait,
            )  # fmt: skip
            dispatcher.start()
            self.dispatcher = dispatcher
            log.info("%s writes message trace to %s", self.group, self.switch.trace_topic)

    def _send(self, trace_topic: str, body: bytes, keys: str) -> None:
        message = rmq.Message(trace_topic)
        message.set_keys(keys)
        message.set_body(body)
        result = self._producer.send_sync(message)
        if result.status != rmq.SendStatus.OK:
            raise RuntimeError(f"the broker stored the trace message with status {result.status.name}")


_instances = itertools.count(1)


def _trace_producer(group: str, namesrv_addrs: str, credentials: tuple[str, str, str] | None) -> rmq.Producer:
    """The C++ client's producer for trace messages, in group ``_INNER_TRACE_PRODUCER-<group>`` with an instance
    name of its own (as Java's trace producer), so it shares nothing with the application's clients."""
    producer = rmq.Producer(f"{TRACE_PRODUCER_PREFIX}-{group}", timeout=TRACE_SEND_TIMEOUT_MS)
    name = f"PID_CLIENT_INNER_TRACE_PRODUCER_{os.getpid()}_{next(_instances)}"
    ffi_check(dll.SetProducerInstanceName(producer._handle, name.encode()))
    producer.set_namesrv_addr(namesrv_addrs)
    if credentials is not None:
        producer.set_session_credentials(*credentials)
    producer.start()
    return producer


# --- the records ------------------------------------------------------------------------------------------------


def _text(value: bytes | None) -> str | None:
    """A message property as Java's getter returns it: None (written ``null``) when absent."""
    return value.decode(errors="replace") if value else None


def pub_record(
    message: rmq.Message, group: str, topic: str, result: rmq.SendResult, *, sent_at: float, cost_ms: float,
    store_host: str,
) -> TraceRecord:  # fmt: skip
    """The Pub record of a successful send, as SendMessageTraceHookImpl fills it. The C++ client returns neither
    the offset message id nor the broker's region: they are written empty and as the brokers' default region."""
    handle = message._handle
    delay = dll.GetMessageDelayTimeLevel(handle)
    return TraceRecord(
        TraceType.Pub,
        result.msg_id,
        timestamp=int(sent_at * 1000),
        region_id=DEFAULT_REGION,
        group=group,
        topic=topic,
        tags=_text(dll.GetMessageTags(handle)),
        keys=_text(dll.GetMessageKeys(handle)),
        store_host=store_host,
        body_length=len(dll.GetMessageBody(handle) or b""),
        cost_ms=int(cost_ms),
        msg_type="Delay_Msg" if delay > 0 else "Normal_Msg",
        offset_msg_id="",
        success=result.status == rmq.SendStatus.OK,
    )


def msg_id_of(message: rmq.RecvMessage) -> str:
    """The id the producer gave the message (UNIQ_KEY), which its Pub record carries."""
    return _text(message.get_property("UNIQ_KEY")) or message.id


def sub_before_record(message: rmq.RecvMessage, group: str, request_id: str, started_at: float) -> TraceRecord:
    """The SubBefore record of a message handed to a listener (ConsumeMessageTraceHookImpl.consumeMessageBefore)."""
    return TraceRecord(
        TraceType.SubBefore,
        msg_id_of(message),
        timestamp=int(started_at * 1000),
        region_id=_text(message.get_property("MSG_REGION")) or "",
        group=group,
        request_id=request_id,
        retry_times=message.reconsume_times,
        keys=_text(message.keys),
    )


def sub_after_record(before: TraceRecord, *, cost_ms: float, failed: bool) -> TraceRecord:
    """The SubAfter record once the listener returned (consumeMessageAfter): a listener that raised is EXCEPTION."""
    return TraceRecord(
        TraceType.SubAfter,
        before.msg_id,
        request_id=before.request_id,
        cost_ms=int(cost_ms),
        success=not failed,
        keys=before.keys,
        context_code=CONSUME_RETURN_TYPES.index("EXCEPTION" if failed else "SUCCESS"),
        timestamp=int(time.time() * 1000),
        group=before.group,
    )


def request_id() -> str:
    """Joins a SubBefore to its SubAfter (Java: MessageClientIDSetter.createUniqID, 32 hex digits)."""
    return uuid.uuid4().hex.upper()
