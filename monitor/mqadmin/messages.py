"""Message subcommands: queryMsgByKey, queryMsgById, queryMsgByOffset.

queryMsgById and queryMsgByOffset show one message the way mqadmin's printMsg does, followed by its track: for
each group consuming the topic, whether that group has consumed the message. mqadmin writes the body to a file
under /tmp/rocketmq/msgbodys; here it is shown inline (text, or Base64 when it is not UTF-8).
"""

from __future__ import annotations

import argparse
import base64
import enum
from dataclasses import dataclass, field

from monitor.mqadmin.common import MQAdminError, SubCommand, human_millis, select_broker_addr
from monitor.mqadmin.output import join_blocks, render_table
from monitor.remoting import body as b
from monitor.remoting.admin import MQAdmin, PullStatus
from monitor.remoting.codes import ResponseCode
from monitor.remoting.errors import RemotingClientError, RemotingError
from monitor.remoting.message import MessageExt, decode_offset_msg_id

# --- message track --------------------------------------------------------------------------------------------------


class TrackType(enum.Enum):
    """org.apache.rocketmq.tools.admin.api.TrackType."""

    CONSUMED = "CONSUMED"
    CONSUMED_BUT_FILTERED = "CONSUMED_BUT_FILTERED"
    PULL = "PULL"
    NOT_CONSUME_YET = "NOT_CONSUME_YET"
    NOT_ONLINE = "NOT_ONLINE"
    UNKNOWN = "UNKNOWN"


@dataclass
class MessageTrack:
    consumer_group: str
    track_type: TrackType
    exception_desc: str | None = None


def _consumed(admin: MQAdmin, msg: MessageExt, group: str, info: b.ClusterInfo) -> bool:
    """The group's committed offset in the message's queue (on the broker that stored it) is past the message."""
    stats = admin.examine_consume_stats(group)
    for mq, offset in stats.offset_table.items():
        if mq.topic != msg.topic or mq.queue_id != msg.queue_id:
            continue
        bd = info.broker_addr_table.get(mq.broker_name)
        if bd is not None and bd.master_addr == msg.store_host and offset.consumer_offset > msg.queue_offset:
            return True
    return False


def _track_group(admin: MQAdmin, msg: MessageExt, group: str, info: b.ClusterInfo) -> MessageTrack:
    track = MessageTrack(group, TrackType.UNKNOWN)
    try:
        cc = admin.examine_consumer_connection_info(group)
        if cc.consume_type is b.ConsumeType.CONSUME_ACTIVELY:
            track.track_type = TrackType.PULL
        elif cc.consume_type is b.ConsumeType.CONSUME_PASSIVELY:
            if not _consumed(admin, msg, group, info):
                track.track_type = TrackType.NOT_CONSUME_YET
            else:
                track.track_type = TrackType.CONSUMED
                sub = cc.subscription_table.get(msg.topic)
                if sub is not None and sub.tags_set and "*" not in sub.tags_set and msg.tags not in sub.tags_set:
                    track.track_type = TrackType.CONSUMED_BUT_FILTERED
    except RemotingError as exc:
        if exc.code == ResponseCode.CONSUMER_NOT_ONLINE:
            track.track_type = TrackType.NOT_ONLINE
        track.exception_desc = f"CODE:{exc.code} DESC:{' '.join((exc.remark or '').split())}"
    except RemotingClientError as exc:
        track.exception_desc = str(exc)
    return track


def message_tracks(admin: MQAdmin, msg: MessageExt) -> list[MessageTrack]:
    """DefaultMQAdminExt.messageTrackDetail: which consumer groups of the topic have consumed the message."""
    route = admin.examine_topic_route_info(msg.topic)
    addr = next((a for a in map(select_broker_addr, route.broker_datas) if a), None)
    if addr is None:
        return []
    groups = admin.query_topic_consume_by_who(addr, msg.topic).group_list
    info = admin.examine_broker_cluster_info() if groups else None
    return [_track_group(admin, msg, group, info) for group in groups]


# --- message views --------------------------------------------------------------------------------------------------


@dataclass
class MessageView:
    """One message as printMsg shows it. ``msg_id`` is the producer's id (UNIQ_KEY) when it has one, else the
    offset id; ``offset_msg_id`` is what queryMsgById takes."""

    offset_msg_id: str
    msg_id: str
    topic: str
    tags: str | None
    keys: str | None
    queue_id: int
    queue_offset: int
    commit_log_offset: int
    reconsume_times: int
    born_timestamp: int
    store_timestamp: int
    born_host: str
    store_host: str
    sys_flag: int
    properties: dict[str, str]
    body: bytes
    body_text: str | None  # the body as UTF-8 text, when it is
    tracks: list[MessageTrack] = field(default_factory=list)
    track_error: str | None = None  # why the tracks could not be worked out


