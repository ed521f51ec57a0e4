"""MessageStore: one broker's store, tying the commit log, the consume queues and the key index together under one
lock, as DefaultMessageStore does: puts (single and batch), pulls, offset and time queries, queries by key and id,
replication to a slave, and the eviction that keeps memory bounded (see the package notes)."""

import re
import threading
import time
import zlib

from monitor.remoting.message import PROPERTY_SEPARATOR, create_offset_msg_id, decode_properties, parse_host
from monitor.sandbox.store.commitlog import CommitLog
from monitor.sandbox.store.consumequeue import ConsumeQueue
from monitor.sandbox.store.index import MAX_MSGS_NUM_BATCH, KeyIndex, index_keys
from monitor.sandbox.store.properties import tag_codes, tags_code
from monitor.sandbox.store.pull import scan
from monitor.sandbox.store.records import (
    JAVA_INT_MAX,
    LAYOUTS,
    TRANSACTION_MASK,
    consumable,
    host_flags,
    pack_header,
    parse_record,
    properties_field,
    split_batch,
    topic_field,
    utf8,
)
from monitor.sandbox.store.results import (
    GetMessageStatus,
    GetResult,
    PutMessageError,
    PutMessageStatus,
    PutResult,
    QueryResult,
    QueueFigures,
)

DEFAULT_MAX_BYTES = 256 * 1024 * 1024
DEFAULT_SEGMENT_BYTES = 1024 * 1024
CONSUME_QUEUE_FILE_ENTRIES = 300_000  # MessageStoreConfig.mappedFileSizeConsumeQueue / CQ_STORE_UNIT_SIZE
MAX_MESSAGE_SIZE = 4 * 1024 * 1024  # MessageStoreConfig.maxMessageSize

_DELAY = "DELAY"
_DELAY_LEVEL = re.compile(r"[+-]?[0-9]+")  # what Integer.parseInt accepts


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


