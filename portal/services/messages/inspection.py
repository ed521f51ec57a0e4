"""What the message pages read live from a cluster besides searches and single messages: a group's retry and dead
letters, its clients' diagnostics and thread stacks, its broker-side settings; and a topic's two direct tools, the
test message (the owning team and portal admins, audited) and the export of a time range (bodies only for those who
may see them, audited). Every cluster error is a ClusterOperationError (``wire.cluster_admin``), as is a group the
registry holds but the cluster does not."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from dataclasses import dataclass

from django.core.exceptions import PermissionDenied, ValidationError
from django.utils.translation import gettext as _

from monitor.messages import dead_letters as wire_letters
from monitor.messages import diagnostics as wire_diagnostics
from monitor.messages import export as wire_export
from monitor.messages import groups as wire_groups
from monitor.messages import search as wire_search
from monitor.messages import send as wire_send
from monitor.remoting import body as b
from portal import access
from portal.models import ConsumerGroup, Topic
from portal.services import audit
from portal.services.cluster_ops import ClusterOperationError
from portal.services.messages.bodies import may_see_bodies
from portal.services.messages.wire import cluster_admin

# The most entries one browse of a retry or dead-letter topic reads.
MAX_BROWSED = 10_000


@dataclass(frozen=True)
class DeadLetterEntry:
    """One message of %RETRY%group or %DLQ%group, with the topic and id of the message it stands for."""

    topic: str
    msg_id: str
    original_topic: str | None
    original_msg_id: str | None
    keys: str
    tags: str | None
    reconsume_times: int
    stored_at: dt.datetime


def dead_letters(user, group: ConsumerGroup, which: str, *, newest: int) -> list[DeadLetterEntry]:
    """The ``newest`` entries of the group's retry (``which="retry"``) or dead-letter (``"dlq"``) topic, newest
    first; empty when the group never retried anything."""
    _visible_group(user, group)
    if which not in ("retry", "dlq") or not 1 <= newest <= MAX_BROWSED:
        raise ValidationError({"which": _("Say retry or dlq, and how many (1 to %(max)d).") % {"max": MAX_BROWSED}})
    with cluster_admin(
        group.cluster, _("Reading the %(which)s messages of %(group)s") % {"which": which, "group": group.name}
    ) as admin:
        letters = list(wire_letters.browse(admin, group.name, which, newest=newest))
    return [
        DeadLetterEntry(
            topic=letter.message.topic,
            msg_id=letter.message.msg_id,
            original_topic=letter.origin_topic,
            original_msg_id=letter.origin_msg_id,
            keys=" ".join(letter.message.keys),
            tags=letter.message.tags,
            reconsume_times=letter.message.reconsume_times,
            stored_at=dt.datetime.fromtimestamp(letter.message.store_timestamp / 1000, tz=dt.UTC),
        )
        for letter in letters
    ]


def _visible_group(user, group: ConsumerGroup) -> None:
    if not ConsumerGroup.objects.visible_to(user).filter(pk=group.pk).exists():
        raise PermissionDenied


def client_diagnostics(user, group: ConsumerGroup) -> list[wire_diagnostics.ClientDiagnostics]:
    """Each online client's running info (or why it gave none), in client id order."""
    _visible_group(user, group)
    with cluster_admin(group.cluster, _("Asking the clients of %(group)s") % {"group": group.name}) as admin:
        return wire_diagnostics.client_running_info(admin, group.name)


def client_stack(user, group: ConsumerGroup, client_id: str) -> str | None:
    """The client's thread stack, None when it sends none (the C++ client)."""
    _visible_group(user, group)
    with cluster_admin(group.cluster, _("Asking client %(client)s for its stack") % {"client": client_id}) as admin:
        return wire_diagnostics.client_stack(admin, group.name, client_id)


def group_settings(user, group: ConsumerGroup) -> b.SubscriptionGroupConfig:
    """The group's subscription-group config as the masters hold it."""
    _visible_group(user, group)
    with cluster_admin(group.cluster, _("Reading the settings of %(group)s") % {"group": group.name}) as admin:
        try:
            return wire_groups.group_settings(admin, group.name)
        except LookupError as missing:  # the registry holds the group, the cluster does not (yet)
            raise ClusterOperationError(str(missing)) from missing


def send_test_message(user, topic: Topic, body: bytes, *, tags: str = "", keys=()) -> wire_send.SendResult:
    """Send one message to the topic (its owning team and portal admins: PermissionDenied), audited."""
    if not access.can_change(user, topic):
        raise PermissionDenied
    if not body:
        raise ValidationError({"body": _("A message needs a body.")})
    with cluster_admin(topic.cluster, _("Sending a test message to %(topic)s") % {"topic": topic.name}) as admin:
        result = wire_send.send_message(admin, topic.name, body, tags=tags or None, keys=list(keys))
    audit.record(user, "message.test_sent", topic, note=f"{result.offset_msg_id} {result.msg_id}")
    return result


def export_messages(user, topic: Topic, begin: dt.datetime, end: dt.datetime, fmt: str) -> Iterator[str]:
    """The messages of the topic stored in [begin, end] as export lines (``fmt`` "jsonl" or "csv"), read while the
    lines are consumed; bodies only for those who may see them (an export with bodies is audited). Checked before
    the first line: PermissionDenied, ValidationError (keyed end, output)."""
    if not Topic.objects.visible_to(user).filter(pk=topic.pk).exists() or not user.is_authenticated:
        raise PermissionDenied
    if fmt not in ("jsonl", "csv"):
        raise ValidationError({"output": _("Say jsonl or csv.")})
    if begin > end:
        raise ValidationError({"end": _("The end comes before the beginning.")})
    with_bodies = may_see_bodies(user, topic.cluster, topic.name)
    audit.record(
        user,
        "message.exported",
        topic,
        note=f"{begin.isoformat()} .. {end.isoformat()} {fmt}{' with bodies' if with_bodies else ''}",
    )
    return _lines(topic, int(begin.timestamp() * 1000), int(end.timestamp() * 1000), fmt, with_bodies)


def _lines(topic: Topic, begin_ms: int, end_ms: int, fmt: str, with_bodies: bool) -> Iterator[str]:
    with cluster_admin(topic.cluster, _("Exporting %(topic)s") % {"topic": topic.name}) as admin:
        messages = wire_search.by_time_range(admin, topic.name, begin_ms, end_ms)
        yield from wire_export.export_lines(messages, fmt, include_body=with_bodies)
