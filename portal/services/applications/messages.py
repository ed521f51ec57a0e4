"""Message applications: resend messages of a topic, resend a consumer group's dead letters, re-deliver a past time
range of a topic to one consumer group.

Each is planned when approved (``portal.services.messages.items``: one item per message, read from the cluster so
that a message missing or on another topic makes the request invalid) and then sent item by item: a small operation
(at most INLINE_ITEMS messages) within the approval, so the approver sees it done, failed items keeping the
application pending with the error (approving again sends only what is left); a bigger one by the
``run_message_operation`` task, started when the approval commits, with its progress in the items.
"""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.utils.translation import gettext_lazy as _

from monitor.messages import resend as wire_resend
from monitor.messages import search as wire_search
from portal.models import Application, ApplicationKind, ApplicationState, ConsumerGroup, OperationItemState
from portal.services.applications.checks import Errors, reject_unknown_keys
from portal.services.applications.operation_checks import (
    clean_consumed_topic,
    clean_moment,
    clean_msg_ids,
    millis,
    record_operation,
)
from portal.services.cluster_ops import ClusterOperationError
from portal.services.messages import items
from portal.services.messages.wire import cluster_admin, message_on_topic
from stats.keys import dlq_topic, retry_topic

# Operations of at most this many messages are sent by the approval itself.
INLINE_ITEMS = 20
TARGETS = ("origin", "retry")


def _clean_target(payload: dict, errors: Errors) -> str:
    to = payload.get("to") or "origin"
    if to not in TARGETS:
        errors.add("to", _('Choose "origin" (the original topic) or "retry" (the group\'s retry topic).'))
    return to


def clean_message_resend(application: Application, payload: dict) -> dict:
    """``{"msg_ids", "to", "group"}``: messages of the application's topic, to the topic again or to ``group``'s
    retry topic."""
    errors = Errors()
    reject_unknown_keys(payload, {"msg_ids", "to", "group"}, errors)
    msg_ids = clean_msg_ids(payload.get("msg_ids"), "msg_ids", errors)
    to = _clean_target(payload, errors)
    group = str(payload.get("group") or "").strip()
    if to == "retry" and not ConsumerGroup.objects.filter(cluster=application.cluster, name=group).exists():
        errors.add("group", _("Choose a consumer group of this cluster whose retry topic gets the messages."))
    errors.raise_if_any()
    return {"msg_ids": msg_ids, "to": to, "group": group if to == "retry" else ""}


def clean_dead_letter_resend(application: Application, payload: dict) -> dict:
    """``{"msg_ids", "to"}``: entries of the group's %DLQ% topic, to their original topic or the group's retry
    topic."""
    errors = Errors()
    reject_unknown_keys(payload, {"msg_ids", "to", "group"}, errors)
    msg_ids = clean_msg_ids(payload.get("msg_ids"), "msg_ids", errors)
    to = _clean_target(payload, errors)
    errors.raise_if_any()
    return {"msg_ids": msg_ids, "to": to, "group": application.consumer_group.name}


def clean_redeliver_range(application: Application, payload: dict) -> dict:
    """``{"topic", "begin", "end"}``: every message stored in [begin, end] on a topic the group consumes, resent to
    the group's retry topic (only that group consumes them again)."""
    errors = Errors()
    reject_unknown_keys(payload, {"topic", "begin", "end", "group"}, errors)
    topic = clean_consumed_topic(application, payload.get("topic"), "topic", errors)
    begin = clean_moment(payload.get("begin"), "begin", errors)
    end = clean_moment(payload.get("end"), "end", errors)
    if begin and end and millis(begin) >= millis(end):
        errors.add("end", _("The range must end after it begins."))
    errors.raise_if_any()
    return {"topic": topic, "begin": begin, "end": end, "group": application.consumer_group.name}


def _sources_by_id(application: Application, payload: dict, expected_topic: str) -> list[tuple[str, str]]:
    """(offset id, target topic) for each named message, read from the cluster; a message that is not there, or not
    on ``expected_topic``, makes the request invalid."""
    sources, errors = [], Errors()
    with cluster_admin(application.cluster, _("Reading the messages to resend")) as admin:
        for msg_id in payload["msg_ids"]:
            msg = message_on_topic(admin, msg_id, expected_topic)
            if msg is None:
                errors.add("msg_ids", _("No message %(id)s on %(topic)s.") % {"id": msg_id, "topic": expected_topic})
                continue
            try:
                target = wire_resend.resend_topic(msg, payload["to"], payload["group"] or None)
            except ValueError as exc:
                errors.add("msg_ids", str(exc))
                continue
            sources.append((msg.msg_id, target))
    errors.raise_if_any()
    return sources


def _sources_of_range(application: Application, payload: dict) -> list[tuple[str, str]]:
    target = retry_topic(payload["group"])
    with cluster_admin(application.cluster, _("Reading the time range to re-deliver")) as admin:
        messages = wire_search.by_time_range(admin, payload["topic"], millis(payload["begin"]), millis(payload["end"]))
        return [(msg.msg_id, target) for msg in messages]


def _target(payload: dict) -> str:
    return payload.get("to") or "retry"


def _act(application: Application, payload: dict, sources) -> None:
    """Plan (once) and, for a small operation, send; ``payload["outcome"]`` says how far it got."""
    total = items.plan(application, sources)
    if total <= INLINE_ITEMS:
        done = items.run(application, to=_target(payload), group=payload["group"] or None)
        failed = application.message_items.filter(state=OperationItemState.FAILED).order_by("index").first()
        if failed is not None:
            raise ClusterOperationError(
                _("%(failed)d of %(total)d messages could not be sent; first error: %(error)s")
                % {"failed": done.failed, "total": total, "error": failed.error}
            )
    payload["outcome"] = {"messages": total, "sent_by_approval": total <= INLINE_ITEMS}


def act_message_resend(application: Application, payload: dict) -> None:
    _act(application, payload, lambda: _sources_by_id(application, payload, application.topic.name))


def act_dead_letter_resend(application: Application, payload: dict) -> None:
    _act(application, payload, lambda: _sources_by_id(application, payload, dlq_topic(payload["group"])))


def act_redeliver_range(application: Application, payload: dict) -> None:
    _act(application, payload, lambda: _sources_of_range(application, payload))


def _recorder(action: str):
    audit_entry = record_operation(action)

    def record(application: Application, payload: dict, by) -> None:
        audit_entry(application, payload, by)
        if not payload["outcome"]["sent_by_approval"]:
            items.enqueue(application)

    return record


record_message_resend = _recorder("topic.messages_resent")
record_dead_letter_resend = _recorder("consumergroup.dead_letters_resent")
record_redeliver_range = _recorder("consumergroup.range_redelivered")

ITEM_KINDS = (ApplicationKind.MESSAGE_RESEND, ApplicationKind.DEAD_LETTER_RESEND, ApplicationKind.REDELIVER_RANGE)


def run_operation(application_id: int) -> items.OperationProgress | None:
    """Send what an approved operation has not sent yet (the task's body; safe to run again at any time). None if
    there is no such approved operation."""
    application = Application.objects.filter(
        pk=application_id, kind__in=ITEM_KINDS, state=ApplicationState.APPROVED
    ).first()
    if application is None:
        return None
    payload = application.payload
    return items.run(application, to=_target(payload), group=payload.get("group") or None)


def check_runnable(application: Application) -> None:
    """Refuse (ValidationError) to run an operation that is not an approved message operation."""
    if application.kind not in ITEM_KINDS or application.state != ApplicationState.APPROVED:
        raise ValidationError(_("Only an approved message operation can be run again."))
