"""Long message operations run item by item, so that running one again after a crash sends nothing twice.

An approved resend or re-delivery is planned once as ``MessageOperationItem`` rows (source message, target topic,
a UNIQ_KEY derived from the application and the item's index). Running it sends each item not sent yet: the item is
marked ``sending`` (committed) before the send and ``sent`` after it, so an item a crashed run left ``sending`` is
one whose fate is unknown (so is a failed one: a timed-out send may have arrived), and the broker's index is asked
whether a message with its UNIQ_KEY is on the target topic before it is sent again. A failed item keeps its error
and is tried again by the next run.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from django.db import transaction
from django.db.models import Count, Q
from django.utils.translation import gettext as _

from monitor.messages import resend as wire_resend
from monitor.messages.send import make_uniq_key
from monitor.remoting.admin import MQAdmin
from monitor.remoting.errors import RemotingClientError
from portal.celery import app as celery_app
from portal.models import Application, MessageOperationItem, OperationItemState
from portal.services.messages.wire import cluster_admin

RUN_TASK = "portal.tasks.run_message_operation"


@dataclass(frozen=True)
class OperationProgress:
    total: int
    sent: int
    failed: int
    pending: int  # pending or sending

    @property
    def done(self) -> bool:
        return self.pending == 0

    @property
    def fraction(self) -> float:
        return 1.0 if not self.total else (self.sent + self.failed) / self.total


def uniq_key_for(application: Application, index: int) -> str:
    """The UNIQ_KEY of item ``index``'s copy, in RocketMQ's shape (MessageClientIDSetter's 32 hex characters, its
    time part the application's creation): the same for every run of this application, different from every other
    application's (the creation time is in the seed too, so a database whose ids started again repeats none)."""
    created = application.created_at
    seed = f"mqcloud-operation:{application.pk}:{created.isoformat()}:{index}"
    return make_uniq_key(seed, int(created.timestamp() * 1000))


def plan(application: Application, sources: Callable[[], Iterable[tuple[str, str]]]) -> int:
    """Write the items ``sources()`` gives (source offset message id, target topic) in one transaction, unless an
    earlier attempt planned them already: then that plan stands and ``sources`` (which reads the cluster) is not
    called. Returns the number of items."""
    existing = application.message_items.count()
    if existing:
        return existing
    items = [
        MessageOperationItem(
            application=application,
            index=index,
            source_id=source_id,
            target_topic=target_topic,
            uniq_key=uniq_key_for(application, index),
        )
        for index, (source_id, target_topic) in enumerate(sources())
    ]
    with transaction.atomic():
        MessageOperationItem.objects.bulk_create(items, batch_size=1000, ignore_conflicts=True)
    return application.message_items.count()


def progress(application: Application) -> OperationProgress:
    """How far the operation's items are (all zero for an operation without items)."""
    counts = MessageOperationItem.objects.filter(application=application).aggregate(
        total=Count("pk"),
        sent=Count("pk", filter=Q(state=OperationItemState.SENT)),
        failed=Count("pk", filter=Q(state=OperationItemState.FAILED)),
    )
    return OperationProgress(
        counts["total"], counts["sent"], counts["failed"], counts["total"] - counts["sent"] - counts["failed"]
    )


def _mark(item: MessageOperationItem, state: str, **fields) -> None:
    MessageOperationItem.objects.filter(pk=item.pk).update(state=state, **fields)


def _send(admin: MQAdmin, item: MessageOperationItem, to: str, group: str | None) -> None:
    if item.state != OperationItemState.PENDING:  # sending when a run died, or failed (a timeout may have sent it)
        copy = wire_resend.already_sent(admin, item.target_topic, item.uniq_key)
        if copy:
            _mark(item, OperationItemState.SENT, sent_msg_id=copy.msg_id, error="")
            return
    _mark(item, OperationItemState.SENDING, error="")
    source = admin.view_message(item.source_id)
    result = wire_resend.resend(admin, source, to=to, group=group, uniq_key=item.uniq_key)
    _mark(item, OperationItemState.SENT, sent_msg_id=result.offset_msg_id or "", error="")


def run(application: Application, *, to: str, group: str | None) -> OperationProgress:
    """Send every item not sent yet (``to``/``group`` as ``monitor.messages.resend.resend`` takes them); an item's
    wire error marks it failed and the run goes on. Raises ClusterOperationError only if the cluster cannot be
    reached at all."""
    remaining = application.message_items.exclude(state=OperationItemState.SENT).order_by("index")
    with cluster_admin(application.cluster, _("Application #%(id)s") % {"id": application.pk}) as admin:
        for item in remaining.iterator():
            try:
                _send(admin, item, to, group)
            except (RemotingClientError, ValueError) as exc:
                _mark(item, OperationItemState.FAILED, error=str(exc) or type(exc).__name__)
    return progress(application)


def start_task(application_id: int) -> None:
    """Hand the operation to its task, by name (services do not import the task module)."""
    celery_app.signature(RUN_TASK, args=[application_id]).delay()


def enqueue(application: Application) -> None:
    """Start the operation's task when the current transaction commits."""
    transaction.on_commit(functools.partial(start_task, application.pk))
