"""What the operation forms and pages read: the offset-reset preview shown before anyone applies, how far a long
message operation is, and running one again (its failed items) after it ended."""

from __future__ import annotations

import datetime as dt

from django.core.exceptions import PermissionDenied

from monitor.messages.offsets import QueueResetPreview
from portal import access
from portal.models import Application, ApplicationKind, ConsumerGroup
from portal.services import audit
from portal.services.applications import consumer_offsets
from portal.services.applications import messages as message_kinds
from portal.services.messages import items
from portal.services.messages.items import OperationProgress

__all__ = ["OperationProgress", "operation_progress", "preview_offset_reset", "run_operation_again"]


def preview_offset_reset(
    user, group: ConsumerGroup, topic: str, when: dt.datetime | str, queue: tuple[str, int] | dict | None = None
) -> list[QueueResetPreview]:
    """Per queue, where ``group`` is on ``topic`` and where a reset to ``when`` (an aware datetime, or "newest")
    would put it (``queue``: one queue as (broker name, queue id), else all). Validated as an OFFSET_RESET
    application's payload is (ValidationError keyed by topic, when, queue); for the group's team and portal admins
    (PermissionDenied); ClusterOperationError if the cluster cannot be read."""
    if not access.can_change(user, group):
        raise PermissionDenied
    if isinstance(queue, tuple):
        queue = {"broker_name": queue[0], "queue_id": queue[1]}
    draft = Application(kind=ApplicationKind.OFFSET_RESET, cluster=group.cluster, consumer_group=group)
    payload = consumer_offsets.clean_reset(draft, {"topic": topic, "when": when, "queue": queue})
    return consumer_offsets.preview(group.cluster, group.name, payload)


def operation_progress(application: Application) -> OperationProgress:
    """How many of a message operation's messages were sent, failed, or are still to go (all zero for an
    application that is not one, or not planned yet)."""
    return items.progress(application)


def run_operation_again(user, application: Application) -> None:
    """Queue an approved message operation's run again, to send what failed or was left (portal admins only;
    PermissionDenied; ValidationError if it is not an approved message operation). Nothing is sent twice."""
    if not access.can_administer(user):
        raise PermissionDenied
    message_kinds.check_runnable(application)
    audit.record(user, "application.run_again", application)
    items.enqueue(application)
