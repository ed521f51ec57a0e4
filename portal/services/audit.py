"""The audit log: who did what to which object, when, and how it looked before and after.

Every registry change and every admin action calls :func:`record` in the same transaction as the change, so an
entry exists exactly when the change does. Actions are named ``<object type>.<past-tense verb>``
(``topic.created``, ``application.approved``, ``membership.deleted``, ``topic.imported`` ...); the actor is empty
for the system (the periodic sync). Snapshots never hold a secret: encrypted fields and ``*secret*`` fields are
replaced by a mask that only says whether one is set.
"""

from __future__ import annotations

import json

from django.core.serializers.json import DjangoJSONEncoder
from django.db import models

from portal.models import AuditEntry, Cluster, ConsumerGroup
from portal.models.crypto import EncryptedTextField

SECRET_MASK = "********"


def _is_secret(field: models.Field) -> bool:
    return isinstance(field, EncryptedTextField) or "secret" in field.name or "password" in field.name


def snapshot(obj) -> dict:
    """The object's fields as a JSON-able dict: concrete fields by attribute name (foreign keys as ids), plain
    many-to-many relations as sorted names, a consumer group's subscriptions as ``{topic: tag expression}``, secrets
    masked. Relations with their own model (team memberships) are audited as objects of their own."""
    data = {}
    for field in obj._meta.concrete_fields:
        value = field.value_from_object(obj)
        if _is_secret(field):
            value = SECRET_MASK if value else ""
        data[field.attname] = value
    if obj.pk is not None:
        for field in obj._meta.many_to_many:
            if field.remote_field.through._meta.auto_created:
                data[field.name] = sorted(str(related) for related in getattr(obj, field.name).all())
        if isinstance(obj, ConsumerGroup):
            subscriptions = obj.subscriptions.all()
            if "subscriptions" not in getattr(obj, "_prefetched_objects_cache", {}):
                subscriptions = subscriptions.select_related("topic")
            data["subscriptions"] = dict(sorted((sub.topic.name, sub.tag_expression) for sub in subscriptions))
    return json.loads(json.dumps(data, cls=DjangoJSONEncoder))


def for_snapshots(queryset: models.QuerySet) -> models.QuerySet:
    """``queryset`` with what :func:`snapshot` reads prefetched, so snapshotting many objects costs no query each."""
    if queryset.model is ConsumerGroup:
        return queryset.prefetch_related("subscriptions__topic")
    auto_m2m = [f.name for f in queryset.model._meta.many_to_many if f.remote_field.through._meta.auto_created]
    return queryset.prefetch_related(*auto_m2m)


def _cluster_of(obj) -> Cluster | None:
    if isinstance(obj, Cluster):
        return obj
    return getattr(obj, "cluster", None)


def record(actor, action: str, obj=None, *, before=None, after=None, cluster=None, note: str = "") -> AuditEntry:
    """Write one audit entry. ``obj`` names the object (type, id, text); ``cluster`` defaults to the object's own
    cluster. ``before``/``after`` are :func:`snapshot` dicts (empty for a creation / deletion respectively)."""
    entry = entry_for(actor, action, obj, before=before, after=after, cluster=cluster, note=note)
    entry.save()
    return entry


def record_many(entries: list[AuditEntry]) -> None:
    """Write entries built with :func:`entry_for` in bulk (the sync audits thousands of imports at once)."""
    AuditEntry.objects.bulk_create(entries, batch_size=500)


def entry_for(actor, action: str, obj=None, *, before=None, after=None, cluster=None, note: str = "") -> AuditEntry:
    """An unsaved audit entry, as :func:`record` would write it."""
    return AuditEntry(
        actor=actor,
        actor_name=actor.get_username() if actor is not None else "",
        action=action,
        object_type=obj._meta.model_name if obj is not None else "",
        object_id=str(obj.pk) if obj is not None and obj.pk is not None else "",
        object_repr=str(obj)[:300] if obj is not None else "",
        cluster=cluster if cluster is not None else _cluster_of(obj) if obj is not None else None,
        before=before,
        after=after,
        note=str(note),
    )
