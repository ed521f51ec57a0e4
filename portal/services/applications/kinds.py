"""The kinds of application: for each, what it is about and how it is validated, carried out on the cluster and
recorded in the registry (one module per family: topics, consumer groups, producer groups, associations)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from portal.models import Application, ApplicationKind
from portal.services import audit
from portal.services.applications import associations, consumer_groups, producer_groups, topics


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
}
