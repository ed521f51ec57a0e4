"""RocketMQ messages as the broker stores and serves them, and the text forms of their properties and ids.

PULL_MESSAGE, QUERY_MESSAGE and VIEW_MESSAGE_BY_ID answer with a body that is nothing but commit-log records laid
end to end, exactly as the broker's message store wrote them. The control plane reads those records to show
messages (by offset, key or id), and a sandbox broker writes them, so this module decodes and encodes the layout
byte for byte. The layout follows MessageDecoder of Apache RocketMQ 4.9 / 5.x, big-endian throughout:

    storeSize i32 | magicCode i32 | bodyCRC i32 | queueId i32 | flag i32 | queueOffset i64 | commitLogOffset i64
    | sysFlag i32 | bornTimestamp i64 | bornHost ip+port i32 | storeTimestamp i64 | storeHost ip+port i32
    | reconsumeTimes i32 | preparedTransactionOffset i64 | bodyLength i32 + body | topic length + topic
    | propertiesLength i16 + properties

Three things in sysFlag and the magic code change the layout, and all three are handled:

* BORNHOST_V6_FLAG / STOREHOSTADDRESS_V6_FLAG widen the host ip from 4 to 16 bytes (and the offset message id,
  built from the store host, from 32 to 56 hex characters).
* MESSAGE_MAGIC_CODE (v1) has a 1-byte topic length; MESSAGE_MAGIC_CODE_V2, written by 5.x brokers only for
  topics longer than 127 characters, has a 2-byte one.
* COMPRESSED_FLAG means the stored body is compressed; bits 0x700 name the codec (0 = zlib for old clients,
  1 = LZ4, 2 = ZSTD, 3 = zlib). Java producers deflate bodies over 4 KiB at level 5 and the broker serves them
  as stored, so decoding inflates zlib bodies and refuses LZ4/ZSTD by name rather than return garbage.

Broker bytes that do not fit this layout raise ProtocolError saying what is wrong and where; every length is
checked against the bytes actually present before anything is sliced, so corrupt input can neither hang the
decoder nor make it allocate more than it was given (an inflated body is capped at MAX_INFLATED_BODY_SIZE).
Bad values supplied by callers (a message id typed on the command line, a property name with a separator in
it) raise ValueError instead.
"""

import ipaddress
import re
import socket
import struct
import zlib
from dataclasses import dataclass, field
from functools import lru_cache

from monitor.remoting.errors import ProtocolError

__all__ = [
    "BORNHOST_V6_FLAG",
    "COMPRESSED_FLAG",
    "COMPRESSION_LZ4_TYPE",
    "COMPRESSION_TYPE_MASK",
    "COMPRESSION_ZLIB_TYPE",
    "COMPRESSION_ZSTD_TYPE",
    "MAX_INFLATED_BODY_SIZE",
    "MESSAGE_MAGIC_CODE",
    "MESSAGE_MAGIC_CODE_V2",
    "STOREHOSTADDRESS_V6_FLAG",
    "MessageExt",
    "create_offset_msg_id",
    "decode_messages",
    "decode_offset_msg_id",
    "decode_properties",
    "encode_message",
    "encode_properties",
    "parse_host",
]

MESSAGE_MAGIC_CODE = 0xDAA320A7  # v1: 1-byte topic length (every 4.x record, 5.x topics up to 127 characters)
MESSAGE_MAGIC_CODE_V2 = 0xDAA320AB  # v2: 2-byte topic length (5.x, topics longer than 127 characters)

COMPRESSED_FLAG = 0x1
BORNHOST_V6_FLAG = 0x1 << 4
STOREHOSTADDRESS_V6_FLAG = 0x1 << 5
COMPRESSION_TYPE_MASK = 0x7 << 8
COMPRESSION_LZ4_TYPE = 0x1 << 8
COMPRESSION_ZSTD_TYPE = 0x2 << 8
COMPRESSION_ZLIB_TYPE = 0x3 << 8

MAX_INFLATED_BODY_SIZE = 64 * 1024 * 1024
"""Largest body decode_messages inflates; more than this from one record is treated as corrupt (a zip bomb)."""

NAME_VALUE_SEPARATOR = "\x01"
PROPERTY_SEPARATOR = "\x02"
KEY_SEPARATOR = " "

