"""The kinds of application: for each, what it is about and how it is validated, carried out on the cluster and
recorded in the registry (one module per family: topics, consumer groups, producer groups, associations, and the
operations on messages, consumer offsets and consumer-group settings)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from portal.models import Application, ApplicationKind
from portal.services import audit
from portal.services.applications import (
    associations,
    consumer_group_settings,
    consumer_groups,
    consumer_offsets,
    messages,
    operation_checks,
    producer_groups,
    topics,
)


@dataclass(frozen=True)
class Kind:
    """How one kind of application is validated (``clean``: payload -> normalized payload, ValidationError),
    carried out on the cluster (``act``, outside any transaction) and recorded in the registry (``record``)."""

    target: str | None  # the foreign key naming what a change, deletion or association is about
    deletion: bool
    clean: Callable[[Application, dict], dict]
    act: Callable[[Application, dict], None]
    record: Callable[[Application, dict, object], None]


def target(application: Application):
    return getattr(application, KINDS[application.kind].target)


def clean_target_delete(application: Application, payload: dict) -> dict:
    return {"name": target(application).name}


def registry_only(application: Application, payload: dict) -> None:
    """Producer groups and associations exist only in the registry (RocketMQ has no producer-group table)."""


def record_deletion(application: Application, payload: dict, by) -> None:
    """Delete the application's target (locked) and forget it on the application, as the database's SET NULL
    does for every other application about it."""
    field = KINDS[application.kind].target
    model = Application._meta.get_field(field).related_model
    entry = model.objects.select_for_update().get(pk=getattr(application, f"{field}_id"))
    audit.record(by, f"{entry._meta.model_name}.deleted", entry, before=audit.snapshot(entry))
    entry.delete()
    setattr(application, field, None)


KINDS = {
    ApplicationKind.TOPIC_CREATE: Kind(None, False, topics.clean_create, topics.act_create, topics.record_create),
    ApplicationKind.TOPIC_CHANGE: Kind("topic", False, topics.clean_change, topics.act_change, topics.record_change),
    ApplicationKind.TOPIC_DELETE: Kind("topic", True, topics.clean_delete, topics.act_delete, record_deletion),
    ApplicationKind.CONSUMER_GROUP_CREATE: Kind(
        None, False, consumer_groups.clean_create, consumer_groups.act_create, consumer_groups.record_create
    ),
    ApplicationKind.CONSUMER_GROUP_DELETE: Kind(
        "consumer_group", True, clean_target_delete, consumer_groups.act_delete, record_deletion
    ),
    ApplicationKind.PRODUCER_GROUP_CREATE: Kind(
        None, False, producer_groups.clean_create, registry_only, producer_groups.record_create
    ),
    ApplicationKind.PRODUCER_GROUP_DELETE: Kind(
        "producer_group", True, clean_target_delete, registry_only, record_deletion
    ),
    ApplicationKind.TOPIC_ASSOCIATION: Kind("topic", False, associations.clean, registry_only, associations.record),
    ApplicationKind.MESSAGE_RESEND: Kind(
        "topic", False, messages.clean_message_resend, messages.act_message_resend, messages.record_message_resend
    ),
    ApplicationKind.DEAD_LETTER_RESEND: Kind(
        "consumer_group",
        False,
        messages.clean_dead_letter_resend,
        messages.act_dead_letter_resend,
        messages.record_dead_letter_resend,
    ),
    ApplicationKind.REDELIVER_RANGE: Kind(
        "consumer_group",
        False,
        messages.clean_redeliver_range,
        messages.act_redeliver_range,
        messages.record_redeliver_range,
    ),
    ApplicationKind.OFFSET_RESET: Kind(
        "consumer_group",
        False,
        consumer_offsets.clean_reset,
        consumer_offsets.act_reset,
        consumer_offsets.record_reset,
    ),
    ApplicationKind.SKIP_RETRY_BACKLOG: Kind(
        "consumer_group",
        False,
        operation_checks.clean_no_payload,
        consumer_offsets.act_skip_retry_backlog,
        consumer_offsets.record_skip_retry_backlog,
    ),
    ApplicationKind.GROUP_PAUSE: Kind(
        "consumer_group",
        False,
        operation_checks.clean_no_payload,
        consumer_group_settings.act_pause,
        consumer_group_settings.record_pause,
    ),
    ApplicationKind.GROUP_RESUME: Kind(
        "consumer_group",
        False,
        operation_checks.clean_no_payload,
        consumer_group_settings.act_resume,
        consumer_group_settings.record_resume,
    ),
    ApplicationKind.GROUP_SETTINGS: Kind(
        "consumer_group",
        False,
        consumer_group_settings.clean_settings,
        consumer_group_settings.act_settings,
        consumer_group_settings.record_settings,
    ),
}
