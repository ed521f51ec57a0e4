"""Checks the message and consumer-group operations share: points in time, offset message ids, the topics a group
is registered as consuming, and the record every operation leaves in the audit log."""

from __future__ import annotations

import datetime as dt

from django.utils import timezone
from django.utils.dateparse import parse_datetime
from django.utils.translation import gettext_lazy as _

from portal.models import Application, Subscription
from portal.models.validation import validate_topic_name
from portal.services import audit
from portal.services.applications.checks import Errors, reject_unknown_keys

# "Reset to the newest message": skip the whole backlog.
NEWEST = "newest"
# How many messages one application may name (a bigger selection is a time range: re-delivery).
MAX_MSG_IDS = 1000
_HEX = frozenset("0123456789ABCDEF")
_OFFSET_ID_LENGTHS = (32, 56)  # IPv4, IPv6 store host


def clean_moment(value, field: str, errors: Errors, *, newest: bool = False) -> str | None:
    """An aware ISO 8601 time not in the future, normalized to UTC (or ``"newest"`` where allowed)."""
    if newest and value == NEWEST:
        return NEWEST
    moment = value if isinstance(value, dt.datetime) else parse_datetime(str(value or ""))
    if moment is None or timezone.is_naive(moment):
        hint = _(' or "newest"') if newest else ""
        errors.add(field, _("Give an ISO 8601 time with its time zone%(hint)s.") % {"hint": hint})
        return None
    if moment > timezone.now() + dt.timedelta(minutes=1):
        errors.add(field, _("That time is in the future."))
        return None
    return moment.astimezone(dt.UTC).isoformat()


def millis(moment: str) -> int:
    """Epoch milliseconds of a time :func:`clean_moment` normalized."""
    return int(dt.datetime.fromisoformat(moment).timestamp() * 1000)


def clean_msg_ids(value, field: str, errors: Errors) -> list[str]:
    """One to MAX_MSG_IDS offset message ids (what the message pages show), uppercase, each once."""
    if not isinstance(value, list) or not value:
        errors.add(field, _("Name at least one message (its offset message id)."))
        return []
    if len(value) > MAX_MSG_IDS:
        errors.add(field, _("At most %(max)d messages; re-deliver a time range instead.") % {"max": MAX_MSG_IDS})
        return []
    ids = []
    for raw in value:
        msg_id = str(raw).strip().upper()
        if len(msg_id) not in _OFFSET_ID_LENGTHS or not set(msg_id) <= _HEX:
            errors.add(field, _("%(value)r is not an offset message id.") % {"value": str(raw)[:80]})
        elif msg_id not in ids:
            ids.append(msg_id)
    return ids


def clean_consumed_topic(application: Application, value, field: str, errors: Errors) -> str | None:
    """A topic the application's consumer group is registered as subscribed to."""
    name = str(value or "").strip()
    errors.check(field, lambda: validate_topic_name(name, new=False))
    if field in errors.errors:
        return None
    group = application.consumer_group
    if not Subscription.objects.filter(consumer_group=group, topic__name=name).exists():
        errors.add(
            field,
            _("Consumer group %(group)s is not registered as subscribed to %(topic)s.")
            % {"group": group.name, "topic": name},
        )
        return None
    return name


def clean_no_payload(application: Application, payload: dict) -> dict:
    """Kinds that ask for nothing beyond their target (pause, resume, skip the retry backlog)."""
    errors = Errors()
    reject_unknown_keys(payload, set(), errors)
    errors.raise_if_any()
    return {}


def record_operation(action: str):
    """A ``record`` step that writes the operation's own audit entry (what was done to which group or topic, with
    its outcome), besides the application's approval."""

    def record(application: Application, payload: dict, by) -> None:
        target = application.consumer_group or application.topic
        audit.record(by, action, target, after={"payload": payload}, note=f"application #{application.pk}")

    return record
