"""The sandbox broker's message store: an in-memory copy of what RocketMQ 4.9.4's DefaultMessageStore does.

A sandbox broker answers PULL_MESSAGE, QUERY_MESSAGE, VIEW_MESSAGE_BY_ID, SEARCH_OFFSET_BY_TIMESTAMP and the offset
queries with what a real 4.9.4 broker would send, so clients and the control plane cannot tell the difference. That
means this store keeps the same three structures as the real one and follows the same rules, ported from 4.9.4
(DefaultMessageStore, CommitLog, ConsumeQueue, IndexService/IndexFile, MessageDecoder):

* **Commit log**: every record, encoded exactly as CommitLog writes it (the layout monitor.remoting.message
  decodes), appended at a byte position that *is* its commit-log offset. Offset message ids are therefore genuine:
  store host + the offset at which the record really sits. A slave copies these bytes verbatim and ends up with the
  same records at the same offsets.
* **Consume queues**, one per (topic, queue id): logical offset -> (commit-log offset, size, tags hash code), kept in
  "files" of `consume_queue_file_entries` entries (300,000 in 4.9.4) because file boundaries show through the
  real store's answers: a pull never scans past the end of the file holding its offset, files are deleted whole,
  and a search by time first picks a file.
* **Key index**: "topic#key" -> commit-log offsets for UNIQ_KEY and every space-separated KEYS entry, for
  QUERY_MESSAGE.

Memory is bounded. The commit log is a list of segments (bytearrays, `segment_bytes` each, holding whole records)
standing in for the real 1 GiB files; when the retained bytes exceed `max_bytes` the oldest segments are dropped, as
the real store deletes whole files, and the consume queues are then cleaned the 4.9.4 way (ConsumeQueue
.deleteExpiredFile: drop every file but the last whose last entry points below the new commit-log minimum, then move
the minimum to the first entry that still has its record). So, like the real store, a queue whose records are all
gone keeps its old minimum and pulls there answer OFFSET_FOUND_NULL / MESSAGE_WAS_REMOVING rather than
OFFSET_TOO_SMALL. The cap counts record bytes only; on top of them the queues take 20 bytes per message and the
key index about 170 per key (UNIQ_KEY and each KEYS word), some 360 bytes per typical message. The newest segment is
never dropped.

Where this store knowingly differs from 4.9.4:

* Segments carry no end-of-file blank, so commit-log offsets stay contiguous where the real log skips to the next
  1 GiB boundary.
* Pulls use the "message in memory" transfer limits (32 messages, 256 KiB): everything here is in memory.
* Delayed messages (DELAY property) are stored in their own topic: the rewrite to SCHEDULE_TOPIC_XXXX and the
  delivery service are the broker's business, not emulated here.
* The index matches keys exactly; the real one matches a 32-bit hash and can return another key's messages.
  It models one index file (a real one holds 20 million keys before the next starts), whose first key's store
  time is the base of the whole-second times that the begin/end filter compares.
* A consume-queue file's "last modified" time (used by the search by time) is the store time of its newest entry.
* A slave whose record for a queue does not continue its consume queue (the master deleted and recreated the
  topic) restarts that queue at the record's offset; the real slave writes the entry anyway and corrupts the queue.
* Java's HashMap is modelled up to its bucket order and resizing; bins with nine or more colliding keys (which
  Java turns into trees) are not, and no message's properties come near that.

Thread safety: one lock around every public method, so many connections can put and pull at once.
"""

import bisect
import enum
import re
import struct
import threading
import time
import zlib
from array import array
from dataclasses import dataclass
from functools import lru_cache

from monitor.remoting.javahash import java_hashmap_order, java_string_hash
from monitor.remoting.message import (
    BORNHOST_V6_FLAG,
    KEY_SEPARATOR,
    MESSAGE_MAGIC_CODE,
    NAME_VALUE_SEPARATOR,
    PROPERTY_SEPARATOR,
    STOREHOSTADDRESS_V6_FLAG,
    create_offset_msg_id,
    decode_properties,
    parse_host,
)

__all__ = [
    "CONSUME_QUEUE_FILE_ENTRIES",
    "DEFAULT_MAX_BYTES",
    "DEFAULT_SEGMENT_BYTES",
    "MAX_MESSAGE_SIZE",
    "GetMessageStatus",
    "GetResult",
    "MessageStore",
    "PutMessageError",
    "PutMessageStatus",
    "PutResult",
    "QueryResult",
    "QueueFigures",
    "java_properties_string",
    "stored_properties",
]