_COMPRESSION_NAMES = {0: "zlib", 1: "LZ4", 2: "ZSTD", 3: "zlib"}
_ZLIB_LEVEL = 5  # what the Java producer uses (zipCompressLevel); re-deflating reproduces its bytes
_JAVA_SHORT_MAX = 0x7FFF
_JAVA_BYTE_MAX = 0x7F
_SYS_FLAG_POSITION = 36
_HOST_FLAGS = BORNHOST_V6_FLAG | STOREHOSTADDRESS_V6_FLAG


def _layout(born_ip_size: int, store_ip_size: int) -> struct.Struct:
    """Fixed part of a record, from storeSize up to and including bodyLength, for the given ip widths."""
    return struct.Struct(f">iIiiiqqiq{born_ip_size}siq{store_ip_size}siiqi")


# Indexed by (sysFlag >> 4) & 3, i.e. by the two host-width bits.
_LAYOUTS = (_layout(4, 4), _layout(16, 4), _layout(4, 16), _layout(16, 16))
_INT = struct.Struct(">i")
_USHORT = struct.Struct(">H")
_MSG_ID_TAIL = struct.Struct(">iq")  # port + commit-log offset, after the store host ip
_HEX = re.compile(r"[0-9A-Fa-f]*")


@dataclass(slots=True)
class MessageExt:
    """One stored message; field names follow RocketMQ's MessageExt.

    `sys_flag` is kept exactly as stored (RocketMQ 5.x clears COMPRESSED_FLAG after inflating; this does not, so
    the stored form stays visible). `was_compressed` is True when `body` holds the inflated form of a compressed
    stored body; encode_message then deflates it again. With decode_messages(decompress=False) it stays False and
    `body` is the stored (still compressed, if sys_flag says so) bytes.
    """

    topic: str
    body: bytes = field(default=b"", repr=False)
    flag: int = 0
    properties: dict[str, str] = field(default_factory=dict)
    queue_id: int = 0
    store_size: int = 0  # as read; encode_message always recomputes it
    queue_offset: int = 0
    sys_flag: int = 0
    born_timestamp: int = 0
    born_host: str = "0.0.0.0:0"
    store_timestamp: int = 0
    store_host: str = "0.0.0.0:0"
    commit_log_offset: int = 0
    body_crc: int | None = None  # None: encode_message computes it from the stored body, as the broker does
    reconsume_times: int = 0
    prepared_transaction_offset: int = 0
    was_compressed: bool = False

    @property
    def msg_id(self) -> str:
        """The offset message id (store host + commit-log offset), what mqadmin queryMsgById takes."""
        return create_offset_msg_id(self.store_host, self.commit_log_offset)

    @property
    def keys(self) -> list[str]:
        """KEYS split on spaces, the way the broker's index splits them."""
        return [key for key in self.properties.get("KEYS", "").split(KEY_SEPARATOR) if key]

    @property
    def tags(self) -> str | None:
        return self.properties.get("TAGS")

    @property
    def uniq_key(self) -> str | None:
        """UNIQ_KEY: the id the producer gave the message (what Java clients call msgId)."""
        return self.properties.get("UNIQ_KEY")

    msg_id_client = uniq_key

    @property
    def delay_time_level(self) -> int:
        """DELAY level; 0 (not delayed) when absent, as in RocketMQ."""
        return self._int_property("DELAY") or 0

    @property
    def max_reconsume_times(self) -> int | None:
        return self._int_property("MAX_RECONSUME_TIMES")

    @property
    def retry_topic(self) -> str | None:
        """RETRY_TOPIC: the original topic of a message redelivered through %RETRY% or %DLQ%."""
        return self.properties.get("RETRY_TOPIC")

    @property
    def origin_msg_id(self) -> str | None:
        return self.properties.get("ORIGIN_MESSAGE_ID")

    @property
    def real_topic(self) -> str | None:
        """REAL_TOPIC: where a delayed or half (transactional) message will really go."""
        return self.properties.get("REAL_TOPIC")

    @property
    def real_queue_id(self) -> int | None:
        return self._int_property("REAL_QID")

    def _int_property(self, name: str) -> int | None:
        value = self.properties.get(name)
        try:
            return int(value) if value is not None else None
        except ValueError:
            return None


