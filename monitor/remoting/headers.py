"""Custom headers, as RocketMQ's *RequestHeader / *ResponseHeader classes declare them.

RocketMQ turns a header object into extFields by reflection: every non-null field, in declaration order, as a
string (primitive booleans and longs are never null, so they are always sent). Each class here lists its fields in
the Java declaration order with the Java name, so the extFields we send match the real tools', and
`from_ext_fields` parses what a peer sent (the sandbox uses it), checking @CFNotNull fields like the broker does.
"""

from __future__ import annotations

import dataclasses
import enum
import re
from typing import Any, Self

from monitor.remoting.errors import ProtocolError

_CAMEL = re.compile(r"_([a-z])")


def wire(name: str | None = None, *, required: bool = False, default: Any = None):
    """A header field: `name` overrides the Java name derived from the attribute; `required` is @CFNotNull."""
    return dataclasses.field(default=default, metadata={"java": name, "required": required})


def _java_name(f: dataclasses.Field) -> str:
    return f.metadata.get("java") or _CAMEL.sub(lambda m: m.group(1).upper(), f.name)


def _to_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, enum.Enum):
        return value.name
    return str(value)


def _from_text(raw: Any, kind: type, where: str) -> Any:
    text = raw if isinstance(raw, str) else _to_text(raw)
    if kind is bool:
        return text.lower() == "true"
    if kind is int:
        try:
            return int(text)
        except ValueError:
            raise ProtocolError(f"{where} must be an integer, got {text!r}") from None
    return text


class CommandHeader:
    """Base of every header dataclass."""

    def to_ext_fields(self) -> dict[str, str]:
        fields = {}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if value is not None:
                fields[_java_name(f)] = _to_text(value)
        return fields

    @classmethod
    def from_ext_fields(cls, ext: dict[str, Any] | None) -> Self:
        ext = ext or {}
        hints = cls._field_types()
        values = {}
        for f in dataclasses.fields(cls):
            java = _java_name(f)
            raw = ext.get(java)
            if raw is None:
                if f.metadata.get("required"):
                    raise ProtocolError(f"the custom field <{java}> is null")
                continue
            values[f.name] = _from_text(raw, hints[f.name], f"extFields.{java}")
        return cls(**values)

    @classmethod
    def _field_types(cls) -> dict[str, type]:
        cached = cls.__dict__.get("_types_cache")
        if cached is None:
            cached = {}
            for f in dataclasses.fields(cls):
                annotation = str(f.type)
                cached[f.name] = bool if "bool" in annotation else int if "int" in annotation else str
            cls._types_cache = cached
        return cached


def header(cls):
    return dataclasses.dataclass(kw_only=True)(cls)


# --- name server -----------------------------------------------------------------------------------------------


@header
class GetRouteInfoRequestHeader(CommandHeader):
    topic: str = wire(required=True)
    accept_standard_json_only: bool | None = wire()


@header
class DeleteTopicFromNamesrvRequestHeader(CommandHeader):
    topic: str = wire(required=True)
    cluster_name: str | None = wire()


@header
class GetKVConfigRequestHeader(CommandHeader):
    namespace: str = wire(required=True)
    key: str = wire(required=True)


@header
class PutKVConfigRequestHeader(CommandHeader):
    namespace: str = wire(required=True)
    key: str = wire(required=True)
    value: str = wire(required=True)


@header
class DeleteKVConfigRequestHeader(CommandHeader):
    namespace: str = wire(required=True)
    key: str = wire(required=True)


@header
class GetKVListByNamespaceRequestHeader(CommandHeader):
    namespace: str = wire(required=True)


@header
class GetTopicsByClusterRequestHeader(CommandHeader):
    cluster: str = wire(required=True)


@header
class RegisterBrokerRequestHeader(CommandHeader):
    broker_name: str = wire(required=True)
    broker_addr: str = wire(required=True)
    cluster_name: str = wire(required=True)
    ha_server_addr: str = wire(required=True)
    broker_id: int = wire(required=True)
    compressed: bool = wire(default=False)
    body_crc32: int = wire(default=0)


