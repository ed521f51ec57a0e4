"""Trace records as RocketMQ's Java client writes them (org.apache.rocketmq.client.trace.TraceDataEncoder, 4.9.4
and 5.x), read back into one record type mirroring TraceContext + TraceBean.

A trace message's body is text: records separated by FIELD_SPLITOR (\\u0002), each record's fields separated by
CONTENT_SPLITOR (\\u0001) (RocketMQ's names, swapped as they are in the source). The first field is the TraceType.
Layouts, by field position:

- Pub: type, timeStamp, regionId, groupName, topic, msgId, tags, keys, storeHost, bodyLength, costTime,
  msgType (MessageType ordinal), offsetMsgId, success [, clientHost]. Before 4.4 there was no offsetMsgId (13
  fields); clientHost is only read, no release writes it.
- SubBefore (one record per message of a consume batch): type, timeStamp, regionId, groupName, requestId, msgId,
  retryTimes, keys.
- SubAfter: type, requestId, msgId, costTime, success, keys, contextCode (ConsumeReturnType ordinal) [, timeStamp,
  groupName]. The last two were added in 4.7; 5.x leaves them out for AccessChannel.CLOUD.
- EndTransaction: type, timeStamp, regionId, groupName, topic, msgId, tags, keys, storeHost, msgType,
  transactionId, transactionState (LocalTransactionState name), fromTransactionCheck.
- Recall (5.x): type, timeStamp, regionId, groupName, topic, msgId, success.

Java splits with String.split, which drops trailing empty fields (a CLOUD SubAfter ends in a separator); so does
this reader. Where Java would then fail on a missing trailing text field (a SubBefore of a message whose keys are
empty) this reader takes it as empty. Fields after a layout's last are kept in ``extra`` (later writers may append).
Java writes an absent value as the text ``null`` (a message without keys has keys ``null``): kept as written.

A record that cannot be read (too few fields, a number that is not one, an unknown type) comes back as a
:class:`MalformedTraceRecord` in its place; decoding a batch never raises.

Writing (the SDK's tracing, monitor.sdk.tracing): :func:`encode_record` writes Pub, SubBefore, SubAfter and
EndTransaction exactly as 4.9.4's encoderFromContextBean does (every record ends with FIELD_SPLITOR, an absent value
is ``null``), and :func:`trace_message_keys` the KEYS of a trace message as AsyncTraceDispatcher sets them: every
record's msgId and keys, once each, in the order Java's HashSet iterates them. Pure Python, no imports of the
project: the SDK's wheel ships this module.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass

from monitor.remoting.javahash import java_hashmap_order

__all__ = [
    "CONSUME_RETURN_TYPES",
    "CONTENT_SPLITOR",
    "FIELD_SPLITOR",
    "MESSAGE_TYPES",
    "RMQ_SYS_TRACE_TOPIC",
    "TRANSACTION_STATES",
    "MalformedTraceRecord",
    "TraceRecord",
    "TraceType",
    "decode_body",
    "decode_records",
    "encode_record",
    "trace_message_keys",
]

CONTENT_SPLITOR = "\u0001"  # between the fields of a record
FIELD_SPLITOR = "\u0002"  # between records
RMQ_SYS_TRACE_TOPIC = "RMQ_SYS_TRACE_TOPIC"  # TopicValidator.RMQ_SYS_TRACE_TOPIC, the default trace topic

# MessageType by ordinal (Order_Msg is 5.x's), LocalTransactionState and ConsumeReturnType names, as in the source.
MESSAGE_TYPES = ("Normal_Msg", "Trans_Msg_Half", "Trans_msg_Commit", "Delay_Msg", "Order_Msg")
TRANSACTION_STATES = ("COMMIT_MESSAGE", "ROLLBACK_MESSAGE", "UNKNOW")
CONSUME_RETURN_TYPES = ("SUCCESS", "TIME_OUT", "EXCEPTION", "RETURNNULL", "FAILED")

_INT = re.compile(r"[+-]?[0-9]+")  # what Integer.parseInt / Long.parseLong accept (ASCII digits)
_INT32 = (-(2**31), 2**31 - 1)
_INT64 = (-(2**63), 2**63 - 1)


class TraceType(enum.Enum):
    Pub = "Pub"
    Recall = "Recall"
    SubBefore = "SubBefore"
    SubAfter = "SubAfter"
    EndTransaction = "EndTransaction"


@dataclass(frozen=True, slots=True)
class TraceRecord:
    """One decoded record: the TraceContext fields and its TraceBean's, None where the layout has no such field."""

    trace_type: TraceType
    msg_id: str  # the producer's message id (UNIQ_KEY)
    timestamp: int | None = None  # ms; Pub: send start, SubBefore: consume start, SubAfter: consume end
    region_id: str | None = None
    group: str | None = None  # producer group (Pub, EndTransaction, Recall) or consumer group (Sub*)
    request_id: str | None = None  # joins a SubBefore to its SubAfter
    topic: str | None = None
    tags: str | None = None
    keys: str | None = None
    store_host: str | None = None
    client_host: str | None = None
    body_length: int | None = None
    cost_ms: int | None = None  # Pub: send time; SubAfter: consume time per message of the batch
    msg_type: str | None = None  # a MESSAGE_TYPES name
    offset_msg_id: str | None = None
    success: bool | None = None
    retry_times: int | None = None
    context_code: int | None = None  # a CONSUME_RETURN_TYPES ordinal
    transaction_id: str | None = None
    transaction_state: str | None = None  # a TRANSACTION_STATES name
    from_transaction_check: bool | None = None
    extra: tuple[str, ...] = ()  # fields after the layout's last, as written

    @property
    def key_list(self) -> list[str]:
        """The message keys, split on spaces as MessageConst.KEY_SEPARATOR splits them."""
        return [key for key in (self.keys or "").split(" ") if key]

    @property
    def context_name(self) -> str | None:
        """The ConsumeReturnType the context code stands for (SUCCESS, TIME_OUT, EXCEPTION, RETURNNULL, FAILED)."""
        code = self.context_code
        return CONSUME_RETURN_TYPES[code] if code is not None and 0 <= code < len(CONSUME_RETURN_TYPES) else None