def decode_messages(body: bytes, *, decompress: bool = True) -> list[MessageExt]:
    """Decode a body made of concatenated store records (PULL_MESSAGE, QUERY_MESSAGE, VIEW_MESSAGE_BY_ID)."""
    data = bytes(body)
    messages: list[MessageExt] = []
    position = 0
    while position < len(data):
        try:
            message, end = _decode_record(data, position, decompress)
        except ProtocolError as exc:
            raise ProtocolError(f"message record #{len(messages)} at byte {position} of {len(data)}: {exc}") from exc
        messages.append(message)
        position = end
    return messages


def _decode_record(data: bytes, start: int, decompress: bool) -> tuple[MessageExt, int]:
    remaining = len(data) - start
    if remaining < _SYS_FLAG_POSITION + 4:
        raise ProtocolError(f"truncated: {remaining} bytes left, a record header needs {_LAYOUTS[0].size}")
    store_size, magic = struct.unpack_from(">iI", data, start)
    topic_length_size = _topic_length_size(magic)
    (sys_flag,) = _INT.unpack_from(data, start + _SYS_FLAG_POSITION)
    layout = _LAYOUTS[(sys_flag >> 4) & 3]
    _check_store_size(store_size, remaining, layout.size + topic_length_size + 2)
    end = start + store_size
    (
        _,
        _,
        body_crc,
        queue_id,
        flag,
        queue_offset,
        commit_log_offset,
        _,
        born_timestamp,
        born_ip,
        born_port,
        store_timestamp,
        store_ip,
        store_port,
        reconsume_times,
        prepared_transaction_offset,
        body_length,
    ) = layout.unpack_from(data, start)
    position = start + layout.size
    if not 0 <= body_length <= end - position - topic_length_size - 2:
        raise ProtocolError(f"bodyLength {body_length} does not fit in storeSize {store_size}")
    stored_body = data[position : position + body_length]
    position += body_length
    topic, position = _read_topic(data, position, end, topic_length_size)
    properties = _read_properties(data, position, end)
    inflate = decompress and sys_flag & COMPRESSED_FLAG and body_length > 0
    message = MessageExt(
        topic=topic,
        body=_inflate(stored_body, sys_flag) if inflate else stored_body,
        flag=flag,
        properties=properties,
        queue_id=queue_id,
        store_size=store_size,
        queue_offset=queue_offset,
        sys_flag=sys_flag,
        born_timestamp=born_timestamp,
        born_host=_format_host(born_ip, born_port, "bornHost"),
        store_timestamp=store_timestamp,
        store_host=_format_host(store_ip, store_port, "storeHost"),
        commit_log_offset=commit_log_offset,
        body_crc=body_crc,
        reconsume_times=reconsume_times,
        prepared_transaction_offset=prepared_transaction_offset,
        was_compressed=bool(inflate),
    )
    return message, end


def _topic_length_size(magic: int) -> int:
    if magic == MESSAGE_MAGIC_CODE:
        return 1
    if magic == MESSAGE_MAGIC_CODE_V2:
        return 2
    raise ProtocolError(
        f"bad magic code {magic:#010x} (expected {MESSAGE_MAGIC_CODE:#010x} or {MESSAGE_MAGIC_CODE_V2:#010x})"
    )


def _check_store_size(store_size: int, remaining: int, minimum: int) -> None:
    if store_size > remaining:
        raise ProtocolError(f"storeSize {store_size} but only {remaining} bytes left (truncated body?)")
    if store_size < minimum:
        raise ProtocolError(f"storeSize {store_size} is smaller than the {minimum}-byte minimum record")


def _read_topic(data: bytes, position: int, end: int, length_size: int) -> tuple[str, int]:
    if length_size == 1:
        length = data[position]
        if length > _JAVA_BYTE_MAX:
            raise ProtocolError(f"topic length byte {length} is negative as RocketMQ reads it")
    else:
        (length,) = _USHORT.unpack_from(data, position)
    position += length_size
    if position + length + 2 > end:
        raise ProtocolError(f"topic length {length} runs past the end of the record")
    return _utf8(data[position : position + length], "topic"), position + length


def _read_properties(data: bytes, position: int, end: int) -> dict[str, str]:
    (length,) = _USHORT.unpack_from(data, position)
    position += 2
    if position + length > end:
        raise ProtocolError(f"properties length {length} runs past the end of the record")
    if position + length < end:
        raise ProtocolError(f"{end - position - length} bytes left over after the properties, inside storeSize")
    return decode_properties(_utf8(data[position:end], "properties"))