class MessageStore:
    """One broker's message store (see the package notes for what it models and where it differs from 4.9.4).

    `slave=True` makes puts fail with SERVICE_NOT_AVAILABLE and, unless offset_check_in_slave, makes every failed
    pull answer next_begin_offset = the requested offset (DefaultMessageStore.nextOffsetCorrection), as a 4.9.4
    slave does; a slave is filled with replicate_from(master).
    """

    def __init__(
        self,
        store_host: str,
        *,
        max_bytes: int = DEFAULT_MAX_BYTES,
        segment_bytes: int = DEFAULT_SEGMENT_BYTES,
        consume_queue_file_entries: int = CONSUME_QUEUE_FILE_ENTRIES,
        max_message_size: int = MAX_MESSAGE_SIZE,
        slave: bool = False,
        offset_check_in_slave: bool = False,
    ):
        if min(max_bytes, segment_bytes, consume_queue_file_entries, max_message_size) <= 0:
            raise ValueError("store sizes must be positive")
        self.store_host = store_host
        self._store = parse_host(store_host, "store host")
        self.max_bytes = max_bytes
        self.max_message_size = max_message_size
        self.slave = slave
        self.offset_check_in_slave = offset_check_in_slave
        self._file_entries = consume_queue_file_entries
        self._lock = threading.Lock()
        self._log = CommitLog(segment_bytes)
        self._queues: dict[str, dict[int, ConsumeQueue]] = {}
        self._index = KeyIndex()

    # ---- writing -------------------------------------------------------------------------------------------------

    def put_message(
        self,
        topic: str,
        queue_id: int,
        body: bytes,
        properties: str,
        flag: int,
        sys_flag: int,
        born_timestamp: int,
        born_host: str,
        reconsume_times: int = 0,
        store_timestamp: int | None = None,
    ) -> PutResult:
        """Append one message (CommitLog.asyncPutMessage) and dispatch it to its consume queue and the key index.

        `properties` is stored verbatim: pass stored_properties(...) of a SEND header, or java_properties_string of
        properties the broker built. The body is stored as given, compressed or not; sysFlag is kept except for the
        two IPv6 bits, which follow born_host and the store host. store_timestamp defaults to now, taken under the
        lock so store times never go backwards.
        """
        self._check_writable()
        if len(body) > self.max_message_size:
            raise PutMessageError(PutMessageStatus.MESSAGE_ILLEGAL, f"body of {len(body)} bytes is over the maximum")
        tail = b"".join((body, topic_field(topic), properties_field(utf8(properties, "properties"))))
        born = parse_host(born_host, "born host")
        sys_flag = host_flags(sys_flag, born[0], self._store[0])
        layout = LAYOUTS[(sys_flag >> 4) & 3]
        size = layout.size + len(tail)
        crc = zlib.crc32(body) & JAVA_INT_MAX
        parsed = decode_properties(properties)
        queued = consumable(sys_flag)
        with self._lock:
            timestamp = _now_ms() if store_timestamp is None else store_timestamp
            physical_offset = self._log.max_offset
            queue_offset = self._next_queue_offset(topic, queue_id) if queued else 0
            header = pack_header(
                layout, size, crc, queue_id, flag, queue_offset, physical_offset, sys_flag, born_timestamp, born,
                timestamp, self._store, reconsume_times, len(body),
            )  # fmt: skip
            self._log.append(header, tail)
            self._dispatch(topic, queue_id, queue_offset, physical_offset, size, sys_flag, timestamp, parsed)
            self._evict()
        return PutResult(
            msg_id=create_offset_msg_id(self.store_host, physical_offset),
            queue_id=queue_id,
            queue_offset=queue_offset,
            commit_log_offset=physical_offset,
            store_timestamp=timestamp,
            wrote_bytes=size,
        )

    def put_messages_batch(
        self,
        topic: str,
        queue_id: int,
        batch_body: bytes,
        properties: str,
        sys_flag: int,
        born_timestamp: int,
        born_host: str,
        reconsume_times: int = 0,
        store_timestamp: int | None = None,
    ) -> PutResult:
        """SEND_MESSAGE with batch=true (CommitLog.asyncPutMessages): split the client's batch body into messages
        stored one after another in the queue, all with the same store time.

        Each stored message keeps its own flag, body and raw properties bytes, followed (with a \\x02 if they do not
        already end in one) by `properties`, the batch header's properties as stored_properties(..., batch=True)
        gives them. Like 4.9.4 it refuses transactional and delayed batches and bodies over the maximum size.
        """
        self._check_writable()
        encoded_topic = topic_field(topic)
        if len(batch_body) > self.max_message_size:
            raise PutMessageError(PutMessageStatus.MESSAGE_ILLEGAL, f"batch of {len(batch_body)} bytes is too long")
        if sys_flag & TRANSACTION_MASK:
            raise PutMessageError(PutMessageStatus.MESSAGE_ILLEGAL, "a batch cannot be transactional")
        delay = decode_properties(properties).get(_DELAY, "0")
        if not _DELAY_LEVEL.fullmatch(delay) or int(delay) > 0:
            raise PutMessageError(PutMessageStatus.MESSAGE_ILLEGAL, f"a batch cannot be delayed (DELAY {delay!r})")
        batch_properties = utf8(properties, "properties")
        born = parse_host(born_host, "born host")
        sys_flag = host_flags(sys_flag, born[0], self._store[0])
        layout = LAYOUTS[(sys_flag >> 4) & 3]
        messages = []
        for flag, body, own_properties in split_batch(batch_body):
            separator = b""
            if own_properties and batch_properties and own_properties[-1] != ord(PROPERTY_SEPARATOR):
                separator = PROPERTY_SEPARATOR.encode()
            all_properties = own_properties + separator + batch_properties
            tail = b"".join((body, encoded_topic, properties_field(all_properties)))
            parsed = decode_properties(all_properties.decode(errors="replace"))
            messages.append((flag, zlib.crc32(body) & JAVA_INT_MAX, len(body), tail, parsed))
        with self._lock:
            timestamp = _now_ms() if store_timestamp is None else store_timestamp
            first_queue_offset = self._next_queue_offset(topic, queue_id)
            records = []
            first_physical_offset = physical_offset = self._log.max_offset
            for number, (flag, crc, body_length, tail, parsed) in enumerate(messages):
                size = layout.size + len(tail)
                header = pack_header(
                    layout, size, crc, queue_id, flag, first_queue_offset + number, physical_offset, sys_flag,
                    born_timestamp, born, timestamp, self._store, reconsume_times, body_length,
                )  # fmt: skip
                records.append((physical_offset, size, header, tail, parsed))
                physical_offset += size
            for number, (offset, size, header, tail, parsed) in enumerate(records):
                self._log.append(header, tail)
                self._dispatch(topic, queue_id, first_queue_offset + number, offset, size, sys_flag, timestamp, parsed)
            self._evict()
        return PutResult(
            msg_id=",".join(create_offset_msg_id(self.store_host, record[0]) for record in records),
            queue_id=queue_id,
            queue_offset=first_queue_offset,
            commit_log_offset=first_physical_offset,
            store_timestamp=timestamp,
            wrote_bytes=sum(record[1] for record in records),
            msg_num=len(records),
        )

    def delete_topic(self, topic: str) -> None:
        """DELETE_TOPIC_IN_BROKER (cleanUnusedTopic): the topic's consume queues go, so a recreated topic starts at
        offset 0 again; its records stay in the commit log and the key index until they age out, as in 4.9.4."""
        with self._lock:
            self._queues.pop(topic, None)

    # ---- reading -------------------------------------------------------------------------------------------------

    def get_message(
        self, topic: str, queue_id: int, offset: int, max_msgs: int, tag_filter: str | None = None
    ) -> GetResult:
        """DefaultMessageStore.getMessage: up to max_msgs records from `offset`, filtered by a TAG expression
        (None, "" or "*" for all, else "a || b"), with the status and next_begin_offset 4.9.4 computes."""
        codes = tag_codes(tag_filter)
        with self._lock:
            queue = self._queues.get(topic, {}).get(queue_id)
            if queue is None:
                return self._miss(GetMessageStatus.NO_MESSAGE_IN_QUEUE, offset, 0, 0, 0)
            min_offset, max_offset = queue.min_offset, queue.max_offset
            if max_offset == 0:
                return self._miss(GetMessageStatus.NO_MESSAGE_IN_QUEUE, offset, 0, min_offset, max_offset)
            if offset < min_offset:
                return self._miss(GetMessageStatus.OFFSET_TOO_SMALL, offset, min_offset, min_offset, max_offset)
            if offset == max_offset:
                return self._miss(GetMessageStatus.OFFSET_OVERFLOW_ONE, offset, offset, min_offset, max_offset)
            if offset > max_offset:
                return self._miss(GetMessageStatus.OFFSET_OVERFLOW_BADLY, offset, max_offset, min_offset, max_offset)
            if offset < queue.start:  # its consume-queue file was deleted but the minimum could not move past it
                roll = queue.roll_next_file(offset)
                return self._miss(GetMessageStatus.OFFSET_FOUND_NULL, offset, roll, min_offset, max_offset)
            return scan(queue, self._log, offset, max_msgs, codes)

    def _miss(self, status: GetMessageStatus, offset: int, corrected: int, low: int, high: int) -> GetResult:
        """A pull that found nothing: a 4.9.4 slave keeps the requested offset unless offsetCheckInSlave is on."""
        next_begin = offset if self.slave and not self.offset_check_in_slave else corrected
        return GetResult(status=status, next_begin_offset=next_begin, min_offset=low, max_offset=high)

    def max_offset(self, topic: str, queue_id: int) -> int:
        """GET_MAX_OFFSET: the queue's next offset, 0 for an unknown queue."""
        with self._lock:
            queue = self._queues.get(topic, {}).get(queue_id)
            return queue.max_offset if queue else 0

    def min_offset(self, topic: str, queue_id: int) -> int:
        """GET_MIN_OFFSET: the first offset still served, 0 for an unknown queue."""
        with self._lock:
            queue = self._queues.get(topic, {}).get(queue_id)
            return queue.min_offset if queue else 0

    def message_store_timestamp(self, topic: str, queue_id: int, offset: int) -> int:
        """getMessageStoreTimeStamp: the store time of the message at a queue offset, -1 if it is not there."""
        with self._lock:
            return self._store_timestamp_at(topic, queue_id, offset)

    def _store_timestamp_at(self, topic: str, queue_id: int, offset: int) -> int:
        queue = self._queues.get(topic, {}).get(queue_id)
        if queue is None or not max(queue.min_offset, queue.start) <= offset < queue.max_offset:
            return -1
        return self._log.store_timestamp(queue.physical[offset - queue.start])

    def earliest_store_time(self, topic: str, queue_id: int) -> int:
        """GET_EARLIEST_MSG_STORETIME: the store time of the queue's first message, -1 when there is none."""
        with self._lock:
            queue = self._queues.get(topic, {}).get(queue_id)
            return -1 if queue is None else self._store_timestamp_at(topic, queue_id, queue.min_offset)

    def queue_figures(self, topic: str, queue_id: int) -> QueueFigures:
        """One TopicStatsTable entry: min and max offsets and the store time of the newest message (0 if none)."""
        with self._lock:
            queue = self._queues.get(topic, {}).get(queue_id)
            low, high = (queue.min_offset, queue.max_offset) if queue else (0, 0)
            last = self._store_timestamp_at(topic, queue_id, high - 1) if high > 0 else 0
            return QueueFigures(min_offset=low, max_offset=high, last_update_timestamp=last)

    def search_offset(self, topic: str, queue_id: int, timestamp: int) -> int:
        """SEARCH_OFFSET_BY_TIMESTAMP: the queue's offset nearest the time, as 4.9.4 picks it (see
        ConsumeQueue.offset_by_time), 0 for an unknown queue."""
        with self._lock:
            queue = self._queues.get(topic, {}).get(queue_id)
            return 0 if queue is None else queue.offset_by_time(timestamp, self._log)

    def query_by_key(
        self, topic: str, key: str, max_num: int, begin: int, end: int, batch_limit: int = MAX_MSGS_NUM_BATCH
    ) -> QueryResult:
        """QUERY_MESSAGE (DefaultMessageStore.queryMessage): the newest min(max_num, batch_limit) records of `topic`
        indexed under `key` (a KEYS word or a UNIQ_KEY) whose indexed time (store time cut to whole seconds from
        the index's first entry) is within [begin, end], oldest first. batch_limit is maxMsgsNumBatch."""
        with self._lock:
            matched = self._index.query(topic, key, max_num, begin, end, self._log, batch_limit)
            if not matched:
                return QueryResult(b"", 0, 0, 0)
            records = [self._log.read(offset, self._log.record_size_at(offset)) for offset in matched]
            return QueryResult(
                body=b"".join(records),
                message_count=len(records),
                index_last_update_timestamp=self._index.last_update_timestamp,
                index_last_update_phyoffset=self._index.last_update_phyoffset,
            )

    def view_by_offset(self, commit_log_offset: int) -> bytes | None:
        """VIEW_MESSAGE_BY_ID: the record starting at a commit-log offset (decoded from an offset msg id)."""
        with self._lock:
            size = self._log.record_size_at(commit_log_offset)
            return None if size is None else bytes(self._log.read(commit_log_offset, size))

    def topics(self) -> list[str]:
        """Topics that have at least one consume queue."""
        with self._lock:
            return sorted(self._queues)

    def queue_ids(self, topic: str) -> list[int]:
        with self._lock:
            return sorted(self._queues.get(topic, {}))

    @property
    def commit_log_min_offset(self) -> int:
        with self._lock:
            return self._log.min_offset

    @property
    def commit_log_max_offset(self) -> int:
        with self._lock:
            return self._log.max_offset

    # ---- replication ---------------------------------------------------------------------------------------------

    def records_since(self, commit_log_offset: int, max_bytes: int | None = None) -> tuple[int, bytes]:
        """(where they start, the commit-log bytes from there): what a master's HA connection streams to a slave.

        Offset 0 means "everything still retained" (a real master likewise picks the start for a slave that reports
        0). Otherwise the offset must be a retained record start or the end of the log; a slave that fell behind
        what the master still holds, or that is ahead of it, gets ValueError, where a real pair would stall.
        With max_bytes the copy stops at a segment end once it has that much (see CommitLog.copy_from).
        """
        with self._lock:
            if commit_log_offset == 0:
                commit_log_offset = self._log.min_offset
            if commit_log_offset == self._log.max_offset:
                return commit_log_offset, b""
            if self._log.record_size_at(commit_log_offset) is None:
                raise ValueError(
                    f"commit-log offset {commit_log_offset} is not a retained record start"
                    f" (this store holds {self._log.min_offset}..{self._log.max_offset})"
                )
            return commit_log_offset, self._log.copy_from(commit_log_offset, max_bytes)

    def append_records(self, commit_log_offset: int, data: bytes) -> None:
        """Append replicated records at `commit_log_offset` and dispatch them like the real slave's reput service.

        The records must start exactly where this log ends (or anywhere, while it is still empty) and name their
        own offsets correctly; nothing is appended otherwise.
        """
        records = []
        position = 0
        while position < len(data):
            record = parse_record(data, position)
            if record.physical_offset != commit_log_offset + position:
                raise ValueError(
                    f"record at {commit_log_offset + position} says it belongs at {record.physical_offset}"
                )
            records.append((position, record))
            position += record.size
        with self._lock:
            if self._log.empty:
                self._log.rebase(commit_log_offset)
            elif commit_log_offset != self._log.max_offset:
                raise ValueError(f"records start at {commit_log_offset} but this log ends at {self._log.max_offset}")
            for start, record in records:
                self._log.append(data[start : start + record.size])
                self._dispatch(
                    record.topic, record.queue_id, record.queue_offset, record.physical_offset, record.size,
                    record.sys_flag, record.store_timestamp, record.properties,
                )  # fmt: skip
            self._evict()

    def replicate_from(self, master: "MessageStore") -> int:
        """Copy what `master` has beyond this store's end, a segment at a time, up to the master's end when the call
        began; returns the bytes copied. Afterwards both hold the same bytes at the same offsets."""
        target = master.commit_log_max_offset
        copied = 0
        while True:
            with self._lock:
                offset = self._log.max_offset
            if offset >= target:
                return copied
            start, data = master.records_since(offset, self._log.segment_bytes)
            if not data:
                return copied
            self.append_records(start, data)
            copied += len(data)

    # ---- internals -------------------------------------------------------------------------------------------

    def _check_writable(self) -> None:
        if self.slave:
            raise PutMessageError(PutMessageStatus.SERVICE_NOT_AVAILABLE, "a slave store does not take puts")

    def _next_queue_offset(self, topic: str, queue_id: int) -> int:
        queue = self._queues.get(topic, {}).get(queue_id)
        return queue.max_offset if queue else 0

    def _dispatch(
        self,
        topic: str,
        queue_id: int,
        queue_offset: int,
        physical_offset: int,
        size: int,
        sys_flag: int,
        store_timestamp: int,
        properties: dict[str, str],
    ) -> None:
        """CommitLogDispatcherBuildConsumeQueue + CommitLogDispatcherBuildIndex for one stored record."""
        if consumable(sys_flag):
            queues = self._queues.setdefault(topic, {})
            queue = queues.get(queue_id)
            if queue is None or queue.max_offset != queue_offset:
                queue = queues[queue_id] = ConsumeQueue(queue_offset, self._file_entries)
            queue.append(physical_offset, size, tags_code(properties), store_timestamp)
        self._index.add(index_keys(topic, sys_flag, properties), physical_offset, store_timestamp)

    def _evict(self) -> None:
        """Drop the oldest segments while over max_bytes, then clean consume queues and index like 4.9.4."""
        dropped = False
        while self._log.max_offset - self._log.min_offset > self.max_bytes and len(self._log.segments) > 1:
            segment = self._log.drop_first()
            counts: dict[str, int] = {}
            position = 0
            while position < len(segment):
                record = parse_record(segment, position)
                for key in index_keys(record.topic, record.sys_flag, record.properties):
                    counts[key] = counts.get(key, 0) + 1
                position += record.size
            self._index.remove_oldest(counts)
            dropped = True
        if dropped:
            for queues in self._queues.values():
                for queue in queues.values():
                    queue.delete_expired(self._log.min_offset)
