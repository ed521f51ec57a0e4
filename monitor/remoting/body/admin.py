"""Broker administration bodies: subscription groups, key/value tables, runtime info and config properties text.

GET_BROKER_CONFIG / GET_NAMESRV_CONFIG answers and UPDATE_BROKER_CONFIG requests are not JSON but
``java.util.Properties`` text. Java writes them as raw ``key=value`` lines (MixAll.properties2String) and reads
them with ``Properties.load``, so :func:`parse_properties` implements load's rules (comments, continuation lines,
``\\:``/``\\=``/``\\uXXXX`` escapes) and :func:`format_properties` escapes only what load would otherwise misread:
plain configuration comes out exactly as a broker writes it, and anything else still survives the trip.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from typing import Any, Self

from monitor.remoting.body._wire import WireBean
from monitor.remoting.body.route import DataVersion
from monitor.remoting.errors import ProtocolError


@dataclass
class SubscriptionGroupConfig(WireBean):
    """A consumer group's settings on a broker (UPDATE_AND_CREATE_SUBSCRIPTIONGROUP body, GET_ALL_... entries)."""

    group_name: str = ""
    consume_enable: bool = True
    consume_from_min_enable: bool = True
    consume_broadcast_enable: bool = True
    retry_queue_nums: int = 1
    retry_max_times: int = 16
    broker_id: int = 0
    which_broker_when_consume_slowly: int = 1
    notify_consumer_ids_changed_enable: bool = True


@dataclass
class SubscriptionGroupWrapper(WireBean):
    subscription_group_table: dict[str, SubscriptionGroupConfig] = field(default_factory=dict)
    data_version: DataVersion = field(default_factory=DataVersion)


@dataclass
class KVTable(WireBean):
    """A string map body; GET_BROKER_RUNTIME_INFO answers with one (see :class:`BrokerRuntimeInfo`)."""

    table: dict[str, str] = field(default_factory=dict)


# --- java.util.Properties text ----------------------------------------------------------------------------------------

_NATURAL_LINE = re.compile(r"\r\n|\r|\n")
_WHITESPACE = " \t\f"
_LOAD_ESCAPE = re.compile(r"\\(?:u(.{0,4})|(.)|$)", re.DOTALL)
_UNESCAPED = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}
_STORE_ESCAPE = {"\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r", "\f": "\\f"}


def parse_properties(text: str | bytes) -> dict[str, str]:
    """``Properties.load`` of a body; a bytes body is UTF-8 (how brokers encode it). Keeps the text's order."""
    if isinstance(text, bytes):
        try:
            text = text.decode()
        except UnicodeDecodeError as exc:
            raise ProtocolError(f"properties body is not UTF-8: {exc}") from None
    result = {}
    for line in _logical_lines(text):
        key, value = _split_entry(line)
        result[_load_convert(key)] = _load_convert(value)
    return result


def format_properties(props: Mapping[str, str]) -> str:
    """``key=value\\n`` lines as MixAll.properties2String writes them, escaped so that ``Properties.load``
    (and :func:`parse_properties`) gives back exactly ``props``."""
    return "".join(f"{_store_convert(k, is_key=True)}={_store_convert(v, is_key=False)}\n" for k, v in props.items())


def _logical_lines(text: str):
    pending: str | None = None
    for natural in _NATURAL_LINE.split(text):
        line = natural.lstrip(_WHITESPACE)
        if pending is None:
            if not line or line[0] in "#!":
                continue
            pending = ""
        if (len(line) - len(line.rstrip("\\"))) % 2:
            pending += line[:-1]
            continue
        if pending + line:
            yield pending + line
        pending = None
    if pending:
        yield pending


def _split_entry(line: str) -> tuple[str, str]:
    key_end, value_start, has_separator, backslash = len(line), len(line), False, False
    for i, char in enumerate(line):
        if not backslash and char in "=:":
            key_end, value_start, has_separator = i, i + 1, True
            break
        if not backslash and char in _WHITESPACE:
            key_end, value_start = i, i + 1
            break
        backslash = char == "\\" and not backslash
    while value_start < len(line):
        char = line[value_start]
        if char not in _WHITESPACE:
            if has_separator or char not in "=:":
                break
            has_separator = True
        value_start += 1
    return line[:key_end], line[value_start:]


def _load_convert(text: str) -> str:
    if "\\" not in text:
        return text

    def unescape(match: re.Match[str]) -> str:
        hex_digits, char = match.groups()
        if hex_digits is not None:
            if not re.fullmatch(r"[0-9a-fA-F]{4}", hex_digits):
                raise ProtocolError(f"malformed \\uxxxx escape in properties text: {match.group()!r}")
            return chr(int(hex_digits, 16))
        return _UNESCAPED.get(char, char or "")

    result = _LOAD_ESCAPE.sub(unescape, text)
    try:  # \uD83D\uDE00 pairs are one character
        return result.encode("utf-16", "surrogatepass").decode("utf-16")
    except UnicodeDecodeError:
        return result