@header
class RegisterBrokerResponseHeader(CommandHeader):
    ha_server_addr: str | None = wire()
    master_addr: str | None = wire()


@header
class UnRegisterBrokerRequestHeader(CommandHeader):
    broker_name: str = wire(required=True)
    broker_addr: str = wire(required=True)
    cluster_name: str = wire(required=True)
    broker_id: int = wire(required=True)


# --- topics and groups on brokers ------------------------------------------------------------------------------


@header
class CreateTopicRequestHeader(CommandHeader):
    topic: str = wire(required=True)
    default_topic: str = wire(required=True)
    read_queue_nums: int = wire(required=True)
    write_queue_nums: int = wire(required=True)
    perm: int = wire(required=True)
    topic_filter_type: str = wire(required=True)
    topic_sys_flag: int | None = wire()
    order: bool = wire(required=True, default=False)


@header
class DeleteTopicRequestHeader(CommandHeader):
    topic: str = wire(required=True)


@header
class DeleteSubscriptionGroupRequestHeader(CommandHeader):
    group_name: str = wire(required=True)
    remove_offset: bool = wire(default=False)
    clean_offset: bool | None = wire()  # RocketMQ 5's name for removeOffset


@header
class GetTopicStatsInfoRequestHeader(CommandHeader):
    topic: str = wire(required=True)


@header
class QueryTopicConsumeByWhoRequestHeader(CommandHeader):
    topic: str = wire(required=True)


@header
class GetBrokerConfigResponseHeader(CommandHeader):
    version: str = wire(required=True)


# --- consumers -------------------------------------------------------------------------------------------------


@header
class GetConsumeStatsRequestHeader(CommandHeader):
    consumer_group: str = wire(required=True)
    topic: str | None = wire()


@header
class GetConsumeStatsInBrokerHeader(CommandHeader):
    is_order: bool = wire(default=False)


@header
class GetConsumerConnectionListRequestHeader(CommandHeader):
    consumer_group: str = wire(required=True)


@header
class GetProducerConnectionListRequestHeader(CommandHeader):
    producer_group: str = wire(required=True)


@header
class GetConsumerListByGroupRequestHeader(CommandHeader):
    consumer_group: str = wire(required=True)


@header
class GetConsumerRunningInfoRequestHeader(CommandHeader):
    consumer_group: str = wire(required=True)
    client_id: str = wire(required=True)
    jstack_enable: bool = wire(default=False)


@header
class NotifyConsumerIdsChangedRequestHeader(CommandHeader):
    consumer_group: str = wire(required=True)


@header
class QueryConsumerOffsetRequestHeader(CommandHeader):
    consumer_group: str = wire(required=True)
    topic: str = wire(required=True)
    queue_id: int = wire(required=True)


@header
class QueryConsumerOffsetResponseHeader(CommandHeader):
    offset: int = wire(required=True)


@header
class UpdateConsumerOffsetRequestHeader(CommandHeader):
    consumer_group: str = wire(required=True)
    topic: str = wire(required=True)
    queue_id: int = wire(required=True)
    commit_offset: int = wire(required=True)


@header
class ResetOffsetRequestHeader(CommandHeader):
    topic: str = wire(required=True)
    group: str = wire(required=True)
    timestamp: int = wire(required=True)
    is_force: bool = wire(required=True, default=False)


@header
class SearchOffsetRequestHeader(CommandHeader):
    topic: str = wire(required=True)
    queue_id: int = wire(required=True)
    timestamp: int = wire(required=True)


@header
class OffsetResponseHeader(CommandHeader):
    """SearchOffset/GetMaxOffset/GetMinOffset response headers: one `offset`."""

    offset: int = wire(required=True)


@header
class TopicQueueRequestHeader(CommandHeader):
    """GetMaxOffset/GetMinOffset/GetEarliestMsgStoretime request headers: topic and queue id."""

    topic: str = wire(required=True)
    queue_id: int = wire(required=True)


