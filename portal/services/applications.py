"""Applications: the state machine through which business teams change what exists on a cluster.

``submit`` validates a request against RocketMQ's rules and today's registry and files it PENDING (portal admins
are notified). ``approve`` is the only path that changes a live cluster:

1. it claims the application with one conditional UPDATE (``state = pending`` and no live claim; see
   ``Application``'s docstring), so of two concurrent approvals, or an approval racing a rejection or cancellation,
   exactly one proceeds and the others get InvalidTransition. The claim is committed before the cluster is touched,
   and no database transaction is held open across the network calls;
2. it validates the request again against the registry as it is now (a name may have been taken, a topic may have
   gained subscribers), then acts on the cluster through ``cluster_ops`` (idempotent operations);
3. in one transaction it locks the row, checks the claim is still its own and the state still pending, creates,
   changes or deletes the registry rows, marks the application approved, writes the audit entries and notifies the
   applicant - all or nothing.

If step 2 or 3 fails, the claim is given back with ``last_error`` set (and ``attempts`` counted), the application
stays pending, nothing is recorded in the registry, and the error is raised (ClusterOperationError for the cluster,
ValidationError if the request is no longer valid). Approving again is safe: every cluster operation is an upsert
or an idempotent delete.

A new topic may come with the consumer groups that will read it (``consumer_groups`` in its payload, see
``_clean_topic_groups``): one application, approved once, creating the topic and then its groups on the cluster and
all of them in the registry in the one transaction of step 3, so a failure on any group leaves no registry row.

Lowering a topic's queue count is allowed: RocketMQ's updateTopic does it, and read and write queue counts change
together, so messages still waiting in the removed queues are no longer delivered; the approver decides whether the
topic is drained. A topic's order flag cannot be changed (the queue count of an ordered topic can).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass

from django.contrib.auth import get_user_model
from django.core.exceptions import NON_FIELD_ERRORS, PermissionDenied, ValidationError
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone
from django.utils.text import format_lazy
from django.utils.translation import gettext_lazy as _

from portal import access
from portal.inputs import MAX_ID
from portal.models import (
    Application,
    ApplicationKind,
    ApplicationState,
    AssociationRole,
    ConsumerGroup,
    MessageModel,
    Origin,
    ProducerGroup,
    RegistryState,
    Subscription,
    TeamRole,
    Topic,
    TopicAssociation,
)
from portal.models.applications import CLAIM_TIMEOUT
from portal.services import audit, cluster_ops, notifications
from portal.validation import validate_group_name, validate_tag_expression, validate_topic_name

# Each group is one call per master during the approval, which must finish well within its claim (CLAIM_TIMEOUT).
MAX_GROUPS_WITH_A_TOPIC = 20


class InvalidTransition(Exception):
    """The application cannot make this move: it is no longer pending, or an approval of it is under way."""


# --- validation ---------------------------------------------------------------------------------------------------


class _Errors:
    """Collects field errors so that one submission reports every problem at once."""

    def __init__(self):
        self.errors: dict[str, list] = {}

    def add(self, field: str, message) -> None:
        self.errors.setdefault(field, []).append(message)

    def check(self, field: str, check: Callable[[], object]):
        """Run ``check``; a ValidationError it raises is filed under ``field`` (or under its own keys)."""
        try:
            return check()
        except ValidationError as exc:
            if hasattr(exc, "error_dict"):
                for key, messages in exc.message_dict.items():
                    for message in messages:
                        self.add(key, message)
            else:
                for message in exc.messages:
                    self.add(field, message)
            return None

    def raise_if_any(self) -> None:
        if self.errors:
            raise ValidationError(self.errors)


def _reject_unknown_keys(payload: dict, allowed: set[str], errors: _Errors) -> None:
    for key in sorted(set(payload) - allowed):
        errors.add(key, _("This cannot be set here."))


def _name_taken(model, application: Application, name: str) -> str | None:
    """Why ``name`` cannot be used for a new ``model`` entry on the application's cluster, or None."""
    entry = model.objects.filter(cluster=application.cluster, name=name).select_related("team").first()
    if entry is not None and not _is_own_import(entry, application):
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