def _utf8(raw: bytes, what: str) -> str:
    try:
        return raw.decode()
    except UnicodeDecodeError as exc:
        raise ProtocolError(f"{what} is not valid UTF-8 ({exc.reason} at byte {exc.start})") from None


def _format_host(ip: bytes, port: int, what: str) -> str:
    if not 0 <= port <= 0xFFFF:
        raise ProtocolError(f"{what} port {port} is out of range")
    if len(ip) == 4:
        return f"{socket.inet_ntoa(ip)}:{port}"
    return f"[{ipaddress.IPv6Address(ip).compressed}]:{port}"


def _inflate(stored: bytes, sys_flag: int) -> bytes:
    compression_type = (sys_flag & COMPRESSION_TYPE_MASK) >> 8
    name = _COMPRESSION_NAMES.get(compression_type)
    if name != "zlib":
        what = f"{name}-compressed body" if name else f"body compressed with unknown type {compression_type}"
        raise ProtocolError(
            f"{what} (sysFlag {sys_flag:#x}) is not supported; decode with decompress=False for the stored bytes"
        )
    inflater = zlib.decompressobj()
    try:
        inflated = inflater.decompress(stored, MAX_INFLATED_BODY_SIZE + 1)
    except zlib.error as exc:
        raise ProtocolError(f"corrupt zlib body: {exc}") from None
    if len(inflated) > MAX_INFLATED_BODY_SIZE:
        raise ProtocolError(f"zlib body inflates to more than {MAX_INFLATED_BODY_SIZE} bytes")
    if not inflater.eof:
        raise ProtocolError("corrupt zlib body: the deflate stream is truncated")
    # Like Java's InflaterInputStream, bytes after the end of the deflate stream are ignored.
    return inflated


def encode_message(msg: MessageExt) -> bytes:
    """Encode one store record; the exact inverse of decode_messages.

    storeSize is recomputed, the two host-width bits of sysFlag follow the addresses in born_host/store_host (as
    the broker sets them), and a message with was_compressed=True gets its body deflated again with zlib
    (level 5, byte-identical to what the Java producer sends).
    """
    born_ip, born_port = parse_host(msg.born_host, "born_host")
    store_ip, store_port = parse_host(msg.store_host, "store_host")
    sys_flag = (msg.sys_flag & ~_HOST_FLAGS) | (BORNHOST_V6_FLAG if len(born_ip) == 16 else 0)
    sys_flag |= STOREHOSTADDRESS_V6_FLAG if len(store_ip) == 16 else 0
    stored_body = msg.body
    if msg.was_compressed:
        sys_flag |= COMPRESSED_FLAG
        stored_body = _deflate(msg.body, sys_flag)
    topic = msg.topic.encode()
    topic_length = _topic_length_field(topic)
    properties = _properties_field(msg.properties)
    layout = _LAYOUTS[(sys_flag >> 4) & 3]
    store_size = layout.size + len(stored_body) + len(topic_length) + len(topic) + len(properties)
    body_crc = zlib.crc32(stored_body) & 0x7FFFFFFF if msg.body_crc is None else msg.body_crc
    magic = MESSAGE_MAGIC_CODE if len(topic_length) == 1 else MESSAGE_MAGIC_CODE_V2
    try:
        header = layout.pack(
            store_size,
            magic,
            body_crc,
            msg.queue_id,
            msg.flag,
            msg.queue_offset,
            msg.commit_log_offset,
            sys_flag,
            msg.born_timestamp,
            born_ip,
            born_port,
            msg.store_timestamp,
            store_ip,
            store_port,
            msg.reconsume_times,
            msg.prepared_transaction_offset,
            len(stored_body),
        )
    except struct.error as exc:
        raise ValueError(f"cannot encode message: a numeric field is out of range ({exc})") from None
    return b"".join((header, stored_body, topic_length, topic, properties))


def _deflate(body: bytes, sys_flag: int) -> bytes:
    compression_type = (sys_flag & COMPRESSION_TYPE_MASK) >> 8
    if _COMPRESSION_NAMES.get(compression_type) != "zlib":
        name = _COMPRESSION_NAMES.get(compression_type, f"unknown type {compression_type}")
        raise ValueError(f"cannot compress a body with {name} (sysFlag {sys_flag:#x}); only zlib is supported")
    return zlib.compress(body, _ZLIB_LEVEL)


