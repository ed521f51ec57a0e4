"""One message as people and scripts read it: every MessageExt field under Java's names, and the body as text,
pretty JSON or hex.

The CLI's ``--json``, the portal's message page and the API all show a message through :func:`message_fields`,
so a field has one name everywhere, the name of Java's MessageExt getter as fastjson writes it (``queueOffset``,
``commitLogOffset``, ``bodyCRC``). Two deliberate choices differ from ``JSON.toJSONString(messageExt)``: absent
values are written as null rather than left out (a script can rely on every key), and hosts are the
``ip:port`` text RocketMQ logs rather than fastjson's spelling of an InetSocketAddress. ``msgId`` is what the
Java client's MessageClientExt returns (the producer's id, UNIQ_KEY, else the offset id) and ``offsetMsgId`` the
store id queryMsgById takes; the host name of the born host (getBornHostNameString) is not looked up, since a
reverse DNS query per message would make a search of thousands of messages crawl.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from monitor.remoting.message import MessageExt

# MessageConst names of the properties that Message's getters read.
_WAIT_STORE_MSG_OK = "WAIT"
_BUYER_ID = "BUYER_ID"
_TRANSACTION_PREPARED = "TRAN_MSG"


def _host_ip(host: str) -> str:
    """getBornHostString: the address without the port (IPv6 without its brackets)."""
    ip = host.rpartition(":")[0]
    return ip[1:-1] if ip.startswith("[") and ip.endswith("]") else ip


def _wait_store_msg_ok(msg: MessageExt) -> bool:
    """isWaitStoreMsgOK: true unless the producer said "false" (absent means true)."""
    value = msg.properties.get(_WAIT_STORE_MSG_OK)
    return True if value is None else value.lower() == "true"


def _transaction_id(msg: MessageExt) -> str | None:
    """A transactional message's id is its producer id (the broker hands UNIQ_KEY to the transaction check as
    transactionId); other messages have none."""
    return msg.uniq_key if msg.properties.get(_TRANSACTION_PREPARED, "").lower() == "true" else None


def message_fields(msg: MessageExt, *, broker_name: str | None = None) -> dict[str, Any]:
    """Every field of the message except the body, named as Java's MessageExt / MessageClientExt JSON.

    `broker_name` is the broker set that stored it, when the caller knows (the stored record does not say)."""
    return {
        "topic": msg.topic,
        "flag": msg.flag,
        "properties": dict(msg.properties),
        "tags": msg.tags,
        "keys": msg.properties.get("KEYS"),
        "delayTimeLevel": msg.delay_time_level,
        "waitStoreMsgOK": _wait_store_msg_ok(msg),
        "transactionId": _transaction_id(msg),
        "buyerId": msg.properties.get(_BUYER_ID),
        "brokerName": broker_name,
        "queueId": msg.queue_id,
        "storeSize": msg.store_size,
        "queueOffset": msg.queue_offset,
        "sysFlag": msg.sys_flag,
        "bornTimestamp": msg.born_timestamp,
        "bornHost": msg.born_host,
        "bornHostString": _host_ip(msg.born_host),
        "storeTimestamp": msg.store_timestamp,
        "storeHost": msg.store_host,
        "msgId": msg.uniq_key or msg.msg_id,
        "offsetMsgId": msg.msg_id,
        "commitLogOffset": msg.commit_log_offset,
        "bodyCRC": msg.body_crc,
        "reconsumeTimes": msg.reconsume_times,
        "preparedTransactionOffset": msg.prepared_transaction_offset,
        "bodyLength": len(msg.body),
        "bodyCompressed": msg.was_compressed,
    }


@dataclass(frozen=True)
class BodyViews:
    """The body three ways: ``text`` when it is UTF-8, ``json`` (indented) when that text is a JSON document,
    ``hex`` always. Bodies the producer compressed are already inflated by the decoder."""

    text: str | None
    json: str | None
    hex: str


def _pretty_json(text: str) -> str | None:
    stripped = text.strip()
    if not stripped or stripped[0] not in "{[":  # a bare number or string is text, not a document worth indenting
        return None
    try:
        return json.dumps(json.loads(stripped), indent=2, ensure_ascii=False)
    except ValueError:
        return None


def body_views(body: bytes) -> BodyViews:
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        text = None
    return BodyViews(text=text, json=None if text is None else _pretty_json(text), hex=body.hex())
