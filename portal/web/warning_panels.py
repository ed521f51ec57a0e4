"""What a topic, group, broker or server page shows of its warnings: the open and recent ones
(``templates/portal/warnings/_subject_warnings.html``), the ones overlapping the charted range (shaded on its charts
by :func:`portal.web.monitoring.warning_spans`), and links to all of them, to muting the subject and (for its owning
team) to its thresholds."""

from __future__ import annotations

import dataclasses
from urllib.parse import urlencode

from django.urls import reverse
from django.utils import timezone

from portal import access
from portal.models import Broker, ConsumerGroup, ProducerGroup, SubjectType, Topic, Warning
from portal.services.warnings import queries
from portal.web.monitoring import Window

# The list filter's parameter and the URLs' kind (as in ``portal.web.entries``) of each kind of registry entry.
_ENTRY_PARAMETER = {Topic: "topic", ConsumerGroup: "consumer_group", ProducerGroup: "producer_group"}
_ENTRY_KIND = {Topic: "topic", ConsumerGroup: "consumer-group", ProducerGroup: "producer-group"}


@dataclasses.dataclass(frozen=True)
class WarningPanel:
    in_range: list[Warning]
    context: dict


def _links(user, subject) -> dict:
    if isinstance(subject, str):
        return {"warnings_query": urlencode({"subject_type": SubjectType.SERVER, "q": subject})}
    if isinstance(subject, Broker):
        query = {"subject_type": SubjectType.BROKER, "cluster": subject.cluster_id, "q": subject.broker_name}
        return {"warnings_query": urlencode(query)}
    kind = _ENTRY_KIND[type(subject)]
    links = {
        "warnings_query": urlencode({_ENTRY_PARAMETER[type(subject)]: subject.pk}),
        "mute_url": reverse("mute-create", args=[kind, subject.pk]),
    }
    if access.can_change(user, subject):
        links["thresholds_url"] = reverse("entry-thresholds", args=[kind, subject.pk])
    return links


def warning_panel(user, subject, window: Window | None = None) -> WarningPanel:
    """``subject``: a Topic, ConsumerGroup, ProducerGroup, Broker, or a server's host name. ``window``: the charted
    range (None: the page has no charts)."""
    in_range = [] if window is None else queries.in_range(user, subject, window.since, window.until)
    context = {"subject_warnings": queries.of_subject(user, subject, timezone.now()), **_links(user, subject)}
    return WarningPanel(in_range, context)
