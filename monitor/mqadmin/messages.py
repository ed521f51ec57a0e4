"""Message subcommands: queryMsgByKey, queryMsgById, queryMsgByUniqueKey, queryMsgByOffset.

queryMsgById, queryMsgByUniqueKey and queryMsgByOffset show one message the way mqadmin's printMsg does, followed
by its track (monitor.messages.tracks): for each group consuming the topic, whether that group has consumed the
message. mqadmin writes the body to a file under /tmp/rocketmq/msgbodys; here it is shown inline (text, or Base64
when it is not UTF-8). The searches are monitor.messages.search's, with no result cap; ``--json`` names every
field as Java's MessageExt does (monitor.messages.present).
"""

from __future__ import annotations

import argparse
import base64
from dataclasses import dataclass, field

from monitor.messages import search
from monitor.messages.present import body_views, message_fields
from monitor.messages.tracks import MessageTrack, message_tracks
from monitor.mqadmin.common import (
    MQAdminError,
    SubCommand,
    human_millis,
    parse_timestamp,
    time_range,
)
from monitor.mqadmin.output import join_blocks, render_table
from monitor.remoting.admin import MQAdmin
from monitor.remoting.errors import RemotingClientError
from monitor.remoting.message import MessageExt

# --- message views --------------------------------------------------------------------------------------------------


@dataclass
class FoundMessage:
    """A message a query found. ``--json`` writes every field under Java's MessageExt names
    (monitor.messages.present), the body in Base64 and, when it is UTF-8, as ``bodyText``."""

    message: MessageExt
    broker_name: str | None = None

    def json_fields(self) -> dict:
        return {
            **message_fields(self.message, broker_name=self.broker_name),
            "body": self.message.body,
            "bodyText": body_views(self.message.body).text,
        }


@dataclass
class MessageView(FoundMessage):
    """One message as printMsg shows it, with its track: for each group consuming the topic, whether that group
    has consumed it (``tracks``), or why that could not be worked out (``track_error``)."""

    tracks: list[MessageTrack] = field(default_factory=list)
    track_error: str | None = None

    def json_fields(self) -> dict:
        return {**super().json_fields(), "tracks": self.tracks, "trackError": self.track_error}


def broker_names(admin: MQAdmin) -> dict[str, str]:
    """Broker name by address (masters and slaves), to name the broker set that stored a message."""
    info = admin.examine_broker_cluster_info()
    return {addr: name for name, bd in info.broker_addr_table.items() for addr in bd.broker_addrs.values()}


def message_view(admin: MQAdmin, msg: MessageExt, broker_name: str | None = None) -> MessageView:
    """The message with its tracks; a failure while tracking is shown with the message instead of hiding it."""
    try:
        tracks, track_error = message_tracks(admin, msg), None
    except RemotingClientError as exc:
        tracks, track_error = [], str(exc)
    return MessageView(msg, broker_name, tracks, track_error)


def _java_map(props: dict[str, str]) -> str:
    return "{" + ", ".join(f"{k}={v}" for k, v in props.items()) + "}"