def _is_own_import(entry, application: Application) -> bool:
    """An unowned entry the sync imported after this application was filed: the topic or group its own approval
    created on the cluster, seen by a sync that ran between the cluster call and the registry write."""
    return (
        application.pk is not None
        and entry.team_id is None
        and entry.origin == Origin.IMPORTED
        and entry.created_at >= application.created_at
    )


def _clean_new_name(model, application: Application, payload: dict, errors: _Errors) -> str:
    name = str(payload.get("name") or "").strip()
    validate = validate_topic_name if model is Topic else validate_group_name
    errors.check("name", lambda: validate(name, new=True))
    if "name" not in errors.errors:
        if model is Topic and name == application.cluster.trace_topic:
            errors.add("name", _("%(name)s is the cluster's trace topic.") % {"name": name})
        taken = _name_taken(model, application, name)
        if taken:
            errors.add("name", taken)
    return name


def _clean_entry(entry, errors: _Errors) -> None:
    """The model's own field validation, except the name (checked, keyed by field, by _clean_new_name) and the
    relations (set by the service)."""
    errors.check(
        NON_FIELD_ERRORS,
        lambda: entry.full_clean(
            exclude=["name", "cluster", "team"], validate_unique=False, validate_constraints=False
        ),
    )


def _check_active_topics(application: Application, ids, field: str, errors: _Errors) -> None:
    """Every id must be an active topic of the application's cluster (any team's); others are errors on ``field``."""
    found = set(
        Topic.objects.filter(pk__in=ids, cluster=application.cluster, state=RegistryState.ACTIVE).values_list(
            "pk", flat=True
        )
    )
    for topic_id in ids:
        if topic_id not in found:
            errors.add(
                field,
                _("There is no active topic with id %(id)s on cluster %(cluster)s.")
                % {"id": topic_id, "cluster": application.cluster},
            )


def _topic_id(value, field: str, errors: _Errors) -> int | None:
    """A topic id as a positive integer the database can hold (a bigger one would overflow the query)."""
    try:
        topic_id = int(value) if not isinstance(value, bool) else 0
    except (TypeError, ValueError):
        topic_id = 0
    if not 0 < topic_id <= MAX_ID:
        errors.add(field, _("%(value)r is not a topic id.") % {"value": value})
        return None
    return topic_id


def _clean_topic_create(application: Application, payload: dict) -> dict:
    """A new topic, optionally with the consumer groups that will read it (``consumer_groups``, see
    :func:`_clean_topic_groups`); the key is kept only when groups are asked for."""
    errors = _Errors()
    _reject_unknown_keys(
        payload, {"name", "queue_nums", "ordered", "trace_enabled", "description", "consumer_groups"}, errors
    )
    topic = Topic(
        cluster=application.cluster,
        team=application.team,
        origin=Origin.APPLIED,
        queue_nums=payload.get("queue_nums", Topic._meta.get_field("queue_nums").default),
        ordered=payload.get("ordered", False),
        trace_enabled=payload.get("trace_enabled", False),
        description=str(payload.get("description") or "").strip(),
    )
    topic.name = _clean_new_name(Topic, application, payload, errors)
    _clean_entry(topic, errors)
    groups = _clean_topic_groups(application, payload.get("consumer_groups", []), errors)
    errors.raise_if_any()
    cleaned = {
        "name": topic.name,
        "queue_nums": topic.queue_nums,
        "ordered": topic.ordered,
        "trace_enabled": topic.trace_enabled,
        "description": topic.description,
    }
    if groups:
        cleaned["consumer_groups"] = groups
    return cleaned