@header
class UnregisterClientRequestHeader(CommandHeader):
    client_id: str = wire("clientID", required=True)
    producer_group: str | None = wire()
    consumer_group: str | None = wire()


@header
class ConsumerSendMsgBackRequestHeader(CommandHeader):
    offset: int = wire(required=True)
    group: str = wire(required=True)
    delay_level: int = wire(required=True)
    origin_msg_id: str | None = wire()
    origin_topic: str | None = wire()
    unit_mode: bool = wire(default=False)
    max_reconsume_times: int | None = wire()


# --- messages --------------------------------------------------------------------------------------------------


@header
class SendMessageRequestHeader(CommandHeader):
    producer_group: str = wire(required=True)
    topic: str = wire(required=True)
    default_topic: str = wire(required=True)
    default_topic_queue_nums: int = wire(required=True)
    queue_id: int = wire(required=True)
    sys_flag: int = wire(required=True)
    born_timestamp: int = wire(required=True)
    flag: int = wire(required=True)
    properties: str | None = wire()
    reconsume_times: int | None = wire()
    unit_mode: bool = wire(default=False)
    batch: bool = wire(default=False)
    max_reconsume_times: int | None = wire()


@header
class SendMessageRequestHeaderV2(CommandHeader):
    """SEND_MESSAGE_V2's one-letter names; a..m map onto SendMessageRequestHeader's fields in order."""

    a: str = wire(required=True)
    b: str = wire(required=True)
    c: str = wire(required=True)
    d: int = wire(required=True)
    e: int = wire(required=True)
    f: int = wire(required=True)
    g: int = wire(required=True)
    h: int = wire(required=True)
    i: str | None = wire()
    j: int | None = wire()
    k: bool = wire(default=False)
    l: int | None = wire()  # noqa: E741 - the wire name is "l"
    m: bool = wire(default=False)

    def to_v1(self) -> SendMessageRequestHeader:
        return SendMessageRequestHeader(
            producer_group=self.a,
            topic=self.b,
            default_topic=self.c,
            default_topic_queue_nums=self.d,
            queue_id=self.e,
            sys_flag=self.f,
            born_timestamp=self.g,
            flag=self.h,
            properties=self.i,
            reconsume_times=self.j,
            unit_mode=self.k,
            max_reconsume_times=self.l,
            batch=self.m,
        )


@header
class SendMessageResponseHeader(CommandHeader):
    msg_id: str = wire(required=True)
    queue_id: int = wire(required=True)
    queue_offset: int = wire(required=True)
    transaction_id: str | None = wire()


@header
class PullMessageRequestHeader(CommandHeader):
    consumer_group: str = wire(required=True)
    topic: str = wire(required=True)
    queue_id: int = wire(required=True)
    queue_offset: int = wire(required=True)
    max_msg_nums: int = wire(required=True)
    sys_flag: int = wire(required=True)
    commit_offset: int = wire(required=True)
    suspend_timeout_millis: int = wire(required=True)
    subscription: str | None = wire()
    sub_version: int = wire(required=True)
    expression_type: str | None = wire()


@header
class PullMessageResponseHeader(CommandHeader):
    suggest_which_broker_id: int = wire(required=True)
    next_begin_offset: int = wire(required=True)
    min_offset: int = wire(required=True)
    max_offset: int = wire(required=True)


@header
class QueryMessageRequestHeader(CommandHeader):
    topic: str = wire(required=True)
    key: str = wire(required=True)
    max_num: int = wire(required=True)
    begin_timestamp: int = wire(required=True)
    end_timestamp: int = wire(required=True)


@header
class QueryMessageResponseHeader(CommandHeader):
    index_last_update_timestamp: int = wire(required=True)
    index_last_update_phyoffset: int = wire(required=True)


@header
class ViewMessageRequestHeader(CommandHeader):
    offset: int = wire(required=True)


@header
class ViewBrokerStatsDataRequestHeader(CommandHeader):
    stats_name: str = wire(required=True)
    stats_key: str = wire(required=True)