DEFAULT_MAX_BYTES = 256 * 1024 * 1024
DEFAULT_SEGMENT_BYTES = 1024 * 1024
CONSUME_QUEUE_FILE_ENTRIES = 300_000  # MessageStoreConfig.mappedFileSizeConsumeQueue / CQ_STORE_UNIT_SIZE
MAX_MESSAGE_SIZE = 4 * 1024 * 1024  # MessageStoreConfig.maxMessageSize

_MAX_TRANSFER_BYTES = 256 * 1024  # maxTransferBytesOnMessageInMemory
_MAX_TRANSFER_COUNT = 32  # maxTransferCountOnMessageInMemory
_MAX_FILTER_ENTRIES = 16000 // 20  # getMessage scans at most max(16000 bytes, maxMsgNums units) of consume queue
_MAX_QUERY_NUM = 64  # maxMsgsNumBatch
_JAVA_BYTE_MAX = 0x7F
_JAVA_SHORT_MAX = 0x7FFF
_JAVA_INT_MAX = 0x7FFFFFFF
_JAVA_WHITESPACE = "".join(chr(c) for c in range(33))  # what String.trim() strips

_TRANSACTION_MASK = 0xC  # MessageSysFlag.getTransactionValue
_TRANSACTION_PREPARED = 0x4
_TRANSACTION_ROLLBACK = 0xC
_HOST_FLAGS = BORNHOST_V6_FLAG | STOREHOSTADDRESS_V6_FLAG

_CLUSTER = "CLUSTER"
_WAIT = "WAIT"
_DELAY = "DELAY"
_DELAY_LEVEL = re.compile(r"[+-]?[0-9]+")  # what Integer.parseInt accepts

_PHYSICAL_OFFSET_POSITION = 28
_SYS_FLAG_POSITION = 36
_BORN_HOST_POSITION = 48


def _layout(born_ip_size: int, store_ip_size: int) -> struct.Struct:
    """The fixed part of a record, storeSize to bodyLength, as CommitLog.MessageExtEncoder writes it."""
    return struct.Struct(f">iIiiiqqiq{born_ip_size}siq{store_ip_size}siiqi")


_LAYOUTS = (_layout(4, 4), _layout(16, 4), _layout(4, 16), _layout(16, 16))  # by (sysFlag >> 4) & 3
_INT = struct.Struct(">i")
_LONG = struct.Struct(">q")
_SHORT = struct.Struct(">h")
_USHORT = struct.Struct(">H")
_SIZE_AND_MAGIC = struct.Struct(">iI")
_BATCH_ENTRY = struct.Struct(">iiiii")  # totalSize, magic, bodyCRC, flag, bodyLength (MessageDecoder.encodeMessage)


class GetMessageStatus(enum.Enum):
    """GetMessageStatus of 4.9.4, in its order; the broker sends the name as the pull response remark.

    NO_MATCHED_LOGIC_QUEUE is never produced: 4.9.4's findConsumeQueue creates a missing queue on the spot, so a
    pull from an unknown queue answers NO_MESSAGE_IN_QUEUE, and so does this store (without creating anything).
    """

    FOUND = "FOUND"
    NO_MATCHED_MESSAGE = "NO_MATCHED_MESSAGE"
    MESSAGE_WAS_REMOVING = "MESSAGE_WAS_REMOVING"
    OFFSET_FOUND_NULL = "OFFSET_FOUND_NULL"
    OFFSET_OVERFLOW_BADLY = "OFFSET_OVERFLOW_BADLY"
    OFFSET_OVERFLOW_ONE = "OFFSET_OVERFLOW_ONE"
    OFFSET_TOO_SMALL = "OFFSET_TOO_SMALL"
    NO_MATCHED_LOGIC_QUEUE = "NO_MATCHED_LOGIC_QUEUE"
    NO_MESSAGE_IN_QUEUE = "NO_MESSAGE_IN_QUEUE"


class PutMessageStatus(enum.Enum):
    """The 4.9.4 PutMessageStatus values a put can fail with; SendMessageProcessor maps them to response codes."""

    SERVICE_NOT_AVAILABLE = "SERVICE_NOT_AVAILABLE"  # the store is a slave
    MESSAGE_ILLEGAL = "MESSAGE_ILLEGAL"  # topic, body or properties too long, or a batch the store refuses


class PutMessageError(Exception):
    """A put the real store would refuse; `status` says which PutMessageStatus it would have answered."""

    def __init__(self, status: PutMessageStatus, reason: str):
        super().__init__(f"{status.value}: {reason}")
        self.status = status
        self.reason = reason