def _clean_topic_groups(application: Application, raw, errors: _Errors) -> list[dict]:
    """The consumer groups a new topic comes with, each subscribed to it alone: ``{"name", "message_model",
    "description", "tag_expression"}``, validated as a consumer-group application validates its group (name rules,
    not taken on the cluster nor asked for by another pending application, the model's fields) plus its tag
    expression. Their errors are filed under ``consumer_groups``, each naming its group.

    Carrying the groups on the topic's application (rather than linking a group application to a pending topic
    application) keeps one row, one claim and one decision: approving creates all of it, rejecting or cancelling
    drops all of it, and no second application can be decided out of order."""
    if not isinstance(raw, list) or not all(isinstance(item, dict) for item in raw):
        errors.add("consumer_groups", _("Give a list of consumer groups, each with a name."))
        return []
    if len(raw) > MAX_GROUPS_WITH_A_TOPIC:
        errors.add(
            "consumer_groups",
            _("At most %(count)s consumer groups may come with a new topic.") % {"count": MAX_GROUPS_WITH_A_TOPIC},
        )
        return []
    groups = []
    for number, item in enumerate(raw, start=1):
        group_errors = _Errors()
        _reject_unknown_keys(item, {"name", "message_model", "description", "tag_expression"}, group_errors)
        group = _clean_new_consumer_group(application, item, group_errors)
        group["tag_expression"] = _clean_tag_expression(item.get("tag_expression"), "tag_expression", group_errors)
        if group["name"] and any(other["name"] == group["name"] for other in groups):
            group_errors.add("name", _("This group is asked for twice."))
        label = group["name"] or _("Group %(number)s") % {"number": number}
        for key, messages in group_errors.errors.items():
            where = label if key in ("name", NON_FIELD_ERRORS) else f"{label}, {key}"
            for message in messages:
                errors.add("consumer_groups", f"{where}: {message}")
        groups.append(group)
    return groups


def _clean_topic_change(application: Application, payload: dict) -> dict:
    topic = application.topic
    errors = _Errors()
    changes = {key: value for key, value in payload.items() if key != "name"}
    _reject_unknown_keys(changes, {"queue_nums", "trace_enabled"}, errors)
    if not changes:
        errors.add(NON_FIELD_ERRORS, _("Change the queue count or the trace setting."))
    if topic.state != RegistryState.ACTIVE:  # changing it would create it on the cluster again
        errors.add("topic", _("Topic %(topic)s is missing from its cluster.") % {"topic": topic.name})
    cleaned = {"name": topic.name}
    for key in ("queue_nums", "trace_enabled"):
        if key not in changes:
            continue
        value = errors.check(key, lambda key=key: Topic._meta.get_field(key).clean(changes[key], topic))
        if value is None:
            continue
        if value == getattr(topic, key):
            errors.add(key, _("%(topic)s already has this value.") % {"topic": topic.name})
        cleaned[key] = value
    errors.raise_if_any()
    return cleaned


def _clean_topic_delete(application: Application, payload: dict) -> dict:
    topic = application.topic
    subscribers = sorted(topic.subscriptions.values_list("consumer_group__name", flat=True))
    if subscribers:
        raise ValidationError(
            {
                NON_FIELD_ERRORS: _(
                    "Topic %(topic)s cannot be deleted while consumer groups subscribe to it: %(groups)s. "
                    "Delete those groups (or their subscriptions) first."
                )
                % {"topic": topic.name, "groups": ", ".join(subscribers)}
            }
        )
    return {"name": topic.name}


def _clean_new_consumer_group(application: Application, payload: dict, errors: _Errors) -> dict:
    """A new consumer group's own fields (``name``, ``message_model``, ``description``), whether asked for alone or
    with a new topic."""
    group = ConsumerGroup(
        cluster=application.cluster,
        team=application.team,
        origin=Origin.APPLIED,
        message_model=payload.get("message_model") or MessageModel.CLUSTERING,
        description=str(payload.get("description") or "").strip(),
    )
    group.name = _clean_new_name(ConsumerGroup, application, payload, errors)
    _clean_entry(group, errors)
    return {"name": group.name, "message_model": group.message_model, "description": group.description}


