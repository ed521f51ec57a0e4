"""One commit-log record as 4.9.4's CommitLog writes it: the fixed layouts (by the IPv6 bits of sysFlag), the checks
a put must pass (UTF-8, field lengths, numeric ranges), the header packer, the parser a slave and the eviction read
records back with, and the splitter of a client's batch body."""

import struct
from dataclasses import dataclass

from monitor.remoting.message import BORNHOST_V6_FLAG, MESSAGE_MAGIC_CODE, STOREHOSTADDRESS_V6_FLAG, decode_properties
from monitor.sandbox.store.results import PutMessageError, PutMessageStatus

JAVA_INT_MAX = 0x7FFFFFFF
_JAVA_BYTE_MAX = 0x7F
_JAVA_SHORT_MAX = 0x7FFF

TRANSACTION_MASK = 0xC  # MessageSysFlag.getTransactionValue
_TRANSACTION_PREPARED = 0x4
_TRANSACTION_ROLLBACK = 0xC
_HOST_FLAGS = BORNHOST_V6_FLAG | STOREHOSTADDRESS_V6_FLAG

PHYSICAL_OFFSET_POSITION = 28
SYS_FLAG_POSITION = 36
BORN_HOST_POSITION = 48


def _layout(born_ip_size: int, store_ip_size: int) -> struct.Struct:
    """The fixed part of a record, storeSize to bodyLength, as CommitLog.MessageExtEncoder writes it."""
    return struct.Struct(f">iIiiiqqiq{born_ip_size}siq{store_ip_size}siiqi")


LAYOUTS = (_layout(4, 4), _layout(16, 4), _layout(4, 16), _layout(16, 16))  # by (sysFlag >> 4) & 3
INT = struct.Struct(">i")
LONG = struct.Struct(">q")
_SHORT = struct.Struct(">h")
_USHORT = struct.Struct(">H")
SIZE_AND_MAGIC = struct.Struct(">iI")
_BATCH_ENTRY = struct.Struct(">iiiii")  # totalSize, magic, bodyCRC, flag, bodyLength (MessageDecoder.encodeMessage)


def consumable(sys_flag: int) -> bool:
    """Prepared and rolled-back transaction messages get queue offset 0 and no consume-queue entry."""
    return sys_flag & TRANSACTION_MASK not in (_TRANSACTION_PREPARED, _TRANSACTION_ROLLBACK)


def rolled_back(sys_flag: int) -> bool:
    """A rolled-back transaction message: stored, but neither queued nor indexed."""
    return sys_flag & TRANSACTION_MASK == _TRANSACTION_ROLLBACK


def host_flags(sys_flag: int, born_ip: bytes, store_ip: bytes) -> int:
    """sysFlag with its two IPv6 bits set from the born and store addresses, whatever the client sent."""
    sys_flag &= ~_HOST_FLAGS
    sys_flag |= BORNHOST_V6_FLAG if len(born_ip) == 16 else 0
    return sys_flag | (STOREHOSTADDRESS_V6_FLAG if len(store_ip) == 16 else 0)


def utf8(text: str, what: str) -> bytes:
    """UTF-8 bytes of a topic or properties; text that has none (a lone surrogate) is refused, so what the index
    derives from the text at put time is exactly what it re-derives from the stored bytes at eviction."""
    try:
        return text.encode()
    except UnicodeEncodeError as exc:
        raise PutMessageError(PutMessageStatus.MESSAGE_ILLEGAL, f"{what} is not encodable as UTF-8: {exc}") from None


def topic_field(topic: str) -> bytes:
    encoded = utf8(topic, "topic")
    if len(encoded) > _JAVA_BYTE_MAX:
        raise PutMessageError(PutMessageStatus.MESSAGE_ILLEGAL, f"topic is {len(encoded)} bytes, more than 127")
    return bytes((len(encoded),)) + encoded


def properties_field(properties: bytes) -> bytes:
    if len(properties) > _JAVA_SHORT_MAX:
        raise PutMessageError(PutMessageStatus.MESSAGE_ILLEGAL, f"properties take {len(properties)} bytes, over 32767")
    return _USHORT.pack(len(properties)) + properties


def pack_header(
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
    store: tuple[bytes, int],
    reconsume_times: int,
    body_length: int,
) -> bytes:
    """A record's fixed part as CommitLog writes it (preparedTransactionOffset 0, as for every sent message)."""
    try:
        return layout.pack(
            size, MESSAGE_MAGIC_CODE, crc, queue_id, flag, queue_offset, physical_offset, sys_flag,
            born_timestamp, born[0], born[1], store_timestamp, store[0], store[1], reconsume_times,
            0, body_length,
        )  # fmt: skip
    except struct.error as exc:
        raise PutMessageError(PutMessageStatus.MESSAGE_ILLEGAL, f"a numeric field is out of range: {exc}") from None


@dataclass(frozen=True, slots=True)
class Record:
    """What the dispatcher reads back from a stored record (a replicated one, or one being evicted)."""

    size: int
    queue_id: int
    queue_offset: int
    physical_offset: int
    sys_flag: int
    store_timestamp: int
    topic: str
    properties: dict[str, str]


def parse_record(data: bytes | bytearray, position: int) -> Record:
    """Read one record at `position`; ValueError when the bytes are not a whole 4.9.4 record."""
    if len(data) - position < SYS_FLAG_POSITION + 4:
        raise ValueError(f"truncated record at byte {position}")
    size, magic = SIZE_AND_MAGIC.unpack_from(data, position)
    (sys_flag,) = INT.unpack_from(data, position + SYS_FLAG_POSITION)
    layout = LAYOUTS[(sys_flag >> 4) & 3]
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
    return Record(
        size=size,
        queue_id=fields[3],
        queue_offset=fields[5],
        physical_offset=fields[6],
        sys_flag=sys_flag,
        store_timestamp=fields[11],
        topic=bytes(data[topic_at + 1 : topic_end]).decode(errors="replace"),
        properties=decode_properties(bytes(data[topic_end + 2 : end]).decode(errors="replace")),
    )


def split_batch(body: bytes) -> list[tuple[int, bytes, bytes]]:
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