@dataclass(frozen=True, slots=True)
class PutResult:
    """What SEND_MESSAGE answers: for a batch, msg_id joins every offset id with commas and the offsets are the
    first message's, as 4.9.4's batch append reports them."""

    msg_id: str
    queue_id: int
    queue_offset: int
    commit_log_offset: int
    store_timestamp: int
    wrote_bytes: int  # for TOPIC_PUT_SIZE statistics
    msg_num: int = 1


@dataclass(frozen=True, slots=True)
class GetResult:
    """DefaultMessageStore.getMessage's answer; `body` is the found records laid end to end (the pull body)."""

    status: GetMessageStatus
    next_begin_offset: int
    min_offset: int
    max_offset: int
    body: bytes = b""
    message_count: int = 0


@dataclass(frozen=True, slots=True)
class QueryResult:
    """DefaultMessageStore.queryMessage's answer. The index figures are 0 unless the index had a match, as in 4.9.4
    (the broker sends them in the QUERY_MESSAGE response header either way)."""

    body: bytes
    message_count: int
    index_last_update_timestamp: int
    index_last_update_phyoffset: int


@dataclass(frozen=True, slots=True)
class QueueFigures:
    """One queue's line of a TopicStatsTable (GET_TOPIC_STATS_INFO), computed as AdminBrokerProcessor does."""

    min_offset: int
    max_offset: int
    last_update_timestamp: int


def _join_properties(properties: dict[str, str], peak_size: int) -> str:
    order = java_hashmap_order(properties, peak_size=peak_size)
    return PROPERTY_SEPARATOR.join(f"{name}{NAME_VALUE_SEPARATOR}{properties[name]}" for name in order)


def java_properties_string(properties: dict[str, str]) -> str:
    """MessageDecoder.messageProperties2String of a HashMap filled in `properties`' order.

    The broker writes every message it builds itself (a sent-back retry, a delayed message, a property it adds)
    through this, so stored properties come out in hash order, not in the order the client sent them.
    """
    return _join_properties(properties, len(properties))


def stored_properties(sent: str, cluster_name: str, *, batch: bool = False) -> str:
    """The properties string 4.9.4's SendMessageProcessor stores for a SEND_MESSAGE(_V2) header's properties.

    It parses them into a HashMap (string2messageProperties), adds CLUSTER, and, for a single message, drops WAIT
    ("no need to store WAIT=true") before writing the map back, so the fixtures show `KEYS, UNIQ_KEY, CLUSTER, TAGS`
    for a client that sent `KEYS, UNIQ_KEY, WAIT, TAGS`. For a batch (batch=true) these are the batch header's
    properties, WAIT included, which the store appends to every message's own properties.
    """
    properties = decode_properties(sent)
    peak_size = len(properties) + (_CLUSTER not in properties)
    properties[_CLUSTER] = cluster_name
    if not batch:
        properties.pop(_WAIT, None)
    return _join_properties(properties, peak_size)


@lru_cache(maxsize=256)
def _tag_codes(expression: str | None) -> frozenset[int] | None:
    """The code set FilterAPI.buildSubscriptionData makes of a TAG expression; None means "match everything"."""
    if expression is None or expression in ("", "*"):
        return None
    tags = (tag.strip(_JAVA_WHITESPACE) for tag in expression.split("||"))
    return frozenset(java_string_hash(tag) for tag in tags if tag)


def _tags_code(properties: dict[str, str]) -> int:
    """The consume-queue tags code: TAGS' Java hash code, 0 without tags (CommitLog.checkMessageAndReturnSize)."""
    tags = properties.get("TAGS")
    return java_string_hash(tags) if tags else 0


def _index_keys(topic: str, sys_flag: int, properties: dict[str, str]) -> list[str]:
    """The index entries IndexService.buildIndex adds for a record: UNIQ_KEY, then each KEYS word; none for a
    rolled-back transaction message. A key listed twice is indexed twice, and queries then return the record twice,
    as the real index does."""
    if sys_flag & _TRANSACTION_MASK == _TRANSACTION_ROLLBACK:
        return []
    keys = []
    uniq_key = properties.get("UNIQ_KEY")
    if uniq_key is not None:
        keys.append(f"{topic}#{uniq_key}")
    keys.extend(f"{topic}#{key}" for key in properties.get("KEYS", "").split(KEY_SEPARATOR) if key)
    return keys


