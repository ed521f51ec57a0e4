"""New registry entries (topics, consumer and producer groups): their names checked against the cluster and the
other pending applications, their fields validated, and the row written when the application is approved."""

from __future__ import annotations

from django.core.exceptions import NON_FIELD_ERRORS, ValidationError
from django.utils.translation import gettext_lazy as _

from portal.models import (
    Application,
    ApplicationKind,
    ApplicationState,
    ConsumerGroup,
    Origin,
    ProducerGroup,
    RegistryState,
    Topic,
)
from portal.models.validation import validate_group_name, validate_topic_name
from portal.services import audit
from portal.services.applications.checks import Errors


def name_taken(model, application: Application, name: str) -> str | None:
    """Why ``name`` cannot be used for a new ``model`` entry on the application's cluster, or None."""
    entry = model.objects.filter(cluster=application.cluster, name=name).select_related("team").first()
    if entry is not None and not is_own_import(entry, application):
        if entry.team is None:
            return _("%(name)s already exists on cluster %(cluster)s (unowned: ask a portal admin to adopt it).") % {
                "name": name,
                "cluster": application.cluster,
            }
        return _("%(name)s already exists on cluster %(cluster)s (owned by %(team)s).") % {
            "name": name,
            "cluster": application.cluster,
            "team": entry.team,
        }
    pending = _pending_application_for(model, application, name)
    if pending is not None:
        return _("Application #%(id)s for %(name)s is already pending.") % {"id": pending.pk, "name": name}
    return None


# The kind of application that creates each kind of entry (a consumer group may also come with a new topic).
_CREATED_BY = {
    Topic: ApplicationKind.TOPIC_CREATE,
    ConsumerGroup: ApplicationKind.CONSUMER_GROUP_CREATE,
    ProducerGroup: ApplicationKind.PRODUCER_GROUP_CREATE,
}


def _pending_application_for(model, application: Application, name: str) -> Application | None:
    """Another pending application that would create a ``model`` entry called ``name`` on the same cluster.

    A new topic's consumer groups are a list in its payload; they are matched here in Python, on the few pending
    topic applications that carry groups, because SQLite has no JSON containment lookup."""
    others = Application.objects.filter(cluster=application.cluster, state=ApplicationState.PENDING).exclude(
        pk=application.pk
    )
    pending = others.filter(kind=_CREATED_BY[model], payload__name=name).first()
    if pending is None and model is ConsumerGroup:
        with_groups = others.filter(kind=ApplicationKind.TOPIC_CREATE, payload__has_key="consumer_groups")
        pending = next(
            (other for other in with_groups if any(g["name"] == name for g in other.payload["consumer_groups"])),
            None,
        )
    return pending


def is_own_import(entry, application: Application) -> bool:
    """An unowned entry the sync imported after this application was filed: the topic or group its own approval
    created on the cluster, seen by a sync that ran between the cluster call and the registry write."""
    return (
        application.pk is not None
        and entry.team_id is None
        and entry.origin == Origin.IMPORTED
        and entry.created_at >= application.created_at
    )


def clean_new_name(model, application: Application, payload: dict, errors: Errors) -> str:
    name = str(payload.get("name") or "").strip()
    validate = validate_topic_name if model is Topic else validate_group_name
    errors.check("name", lambda: validate(name, new=True))
    if "name" not in errors.errors:
        if model is Topic and name == application.cluster.trace_topic:
            errors.add("name", _("%(name)s is the cluster's trace topic.") % {"name": name})
        taken = name_taken(model, application, name)
        if taken:
            errors.add("name", taken)
    return name


def clean_entry(entry, errors: Errors) -> None:
    """The model's own field validation, except the name (checked, keyed by field, by clean_new_name) and the
    relations (set by the service)."""
    errors.check(
        NON_FIELD_ERRORS,
        lambda: entry.full_clean(
            exclude=["name", "cluster", "team"], validate_unique=False, validate_constraints=False
        ),
    )


def new_entry(model, application: Application, payload: dict, fields: set[str]):
    """The new registry entry, or the unowned entry a racing sync imported for it (see is_own_import)."""
    values = {key: payload[key] for key in fields}
    entry = model.objects.select_for_update().filter(cluster=application.cluster, name=payload["name"]).first()
    if entry is not None and not is_own_import(entry, application):
        raise ValidationError({"name": name_taken(model, application, payload["name"])})
    if entry is None:
        entry = model(cluster=application.cluster, name=payload["name"])
    entry.team = application.team
    entry.origin = Origin.APPLIED
    entry.state = RegistryState.ACTIVE
    entry.missing_since = None
    for key, value in values.items():
        setattr(entry, key, value)
    entry.save()
    return entry


def created(by, entry) -> None:
    audit.record(by, f"{entry._meta.model_name}.created", entry, after=audit.snapshot(entry))