def _clean_tag_expression(value, field: str, errors: _Errors) -> str:
    """A subscription's tag expression; none given means every tag (``*``)."""
    expression = str(value or "*").strip()
    errors.check(field, lambda: validate_tag_expression(expression))
    return expression


def _clean_consumer_group_create(application: Application, payload: dict) -> dict:
    errors = _Errors()
    _reject_unknown_keys(payload, {"name", "message_model", "description", "subscriptions"}, errors)
    group = _clean_new_consumer_group(application, payload, errors)
    subscriptions = []
    raw = payload.get("subscriptions")
    if not isinstance(raw, list) or not raw:
        errors.add("subscriptions", _("Subscribe to at least one topic."))
        raw = []
    for item in raw:
        if not isinstance(item, dict):
            errors.add("subscriptions", _("Each subscription names a topic_id and a tag_expression."))
            continue
        topic_id = _topic_id(item.get("topic_id"), "subscriptions", errors)
        if topic_id is None:
            continue
        if any(sub["topic_id"] == topic_id for sub in subscriptions):
            errors.add("subscriptions", _("Topic id %(id)s is subscribed twice.") % {"id": topic_id})
            continue
        expression = _clean_tag_expression(item.get("tag_expression"), "subscriptions", errors)
        subscriptions.append({"topic_id": topic_id, "tag_expression": expression})
    _check_active_topics(application, [sub["topic_id"] for sub in subscriptions], "subscriptions", errors)
    errors.raise_if_any()
    return {**group, "subscriptions": subscriptions}


def _clean_producer_group_create(application: Application, payload: dict) -> dict:
    errors = _Errors()
    _reject_unknown_keys(payload, {"name", "description", "topic_ids"}, errors)
    group = ProducerGroup(
        cluster=application.cluster,
        team=application.team,
        origin=Origin.APPLIED,
        description=str(payload.get("description") or "").strip(),
    )
    group.name = _clean_new_name(ProducerGroup, application, payload, errors)
    _clean_entry(group, errors)
    raw = payload.get("topic_ids", [])
    if not isinstance(raw, list):
        errors.add("topic_ids", _("Give a list of topic ids."))
        raw = []
    ids = list(dict.fromkeys(i for i in (_topic_id(value, "topic_ids", errors) for value in raw) if i is not None))
    _check_active_topics(application, ids, "topic_ids", errors)
    errors.raise_if_any()
    return {"name": group.name, "description": group.description, "topic_ids": ids}


def _clean_target_delete(application: Application, payload: dict) -> dict:
    return {"name": _target(application).name}


def _clean_topic_association(application: Application, payload: dict) -> dict:
    topic = application.topic
    errors = _Errors()
    _reject_unknown_keys(payload, {"role", "name"}, errors)
    role = payload.get("role")
    if role not in AssociationRole.values:
        errors.add("role", _("Choose producer or consumer."))
    if topic.state != RegistryState.ACTIVE:
        errors.add("topic", _("Topic %(topic)s is missing from its cluster.") % {"topic": topic.name})
    if topic.team_id is not None and (
        topic.team_id == application.team_id or topic.team_id in access.team_ids(application.applicant)
    ):
        errors.add("topic", _("Your team owns %(topic)s; no association is needed.") % {"topic": topic.name})
    elif role in AssociationRole.values:
        if TopicAssociation.objects.filter(topic=topic, user=application.applicant, role=role).exists():
            errors.add(
                "role",
                _("You are already associated with %(topic)s as %(role)s.")
                % {
                    "topic": topic.name,
                    "role": AssociationRole(role).label,
                },
            )
        elif (
            Application.objects.filter(
                kind=ApplicationKind.TOPIC_ASSOCIATION,
                topic=topic,
                applicant=application.applicant,
                state=ApplicationState.PENDING,
                payload__role=role,
            )
            .exclude(pk=application.pk)
            .exists()
        ):
            errors.add("role", _("An application for this association is already pending."))
    errors.raise_if_any()
    return {"name": topic.name, "role": role}


