"""How the pages show stored data as text: what an application asks for, and what an audit entry changed. Shared
by the business pages and the admin pages, which show the same applications and entries."""

import json

from django.utils import timezone
from django.utils.dateparse import parse_datetime
from django.utils.formats import date_format
from django.utils.translation import gettext as _

from portal.models import ApplicationKind, AssociationRole, MessageModel, Topic


def _yes_no(value) -> str:
    return _("yes") if value else _("no")


def topic_names(applications) -> dict[int, str]:
    """Names of the topics the applications' payloads refer to by id, in one query (for :func:`describe_payload`)."""
    ids = set()
    for application in applications:
        payload = application.payload or {}
        ids.update(row.get("topic_id") for row in payload.get("subscriptions", []))
        ids.update(payload.get("topic_ids", []))
    return dict(Topic.objects.filter(pk__in=ids).values_list("pk", "name"))


def describe_payload(application, names: dict[int, str]) -> list[tuple[str, str]]:
    """What the application asks for as (label, text) rows; a pending change shows "current → requested".
    ``names`` are the referenced topics' names (:func:`topic_names`)."""
    payload = application.payload or {}
    rows = []
    if application.kind == ApplicationKind.TOPIC_CHANGE and application.topic and application.is_pending:
        current = application.topic
        if "queue_nums" in payload:
            rows.append((_("Queue count"), f"{current.queue_nums} → {payload['queue_nums']}"))
        if "trace_enabled" in payload:
            rows.append((_("Message trace"), f"{_yes_no(current.trace_enabled)} → {_yes_no(payload['trace_enabled'])}"))
        return rows
    if "name" in payload and application.kind.endswith("_create"):
        rows.append((_("Name"), payload["name"]))
    if "queue_nums" in payload:
        rows.append((_("Queue count"), str(payload["queue_nums"])))
    if "ordered" in payload:
        rows.append((_("Ordered"), _yes_no(payload["ordered"])))
    if "trace_enabled" in payload:
        rows.append((_("Message trace"), _yes_no(payload["trace_enabled"])))
    if "message_model" in payload:
        rows.append((_("Message model"), str(MessageModel(payload["message_model"]).label)))
    if "subscriptions" in payload:
        subscriptions = [
            f"{names.get(row.get('topic_id'), row.get('topic_id'))} ({row.get('tag_expression', '*')})"
            for row in payload["subscriptions"]
        ]
        rows.append((_("Subscriptions"), ", ".join(subscriptions)))
    if application.requested_consumer_groups:
        groups = []
        for group in application.requested_consumer_groups:
            model = MessageModel(group["message_model"]).label
            line = _("%(name)s (%(model)s, tags: %(tags)s)") % {
                "name": group["name"],
                "model": model,
                "tags": group["tag_expression"],
            }
            groups.append(f"{line}: {group['description']}" if group["description"] else line)
        rows.append((_("Consumer groups"), "\n".join(groups)))
    if "topic_ids" in payload:
        rows.append((_("Topics"), ", ".join(str(names.get(pk, pk)) for pk in payload["topic_ids"])))
    if "role" in payload:
        rows.append((_("Role"), str(AssociationRole(payload["role"]).label)))
    if application.kind == ApplicationKind.TOPIC_ASSOCIATION and application.topic:
        rows.append((_("Topic owned by"), str(application.topic.team or _("nobody (unowned)"))))
    if payload.get("description"):
        rows.append((_("Description"), payload["description"]))
    return rows


def _shown(value) -> str:
    """A snapshot value as text: JSON for structures, timestamps in the viewer's time zone, "—" for nothing."""
    if isinstance(value, dict | list):
        return json.dumps(value, ensure_ascii=False, sort_keys=True)
    if value is None or value == "":
        return "—"
    moment = parse_datetime(value) if isinstance(value, str) else None
    if moment is not None and timezone.is_aware(moment):
        return date_format(timezone.localtime(moment), "Y-m-d H:i:s")
    return str(value)


def changed_values(before, after) -> list[tuple[str, str, str]]:
    """The keys whose values differ between two audit snapshots, as (key, before, after) texts; a creation or
    deletion shows every key that has a value on its one side."""
    before, after = before or {}, after or {}
    rows = [(key, _shown(before.get(key)), _shown(after.get(key))) for key in sorted(set(before) | set(after))]
    return [row for row in rows if row[1] != row[2]]
