"""Producer-group applications: a new group and the topics it sends to, kept in the registry only (RocketMQ has no
producer-group table)."""

from __future__ import annotations

from django.utils.translation import gettext_lazy as _

from portal.models import Application, Origin, ProducerGroup
from portal.services.applications.checks import Errors, check_active_topics, clean_topic_id, reject_unknown_keys
from portal.services.applications.entries import clean_entry, clean_new_name, created, new_entry


def clean_create(application: Application, payload: dict) -> dict:
    errors = Errors()
    reject_unknown_keys(payload, {"name", "description", "topic_ids"}, errors)
    group = ProducerGroup(
        cluster=application.cluster,
        team=application.team,
        origin=Origin.APPLIED,
        description=str(payload.get("description") or "").strip(),
    )
    group.name = clean_new_name(ProducerGroup, application, payload, errors)
    clean_entry(group, errors)
    raw = payload.get("topic_ids", [])
    if not isinstance(raw, list):
        errors.add("topic_ids", _("Give a list of topic ids."))
        raw = []
    ids = list(dict.fromkeys(i for i in (clean_topic_id(value, "topic_ids", errors) for value in raw) if i is not None))
    check_active_topics(application, ids, "topic_ids", errors)
    errors.raise_if_any()
    return {"name": group.name, "description": group.description, "topic_ids": ids}


def record_create(application: Application, payload: dict, by) -> None:
    group = new_entry(ProducerGroup, application, payload, {"description"})
    group.topics.set(payload["topic_ids"])
    application.producer_group = group
    created(by, group)