# --- what approval does -------------------------------------------------------------------------------------------


def _act_topic_create(application: Application, payload: dict) -> None:
    """The topic, then its groups. A failure stops there, leaving what was created on the cluster (as a topic
    created on some masters only is left): every step is an upsert, so approving again completes it."""
    cluster_ops.create_topic(application.cluster, payload["name"], payload["queue_nums"], payload["ordered"])
    for group in payload.get("consumer_groups", []):
        _act_consumer_group_create(application, group)


def _act_topic_change(application: Application, payload: dict) -> None:
    topic = application.topic
    if "queue_nums" in payload:
        cluster_ops.create_topic(application.cluster, topic.name, payload["queue_nums"], topic.ordered)


def _act_topic_delete(application: Application, payload: dict) -> None:
    cluster_ops.delete_topic(application.cluster, application.topic.name)


def _act_consumer_group_create(application: Application, payload: dict) -> None:
    broadcasting = payload["message_model"] == MessageModel.BROADCASTING
    cluster_ops.create_subscription_group(application.cluster, payload["name"], broadcasting)


def _act_consumer_group_delete(application: Application, payload: dict) -> None:
    cluster_ops.delete_subscription_group(application.cluster, application.consumer_group.name)


def _registry_only(application: Application, payload: dict) -> None:
    """Producer groups and associations exist only in the registry (RocketMQ has no producer-group table)."""


def _new_entry(model, application: Application, payload: dict, fields: set[str]):
    """The new registry entry, or the unowned entry a racing sync imported for it (see _is_own_import)."""
    values = {key: payload[key] for key in fields}
    entry = model.objects.select_for_update().filter(cluster=application.cluster, name=payload["name"]).first()
    if entry is not None and not _is_own_import(entry, application):
        raise ValidationError({"name": _name_taken(model, application, payload["name"])})
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


def _created(by, entry) -> None:
    audit.record(by, f"{entry._meta.model_name}.created", entry, after=audit.snapshot(entry))


def _record_deletion(application: Application, payload: dict, by) -> None:
    """Delete the application's target (locked) and forget it on the application, as the database's SET NULL
    does for every other application about it."""
    field = KINDS[application.kind].target
    model = Application._meta.get_field(field).related_model
    entry = model.objects.select_for_update().get(pk=getattr(application, f"{field}_id"))
    audit.record(by, f"{entry._meta.model_name}.deleted", entry, before=audit.snapshot(entry))
    entry.delete()
    setattr(application, field, None)


def _record_topic_create(application: Application, payload: dict, by) -> None:
    fields = {"queue_nums", "ordered", "trace_enabled", "description"}
    application.topic = _new_entry(Topic, application, payload, fields)
    _created(by, application.topic)
    for group in payload.get("consumer_groups", []):
        subscriptions = [{"topic_id": application.topic.pk, "tag_expression": group["tag_expression"]}]
        _new_consumer_group(application, group, subscriptions, by)


def _record_topic_change(application: Application, payload: dict, by) -> None:
    topic = Topic.objects.select_for_update().get(pk=application.topic_id)
    before = audit.snapshot(topic)
    for key in ("queue_nums", "trace_enabled"):
        if key in payload:
            setattr(topic, key, payload[key])
    topic.save()
    audit.record(by, "topic.changed", topic, before=before, after=audit.snapshot(topic))


def _new_consumer_group(application: Application, payload: dict, subscriptions: list[dict], by) -> ConsumerGroup:
    """Record a consumer group the approval created, with exactly ``subscriptions`` (topic_id, tag_expression)."""
    group = _new_entry(ConsumerGroup, application, payload, {"message_model", "description"})
    group.subscriptions.all().delete()
    Subscription.objects.bulk_create(
        [
            Subscription(consumer_group=group, topic_id=sub["topic_id"], tag_expression=sub["tag_expression"])
            for sub in subscriptions
        ]
    )
    _created(by, group)
    return group


