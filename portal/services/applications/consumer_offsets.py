"""Consumer-offset applications: reset a group's offsets on one topic (optionally one queue) to a point in time or to
the newest message (skip the backlog), and skip the group's retry backlog.

The reset is RocketMQ's own: with clients online the brokers tell them (INVOKE_BROKER_TO_RESET_OFFSET, which a
running consumer obeys at once), with none online the offsets are written directly; ``monitor.messages.offsets``
decides. Resetting again to the same point gives the same offsets, so an approval retried after a failure is safe.
The form shows :func:`preview` (per queue: min, max, current and target offset) before anyone applies.
"""

from __future__ import annotations

import dataclasses

from django.utils.translation import gettext_lazy as _

from monitor.messages import offsets as wire_offsets
from monitor.remoting.body import MessageQueue
from portal.models import Application
from portal.services.applications.checks import Errors, reject_unknown_keys
from portal.services.applications.operation_checks import (
    NEWEST,
    clean_consumed_topic,
    clean_moment,
    millis,
    record_operation,
)
from portal.services.messages.wire import cluster_admin
from stats.keys import retry_topic


def _clean_queue(value, errors: Errors) -> dict | None:
    """None (every queue of the topic) or ``{"broker_name", "queue_id"}``."""
    if value in (None, "", {}):
        return None
    broker_name = str(value.get("broker_name") or "").strip() if isinstance(value, dict) else ""
    queue_id = value.get("queue_id") if isinstance(value, dict) else None
    if isinstance(queue_id, str) and queue_id.strip().isdigit():  # from a form
        queue_id = int(queue_id)
    if not broker_name or isinstance(queue_id, bool) or not isinstance(queue_id, int) or not 0 <= queue_id < 65536:
        errors.add("queue", _("A queue is a broker name and a queue id (0 or more)."))
        return None
    return {"broker_name": broker_name, "queue_id": queue_id}


def clean_reset(application: Application, payload: dict) -> dict:
    """``{"topic", "when": ISO time | "newest", "queue": null | {"broker_name", "queue_id"}}``."""
    errors = Errors()
    reject_unknown_keys(payload, {"topic", "when", "queue"}, errors)
    topic = clean_consumed_topic(application, payload.get("topic"), "topic", errors)
    when = clean_moment(payload.get("when"), "when", errors, newest=True)
    queue = _clean_queue(payload.get("queue"), errors)
    errors.raise_if_any()
    return {"topic": topic, "when": when, "queue": queue}


def wire_point(when: str):
    """What ``monitor.messages.offsets`` takes for a cleaned ``when``: NEWEST or epoch milliseconds."""
    return wire_offsets.NEWEST if when == NEWEST else millis(when)


def wire_queue(topic: str, queue: dict | None) -> MessageQueue | None:
    return None if queue is None else MessageQueue(topic, queue["broker_name"], queue["queue_id"])


def preview(cluster, group_name: str, payload: dict) -> list[wire_offsets.QueueResetPreview]:
    """Per queue, the offsets before and after the reset ``payload`` (cleaned) asks for, read from ``cluster``."""
    queue = wire_queue(payload["topic"], payload["queue"])
    with cluster_admin(cluster, _("Previewing the offset reset")) as admin:
        return wire_offsets.preview_reset(admin, group_name, payload["topic"], wire_point(payload["when"]), queue=queue)


def _outcome(outcome: wire_offsets.ResetOutcome, before: list[wire_offsets.QueueResetPreview]) -> dict:
    """The reset as stored in ``payload["outcome"]``: ``online``, ``cplus`` and per queue the offset it moved the
    group to, with ``previous_offset``, where the group was just before (None: no committed offset), so the
    application's page says how far it moved and an operator can move it back."""
    previous = {(row.broker_name, row.queue_id): row.current_offset for row in before}
    stored = dataclasses.asdict(outcome)
    for queue in stored["queues"]:
        queue["previous_offset"] = previous.get((queue["broker_name"], queue["queue_id"]))
    return stored


def act_reset(application: Application, payload: dict) -> None:
    group, topic = application.consumer_group.name, payload["topic"]
    queue = wire_queue(topic, payload["queue"])
    point = wire_point(payload["when"])
    with cluster_admin(application.cluster, _("Resetting consumer offsets")) as admin:
        before = wire_offsets.preview_reset(admin, group, topic, point, queue=queue)
        outcome = wire_offsets.apply_reset(admin, group, topic, point, queue=queue)
    payload["outcome"] = _outcome(outcome, before)


def act_skip_retry_backlog(application: Application, payload: dict) -> None:
    group = application.consumer_group.name
    with cluster_admin(application.cluster, _("Skipping the retry backlog")) as admin:
        before = wire_offsets.preview_reset(admin, group, retry_topic(group), wire_offsets.NEWEST)
        outcome = wire_offsets.skip_retry_backlog(admin, group)
    payload["outcome"] = _outcome(outcome, before)


record_reset = record_operation("consumergroup.offsets_reset")
record_skip_retry_backlog = record_operation("consumergroup.retry_backlog_skipped")
