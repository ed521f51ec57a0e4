"""Where a message went: for each consumer group of its topic, whether that group has consumed it.

This is DefaultMQAdminExt.messageTrackDetail, which mqadmin's queryMsgById prints after the message: a group that
is online and consumes by push has consumed the message when its committed offset in the message's queue (on the
broker that stored it) is past the message's queue offset, and consumed but filtered when its subscription's tags
leave the message's tag out; a group with no client online is NOT_ONLINE, a pull consumer PULL, and whatever the
broker refuses to say is UNKNOWN with the broker's answer as the description.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from monitor.messages.search_scan import broker_addr
from monitor.remoting import body as b
from monitor.remoting.admin import MQAdmin
from monitor.remoting.codes import ResponseCode
from monitor.remoting.errors import RemotingClientError, RemotingError
from monitor.remoting.message import MessageExt


class TrackType(enum.StrEnum):
    """org.apache.rocketmq.tools.admin.api.TrackType; a string enum, so that the API and any JSON show the bare name
    (``CONSUMED``), as Java prints it."""

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
    addr = next((a for a in map(broker_addr, route.broker_datas) if a), None)
    if addr is None:
        return []
    groups = admin.query_topic_consume_by_who(addr, msg.topic).group_list
    info = admin.examine_broker_cluster_info() if groups else None
    return [_track_group(admin, msg, group, info) for group in groups]
