"""What a warning event says, rendered for one recipient: in their language and time zone, with a link to the
warning's page.

The generic JSON webhook receives ``Message.payload`` (version 1), for example::

    {
      "version": 1,
      "event": {"id": 42, "transition": "fired", "at": "2026-11-22T07:15:00+00:00"},
      "warning": {
        "id": 7, "kind": "consumer_lag", "kind_label": "consumer lag", "cluster": "prod",
        "subject_type": "consumer_group", "subject_name": "order-consumer", "topic": "orders",
        "severity": "warning", "state": "open", "opened_at": "2026-11-22T07:15:00+00:00", "resolved_at": null,
        "acknowledged_by": null, "summary": "order-consumer is 52,000 messages behind on orders; ...",
        "details": {...the rule's numbers...}, "url": "https://mqcloud.example.com/warnings/7/"
      },
      "recipient": {"username": "alice", "language": "en"}
    }

``transition`` is fired | repeated | resolved; times are ISO 8601 in UTC; ``details`` is the condition snapshot of
this event (for ``resolved``, the last one seen); ``topic`` is null when the subject is not tied to one topic.
``summary`` is worded from ``details`` for the recipient, like every other channel's text: in their language
(``recipient.language``) and with times of day in their time zone; the labels stay English, for machines.
"""

from __future__ import annotations

import datetime as dt
import zoneinfo

from django.conf import settings
from django.urls import reverse
from django.utils import timezone, translation
from django.utils.translation import gettext as _g

from portal.models import UserProfile
from portal.models.warnings import Severity, Transition, WarningEvent
from portal.services.notifications import language_of
from portal.services.warnings import summaries
from portal.services.warnings.channels.base import Message

PAYLOAD_VERSION = 1


def _zone_of(user) -> zoneinfo.ZoneInfo:
    name = UserProfile.objects.filter(user=user).values_list("time_zone", flat=True).first() or "UTC"
    try:
        return zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        return zoneinfo.ZoneInfo("UTC")


def _shown(moment: dt.datetime | None, zone: zoneinfo.ZoneInfo) -> str:
    return moment.astimezone(zone).strftime("%Y-%m-%d %H:%M %Z") if moment else ""


def _iso(moment: dt.datetime | None) -> str | None:
    return moment.astimezone(dt.UTC).isoformat() if moment else None


def _severity_label(value: str) -> str:
    return str(Severity(value).label) if value in Severity.values else value


def payload(event: WarningEvent, user, link: str, summary: str, language: str) -> dict:
    """The generic webhook's document (see the module docstring): ``summary`` as worded for ``user`` (in
    ``language``); labels in English, for machines."""
    with translation.override("en"):
        kind_label = str(event.warning.get_kind_display())
    warning = event.warning
    details = event.snapshot.get("details", {})
    topic = warning.topic.name if warning.topic else details.get("topic") if isinstance(details, dict) else None
    return {
        "version": PAYLOAD_VERSION,
        "event": {"id": event.pk, "transition": event.transition, "at": _iso(event.at)},
        "warning": {
            "id": warning.pk,
            "kind": warning.kind,
            "kind_label": kind_label,
            "cluster": warning.cluster.name,
            "subject_type": warning.subject_type,
            "subject_name": warning.subject_name,
            "topic": topic if isinstance(topic, str) else None,
            "severity": event.snapshot.get("severity", warning.severity),
            "state": warning.state,
            "opened_at": _iso(warning.opened_at),
            "resolved_at": _iso(warning.resolved_at),
            "acknowledged_by": warning.acknowledged_by.get_username() if warning.acknowledged_by else None,
            "summary": summary,
            "details": details,
            "url": link,
        },
        "recipient": {"username": user.get_username(), "language": language},
    }


def render(event: WarningEvent, user) -> Message:
    """``event`` as ``user`` should read it."""
    warning = event.warning
    zone = _zone_of(user)
    path = reverse("warning-detail", args=[warning.pk])
    link = f"{settings.PORTAL_BASE_URL}{path}"
    language = language_of(user)
    with translation.override(language), timezone.override(zone):
        summary = summaries.of_event(event)
        kind = str(warning.get_kind_display())
        headline = {
            Transition.FIRED: _g("Warning"),
            Transition.REPEATED: _g("Still going on"),
            Transition.RESOLVED: _g("Resolved"),
        }[event.transition]
        title = f"[{headline}] {kind}: {warning.subject_name} ({warning.cluster.name})"
        facts = [
            (_g("Cluster"), warning.cluster.name),
            (str(warning.get_subject_type_display()).capitalize(), warning.subject_name),
            (_g("Severity"), _severity_label(event.snapshot.get("severity", warning.severity))),
            (_g("Since"), _shown(warning.opened_at, zone)),
        ]
        if event.transition == Transition.RESOLVED:
            facts.append((_g("Resolved at"), _shown(event.at, zone)))
        if warning.acknowledged_by is not None:
            facts.append((_g("Acknowledged by"), warning.acknowledged_by.get_username()))
        link_label = _g("Open in MQCloud")
    return Message(
        title=title,
        summary=summary,
        facts=tuple((str(label), str(value)) for label, value in facts),
        path=path,
        link=link,
        link_label=link_label,
        transition=event.transition,
        payload=payload(event, user, link, summary, language),
    )


def test_message(user) -> Message:
    """What a channel's "test" button sends (the generic webhook gets ``{"version": 1, "test": true, ...}``)."""
    with translation.override(language_of(user)):
        title = _g("MQCloud test message")
        summary = _g("If you can read this, MQCloud can reach you through this channel.")
        link_label = _g("Open in MQCloud")
    link = f"{settings.PORTAL_BASE_URL}/"
    return Message(
        title=title,
        summary=summary,
        facts=(),
        path="/",
        link=link,
        link_label=link_label,
        transition="test",
        payload={
            "version": PAYLOAD_VERSION,
            "test": True,
            "summary": summary,
            "recipient": {"username": user.get_username()},
        },
    )