def _consumable(sys_flag: int) -> bool:
    """Prepared and rolled-back transaction messages get queue offset 0 and no consume-queue entry."""
    return sys_flag & _TRANSACTION_MASK not in (_TRANSACTION_PREPARED, _TRANSACTION_ROLLBACK)


def _utf8(text: str, what: str) -> bytes:
    """UTF-8 bytes of a topic or properties; text that has none (a lone surrogate) is refused, so what the index
    derives from the text at put time is exactly what it re-derives from the stored bytes at eviction."""
    try:
        return text.encode()
    except UnicodeEncodeError as exc:
        raise PutMessageError(PutMessageStatus.MESSAGE_ILLEGAL, f"{what} is not encodable as UTF-8: {exc}") from None


def _topic_field(topic: str) -> bytes:
    encoded = _utf8(topic, "topic")
    if len(encoded) > _JAVA_BYTE_MAX:
        raise PutMessageError(PutMessageStatus.MESSAGE_ILLEGAL, f"topic is {len(encoded)} bytes, more than 127")
    return bytes((len(encoded),)) + encoded


def _properties_field(properties: bytes) -> bytes:
    if len(properties) > _JAVA_SHORT_MAX:
        raise PutMessageError(PutMessageStatus.MESSAGE_ILLEGAL, f"properties take {len(properties)} bytes, over 32767")
    return _USHORT.pack(len(properties)) + properties


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


@dataclass(frozen=True, slots=True)
class _Record:
    """What the dispatcher reads back from a stored record (a replicated one, or one being evicted)."""

    size: int
    queue_id: int
    queue_offset: int
    physical_offset: int
    sys_flag: int
    store_timestamp: int
    topic: str
    properties: dict[str, str]


def _parse_record(data: bytes | bytearray, position: int) -> _Record:
    """Read one record at `position`; ValueError when the bytes are not a whole 4.9.4 record."""
    if len(data) - position < _SYS_FLAG_POSITION + 4:
        raise ValueError(f"truncated record at byte {position}")
    size, magic = _SIZE_AND_MAGIC.unpack_from(data, position)
    (sys_flag,) = _INT.unpack_from(data, position + _SYS_FLAG_POSITION)
    layout = _LAYOUTS[(sys_flag >> 4) & 3]
    if magic != MESSAGE_MAGIC_CODE or not layout.size + 3 <= size <= len(data) - position:
        raise ValueError(f"no 4.9.4 record at byte {position} (magic {magic:#x}, size {size})")
    fields = layout.unpack_from(data, position)
    body_length = fields[-1]
    topic_at = position + layout.size + body_length
    end = position + size
    if body_length < 0 or topic_at + 1 > end or topic_at + 1 + data[topic_at] + 2 > end:
        raise ValueError(f"record at byte {position} has lengths that overrun its size {size}")
    topic_end = topic_at + 1 + data[topic_at]
    (properties_length,) = _USHORT.unpack_from(data, topic_end)
    if topic_end + 2 + properties_length != end:
        raise ValueError(f"record at byte {position}: properties do not end where its size {size} says")
    return _Record(
        size=size,
        queue_id=fields[3],
        queue_offset=fields[5],
        physical_offset=fields[6],
        sys_flag=sys_flag,
        store_timestamp=fields[11],
        topic=bytes(data[topic_at + 1 : topic_end]).decode(errors="replace"),
        properties=decode_properties(bytes(data[topic_end + 2 : end]).decode(errors="replace")),
    )


def _split_batch(body: bytes) -> list[tuple[int, bytes, bytes]]:
    """(flag, body, raw properties) of each message in a batch body (MessageDecoder.encodeMessages layout).

    Like 4.9.4's batch encoder it reads the messages one after another and ignores their totalSize, magic and CRC
    fields (the broker recomputes the CRC); the properties bytes are kept exactly as the client wrote them.
    """
    messages = []
    position = 0
    while position < len(body):
        if len(body) - position < _BATCH_ENTRY.size:
            raise PutMessageError(PutMessageStatus.MESSAGE_ILLEGAL, f"batch body truncated at byte {position}")
        _, _, _, flag, body_length = _BATCH_ENTRY.unpack_from(body, position)
        position += _BATCH_ENTRY.size
        if not 0 <= body_length <= len(body) - position - 2:
            raise PutMessageError(PutMessageStatus.MESSAGE_ILLEGAL, f"batch message body length {body_length} overruns")
        message_body = body[position : position + body_length]
        position += body_length
        (properties_length,) = _SHORT.unpack_from(body, position)
        position += 2
        if not 0 <= properties_length <= len(body) - position:
            raise PutMessageError(
                PutMessageStatus.MESSAGE_ILLEGAL, f"batch message properties length {properties_length} overruns"
            )
        messages.append((flag, message_body, body[position : position + properties_length]))
        position += properties_length
    return messages