def _topic_length_field(topic: bytes) -> bytes:
    if len(topic) <= _JAVA_BYTE_MAX:
        return bytes((len(topic),))
    if len(topic) <= _JAVA_SHORT_MAX:
        return _USHORT.pack(len(topic))
    raise ValueError(f"topic is {len(topic)} bytes long; RocketMQ allows at most {_JAVA_SHORT_MAX}")


def _properties_field(properties: dict[str, str]) -> bytes:
    text = encode_properties(properties).encode()
    if len(text) > _JAVA_SHORT_MAX:
        raise ValueError(f"properties take {len(text)} bytes; RocketMQ allows at most {_JAVA_SHORT_MAX}")
    return _USHORT.pack(len(text)) + text


def decode_properties(text: str) -> dict[str, str]:
    """Parse `name\\x01value` pairs separated by `\\x02`, as in store records and SEND headers.

    A trailing separator (the C++ client writes one) is accepted. Like RocketMQ, pairs with an empty name or
    value, or without a name/value separator, are skipped; a value may itself contain `\\x01`.
    """
    properties: dict[str, str] = {}
    for pair in text.split(PROPERTY_SEPARATOR):
        name, _, value = pair.partition(NAME_VALUE_SEPARATOR)
        if name and value:
            properties[name] = value
    return properties


def encode_properties(properties: dict[str, str]) -> str:
    """Write properties the way the Java client and broker do: pairs in dict order, no trailing separator."""
    for name, value in properties.items():
        _check_property(name, value)
    return PROPERTY_SEPARATOR.join(f"{name}{NAME_VALUE_SEPARATOR}{value}" for name, value in properties.items())


def _check_property(name: str, value: str) -> None:
    if not name or NAME_VALUE_SEPARATOR in name or PROPERTY_SEPARATOR in name:
        raise ValueError(f"property name {name!r} must be non-empty and free of \\x01 and \\x02")
    if not value or PROPERTY_SEPARATOR in value:
        raise ValueError(f"property {name!r} value {value!r} must be non-empty and free of \\x02")


def create_offset_msg_id(store_host: str, commit_log_offset: int) -> str:
    """Offset message id: store host ip + port (i32) + commit-log offset (i64), as uppercase hex."""
    ip, port = parse_host(store_host, "store host")
    if not 0 <= commit_log_offset < 1 << 63:
        raise ValueError(f"commit-log offset {commit_log_offset} is out of range")
    return (ip + _MSG_ID_TAIL.pack(port, commit_log_offset)).hex().upper()


def decode_offset_msg_id(msg_id: str) -> tuple[str, int]:
    """("ip:port" of the store host, commit-log offset) from an offset message id (32 hex chars, 56 for IPv6)."""
    if len(msg_id) not in (32, 56):
        raise ValueError(
            f"offset message id {msg_id!r} must be 32 hex characters (IPv4 store host) or 56 (IPv6), not {len(msg_id)}"
        )
    if not _HEX.fullmatch(msg_id):
        raise ValueError(f"offset message id {msg_id!r} is not hexadecimal")
    raw = bytes.fromhex(msg_id)
    port, offset = _MSG_ID_TAIL.unpack_from(raw, len(raw) - _MSG_ID_TAIL.size)
    if not 0 <= port <= 0xFFFF or offset < 0:
        raise ValueError(
            f"{msg_id!r} is not an offset message id (port {port}, offset {offset});"
            " a producer-side id (UNIQ_KEY) cannot be looked up by offset"
        )
    return _format_host(raw[: len(raw) - _MSG_ID_TAIL.size], port, "store host"), offset


@lru_cache(maxsize=1024)
def parse_host(text: str, what: str = "address") -> tuple[bytes, int]:
    """("ip bytes", port) from "1.2.3.4:port", "[v6]:port" or "v6:port"; raises ValueError."""
    host, separator, port_text = text.rpartition(":")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    try:
        ip = ipaddress.ip_address(host).packed
        port = int(port_text)
    except ValueError:
        ip, port = b"", -1
    if not separator or not ip or not 0 <= port <= 0xFFFF:
        raise ValueError(f"{what} {text!r} is not an 'ip:port' address")
    return ip, port
