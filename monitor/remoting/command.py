"""RemotingCommand and its frame codec.

A frame is: int32 total length (everything after it), int32 whose high byte is the serialize type and whose low
24 bits are the header length, the header (JSON or RocketMQ's compact binary "ROCKETMQ" layout), then the body.
Java peers write JSON headers with fastjson (fields sorted) and extFields from a java.util.HashMap; we reproduce
that order so our frames match the real tools' byte for byte where the content is the same.
"""

from __future__ import annotations

import itertools
import json
import re
import struct
from dataclasses import dataclass, field
from typing import Any

from monitor.remoting.codes import (
    ONEWAY_FLAG,
    RESPONSE_FLAG,
    VERSION_4_9_4,
    LanguageCode,
    ResponseCode,
    SerializeType,
)
from monitor.remoting.errors import ProtocolError
from monitor.remoting.javahash import java_hashmap_order

# RocketMQ's default com.rocketmq.remoting.frameMaxLength.
MAX_FRAME_LENGTH = 16 * 1024 * 1024
_INT = struct.Struct(">i")
_SHORT = struct.Struct(">h")
_PREFIX = struct.Struct(">iI")
_BIN_FIXED = struct.Struct(">hBhii")  # code, language, version, opaque, flag
_JAVA_INT_MIN, _JAVA_INT_MAX = -(2**31), 2**31 - 1
# At most 10 ASCII digits: a longer string is out of range anyway, and int() never meets Python's digit limit.
_JAVA_INT_TEXT = re.compile(r"-?[0-9]{1,10}")
_HEADER_FIELDS = frozenset(
    {"code", "language", "version", "opaque", "flag", "remark", "extFields", "serializeTypeCurrentRPC"}
)

_opaque_counter = itertools.count(1)


def next_opaque() -> int:
    """A process-wide request id, like RemotingCommand's AtomicInteger (wraps at 2**31)."""
    return next(_opaque_counter) % 0x7FFFFFFF


@dataclass(eq=True)
class RemotingCommand:
    """One request or response, named and shaped like org.apache.rocketmq.remoting.protocol.RemotingCommand."""

    code: int
    language: str = "PYTHON"
    version: int = VERSION_4_9_4
    opaque: int = 0
    flag: int = 0
    remark: str | None = None
    ext_fields: dict[str, Any] | None = None
    body: bytes = b""
    serialize_type: SerializeType = SerializeType.JSON

    @classmethod
    def request(cls, code: int, ext_fields: dict[str, Any] | None = None, body: bytes = b"", **kw) -> RemotingCommand:
        return cls(code=int(code), opaque=next_opaque(), ext_fields=ext_fields, body=body, **kw)

    def make_response(self, code: int = ResponseCode.SUCCESS, remark: str | None = None, **kw) -> RemotingCommand:
        kw.setdefault("language", "JAVA")
        return RemotingCommand(
            code=int(code),
            opaque=self.opaque,
            flag=RESPONSE_FLAG,
            remark=remark,
            serialize_type=self.serialize_type,
            **kw,
        )

    @property
    def is_response(self) -> bool:
        return bool(self.flag & RESPONSE_FLAG)

    @property
    def is_oneway(self) -> bool:
        return bool(self.flag & ONEWAY_FLAG)

    def ext(self, name: str, default: str | None = None) -> str | None:
        """An extFields value as the string Java would see (the C++ client sends some as JSON numbers)."""
        value = self.ext_fields.get(name) if self.ext_fields else None
        if value is None:  # absent, or null as fastjson reads a HashMap entry without value
            return default
        if isinstance(value, bool):
            return "true" if value else "false"
        return value if isinstance(value, str) else str(value)

    def ext_int(self, name: str, default: int | None = None) -> int | None:
        value = self.ext(name)
        if value is None or value == "":
            return default
        try:
            return int(value)
        except ValueError:
            raise ProtocolError(f"extFields.{name} is not an integer: {value!r}") from None

    def encode(self) -> bytes:
        return encode_frame(self)


# ---------------------------------------------------------------------------------------------------------------
# Encoding


