"""What the operation forms and pages read: the offset-reset preview shown before anyone applies, how far a long
message operation is, and running one again (its failed items) after it ended."""

from __future__ import annotations

import datetime as dt

from django.core.exceptions import PermissionDenied, ValidationError
from django.db.models import Max
from django.utils import timezone
from django.utils.translation import gettext as _

from monitor.messages.offsets import QueueResetPreview
from portal import access
from portal.models import Application, ApplicationKind, ApplicationState, ConsumerGroup
from portal.services import audit
from portal.services.applications import consumer_offsets
from portal.services.applications import messages as message_kinds
from portal.services.messages import items
from portal.services.messages.items import OperationProgress

__all__ = [
    "OperationProgress",
    "is_stalled",
    "may_run_again",
    "operation_progress",
    "preview_offset_reset",
    "run_operation_again",
]

# A run sends one message in well under a second (or times out in seconds): messages still to go with no item
# touched for this long mean no run is at them (the worker died, or the task was lost).
STALLED_AFTER = dt.timedelta(minutes=5)


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


def is_stalled(application: Application, progress: OperationProgress | None = None) -> bool:
    """Messages are still to go but no run has touched an item for STALLED_AFTER."""
    progress = progress or items.progress(application)
    if progress.done:
        return False
    last = application.message_items.aggregate(last=Max("updated_at"))["last"]
    return last is not None and timezone.now() - last > STALLED_AFTER


def may_run_again(user, application: Application) -> bool:
    """Whether the page offers a portal admin to send what is left: an approved message operation that ended with
    failures, or whose run stalled."""
    if not access.can_administer(user) or application.kind not in message_kinds.ITEM_KINDS:
        return False
    if application.state != ApplicationState.APPROVED:
        return False
    progress = items.progress(application)
    return (progress.done and progress.failed > 0) or is_stalled(application, progress)


def run_operation_again(user, application: Application) -> None:
    """Queue an approved message operation's run again, to send what failed or was left (portal admins only;
    PermissionDenied; ValidationError if it is not an approved message operation, or if a run is still at it: two
    runs at once could both send an item). Nothing is sent twice."""
    if not access.can_administer(user):
        raise PermissionDenied
    message_kinds.check_runnable(application)
    progress = items.progress(application)
    if not progress.done and not is_stalled(application, progress):
        raise ValidationError(_("The operation is still running; wait for it to end (or to stall) first."))
    audit.record(user, "application.run_again", application)
    items.enqueue(application)