def _record_consumer_group_create(application: Application, payload: dict, by) -> None:
    application.consumer_group = _new_consumer_group(application, payload, payload["subscriptions"], by)


def _record_producer_group_create(application: Application, payload: dict, by) -> None:
    group = _new_entry(ProducerGroup, application, payload, {"description"})
    group.topics.set(payload["topic_ids"])
    application.producer_group = group
    _created(by, group)


def _record_topic_association(application: Application, payload: dict, by) -> None:
    association = TopicAssociation.objects.create(
        topic=application.topic, user=application.applicant, role=payload["role"]
    )
    audit.record(by, "topicassociation.created", association, after=audit.snapshot(association))


@dataclass(frozen=True)
class _Kind:
    """How one kind of application is validated (``clean``: payload -> normalized payload, ValidationError),
    carried out on the cluster (``act``, outside any transaction) and recorded in the registry (``record``)."""

    target: str | None  # the foreign key naming what a change, deletion or association is about
    deletion: bool
    clean: Callable[[Application, dict], dict]
    act: Callable[[Application, dict], None]
    record: Callable[[Application, dict, object], None]


KINDS = {
    ApplicationKind.TOPIC_CREATE: _Kind(None, False, _clean_topic_create, _act_topic_create, _record_topic_create),
    ApplicationKind.TOPIC_CHANGE: _Kind("topic", False, _clean_topic_change, _act_topic_change, _record_topic_change),
    ApplicationKind.TOPIC_DELETE: _Kind("topic", True, _clean_topic_delete, _act_topic_delete, _record_deletion),
    ApplicationKind.CONSUMER_GROUP_CREATE: _Kind(
        None, False, _clean_consumer_group_create, _act_consumer_group_create, _record_consumer_group_create
    ),
    ApplicationKind.CONSUMER_GROUP_DELETE: _Kind(
        "consumer_group", True, _clean_target_delete, _act_consumer_group_delete, _record_deletion
    ),
    ApplicationKind.PRODUCER_GROUP_CREATE: _Kind(
        None, False, _clean_producer_group_create, _registry_only, _record_producer_group_create
    ),
    ApplicationKind.PRODUCER_GROUP_DELETE: _Kind(
        "producer_group", True, _clean_target_delete, _registry_only, _record_deletion
    ),
    ApplicationKind.TOPIC_ASSOCIATION: _Kind(
        "topic", False, _clean_topic_association, _registry_only, _record_topic_association
    ),
}


def _target(application: Application):
    return getattr(application, KINDS[application.kind].target)


# --- notifications ------------------------------------------------------------------------------------------------


def _subject(application: Application):
    return format_lazy(
        _("application #{id} ({kind}: {name})"),
        id=application.pk,
        kind=ApplicationKind(application.kind).label,
        name=application.subject_name,
    )


def _notify_deciders(application: Application) -> None:
    """Portal admins decide every application; a topic's team admins also decide associations with their topic."""
    deciders = get_user_model().objects.filter(is_staff=True, is_active=True)
    if application.kind == ApplicationKind.TOPIC_ASSOCIATION and application.topic.team_id is not None:
        deciders = get_user_model().objects.filter(
            Q(is_staff=True) | Q(memberships__team=application.topic.team_id, memberships__role=TeamRole.ADMIN),
            is_active=True,
        )
    title = format_lazy(_("New {subject} by {user}"), subject=_subject(application), user=application.applicant)
    for user in deciders.distinct():
        if user.pk != application.applicant_id:
            notifications.notify(user, title, application.reason, application.get_absolute_url())


def _notify_applicant(application: Application, title, body="") -> None:
    notifications.notify(application.applicant, title, body, application.get_absolute_url())


# --- the state machine --------------------------------------------------------------------------------------------