def _store_convert(text: str, *, is_key: bool) -> str:
    out = []
    for i, char in enumerate(text):
        if char in _STORE_ESCAPE:
            out.append(_STORE_ESCAPE[char])
        elif char == " " and (is_key or i == 0):
            out.append("\\ ")
        elif is_key and (char in "=:" or (i == 0 and char in "#!")):
            out.append("\\" + char)
        elif ord(char) < 0x20 or ord(char) > 0x7E:
            units = char.encode("utf-16-be")
            out.extend(f"\\u{units[j]:02X}{units[j + 1]:02X}" for j in range(0, len(units), 2))
        else:
            out.append(char)
    return "".join(out)


# --- GET_BROKER_RUNTIME_INFO ------------------------------------------------------------------------------------------


_JAVA_LONG_MIN, _JAVA_LONG_MAX = -(2**63), 2**63 - 1
_JAVA_INT_MIN, _JAVA_INT_MAX = -(2**31), 2**31 - 1


def _int(text: str) -> int | None:
    """A Java long figure; anything a long cannot hold is not a figure the broker meant (and fits no column)."""
    return _bounded_int(text, _JAVA_LONG_MIN, _JAVA_LONG_MAX)


def _int32(text: str) -> int | None:
    """A Java int figure (thread pool queue sizes)."""
    return _bounded_int(text, _JAVA_INT_MIN, _JAVA_INT_MAX)


def _bounded_int(text: str, low: int, high: int) -> int | None:
    try:
        value = int(text.strip())
    except ValueError:  # not a number, or more digits than Python converts
        return None
    return value if low <= value <= high else None


def _float(text: str) -> float | None:
    try:
        value = float(text.strip())
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def _first_float(text: str) -> float | None:
    """``"16.99 3.49 0.0"`` (last 10 s, 1 min, 10 min) -> 16.99."""
    parts = text.split()
    return _float(parts[0]) if parts else None


def _text(text: str) -> str:
    return text


def _bool(text: str) -> bool | None:
    return {"true": True, "false": False}.get(text.strip().lower())


def _figure(key: str, parse: Callable[[str], Any], *aliases: str) -> Any:
    """A figure read from the table's ``key``, or else from the first of ``aliases`` present (a later spelling)."""
    return field(default=None, metadata={"keys": (key, *aliases), "parse": parse})


_RUNTIME = re.compile(r"(\d+)\s*days?,\s*(\d+)\s*hours?,\s*(\d+)\s*minutes?,\s*(\d+)\s*seconds?")