@dataclass(frozen=True, slots=True)
class MalformedTraceRecord:
    """A record that could not be read, with the reason; ``text`` is the record as written."""

    text: str
    error: str


class _Malformed(ValueError):
    pass


def _int(text: str, what: str, bounds: tuple[int, int] = _INT32) -> int:
    if not _INT.fullmatch(text):
        raise _Malformed(f"{what} {text!r} is not a number")
    value = int(text)
    if not bounds[0] <= value <= bounds[1]:
        raise _Malformed(f"{what} {text!r} is out of range")
    return value


def _bool(text: str) -> bool:
    return text.lower() == "true"  # Boolean.parseBoolean: anything else is false


def _need(fields: list[str], count: int) -> None:
    if len(fields) < count:
        raise _Malformed(f"{fields[0]} record has {len(fields)} fields, at least {count} expected")


def _msg_type(text: str) -> str:
    ordinal = _int(text, "msgType")
    if not 0 <= ordinal < len(MESSAGE_TYPES):
        raise _Malformed(f"msgType {ordinal} is not a MessageType ordinal")
    return MESSAGE_TYPES[ordinal]


def _pub(f: list[str]) -> TraceRecord:
    _need(f, 12)
    offset_msg_id, success, client_host = "", True, None  # Java's defaults when the fields are absent
    if len(f) == 13:  # the layout before offsetMsgId
        success = _bool(f[12])
    elif len(f) >= 14:
        offset_msg_id, success = f[12], _bool(f[13])
        client_host = f[14] if len(f) >= 15 else None
    return TraceRecord(
        TraceType.Pub,
        f[5],
        timestamp=_int(f[1], "timeStamp", _INT64),
        region_id=f[2],
        group=f[3],
        topic=f[4],
        tags=f[6],
        keys=f[7],
        store_host=f[8],
        body_length=_int(f[9], "bodyLength"),
        cost_ms=_int(f[10], "costTime"),
        msg_type=_msg_type(f[11]),
        offset_msg_id=offset_msg_id,
        success=success,
        client_host=client_host,
        extra=tuple(f[15:]),
    )


def _sub_before(f: list[str]) -> TraceRecord:
    _need(f, 7)
    return TraceRecord(
        TraceType.SubBefore,
        f[5],
        timestamp=_int(f[1], "timeStamp", _INT64),
        region_id=f[2],
        group=f[3],
        request_id=f[4],
        retry_times=_int(f[6], "retryTimes"),
        keys=f[7] if len(f) > 7 else "",
        extra=tuple(f[8:]),
    )


def _sub_after(f: list[str]) -> TraceRecord:
    _need(f, 6)
    return TraceRecord(
        TraceType.SubAfter,
        f[2],
        request_id=f[1],
        cost_ms=_int(f[3], "costTime"),
        success=_bool(f[4]),
        keys=f[5],
        context_code=_int(f[6], "contextCode") if len(f) > 6 else None,
        timestamp=_int(f[7], "timeStamp", _INT64) if len(f) > 7 else None,
        group=f[8] if len(f) > 8 else None,
        extra=tuple(f[9:]),
    )