class _CommitLog:
    """Records laid end to end in segments; a segment is closed once it reaches segment_bytes, so boundaries depend
    only on the record sizes and a slave appending the same records gets the same segments."""

    def __init__(self, segment_bytes: int):
        self.segment_bytes = segment_bytes
        self.starts = [0]
        self.segments = [bytearray()]

    @property
    def min_offset(self) -> int:
        return self.starts[0]

    @property
    def max_offset(self) -> int:
        return self.starts[-1] + len(self.segments[-1])

    @property
    def empty(self) -> bool:
        return self.max_offset == 0

    def rebase(self, offset: int) -> None:
        """Start an empty log at `offset` (a slave's first copy of a master that already dropped older records)."""
        self.starts = [offset]
        self.segments = [bytearray()]

    def append(self, *parts: bytes) -> None:
        if len(self.segments[-1]) >= self.segment_bytes:
            self.starts.append(self.max_offset)
            self.segments.append(bytearray())
        segment = self.segments[-1]
        for part in parts:
            segment += part

    def _locate(self, offset: int) -> tuple[bytearray, int]:
        index = bisect.bisect_right(self.starts, offset) - 1
        return self.segments[index], offset - self.starts[index]

    def read(self, offset: int, size: int) -> bytearray:
        segment, position = self._locate(offset)
        return segment[position : position + size]

    def store_timestamp(self, offset: int) -> int:
        """CommitLog.pickupStoreTimestamp: the record's store time, -1 once it has been dropped."""
        if offset < self.min_offset:
            return -1
        segment, position = self._locate(offset)
        (sys_flag,) = _INT.unpack_from(segment, position + _SYS_FLAG_POSITION)
        born_host_size = 20 if sys_flag & BORNHOST_V6_FLAG else 8
        return _LONG.unpack_from(segment, position + _BORN_HOST_POSITION + born_host_size)[0]

    def record_size_at(self, offset: int) -> int | None:
        """The size of the record starting exactly at `offset`, None if no retained record starts there.

        A record names its own commit-log offset, so checking the magic code and that field rejects offsets that
        fall inside a record (the real store would read garbage there)."""
        if not self.min_offset <= offset < self.max_offset:
            return None
        segment, position = self._locate(offset)
        if position + _PHYSICAL_OFFSET_POSITION + 8 > len(segment):
            return None
        size, magic = _SIZE_AND_MAGIC.unpack_from(segment, position)
        (physical_offset,) = _LONG.unpack_from(segment, position + _PHYSICAL_OFFSET_POSITION)
        if magic != MESSAGE_MAGIC_CODE or physical_offset != offset:
            return None
        return size

    def copy_from(self, offset: int, max_bytes: int | None) -> bytes:
        """Bytes from `offset` (a record start) to the end, or to the end of the last whole segment that keeps the
        copy within max_bytes (always at least the rest of the first segment), so copies end on a record."""
        index = bisect.bisect_right(self.starts, offset) - 1
        parts = [self.segments[index][offset - self.starts[index] :]]
        copied = len(parts[0])
        for segment in self.segments[index + 1 :]:
            if max_bytes is not None and copied + len(segment) > max_bytes:
                break
            parts.append(segment)
            copied += len(segment)
        return b"".join(parts)

    def drop_first(self) -> bytearray:
        self.starts.pop(0)
        return self.segments.pop(0)