@dataclass
class BrokerRuntimeInfo:
    """The figures an operator watches, read from GET_BROKER_RUNTIME_INFO's all-string table.

    Every figure is None when the broker did not send it or sent something that is not a number; the whole table
    stays in ``table``. Rates are the first (last 10 seconds) of the broker's space-separated windows. RocketMQ 5
    spells getTransferedTps getTransferredTps, drops brokerVersion and adds the broker's activation (brokerActive),
    the ack thread pool (POP consumption) and the timer wheel of delayed messages.
    """

    table: dict[str, str] = field(default_factory=dict)
    broker_version_desc: str | None = _figure("brokerVersionDesc", _text)
    broker_version: int | None = _figure("brokerVersion", _int)
    boot_timestamp: int | None = _figure("bootTimestamp", _int)
    runtime: str | None = _figure("runtime", _text)
    msg_put_total_today_now: int | None = _figure("msgPutTotalTodayNow", _int)
    msg_get_total_today_now: int | None = _figure("msgGetTotalTodayNow", _int)
    msg_put_total_today_morning: int | None = _figure("msgPutTotalTodayMorning", _int)
    msg_get_total_today_morning: int | None = _figure("msgGetTotalTodayMorning", _int)
    msg_put_total_yesterday_morning: int | None = _figure("msgPutTotalYesterdayMorning", _int)
    msg_get_total_yesterday_morning: int | None = _figure("msgGetTotalYesterdayMorning", _int)
    put_tps: float | None = _figure("putTps", _first_float)
    get_transfered_tps: float | None = _figure("getTransferedTps", _first_float, "getTransferredTps")
    get_found_tps: float | None = _figure("getFoundTps", _first_float)
    get_miss_tps: float | None = _figure("getMissTps", _first_float)
    get_total_tps: float | None = _figure("getTotalTps", _first_float)
    commit_log_disk_ratio: float | None = _figure("commitLogDiskRatio", _float)
    consume_queue_disk_ratio: float | None = _figure("consumeQueueDiskRatio", _float)
    commit_log_dir_capacity: str | None = _figure("commitLogDirCapacity", _text)
    commit_log_min_offset: int | None = _figure("commitLogMinOffset", _int)
    commit_log_max_offset: int | None = _figure("commitLogMaxOffset", _int)
    earliest_message_timestamp: int | None = _figure("earliestMessageTimeStamp", _int)  # -1: no message yet
    dispatch_behind_bytes: int | None = _figure("dispatchBehindBytes", _int)
    remain_how_many_data_to_flush: str | None = _figure("remainHowManyDataToFlush", _text)
    put_message_times_total: int | None = _figure("putMessageTimesTotal", _int)
    put_message_size_total: int | None = _figure("putMessageSizeTotal", _int)
    put_message_average_size: float | None = _figure("putMessageAverageSize", _float)
    put_message_failed_times: int | None = _figure("putMessageFailedTimes", _int)
    put_message_entire_time_max: int | None = _figure("putMessageEntireTimeMax", _int)
    get_message_entire_time_max: int | None = _figure("getMessageEntireTimeMax", _int)
    put_latency99: float | None = _figure("putLatency99", _float)
    put_latency999: float | None = _figure("putLatency999", _float)
    page_cache_lock_time_mills: int | None = _figure("pageCacheLockTimeMills", _int)
    send_thread_pool_queue_size: int | None = _figure("sendThreadPoolQueueSize", _int32)
    send_thread_pool_queue_capacity: int | None = _figure("sendThreadPoolQueueCapacity", _int32)
    send_thread_pool_queue_head_wait_time_mills: int | None = _figure("sendThreadPoolQueueHeadWaitTimeMills", _int)
    pull_thread_pool_queue_size: int | None = _figure("pullThreadPoolQueueSize", _int32)
    pull_thread_pool_queue_capacity: int | None = _figure("pullThreadPoolQueueCapacity", _int32)
    pull_thread_pool_queue_head_wait_time_mills: int | None = _figure("pullThreadPoolQueueHeadWaitTimeMills", _int)
    query_thread_pool_queue_size: int | None = _figure("queryThreadPoolQueueSize", _int32)
    query_thread_pool_queue_capacity: int | None = _figure("queryThreadPoolQueueCapacity", _int32)
    ack_thread_pool_queue_size: int | None = _figure("ackThreadPoolQueueSize", _int32)
    ack_thread_pool_queue_head_wait_time_mills: int | None = _figure("ackThreadPoolQueueHeadWaitTimeMills", _int)
    broker_active: bool | None = _figure("brokerActive", _bool)
    timer_read_behind: int | None = _figure("timerReadBehind", _int)
    timer_offset_behind: int | None = _figure("timerOffsetBehind", _int)
    timer_congest_num: int | None = _figure("timerCongestNum", _int)
    timer_enqueue_tps: float | None = _figure("timerEnqueueTps", _float)
    timer_dequeue_tps: float | None = _figure("timerDequeueTps", _float)

    @classmethod
    def from_kvtable(cls, kv: KVTable | Mapping[str, str]) -> Self:
        table = dict(kv.table if isinstance(kv, KVTable) else kv)
        figures = {}
        for spec in fields(cls):
            raw = next((table[key] for key in spec.metadata.get("keys", ()) if key in table), None)
            if isinstance(raw, str):
                figures[spec.name] = spec.metadata["parse"](raw)
        return cls(table=table, **figures)

    @property
    def runtime_seconds(self) -> int | None:
        """``"[ 0 days, 0 hours, 8 minutes, 18 seconds ]"`` -> 498."""
        match = _RUNTIME.search(self.runtime or "")
        parts = [_int(part) for part in match.groups()] if match else [None]
        if None in parts:
            return None
        days, hours, minutes, seconds = parts
        total = ((days * 24 + hours) * 60 + minutes) * 60 + seconds
        return total if total <= _JAVA_LONG_MAX else None

    @property
    def commit_log_disk_ratio_by_path(self) -> dict[str, float | None]:
        """``commitLogDiskRatio_<store path>`` entries: disk usage of each commit log directory."""
        prefix = "commitLogDiskRatio_"
        return {key[len(prefix) :]: _float(value) for key, value in self.table.items() if key.startswith(prefix)}

    @property
    def schedule_message_offsets(self) -> dict[int, tuple[int, int]]:
        """``scheduleMessageOffset_<level>`` = ``"<delay offset>,<max offset>"`` by delay level (bad ones left out)."""
        prefix = "scheduleMessageOffset_"
        offsets = {}
        for key, value in self.table.items():
            level = _int(key[len(prefix) :]) if key.startswith(prefix) else None
            parts = [_int(part) for part in value.split(",")]
            if level is not None and len(parts) == 2 and None not in parts:
                offsets[level] = (parts[0], parts[1])
        return offsets


__all__ = [
    "BrokerRuntimeInfo",
    "KVTable",
    "SubscriptionGroupConfig",
    "SubscriptionGroupWrapper",
    "format_properties",
    "parse_properties",
]