def submit(
    applicant,
    *,
    kind,
    team,
    cluster,
    payload: dict,
    reason: str = "",
    topic=None,
    consumer_group=None,
    producer_group=None,
) -> Application:
    """File an application for ``team``. Raises ValidationError with a message_dict keyed by payload field (or
    ``kind``, ``team``, ``cluster``, ``topic``, ``__all__``), or PermissionDenied if the applicant may not ask for
    this on the team's behalf (deletions need a team admin)."""
    if kind not in KINDS:
        raise ValidationError({"kind": _("Unknown kind of application.")})
    spec = KINDS[kind]
    if team is None:
        raise ValidationError({"team": _("Choose the team you apply for.")})
    may_apply = access.can_apply_deletion_for if spec.deletion else access.can_apply_for
    if not may_apply(applicant, team):
        raise PermissionDenied
    targets = {"topic": topic, "consumer_group": consumer_group, "producer_group": producer_group}
    target = targets[spec.target] if spec.target else None
    if spec.target and target is None:
        raise ValidationError({spec.target: _("Choose what the application is about.")})
    if target is not None:
        if kind != ApplicationKind.TOPIC_ASSOCIATION:
            if not access.can_change(applicant, target):
                raise PermissionDenied
            if target.team_id != team.pk:
                raise ValidationError({"team": _("%(name)s is owned by another team.") % {"name": target.name}})
        if cluster is None:
            cluster = target.cluster
        elif cluster.pk != target.cluster_id:
            raise ValidationError({"cluster": _("%(name)s is on another cluster.") % {"name": target.name}})
    if cluster is None:
        raise ValidationError({"cluster": _("Choose a cluster.")})
    application = Application(
        kind=kind,
        applicant=applicant,
        team=team,
        cluster=cluster,
        reason=(reason or "").strip(),
        **{name: value for name, value in targets.items() if name == spec.target},
    )
    # Associations are per applicant and role: their clean checks for a pending duplicate.
    if target is not None and kind != ApplicationKind.TOPIC_ASSOCIATION:
        duplicate = Application.objects.filter(kind=kind, state=ApplicationState.PENDING, **{spec.target: target})
        if duplicate.exists():
            raise ValidationError(
                {
                    NON_FIELD_ERRORS: _("An application of this kind for %(name)s is already pending.")
                    % {"name": target.name}
                }
            )
    application.payload = spec.clean(application, dict(payload or {}))
    with transaction.atomic():
        application.save()
        audit.record(applicant, "application.submitted", application, after=audit.snapshot(application))
        _notify_deciders(application)
    return application


def _why_not_pending(application: Application) -> str:
    if application.is_pending:
        return _("Application #%(id)s is being approved right now.") % {"id": application.pk}
    return _("Application #%(id)s is no longer pending (%(state)s).") % {
        "id": application.pk,
        "state": application.get_state_display(),
    }


def _check_open(application: Application) -> None:
    """Refresh the caller's instance and refuse if it is no longer open for a decision."""
    application.refresh_from_db()
    if not application.is_pending or application.is_processing:
        raise InvalidTransition(_why_not_pending(application))


def _unclaimed(now) -> Q:
    return Q(claim_token="") | Q(claimed_at__lt=now - CLAIM_TIMEOUT)


def _claim(application: Application) -> str:
    """Claim the application for this approval; returns the claim's token. Raises InvalidTransition if it is no
    longer pending or another approval holds it. Outside a transaction (how views and tasks call it) the claim is
    committed at once, which is what makes it visible to a concurrent approval."""
    token = uuid.uuid4().hex
    now = timezone.now()
    claimed = Application.objects.filter(_unclaimed(now), pk=application.pk, state=ApplicationState.PENDING).update(
        claim_token=token, claimed_at=now, attempts=F("attempts") + 1, updated_at=now
    )
    if not claimed:
        application.refresh_from_db()
        raise InvalidTransition(_why_not_pending(application))
    return token


def _error_text(exc: BaseException) -> str:
    if isinstance(exc, ValidationError):
        return " ".join(str(message) for message in exc.messages)
    return str(exc) or type(exc).__name__