def _json_value(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def encode_json_header(cmd: RemotingCommand) -> bytes:
    """fastjson's rendering of a Java RemotingCommand: fields sorted, remark/extFields omitted when null."""
    parts = [f'"code":{int(cmd.code)}']
    if cmd.ext_fields is not None:
        ordered = java_hashmap_order(list(cmd.ext_fields))
        inner = ",".join(f"{_json_value(k)}:{_json_value(cmd.ext_fields[k])}" for k in ordered)
        parts.append(f'"extFields":{{{inner}}}')
    parts.append(f'"flag":{int(cmd.flag)}')
    parts.append(f'"language":{_json_value(cmd.language)}')
    parts.append(f'"opaque":{int(cmd.opaque)}')
    if cmd.remark is not None:
        parts.append(f'"remark":{_json_value(cmd.remark)}')
    parts.append('"serializeTypeCurrentRPC":"JSON"')
    parts.append(f'"version":{int(cmd.version)}')
    return ("{" + ",".join(parts) + "}").encode()


def _language_byte(language: str) -> int:
    try:
        return LanguageCode[language].value
    except KeyError:
        return LanguageCode.OTHER.value


def encode_rocketmq_header(cmd: RemotingCommand) -> bytes:
    """RocketMQSerializable.rocketMQProtocolEncode: fixed fields, remark, then length-prefixed extFields.

    The layout has 16-bit code, version and key lengths: a command that does not fit raises ProtocolError (the
    server that would send it logs that and sends nothing), as an over-long frame does."""
    remark = (cmd.remark or "").encode() if cmd.remark is not None else b""
    try:
        out = bytearray(_BIN_FIXED.pack(cmd.code, _language_byte(cmd.language), cmd.version, cmd.opaque, cmd.flag))
        out += _INT.pack(len(remark)) + remark
        ext = bytearray()
        if cmd.ext_fields:
            for key in java_hashmap_order(list(cmd.ext_fields)):
                value = cmd.ext_fields[key]
                kb = key.encode()
                vb = (value if isinstance(value, str) else str(value)).encode()
                ext += _SHORT.pack(len(kb)) + kb + _INT.pack(len(vb)) + vb
        out += _INT.pack(len(ext)) + ext
    except struct.error as exc:
        raise ProtocolError(f"command does not fit the ROCKETMQ header layout: {exc}") from None
    return bytes(out)


def encode_frame(cmd: RemotingCommand) -> bytes:
    if cmd.serialize_type == SerializeType.ROCKETMQ:
        header = encode_rocketmq_header(cmd)
    else:
        header = encode_json_header(cmd)
    body = cmd.body or b""
    total = 4 + len(header) + len(body)
    if total > MAX_FRAME_LENGTH:
        raise ProtocolError(f"frame of {total} bytes exceeds the {MAX_FRAME_LENGTH}-byte limit")
    return _PREFIX.pack(total, (int(cmd.serialize_type) << 24) | len(header)) + header + body


# ---------------------------------------------------------------------------------------------------------------
# Decoding


def _require_int(header: dict, name: str, default: int | None = None) -> int:
    """A Java int field of the header (fastjson also reads one from a string of ASCII digits)."""
    value = header.get(name, default)
    if isinstance(value, str) and _JAVA_INT_TEXT.fullmatch(value):
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ProtocolError(f"header field {name!r} must be an integer, got {value!r:.60}")
    if not _JAVA_INT_MIN <= value <= _JAVA_INT_MAX:
        raise ProtocolError(f"header field {name!r} is out of the Java int range: {value!r:.40}")
    return value


def decode_json_header(raw: bytes) -> dict[str, Any]:
    try:
        header = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise ProtocolError(f"JSON header is not valid JSON: {exc}") from None
    except RecursionError:  # the C scanner gives up on arrays or objects nested thousands deep
        raise ProtocolError("JSON header is nested too deeply") from None
    if not isinstance(header, dict):
        raise ProtocolError("JSON header is not an object")
    return header


def decode_rocketmq_header(raw: bytes) -> dict[str, Any]:
    view = memoryview(raw)
    if len(view) < _BIN_FIXED.size + 4:
        raise ProtocolError(f"ROCKETMQ header too short: {len(view)} bytes")
    code, lang, version, opaque, flag = _BIN_FIXED.unpack_from(view, 0)
    pos = _BIN_FIXED.size
    remark, pos = _read_sized(view, pos, _INT, "remark")
    if pos + 4 > len(view):
        raise ProtocolError("ROCKETMQ header truncated before extFields length")
    (ext_len,) = _INT.unpack_from(view, pos)
    pos += 4
    if ext_len < 0 or pos + ext_len != len(view):
        raise ProtocolError(f"ROCKETMQ header extFields length {ext_len} does not match the header size")
    ext: dict[str, str] | None = {} if ext_len else None
    end = pos + ext_len
    while pos < end:
        key, pos = _read_sized(view, pos, _SHORT, "extFields key", end)
        value, pos = _read_sized(view, pos, _INT, "extFields value", end)
        ext[key] = value
    try:
        language = LanguageCode(lang).name
    except ValueError:
        language = "OTHER"
    header: dict[str, Any] = {"code": code, "language": language, "version": version, "opaque": opaque, "flag": flag}
    header["remark"] = remark if remark else None
    header["extFields"] = ext
    return header


def _read_sized(view: memoryview, pos: int, size_struct: struct.Struct, what: str, end: int | None = None):
    end = len(view) if end is None else end
    if pos + size_struct.size > end:
        raise ProtocolError(f"ROCKETMQ header truncated in {what} length")
    (length,) = size_struct.unpack_from(view, pos)
    pos += size_struct.size
    if length < 0 or pos + length > end:
        raise ProtocolError(f"ROCKETMQ header {what} length {length} is out of bounds")
    try:
        text = bytes(view[pos : pos + length]).decode("utf-8")
    except UnicodeDecodeError:
        raise ProtocolError(f"ROCKETMQ header {what} is not UTF-8") from None
    return text, pos + length


def command_from_header(header: dict[str, Any], body: bytes, serialize_type: SerializeType) -> RemotingCommand:
    ext = header.get("extFields")
    if ext is not None and not isinstance(ext, dict):
        raise ProtocolError(f"header extFields must be an object, got {type(ext).__name__}")
    if ext and any(isinstance(v, (dict, list)) for v in ext.values()):
        raise ProtocolError("header extFields values must be scalars")
    remark = header.get("remark")
    if remark is not None and not isinstance(remark, str):
        raise ProtocolError("header remark must be a string")
    language = header.get("language", "JAVA")
    if not isinstance(language, str):
        raise ProtocolError("header language must be a string")
    return RemotingCommand(
        code=_require_int(header, "code"),
        language=language,
        version=_require_int(header, "version", 0),
        opaque=_require_int(header, "opaque", 0),
        flag=_require_int(header, "flag", 0),
        remark=remark,
        ext_fields=ext,
        body=body,
        serialize_type=serialize_type,
    )


def decode_payload(payload: bytes, max_frame_length: int = MAX_FRAME_LENGTH) -> RemotingCommand:
    """Decode what follows the 4-byte total length: the header-length int, the header and the body."""
    if len(payload) < 4:
        raise ProtocolError(f"frame too short: {len(payload)} bytes after the length field")
    (mark,) = _INT.unpack_from(payload, 0)
    mark &= 0xFFFFFFFF
    serialize_byte, header_length = mark >> 24, mark & 0xFFFFFF
    if header_length > len(payload) - 4:
        raise ProtocolError(f"header length {header_length} exceeds the frame ({len(payload) - 4} bytes left)")
    raw_header = payload[4 : 4 + header_length]
    body = bytes(payload[4 + header_length :])
    if serialize_byte == SerializeType.JSON:
        return command_from_header(decode_json_header(bytes(raw_header)), body, SerializeType.JSON)
    if serialize_byte == SerializeType.ROCKETMQ:
        return command_from_header(decode_rocketmq_header(bytes(raw_header)), body, SerializeType.ROCKETMQ)
    raise ProtocolError(f"unknown serialize type {serialize_byte}")


def decode_frame(frame: bytes, max_frame_length: int = MAX_FRAME_LENGTH) -> RemotingCommand:
    """Decode exactly one whole frame (including its 4-byte length)."""
    if len(frame) < 4:
        raise ProtocolError("frame too short for its length field")
    (length,) = _INT.unpack_from(frame, 0)
    if length < 4 or length > max_frame_length:
        raise ProtocolError(f"absurd frame length {length}")
    if len(frame) - 4 != length:
        raise ProtocolError(f"frame length field says {length} bytes, got {len(frame) - 4}")
    return decode_payload(frame[4:], max_frame_length)


@dataclass
class FrameDecoder:
    """Incremental decoder for a byte stream: feed what the socket gave, get whole commands back.

    A length outside 4..max_frame_length raises ProtocolError at once, so a peer can never make us buffer
    gigabytes or wait forever for a frame that cannot exist; the caller then closes the connection."""

    max_frame_length: int = MAX_FRAME_LENGTH
    _buffer: bytearray = field(default_factory=bytearray)
    error: ProtocolError | None = None

    def feed(self, data: bytes) -> list[RemotingCommand]:
        """Whole commands completed by `data`. A malformed frame after good ones returns the good ones first and
        is raised by `check()` (and by any later feed), so a peer's valid requests are never lost to its garbage."""
        self.check()
        self._buffer += data
        commands = []
        try:
            while len(self._buffer) >= 4:
                (length,) = _INT.unpack_from(self._buffer, 0)
                if length < 4 or length > self.max_frame_length:
                    raise ProtocolError(f"absurd frame length {length}")
                if len(self._buffer) < 4 + length:
                    break
                payload = bytes(self._buffer[4 : 4 + length])
                del self._buffer[: 4 + length]
                commands.append(decode_payload(payload, self.max_frame_length))
        except ProtocolError as exc:
            self.error = exc
            self._buffer.clear()
            if not commands:
                raise
        return commands

    def check(self) -> None:
        """Raise the ProtocolError a previous feed met after returning the frames before it."""
        if self.error is not None:
            raise self.error

    @property
    def buffered(self) -> int:
        return len(self._buffer)