def _end_transaction(f: list[str]) -> TraceRecord:
    _need(f, 13)
    if f[11] not in TRANSACTION_STATES:
        raise _Malformed(f"transactionState {f[11]!r} is not a LocalTransactionState")
    return TraceRecord(
        TraceType.EndTransaction,
        f[5],
        timestamp=_int(f[1], "timeStamp", _INT64),
        region_id=f[2],
        group=f[3],
        topic=f[4],
        tags=f[6],
        keys=f[7],
        store_host=f[8],
        msg_type=_msg_type(f[9]),
        transaction_id=f[10],
        transaction_state=f[11],
        from_transaction_check=_bool(f[12]),
        extra=tuple(f[13:]),
    )


def _recall(f: list[str]) -> TraceRecord:
    _need(f, 7)
    return TraceRecord(
        TraceType.Recall,
        f[5],
        timestamp=_int(f[1], "timeStamp", _INT64),
        region_id=f[2],
        group=f[3],
        topic=f[4],
        success=_bool(f[6]),
        extra=tuple(f[7:]),
    )


_DECODERS = {
    "Pub": _pub,
    "SubBefore": _sub_before,
    "SubAfter": _sub_after,
    "EndTransaction": _end_transaction,
    "Recall": _recall,
}


def decode_record(text: str) -> TraceRecord | MalformedTraceRecord:
    """One record (the text between two FIELD_SPLITORs)."""
    fields = text.split(CONTENT_SPLITOR)
    while len(fields) > 1 and not fields[-1]:  # String.split drops trailing empty strings
        fields.pop()
    decoder = _DECODERS.get(fields[0])
    if decoder is None:
        return MalformedTraceRecord(text, f"unknown trace type {fields[0][:40]!r}")
    try:
        return decoder(fields)
    except _Malformed as exc:
        return MalformedTraceRecord(text, str(exc))


def decode_records(text: str) -> list[TraceRecord | MalformedTraceRecord]:
    """Every record of a trace message's text, in order; empty stretches between separators are not records."""
    return [decode_record(part) for part in text.split(FIELD_SPLITOR) if part]


def decode_body(body: bytes) -> list[TraceRecord | MalformedTraceRecord]:
    """A trace message's (already inflated) body: UTF-8 text, undecodable bytes replaced as Java's String does."""
    return decode_records(body.decode("utf-8", errors="replace"))


# --- writing ----------------------------------------------------------------------------------------------------


def _java(value: object) -> str:
    """A value as StringBuilder.append writes it: null, true/false, numbers in decimal."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _fields(record: TraceRecord) -> tuple:
    r = record
    kind = r.trace_type
    if kind is TraceType.Pub:
        return (kind.value, r.timestamp, r.region_id, r.group, r.topic, r.msg_id, r.tags, r.keys, r.store_host,
                r.body_length, r.cost_ms, MESSAGE_TYPES.index(r.msg_type), r.offset_msg_id, r.success)  # fmt: skip
    if kind is TraceType.SubBefore:
        return (kind.value, r.timestamp, r.region_id, r.group, r.request_id, r.msg_id, r.retry_times, r.keys)
    if kind is TraceType.SubAfter:
        return (kind.value, r.request_id, r.msg_id, r.cost_ms, r.success, r.keys, r.context_code, r.timestamp,
                r.group)  # fmt: skip
    if kind is TraceType.EndTransaction:
        msg_type = MESSAGE_TYPES.index(r.msg_type)
        return (kind.value, r.timestamp, r.region_id, r.group, r.topic, r.msg_id, r.tags, r.keys, r.store_host,
                msg_type, r.transaction_id, r.transaction_state, r.from_transaction_check)  # fmt: skip
    raise ValueError(f"a 4.9 client writes no {kind.value} record")


def encode_record(record: TraceRecord) -> str:
    """The record as TraceDataEncoder 4.9.4 writes it, FIELD_SPLITOR included (records are concatenated as is)."""
    return CONTENT_SPLITOR.join(_java(value) for value in _fields(record)) + FIELD_SPLITOR


def _java_split(text: str) -> list[str]:
    parts = text.split(" ")
    while len(parts) > 1 and not parts[-1]:  # String.split drops trailing empty strings
        parts.pop()
    return parts


def trace_message_keys(records: list[TraceRecord]) -> str:
    """The KEYS of a trace message holding ``records``: each record's msgId and keys (split on spaces) gathered in
    its own HashSet (TraceTransferBean.transKey), those added to one HashSet in order, joined with spaces."""
    gathered: dict[str, None] = {}  # insertion-ordered set
    for record in records:
        own = dict.fromkeys([record.msg_id, *(_java_split(record.keys) if record.keys else ())])
        gathered.update(dict.fromkeys(java_hashmap_order(own)))
    return " ".join(java_hashmap_order(gathered))
