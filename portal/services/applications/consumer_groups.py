"""Consumer-group applications: a new group with its subscriptions (created on every master as a subscription
group), and the deletion of one."""

from __future__ import annotations

from django.utils.translation import gettext_lazy as _

from portal.models import Application, ConsumerGroup, MessageModel, Origin, Subscription
from portal.services import cluster_ops
from portal.services.applications.checks import (
    Errors,
    check_active_topics,
    clean_tag_expression,
    clean_topic_id,
    reject_unknown_keys,
)
from portal.services.applications.entries import clean_entry, clean_new_name, created, new_entry


def clean_new_group(application: Application, payload: dict, errors: Errors) -> dict:
    """A new consumer group's own fields (``name``, ``message_model``, ``description``), whether asked for alone or
    with a new topic."""
    group = ConsumerGroup(
        cluster=application.cluster,
        team=application.team,
        origin=Origin.APPLIED,
        message_model=payload.get("message_model") or MessageModel.CLUSTERING,
        description=str(payload.get("description") or "").strip(),
    )
    group.name = clean_new_name(ConsumerGroup, application, payload, errors)
    clean_entry(group, errors)
    return {"name": group.name, "message_model": group.message_model, "description": group.description}


def clean_create(application: Application, payload: dict) -> dict:
    errors = Errors()
    reject_unknown_keys(payload, {"name", "message_model", "description", "subscriptions"}, errors)
    group = clean_new_group(application, payload, errors)
    subscriptions = []
    raw = payload.get("subscriptions")
    if not isinstance(raw, list) or not raw:
        errors.add("subscriptions", _("Subscribe to at least one topic."))
        raw = []
    for item in raw:
        if not isinstance(item, dict):
            errors.add("subscriptions", _("Each subscription names a topic_id and a tag_expression."))
            continue
        topic_id = clean_topic_id(item.get("topic_id"), "subscriptions", errors)
        if topic_id is None:
            continue
        if any(sub["topic_id"] == topic_id for sub in subscriptions):
            errors.add("subscriptions", _("Topic id %(id)s is subscribed twice.") % {"id": topic_id})
            continue
        expression = clean_tag_expression(item.get("tag_expression"), "subscriptions", errors)
        subscriptions.append({"topic_id": topic_id, "tag_expression": expression})
    check_active_topics(application, [sub["topic_id"] for sub in subscriptions], "subscriptions", errors)
    errors.raise_if_any()
    return {**group, "subscriptions": subscriptions}


def act_create(application: Application, payload: dict) -> None:
    broadcasting = payload["message_model"] == MessageModel.BROADCASTING
    cluster_ops.create_subscription_group(application.cluster, payload["name"], broadcasting)


def act_delete(application: Application, payload: dict) -> None:
    cluster_ops.delete_subscription_group(application.cluster, application.consumer_group.name)


def new_group(application: Application, payload: dict, subscriptions: list[dict], by) -> ConsumerGroup:
    """Record a consumer group the approval created, with exactly ``subscriptions`` (topic_id, tag_expression)."""
    group = new_entry(ConsumerGroup, application, payload, {"message_model", "description"})
    group.subscriptions.all().delete()
    Subscription.objects.bulk_create(
        [
            Subscription(consumer_group=group, topic_id=sub["topic_id"], tag_expression=sub["tag_expression"])
            for sub in subscriptions
        ]
    )
    created(by, group)
    return group


def record_create(application: Application, payload: dict, by) -> None:
    application.consumer_group = new_group(application, payload, payload["subscriptions"], by)