def render_message(view: MessageView) -> str:
    msg = view.message
    text = body_views(msg.body).text
    fields = [
        ("OffsetID:", msg.msg_id),
        ("Topic:", msg.topic),
        ("Tags:", f"[{msg.tags}]"),
        ("Keys:", f"[{msg.properties.get('KEYS')}]"),
        ("Queue ID:", msg.queue_id),
        ("Queue Offset:", msg.queue_offset),
        ("CommitLog Offset:", msg.commit_log_offset),
        ("Reconsume Times:", msg.reconsume_times),
        ("Born Timestamp:", human_millis(msg.born_timestamp)),
        ("Store Timestamp:", human_millis(msg.store_timestamp)),
        ("Born Host:", msg.born_host),
        ("Store Host:", msg.store_host),
        ("System Flag:", msg.sys_flag),
        ("Properties:", _java_map(msg.properties)),
        ("Message Body:", text if text is not None else base64.b64encode(msg.body).decode()),
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


def _is_offset_id(admin: MQAdmin, msg_id: str, topic: str | None) -> bool:
    try:
        return search.is_offset_id(admin, msg_id, topic)
    except search.InvalidMessageId as exc:
        raise MQAdminError(f"{exc}; {_UNIQ_KEY_HINT}") from None


def _find_by_uniq_key(admin: MQAdmin, topic: str, msg_id: str) -> MessageExt:
    found = sorted(search.by_unique_key(admin, topic, msg_id), key=lambda msg: msg.store_timestamp)
    if not found:
        raise MQAdminError(f"no message with id {msg_id} in topic [{topic}] (neither an offset id nor a UNIQ_KEY)")
    return found[0]


def query_msg_by_id(admin: MQAdmin, args: argparse.Namespace) -> list[MessageView]:
    """Each id (comma-separated, as mqadmin takes them) is resolved before any broker is asked, so a mistyped id
    fails the whole command up front (monitor.messages.search.is_offset_id tells the two kinds of id apart)."""
    ids = [part.strip() for part in args.msg_id.split(",") if part.strip()]
    if not ids:
        raise ValueError("no message id given")
    by_offset = [_is_offset_id(admin, msg_id, args.topic) for msg_id in ids]
    names = broker_names(admin)
    views = []
    for msg_id, offset_id in zip(ids, by_offset, strict=True):
        msg = admin.view_message(msg_id) if offset_id else _find_by_uniq_key(admin, args.topic, msg_id)
        views.append(message_view(admin, msg, names.get(msg.store_host)))
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


def query_msg_by_key(admin: MQAdmin, args: argparse.Namespace) -> list[FoundMessage]:
    """Every message of the key, however many: a broker answers at most 32 (4.9.4's maxNum default), so the
    search splits the time range until each answer is complete (monitor.messages.search.by_key). Oldest first."""
    names = broker_names(admin)
    begin_ms, end_ms = time_range(args.begin, args.end)
    found = search.by_key(admin, args.topic, args.key, begin_ms, end_ms)
    ordered = sorted(found, key=lambda msg: (msg.store_timestamp, msg.store_host, msg.commit_log_offset))
    return [FoundMessage(msg, names.get(msg.store_host)) for msg in ordered]


def render_key_query(result: list[FoundMessage], args: argparse.Namespace) -> str:
    return render_table(
        ["#Message ID", "#QID", "#Offset", "#Offset Message ID"],
        [
            [r.message.uniq_key or r.message.msg_id, r.message.queue_id, r.message.queue_offset, r.message.msg_id]
            for r in result
        ],
    )


def _query_msg_by_key_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-t", "--topic", required=True, help="topic name")
    parser.add_argument("-k", "--msgKey", dest="key", required=True, help="Message Key")
    parser.add_argument(
        "-b",
        "--beginTimestamp",
        dest="begin",
        type=parse_timestamp,
        help="stored at or after: epoch milliseconds | yyyy-MM-dd#HH:mm:ss:SSS (local time); default: the start",
    )
    parser.add_argument(
        "-e", "--endTimestamp", dest="end", type=parse_timestamp, help="stored at or before (same forms); default: now"
    )


# --- queryMsgByUniqueKey ---------------------------------------------------------------------------------------------


def query_msg_by_unique_key(admin: MQAdmin, args: argparse.Namespace) -> list[MessageView]:
    """The message a producer's send named (UNIQ_KEY), with its track. A producer that retried a send stores it
    more than once: the first stored is shown, all of them with -a (mqadmin stops at 32; here there is no cap)."""
    found = sorted(search.by_unique_key(admin, args.topic, args.msg_id), key=lambda msg: msg.store_timestamp)
    if not found:
        raise MQAdminError(f"no message with unique key {args.msg_id} in topic [{args.topic}]")
    names = broker_names(admin)
    return [message_view(admin, msg, names.get(msg.store_host)) for msg in found[: None if args.show_all else 1]]


def _query_msg_by_unique_key_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-i", "--msgId", dest="msg_id", required=True, help="the id the producer got (UNIQ_KEY)")
    parser.add_argument("-t", "--topic", required=True, help="The topic of msg")
    parser.add_argument(
        "-a", "--showAll", dest="show_all", action="store_true", help="every stored copy, not only the first"
    )


# --- queryMsgByOffset -----------------------------------------------------------------------------------------------


def query_msg_by_offset(admin: MQAdmin, args: argparse.Namespace) -> list[MessageView]:
    """Pull the one message at that queue offset, as mqadmin's pull consumer does (from the master)."""
    try:
        msg = search.by_queue_offset(admin, args.topic, args.broker_name, args.queue_id, args.offset)
    except search.MessageNotFound as exc:
        raise MQAdminError(str(exc)) from None
    return [message_view(admin, msg, args.broker_name)]


def _query_msg_by_offset_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-t", "--topic", required=True, help="topic name")
    parser.add_argument("-b", "--brokerName", dest="broker_name", required=True, help="Broker Name")
    parser.add_argument("-i", "--queueId", dest="queue_id", type=int, required=True, help="Queue Id")
    parser.add_argument("-o", "--offset", type=int, required=True, help="Queue Offset")


COMMANDS = [
    SubCommand("queryMsgById", "Query Message by Id", _query_msg_by_id_args, query_msg_by_id, render_messages),
    SubCommand("queryMsgByKey", "Query Message by Key", _query_msg_by_key_args, query_msg_by_key, render_key_query),
    SubCommand(
        "queryMsgByUniqueKey",
        "Query Message by Unique key",
        _query_msg_by_unique_key_args,
        query_msg_by_unique_key,
        render_messages,
    ),
    SubCommand(
        "queryMsgByOffset", "Query Message by offset", _query_msg_by_offset_args, query_msg_by_offset, render_messages
    ),
]