class _ConsumeQueue:
    """One ConsumeQueue: entries from the first retained file on (`start`), `min_offset` kept the 4.9.4 way."""

    __slots__ = ("file_entries", "file_mtimes", "min_offset", "physical", "sizes", "start", "tags")

    def __init__(self, first_offset: int, file_entries: int):
        self.file_entries = file_entries
        self.start = first_offset  # logical offset of physical[0]
        self.min_offset = first_offset
        self.physical = array("q")
        self.sizes = array("i")
        self.tags = array("q")
        self.file_mtimes: list[int] = []  # per retained file, the store time of its newest entry

    @property
    def max_offset(self) -> int:
        return self.start + len(self.physical)

    def append(self, physical_offset: int, size: int, tags_code: int, store_timestamp: int) -> None:
        file_index = self.max_offset // self.file_entries - self.start // self.file_entries
        if file_index == len(self.file_mtimes):
            self.file_mtimes.append(store_timestamp)
        else:
            self.file_mtimes[file_index] = store_timestamp
        self.physical.append(physical_offset)
        self.sizes.append(size)
        self.tags.append(tags_code)

    def delete_expired(self, min_physical_offset: int) -> None:
        """ConsumeQueue.deleteExpiredFile then correctMinOffset, after the commit log dropped older records."""
        while self.start // self.file_entries < (self.max_offset - 1) // self.file_entries:
            file_end = (self.start // self.file_entries + 1) * self.file_entries
            if self.physical[file_end - 1 - self.start] >= min_physical_offset:
                break
            dropped = file_end - self.start
            del self.physical[:dropped], self.sizes[:dropped], self.tags[:dropped], self.file_mtimes[0]
            self.start = file_end
        first_kept = bisect.bisect_left(self.physical, min_physical_offset)
        if first_kept < len(self.physical):
            self.min_offset = self.start + first_kept

    def roll_next_file(self, offset: int) -> int:
        return offset + self.file_entries - offset % self.file_entries


class _KeyIndex:
    """Maps "topic#key" to commit-log offsets (oldest first); also what IndexService reports of its newest entry."""

    def __init__(self):
        self.entries: dict[str, int | list[int]] = {}
        self.begin_timestamp: int | None = None
        self.last_update_timestamp = 0
        self.last_update_phyoffset = 0

    def add(self, keys: list[str], physical_offset: int, store_timestamp: int) -> None:
        for key in keys:
            held = self.entries.get(key)
            if held is None:
                self.entries[key] = physical_offset
            elif isinstance(held, int):
                self.entries[key] = [held, physical_offset]
            else:
                held.append(physical_offset)
        if keys:
            if self.begin_timestamp is None:
                self.begin_timestamp = store_timestamp
            self.last_update_timestamp = store_timestamp
            self.last_update_phyoffset = physical_offset

    def remove_oldest(self, counts: dict[str, int]) -> None:
        """Forget the oldest `count` offsets of each key (their records were just dropped, oldest first)."""
        for key, count in counts.items():
            held = self.entries[key]
            if isinstance(held, int) or count >= len(held):
                del self.entries[key]
            else:
                del held[:count]

    def offsets(self, key: str) -> list[int]:
        held = self.entries.get(key)
        if held is None:
            return []
        return [held] if isinstance(held, int) else held

    def indexed_time(self, store_timestamp: int) -> int:
        """The time an IndexFile entry reads back: its store time truncated to whole seconds after the file's
        first key (IndexFile keeps a 32-bit second count, not the time itself)."""
        begin = self.begin_timestamp or 0
        seconds = min(max(store_timestamp - begin, 0) // 1000, _JAVA_INT_MAX)
        return begin + seconds * 1000


class MessageStore:
    """One broker's message store (see the module notes for what it models and where it differs from 4.9.4).

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
        self._store_ip, self._store_port = parse_host(store_host, "store host")
        self.max_bytes = max_bytes
        self.max_message_size = max_message_size
        self.slave = slave
        self.offset_check_in_slave = offset_check_in_slave
        self._file_entries = consume_queue_file_entries
        self._lock = threading.Lock()
        self._log = _CommitLog(segment_bytes)
        self._queues: dict[str, dict[int, _ConsumeQueue]] = {}
        self._index = _KeyIndex()

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
        tail = b"".join((body, _topic_field(topic), _properties_field(_utf8(properties, "properties"))))
        born = parse_host(born_host, "born host")
        sys_flag = self._host_flags(sys_flag, born[0])
        layout = _LAYOUTS[(sys_flag >> 4) & 3]
        size = layout.size + len(tail)
        crc = zlib.crc32(body) & _JAVA_INT_MAX
        parsed = decode_properties(properties)
        consumable = _consumable(sys_flag)
        with self._lock:
            timestamp = _now_ms() if store_timestamp is None else store_timestamp
            physical_offset = self._log.max_offset
            queue_offset = self._next_queue_offset(topic, queue_id) if consumable else 0
            header = self._pack(
                layout, size, crc, queue_id, flag, queue_offset, physical_offset, sys_flag, born_timestamp, born,
                timestamp, reconsume_times, len(body),
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
        topic_field = _topic_field(topic)
        if len(batch_body) > self.max_message_size:
            raise PutMessageError(PutMessageStatus.MESSAGE_ILLEGAL, f"batch of {len(batch_body)} bytes is too long")
        if sys_flag & _TRANSACTION_MASK:
            raise PutMessageError(PutMessageStatus.MESSAGE_ILLEGAL, "a batch cannot be transactional")
        delay = decode_properties(properties).get(_DELAY, "0")
        if not _DELAY_LEVEL.fullmatch(delay) or int(delay) > 0:
            raise PutMessageError(PutMessageStatus.MESSAGE_ILLEGAL, f"a batch cannot be delayed (DELAY {delay!r})")
        batch_properties = _utf8(properties, "properties")
        born = parse_host(born_host, "born host")
        sys_flag = self._host_flags(sys_flag, born[0])
        layout = _LAYOUTS[(sys_flag >> 4) & 3]
        messages = []
        for flag, body, own_properties in _split_batch(batch_body):
            separator = b""
            if own_properties and batch_properties and own_properties[-1] != ord(PROPERTY_SEPARATOR):
                separator = PROPERTY_SEPARATOR.encode()
            all_properties = own_properties + separator + batch_properties
            tail = b"".join((body, topic_field, _properties_field(all_properties)))
            parsed = decode_properties(all_properties.decode(errors="replace"))
            messages.append((flag, zlib.crc32(body) & _JAVA_INT_MAX, len(body), tail, parsed))
        with self._lock:
            timestamp = _now_ms() if store_timestamp is None else store_timestamp
            first_queue_offset = self._next_queue_offset(topic, queue_id)
            records = []
            first_physical_offset = physical_offset = self._log.max_offset
            for number, (flag, crc, body_length, tail, parsed) in enumerate(messages):
                size = layout.size + len(tail)
                header = self._pack(
                    layout, size, crc, queue_id, flag, first_queue_offset + number, physical_offset, sys_flag,
                    born_timestamp, born, timestamp, reconsume_times, body_length,
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
        codes = _tag_codes(tag_filter)
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
            return self._scan(queue, offset, max_msgs, codes)

    def _scan(self, queue: _ConsumeQueue, offset: int, max_msgs: int, codes: frozenset[int] | None) -> GetResult:
        """The FOUND / NO_MATCHED_MESSAGE / MESSAGE_WAS_REMOVING loop of getMessage, entry by entry."""
        status = GetMessageStatus.NO_MATCHED_MESSAGE
        file_end = queue.roll_next_file(offset)
        scan = min(min(file_end, queue.max_offset) - offset, max(_MAX_FILTER_ENTRIES, max_msgs))
        min_physical_offset = self._log.min_offset
        skip_below: int | None = None  # nextPhyFileStartOffset: records below it are gone
        found: list[bytearray] = []
        total = 0
        base = offset - queue.start
        scanned = 0
        while scanned < scan:
            physical_offset = queue.physical[base + scanned]
            size = queue.sizes[base + scanned]
            if skip_below is not None and physical_offset < skip_below:
                scanned += 1
                continue
            if total and (
                len(found) >= max_msgs or total + size > _MAX_TRANSFER_BYTES or len(found) >= _MAX_TRANSFER_COUNT
            ):
                break
            if codes is not None and queue.tags[base + scanned] not in codes:
                if not total:
                    status = GetMessageStatus.NO_MATCHED_MESSAGE
                scanned += 1
                continue
            if physical_offset < min_physical_offset:
                # 4.9.4 skips to the next commit-log file; here every record below the minimum is gone.
                if not total:
                    status = GetMessageStatus.MESSAGE_WAS_REMOVING
                skip_below = min_physical_offset
                scanned += 1
                continue
            found.append(self._log.read(physical_offset, size))
            total += size
            status = GetMessageStatus.FOUND
            skip_below = None
            scanned += 1
        return GetResult(
            status=status,
            next_begin_offset=offset + scanned,
            min_offset=queue.min_offset,
            max_offset=queue.max_offset,
            body=b"".join(found),
            message_count=len(found),
        )

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
        """SEARCH_OFFSET_BY_TIMESTAMP, ported from 4.9.4's ConsumeQueue.getOffsetInQueueByTime.

        That is not "the first message stored at or after timestamp": it picks the first consume-queue file last
        written at or after the time (else the last file), binary-searches it, and answers an exact hit, else the
        nearer of the two neighbours (the earlier one on a tie). A time after every message therefore gives the
        last message's offset, not the max offset, and a queue whose records are all gone gives the file start - 1.
        """
        with self._lock:
            queue = self._queues.get(topic, {}).get(queue_id)
            if queue is None or not queue.physical:
                return 0
            file_number = next(
                (number for number, mtime in enumerate(queue.file_mtimes) if mtime >= timestamp),
                len(queue.file_mtimes) - 1,
            )
            file_from = (queue.start // self._file_entries + file_number) * self._file_entries
            low = queue.min_offset - file_from if queue.min_offset > file_from else 0
            high = min(file_from + self._file_entries, queue.max_offset) - 1 - file_from
            min_physical_offset = self._log.min_offset
            target = left = right = -1
            left_time = right_time = -1
            while high >= low:
                middle = (low + high) // 2
                physical_offset = queue.physical[file_from + middle - queue.start]
                if physical_offset < min_physical_offset:
                    low, left = middle + 1, middle
                    continue
                store_time = self._log.store_timestamp(physical_offset)
                if store_time == timestamp:
                    target = middle
                    break
                if store_time > timestamp:
                    high, right, right_time = middle - 1, middle, store_time
                else:
                    low, left, left_time = middle + 1, middle, store_time
            if target != -1:
                found = target
            elif left_time == -1:
                found = right
            elif right_time == -1:
                found = left
            else:
                found = right if abs(timestamp - left_time) > abs(timestamp - right_time) else left
            return file_from + found

    def query_by_key(self, topic: str, key: str, max_num: int, begin: int, end: int) -> QueryResult:
        """QUERY_MESSAGE (DefaultMessageStore.queryMessage): the newest min(max_num, 64) records of `topic` indexed
        under `key` (a KEYS word or a UNIQ_KEY) whose indexed time is within [begin, end], oldest first."""
        with self._lock:
            matched: list[int] = []
            for physical_offset in reversed(self._index.offsets(f"{topic}#{key}")):
                if len(matched) >= min(max_num, _MAX_QUERY_NUM):
                    break
                indexed_time = self._index.indexed_time(self._log.store_timestamp(physical_offset))
                if begin <= indexed_time <= end:
                    matched.append(physical_offset)
                if indexed_time < begin:
                    break
            if not matched:
                return QueryResult(b"", 0, 0, 0)
            matched.sort()
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
        With max_bytes the copy stops at a segment end once it has that much (see _CommitLog.copy_from).
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
            record = _parse_record(data, position)
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

    def _pack(
        self,
        layout: struct.Struct,
        size: int,
        crc: int,
        queue_id: int,
        flag: int,
        queue_offset: int,
        physical_offset: int,
        sys_flag: int,
        born_timestamp: int,
        born: tuple[bytes, int],
        store_timestamp: int,
        reconsume_times: int,
        body_length: int,
    ) -> bytes:
        """A record's fixed part as CommitLog writes it (preparedTransactionOffset 0, as for every sent message)."""
        try:
            return layout.pack(
                size, MESSAGE_MAGIC_CODE, crc, queue_id, flag, queue_offset, physical_offset, sys_flag,
                born_timestamp, born[0], born[1], store_timestamp, self._store_ip, self._store_port, reconsume_times,
                0, body_length,
            )  # fmt: skip
        except struct.error as exc:
            raise PutMessageError(PutMessageStatus.MESSAGE_ILLEGAL, f"a numeric field is out of range: {exc}") from None

    def _host_flags(self, sys_flag: int, born_ip: bytes) -> int:
        sys_flag &= ~_HOST_FLAGS
        sys_flag |= BORNHOST_V6_FLAG if len(born_ip) == 16 else 0
        return sys_flag | (STOREHOSTADDRESS_V6_FLAG if len(self._store_ip) == 16 else 0)

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
        if _consumable(sys_flag):
            queues = self._queues.setdefault(topic, {})
            queue = queues.get(queue_id)
            if queue is None or queue.max_offset != queue_offset:
                queue = queues[queue_id] = _ConsumeQueue(queue_offset, self._file_entries)
            queue.append(physical_offset, size, _tags_code(properties), store_timestamp)
        self._index.add(_index_keys(topic, sys_flag, properties), physical_offset, store_timestamp)

    def _evict(self) -> None:
        """Drop the oldest segments while over max_bytes, then clean consume queues and index like 4.9.4."""
        dropped = False
        while self._log.max_offset - self._log.min_offset > self.max_bytes and len(self._log.segments) > 1:
            segment = self._log.drop_first()
            counts: dict[str, int] = {}
            position = 0
            while position < len(segment):
                record = _parse_record(segment, position)
                for key in _index_keys(record.topic, record.sys_flag, record.properties):
                    counts[key] = counts.get(key, 0) + 1
                position += record.size
            self._index.remove_oldest(counts)
            dropped = True
        if dropped:
            for queues in self._queues.values():
                for queue in queues.values():
                    queue.delete_expired(self._log.min_offset)
