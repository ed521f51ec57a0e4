"""One message opened for viewing: read from the broker by its offset message id, its body shown only to those who
may read the topic's bodies (``access.can_see_message_bodies``), each such view audited; and where the message went
(its track per subscribed consumer group)."""

from __future__ import annotations

import dataclasses

from django.core.exceptions import PermissionDenied, ValidationError
from django.utils.translation import gettext as _

from monitor.messages import tracks as wire_tracks
from monitor.remoting.message import MessageExt
from portal import access
from portal.models import Cluster, Topic
from portal.services import audit
from portal.services.messages.searches import check_topic_visible, owning_group
from portal.services.messages.wire import cluster_admin, message_on_topic


class MessageNotFound(LookupError):
    """No message with that id on that topic (expired from the store, never there, or on another topic)."""


def body_entry(cluster: Cluster, topic: str):
    """What decides over a topic's bodies: the registered topic, or the group owning a %RETRY%/%DLQ% topic (None
    when the registry holds neither: portal admins only)."""
    return Topic.objects.filter(cluster=cluster, name=topic).first() or owning_group(cluster, topic)


def may_see_bodies(user, cluster: Cluster, topic: str) -> bool:
    """Whether the user may read the bodies of ``topic``'s messages (the pages show "metadata only" otherwise)."""
    return access.can_see_message_bodies(user, body_entry(cluster, topic))


def message_for_view(user, cluster: Cluster, topic: str, offset_msg_id: str) -> tuple[MessageExt, bool]:
    """The message with ``offset_msg_id`` on ``topic`` and whether the user may see its body. The body is emptied
    when they may not; when they may, the view is audited (``message.body_viewed``, noting topic and id).
    PermissionDenied if the user may not see the topic at all, MessageNotFound if the message is not there (or
    belongs to another topic: a topic's permission never opens another's message), ClusterOperationError if the
    cluster cannot be asked."""
    check_topic_visible(user, cluster, topic)
    try:
        with cluster_admin(cluster, _("Reading message %(id)s") % {"id": offset_msg_id}) as admin:
            msg = message_on_topic(admin, offset_msg_id, topic)
    except ValidationError as exc:  # not an offset message id
        raise MessageNotFound(" ".join(exc.messages)) from exc
    if msg is None:
        raise MessageNotFound(_("No message %(id)s on topic %(topic)s.") % {"id": offset_msg_id, "topic": topic})
    entry = body_entry(cluster, topic)
    if not access.can_see_message_bodies(user, entry):
        return dataclasses.replace(msg, body=b""), False
    audit.record(user, "message.body_viewed", entry, cluster=cluster, note=f"{topic} {msg.msg_id}")
    return msg, True


def require_bodies(user, cluster: Cluster, topic: str) -> None:
    """Refuse (PermissionDenied) a user who may not read ``topic``'s bodies (exports carry bodies)."""
    if not may_see_bodies(user, cluster, topic):
        raise PermissionDenied


def tracks(cluster: Cluster, msg: MessageExt) -> list[wire_tracks.MessageTrack]:
    """Where the message went: one track per consumer group subscribed to its topic, as mqadmin queryMsgById
    prints them."""
    with cluster_admin(cluster, _("Reading the tracks of message %(id)s") % {"id": msg.msg_id}) as admin:
        return wire_tracks.message_tracks(admin, msg)
