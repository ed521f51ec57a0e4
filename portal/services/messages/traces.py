"""A message's trace, for its page and the API: what its tracing clients wrote to the cluster's trace topic (the
cluster's ``trace_topic``, RMQ_SYS_TRACE_TOPIC unless set), put in order by ``monitor.trace`` — its sends, each
consumer group's consume attempts, its transaction end, its recall — with the subscribed groups that have not
consumed it named and the legs slower than ``settings.TRACE_SLOW_LEG_MS`` marked.

Trace records carry no body, so whoever may see the message's metadata sees its trace (no body view is audited).
The groups expected to consume the message are the registry's subscriptions of its topic whose tag expression
takes the message, and the groups the brokers know as its consumers (their tracks), less those the brokers say
filtered it out."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from django.conf import settings
from django.core.exceptions import ValidationError
from django.utils import timezone
from django.utils.translation import gettext as _

from monitor.messages import tracks as wire_tracks
from monitor.remoting.admin import MQAdmin
from monitor.remoting.codes import ResponseCode
from monitor.remoting.errors import RemotingError
from monitor.remoting.message import MessageExt
from monitor.trace import reader
from monitor.trace.timeline import MessageTimeline
from portal.models import Cluster, Subscription, Topic
from portal.services.messages.bodies import MessageNotFound
from portal.services.messages.searches import check_topic_visible
from portal.services.messages.wire import cluster_admin, message_on_topic
from portal.services.subscriptions import normalized
from stats.queries.tracing import topic_is_traced

# Trace messages are sent after the message is stored, but the trace topic may live on another broker whose clock
# differs: the search starts this long before the message's store time.
CLOCK_SLACK_MS = 10 * 60 * 1000
TrackType = wire_tracks.TrackType


@dataclass(frozen=True)
class MissingLeg:
    """A group expected to consume the message with no finished consume attempt in the trace. When the broker's
    track says the group did consume it, its clients simply do not trace."""

    consumer_group: str
    broker_says_consumed: bool = False


@dataclass
class MessageTrace:
    trace_topic: str
    trace_topic_exists: bool  # False: the cluster has no route for the trace topic (nobody writes traces there)
    timeline: MessageTimeline
    missing: list[MissingLeg]
    slow_ms: int
    topic_trace_enabled: bool | None  # the registered topic's trace switch; None for an unregistered topic
    topic_traced: bool  # an SDK client reported writing trace records for the topic lately (stats.queries.tracing)


def _expected_groups(cluster: Cluster, msg: MessageExt, tracks: list[wire_tracks.MessageTrack]) -> list[str]:
    """The groups that should consume ``msg``: registered subscriptions whose expression takes its tag, and the
    groups the brokers track, less those the brokers say filtered it out."""
    groups = {track.consumer_group for track in tracks}
    subscriptions = Subscription.objects.filter(topic__cluster=cluster, topic__name=msg.topic)
    for group, expression in subscriptions.values_list("consumer_group__name", "tag_expression"):
        selected = normalized(expression)[1]
        if selected == "*" or msg.tags in selected:
            groups.add(group)
    filtered = {track.consumer_group for track in tracks if track.track_type is TrackType.CONSUMED_BUT_FILTERED}
    return sorted(groups - filtered)


def _read(admin: MQAdmin, cluster: Cluster, msg: MessageExt, tracks: list[wire_tracks.MessageTrack]) -> MessageTrace:
    exists = True
    try:
        timeline = reader.read_timeline(
            admin,
            msg.uniq_key or msg.msg_id,
            trace_topic=cluster.trace_topic,
            begin_ms=max(0, msg.store_timestamp - CLOCK_SLACK_MS),
        )
    except RemotingError as exc:
        if exc.code != ResponseCode.TOPIC_NOT_EXIST:
            raise
        exists, timeline = False, MessageTimeline(msg.uniq_key or msg.msg_id)
    consumed = {track.consumer_group for track in tracks if track.track_type is TrackType.CONSUMED}
    missing = [
        MissingLeg(group, group in consumed) for group in timeline.missing_legs(_expected_groups(cluster, msg, tracks))
    ]
    topic = Topic.objects.filter(cluster=cluster, name=msg.topic).first()
    return MessageTrace(
        trace_topic=cluster.trace_topic,
        trace_topic_exists=exists,
        timeline=timeline,
        missing=missing,
        slow_ms=settings.TRACE_SLOW_LEG_MS,
        topic_trace_enabled=topic.trace_enabled if topic else None,
        topic_traced=topic_is_traced(cluster.pk, msg.topic, timezone.now()),
    )


def read_trace(cluster: Cluster, msg: MessageExt, tracks: list[wire_tracks.MessageTrack]) -> MessageTrace:
    """The trace of a message already read (and shown) with its tracks: the message page's.
    ClusterOperationError if the cluster cannot be asked."""
    with cluster_admin(cluster, _("Reading the trace of message %(id)s") % {"id": msg.msg_id}) as admin:
        return _read(admin, cluster, msg, tracks)


def trace_for_view(user, cluster: Cluster, topic: str, offset_msg_id: str) -> MessageTrace:
    """The trace of the message ``offset_msg_id`` of ``topic``, for a user who may see the topic's messages:
    PermissionDenied otherwise, MessageNotFound if the message is not there, ClusterOperationError if the cluster
    cannot be asked."""
    check_topic_visible(user, cluster, topic)
    try:
        with cluster_admin(cluster, _("Reading the trace of message %(id)s") % {"id": offset_msg_id}) as admin:
            msg = message_on_topic(admin, offset_msg_id, topic)
            if msg is None:
                raise MessageNotFound(
                    _("No message %(id)s on topic %(topic)s.") % {"id": offset_msg_id, "topic": topic}
                )
            return _read(admin, cluster, msg, wire_tracks.message_tracks(admin, msg))
    except ValidationError as exc:  # not an offset message id
        raise MessageNotFound(" ".join(exc.messages)) from exc


def _leg(leg, slow_ms: int | None = None) -> dict:
    fields = dataclasses.asdict(leg)
    if slow_ms is not None:
        fields["slow"] = leg.cost_ms is not None and leg.cost_ms >= slow_ms
    return fields


def as_json(trace: MessageTrace) -> dict:
    """The trace as the API gives it and the page shows it: times in epoch milliseconds, each send and consume
    attempt with ``slow`` (it took at least ``slow_threshold_ms``)."""
    timeline, slow_ms = trace.timeline, trace.slow_ms
    return {
        "msg_id": timeline.msg_id,
        "trace_topic": trace.trace_topic,
        "trace_topic_exists": trace.trace_topic_exists,
        "topic_trace_enabled": trace.topic_trace_enabled,
        "topic_traced": trace.topic_traced,
        "found": timeline.found,
        "slow_threshold_ms": slow_ms,
        "pubs": [_leg(leg, slow_ms) for leg in timeline.pubs],
        "consumers": [
            {"consumer_group": group, "attempts": [_leg(leg, slow_ms) for leg in attempts]}
            for group, attempts in timeline.consumers.items()
        ],
        "end_transactions": [_leg(leg) for leg in timeline.end_transactions],
        "recalls": [_leg(leg) for leg in timeline.recalls],
        "missing": [_leg(leg) for leg in trace.missing],
        "malformed": [_leg(record) for record in timeline.malformed],
    }