def message_view(admin: MQAdmin, msg: MessageExt) -> MessageView:
    """The message with its tracks; a failure while tracking is shown with the message instead of hiding it."""
    try:
        text = msg.body.decode("utf-8")
    except UnicodeDecodeError:
        text = None
    try:
        tracks, track_error = message_tracks(admin, msg), None
    except RemotingClientError as exc:
        tracks, track_error = [], str(exc)
    return MessageView(
        offset_msg_id=msg.msg_id,
        msg_id=msg.uniq_key or msg.msg_id,
        topic=msg.topic,
        tags=msg.tags,
        keys=msg.properties.get("KEYS"),
        queue_id=msg.queue_id,
        queue_offset=msg.queue_offset,
        commit_log_offset=msg.commit_log_offset,
        reconsume_times=msg.reconsume_times,
        born_timestamp=msg.born_timestamp,
        store_timestamp=msg.store_timestamp,
        born_host=msg.born_host,
        store_host=msg.store_host,
        sys_flag=msg.sys_flag,
        properties=dict(msg.properties),
        body=msg.body,
        body_text=text,
        tracks=tracks,
        track_error=track_error,
    )


def _java_map(props: dict[str, str]) -> str:
    return "{" + ", ".join(f"{k}={v}" for k, v in props.items()) + "}"


def render_message(view: MessageView) -> str:
    fields = [
        ("OffsetID:", view.offset_msg_id),
        ("Topic:", view.topic),
        ("Tags:", f"[{view.tags}]"),
        ("Keys:", f"[{view.keys}]"),
        ("Queue ID:", view.queue_id),
        ("Queue Offset:", view.queue_offset),
        ("CommitLog Offset:", view.commit_log_offset),
        ("Reconsume Times:", view.reconsume_times),
        ("Born Timestamp:", human_millis(view.born_timestamp)),
        ("Store Timestamp:", human_millis(view.store_timestamp)),
        ("Born Host:", view.born_host),
        ("Store Host:", view.store_host),
        ("System Flag:", view.sys_flag),
        ("Properties:", _java_map(view.properties)),
        ("Message Body:", view.body_text if view.body_text is not None else base64.b64encode(view.body).decode()),
    ]
    text = "\n".join(f"{name:<20} {value}" for name, value in fields)
    if view.track_error:
        return join_blocks(text, f"WARN: message track unavailable: {view.track_error}")
    if not view.tracks:
        return join_blocks(text, "WARN: No Consumer")
    tracks = "\n".join(
        f"MessageTrack [consumerGroup={t.consumer_group}, trackType={t.track_type.name}, "
        f"exceptionDesc={t.exception_desc or 'null'}]"
        for t in view.tracks
    )
    return join_blocks(text, tracks)


def render_messages(result: list[MessageView], args: argparse.Namespace) -> str:
    return join_blocks(*(render_message(view) for view in result))


# --- queryMsgById ---------------------------------------------------------------------------------------------------


_UNIQ_KEY_HINT = "give its topic with -t to look it up as a producer's message id (UNIQ_KEY)"


def _store_host(msg_id: str, topic: str | None) -> str | None:
    """The store host `msg_id` names if read as an offset id; None if it cannot be one (then, without a topic,
    a clear error: it can only be a producer's id)."""
    try:
        addr, _ = decode_offset_msg_id(msg_id)
    except ValueError as exc:
        if topic is None:
            raise MQAdminError(f"{exc}; {_UNIQ_KEY_HINT}") from None
        return None
    return addr


def _is_offset_id(admin: MQAdmin, msg_id: str, addr: str | None, topic: str | None) -> bool:
    """Whether `msg_id` is read as an offset id (True) or looked up as a producer's id in `topic` (False).

    Both ids are 16 bytes of hex, so the bytes alone do not tell them apart: a producer's id (client IP, pid,
    class-loader hash, time, counter) read as an offset id names a made-up store host. An id is an offset id only
    when the store host it names is a broker of the cluster, so no other address is ever connected to; otherwise,
    as mqadmin 5 does, it is looked up by unique key in the topic given with -t."""
    if addr is not None and admin.is_cluster_broker(addr):
        return True
    if topic is None:
        raise MQAdminError(
            f"{msg_id!r} is not an offset message id of this cluster (the store host it would name, {addr}, is not"
            f" one of its brokers); {_UNIQ_KEY_HINT}"
        )
    return False


