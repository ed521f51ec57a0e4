"""Topic applications: create (optionally with the consumer groups that will read it), change (queue count, trace)
and delete, each validated, carried out on the cluster and recorded in the registry.

Lowering a topic's queue count is allowed: RocketMQ's updateTopic does it, and read and write queue counts change
together, so messages still waiting in the removed queues are no longer delivered; the approver decides whether the
topic is drained. A topic's order flag cannot be changed (the queue count of an ordered topic can).
"""

from __future__ import annotations

from django.core.exceptions import NON_FIELD_ERRORS, ValidationError
from django.utils.translation import gettext_lazy as _

from portal.models import Application, Origin, RegistryState, Topic
from portal.services import audit, cluster_ops
from portal.services.applications import consumer_groups
from portal.services.applications.checks import Errors, clean_tag_expression, reject_unknown_keys
from portal.services.applications.entries import clean_entry, clean_new_name, created, new_entry

# Each group is one call per master during the approval, which must finish well within its claim (CLAIM_TIMEOUT).
MAX_GROUPS_WITH_A_TOPIC = 20


def clean_create(application: Application, payload: dict) -> dict:
    """A new topic, optionally with the consumer groups that will read it (``consumer_groups``, see
    :func:`_clean_groups`); the key is kept only when groups are asked for."""
    errors = Errors()
    reject_unknown_keys(
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
    topic.name = clean_new_name(Topic, application, payload, errors)
    clean_entry(topic, errors)
    groups = _clean_groups(application, payload.get("consumer_groups", []), errors)
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


def _clean_groups(application: Application, raw, errors: Errors) -> list[dict]:
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
        group_errors = Errors()
        reject_unknown_keys(item, {"name", "message_model", "description", "tag_expression"}, group_errors)
        group = consumer_groups.clean_new_group(application, item, group_errors)
        group["tag_expression"] = clean_tag_expression(item.get("tag_expression"), "tag_expression", group_errors)
        if group["name"] and any(other["name"] == group["name"] for other in groups):
            group_errors.add("name", _("This group is asked for twice."))
        label = group["name"] or _("Group %(number)s") % {"number": number}
        for key, messages in group_errors.errors.items():
            where = label if key in ("name", NON_FIELD_ERRORS) else f"{label}, {key}"
            for message in messages:
                errors.add("consumer_groups", f"{where}: {message}")
        groups.append(group)
    return groups


def clean_change(application: Application, payload: dict) -> dict:
    topic = application.topic
    errors = Errors()
    changes = {key: value for key, value in payload.items() if key != "name"}
    reject_unknown_keys(changes, {"queue_nums", "trace_enabled"}, errors)
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


def clean_delete(application: Application, payload: dict) -> dict:
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


def act_create(application: Application, payload: dict) -> None:
    """The topic, then its groups. A failure stops there, leaving what was created on the cluster (as a topic
    created on some masters only is left): every step is an upsert, so approving again completes it."""
    cluster_ops.create_topic(application.cluster, payload["name"], payload["queue_nums"], payload["ordered"])
    for group in payload.get("consumer_groups", []):
        consumer_groups.act_create(application, group)


def act_change(application: Application, payload: dict) -> None:
    topic = application.topic
    if "queue_nums" in payload:
        cluster_ops.create_topic(application.cluster, topic.name, payload["queue_nums"], topic.ordered)


def act_delete(application: Application, payload: dict) -> None:
    cluster_ops.delete_topic(application.cluster, application.topic.name)


def record_create(application: Application, payload: dict, by) -> None:
    fields = {"queue_nums", "ordered", "trace_enabled", "description"}
    application.topic = new_entry(Topic, application, payload, fields)
    created(by, application.topic)
    for group in payload.get("consumer_groups", []):
        subscriptions = [{"topic_id": application.topic.pk, "tag_expression": group["tag_expression"]}]
        consumer_groups.new_group(application, group, subscriptions, by)


def record_change(application: Application, payload: dict, by) -> None:
    topic = Topic.objects.select_for_update().get(pk=application.topic_id)
    before = audit.snapshot(topic)
    for key in ("queue_nums", "trace_enabled"):
        if key in payload:
            setattr(topic, key, payload[key])
    topic.save()
    audit.record(by, "topic.changed", topic, before=before, after=audit.snapshot(topic))