def _give_back(application: Application, token: str, exc: BaseException, by) -> None:
    """The approval failed: release the claim, keep the error on the application, audit the attempt."""
    error = _error_text(exc)
    with transaction.atomic():
        released = Application.objects.filter(pk=application.pk, claim_token=token).update(
            claim_token="", claimed_at=None, last_error=error, updated_at=timezone.now()
        )
        application.refresh_from_db()
        if released:
            audit.record(by, "application.approval_failed", application, note=error)


def approve(application: Application, *, by, reason: str = "") -> Application:
    """Approve: claim, act on the cluster, record. Raises InvalidTransition (not pending, or being approved),
    PermissionDenied, ValidationError (the request is no longer valid: reject it) or ClusterOperationError (the
    cluster call failed); in the last two cases the application stays pending with ``last_error`` set."""
    _check_open(application)
    if not access.can_decide(by, application):
        raise PermissionDenied
    spec = KINDS[application.kind]
    token = _claim(application)
    try:
        if spec.target and _target(application) is None:
            raise ValidationError(
                {NON_FIELD_ERRORS: _("%(name)s no longer exists.") % {"name": application.subject_name}}
            )
        payload = spec.clean(application, dict(application.payload))
        spec.act(application, payload)
        with transaction.atomic():
            _finish_approval(application, token, payload, by, (reason or "").strip())
    except BaseException as exc:
        _give_back(application, token, exc, by)
        raise
    return application


def _finish_approval(application: Application, token: str, payload: dict, by, reason: str) -> None:
    locked = Application.objects.select_for_update().get(pk=application.pk)
    if locked.claim_token != token or locked.state != ApplicationState.PENDING:
        raise InvalidTransition(_("The approval of application #%(id)s was taken over.") % {"id": application.pk})
    before = audit.snapshot(locked)
    KINDS[locked.kind].record(locked, payload, by)
    now = timezone.now()
    locked.payload = payload
    locked.state = ApplicationState.APPROVED
    locked.decided_by = by
    locked.decided_at = now
    locked.decision_reason = reason
    locked.last_error = ""
    locked.claim_token = ""
    locked.claimed_at = None
    locked.save()
    audit.record(by, "application.approved", locked, before=before, after=audit.snapshot(locked), note=reason)
    _notify_applicant(locked, format_lazy(_("Approved: {subject}"), subject=_subject(locked)), reason)
    application.refresh_from_db()


def _close(application: Application, state: str, *, by, reason: str, action: str) -> Application:
    """Reject or cancel: one conditional UPDATE, so it cannot overtake an approval under way."""
    with transaction.atomic():
        before = audit.snapshot(application)
        now = timezone.now()
        closed = Application.objects.filter(_unclaimed(now), pk=application.pk, state=ApplicationState.PENDING).update(
            state=state, decided_by=by, decided_at=now, decision_reason=reason, updated_at=now
        )
        application.refresh_from_db()
        if not closed:
            raise InvalidTransition(_why_not_pending(application))
        audit.record(by, action, application, before=before, after=audit.snapshot(application), note=reason)
    return application


def reject(application: Application, *, by, reason: str) -> Application:
    """Reject with a reason (ValidationError on ``reason`` without one); the applicant is notified."""
    _check_open(application)
    if not access.can_decide(by, application):
        raise PermissionDenied
    reason = (reason or "").strip()
    if not reason:
        raise ValidationError({"reason": _("Say why the application is rejected.")})
    with transaction.atomic():
        _close(application, ApplicationState.REJECTED, by=by, reason=reason, action="application.rejected")
        _notify_applicant(application, format_lazy(_("Rejected: {subject}"), subject=_subject(application)), reason)
    return application


def cancel(application: Application, *, by) -> Application:
    """The applicant withdraws a pending application; anyone else, a portal admin included, is refused
    (PermissionDenied) and rejects it instead, saying why."""
    _check_open(application)
    if not access.can_cancel(by, application):
        raise PermissionDenied
    return _close(application, ApplicationState.CANCELLED, by=by, reason="", action="application.cancelled")