def _find_by_uniq_key(admin: MQAdmin, topic: str, msg_id: str) -> MessageExt:
    found = admin.query_message_by_uniq_key(topic, msg_id)
    if not found:
        raise MQAdminError(f"no message with id {msg_id} in topic [{topic}] (neither an offset id nor a UNIQ_KEY)")
    return found[0]


def query_msg_by_id(admin: MQAdmin, args: argparse.Namespace) -> list[MessageView]:
    """Each id (comma-separated, as mqadmin takes them) is resolved before any broker is asked, so a mistyped id
    fails the whole command up front."""
    ids = [part.strip() for part in args.msg_id.split(",") if part.strip()]
    if not ids:
        raise ValueError("no message id given")
    hosts = [_store_host(msg_id, args.topic) for msg_id in ids]
    by_offset = [_is_offset_id(admin, msg_id, addr, args.topic) for msg_id, addr in zip(ids, hosts, strict=True)]
    views = []
    for msg_id, offset_id in zip(ids, by_offset, strict=True):
        msg = admin.view_message(msg_id) if offset_id else _find_by_uniq_key(admin, args.topic, msg_id)
        views.append(message_view(admin, msg))
    return views


def _query_msg_by_id_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "-i",
        "--msgId",
        dest="msg_id",
        required=True,
        help="message id(s), comma-separated: offset ids (OffsetID), or with -t the ids producers got (UNIQ_KEY)",
    )
    parser.add_argument(
        "-t", "--topic", help="topic name: ids that are not offset ids of this cluster are looked up by unique key"
    )


# --- queryMsgByKey --------------------------------------------------------------------------------------------------


@dataclass
class KeyQueryRow:
    msg_id: str
    queue_id: int
    queue_offset: int
    offset_msg_id: str


def query_msg_by_key(admin: MQAdmin, args: argparse.Namespace) -> list[KeyQueryRow]:
    return [
        KeyQueryRow(msg.uniq_key or msg.msg_id, msg.queue_id, msg.queue_offset, msg.msg_id)
        for msg in admin.query_message(args.topic, args.key)
    ]


def render_key_query(result: list[KeyQueryRow], args: argparse.Namespace) -> str:
    return render_table(
        ["#Message ID", "#QID", "#Offset", "#Offset Message ID"],
        [[r.msg_id, r.queue_id, r.queue_offset, r.offset_msg_id] for r in result],
    )


def _query_msg_by_key_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-t", "--topic", required=True, help="topic name")
    parser.add_argument("-k", "--msgKey", dest="key", required=True, help="Message Key")


# --- queryMsgByOffset -----------------------------------------------------------------------------------------------


def query_msg_by_offset(admin: MQAdmin, args: argparse.Namespace) -> list[MessageView]:
    """Pull the one message at that queue offset, as mqadmin's pull consumer does (from the master)."""
    route = admin.examine_topic_route_info(args.topic)
    bd = next((bd for bd in route.broker_datas if bd.broker_name == args.broker_name), None)
    addr = select_broker_addr(bd) if bd is not None else None
    if addr is None:
        raise MQAdminError(f"broker [{args.broker_name}] does not serve topic [{args.topic}]")
    result = admin.pull_message(addr, args.topic, args.queue_id, args.offset, 1)
    if result.status is not PullStatus.FOUND or not result.messages:
        raise MQAdminError(
            f"no message at offset {args.offset} of {args.topic}:{args.broker_name}:{args.queue_id}"
            f" ({result.status.name}; the queue holds offsets {result.min_offset} to {result.max_offset - 1})"
        )
    return [message_view(admin, result.messages[0])]


def _query_msg_by_offset_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-t", "--topic", required=True, help="topic name")
    parser.add_argument("-b", "--brokerName", dest="broker_name", required=True, help="Broker Name")
    parser.add_argument("-i", "--queueId", dest="queue_id", type=int, required=True, help="Queue Id")
    parser.add_argument("-o", "--offset", type=int, required=True, help="Queue Offset")


COMMANDS = [
    SubCommand("queryMsgById", "Query Message by Id", _query_msg_by_id_args, query_msg_by_id, render_messages),
    SubCommand("queryMsgByKey", "Query Message by Key", _query_msg_by_key_args, query_msg_by_key, render_key_query),
    SubCommand(
        "queryMsgByOffset", "Query Message by offset", _query_msg_by_offset_args, query_msg_by_offset, render_messages
    ),
]
