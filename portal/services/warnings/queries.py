"""Which warnings the pages and the API show: those of one subject (a topic, a group, a broker, a server), the ones
overlapping a chart's time range, and a warning's deliveries. Read-only; who may see what is ``portal.access``'s
(:func:`portal.access.visible_warnings`), every function here starts from it.

A warning is matched to its subject by the registry link the lifecycle sets (``topic``, ``consumer_group``, ...) or
by the (cluster, subject type, subject name) it was raised for, so warnings raised before the registry knew the
entry still show on its page."""

from __future__ import annotations

import datetime as dt

from django.db.models import Case, IntegerField, Q, QuerySet, Value, When

from portal import access
from portal.models import Broker, ConsumerGroup, ProducerGroup, Topic
from portal.models.warnings import (
    Channel,
    Delivery,
    SubjectType,
    ThresholdScope,
    Warning,
    WarningKind,
    WarningState,
    WarningSubscription,
    WarningThreshold,
    is_cluster_kind,
)

# What "recent" means for a subject's list: resolved within this long, and at most this many rows in all.
RECENT = dt.timedelta(days=7)
SUBJECT_ROWS = 20

_ENTRY_SUBJECT = {
    Topic: ("topic", SubjectType.TOPIC),
    ConsumerGroup: ("consumer_group", SubjectType.CONSUMER_GROUP),
    ProducerGroup: ("producer_group", SubjectType.PRODUCER_GROUP),
}


def about(subject) -> Q:
    """The warnings of ``subject``: a Topic, ConsumerGroup, ProducerGroup or Broker, or a server's host name (a
    str). A broker's are those of its broker name (the master/slave pair, e.g. "broker-a") and of the one instance
    ("broker-a@1"). Only warnings *of* the subject: a group's warning that also links the topic it lags on is the
    group's."""
    if isinstance(subject, str):
        return Q(subject_type=SubjectType.SERVER) & (Q(host=subject) | Q(subject_name=subject))
    if isinstance(subject, Broker):
        names = [subject.broker_name, f"{subject.broker_name}@{subject.broker_id}"]
        named = Q(cluster_id=subject.cluster_id, subject_name__in=names)
        return Q(subject_type=SubjectType.BROKER) & (Q(broker=subject) | named)
    field, subject_type = _ENTRY_SUBJECT[type(subject)]
    named = Q(cluster_id=subject.cluster_id, subject_name=subject.name)
    return Q(subject_type=subject_type) & (Q(**{field: subject}) | named)


def visible(user) -> QuerySet[Warning]:
    """The user's visible warnings with what a list shows of each (cluster, who acknowledged)."""
    return access.visible_warnings(user).select_related("cluster", "acknowledged_by")


def open_first(warnings: QuerySet[Warning]) -> QuerySet[Warning]:
    """Open warnings first, then the rest; newest first within each."""
    is_open = Case(When(state=WarningState.OPEN, then=Value(0)), default=Value(1), output_field=IntegerField())
    return warnings.annotate(resolved_last=is_open).order_by("resolved_last", "-opened_at", "-id")


def of_subject(user, subject, now: dt.datetime) -> list[Warning]:
    """A subject's page list: its open warnings and those resolved in the last :data:`RECENT`, open first."""
    recent = Q(state=WarningState.OPEN) | Q(resolved_at__gte=now - RECENT)
    return list(open_first(visible(user).filter(about(subject)).filter(recent))[:SUBJECT_ROWS])


def in_range(user, subject, since: dt.datetime, until: dt.datetime) -> list[Warning]:
    """The subject's warnings that were open at some moment of [since, until] (shaded on its charts), oldest
    first."""
    overlapping = Q(opened_at__lte=until) & (Q(resolved_at__isnull=True) | Q(resolved_at__gte=since))
    return list(visible(user).filter(about(subject)).filter(overlapping).order_by("opened_at", "id"))


def deliveries(user, warning: Warning) -> QuerySet[Delivery]:
    """The deliveries of the warning's events the user may see (their own; everyone's for portal admins)."""
    rows = Delivery.objects.filter(event__warning=warning).select_related("event", "user", "channel")
    if not access.can_see_all_deliveries(user):
        rows = rows.filter(user=user)
    return rows.order_by("-attempted_at", "-id")


def overrides_of(entry) -> dict[str, dict]:
    """The parameters a topic's or group's owning team overrides, by warning type."""
    field, _subject_type = _ENTRY_SUBJECT[type(entry)]
    rows = WarningThreshold.objects.filter(scope=field, **{field: entry})
    return {row.kind: row.params for row in rows}


def defaults() -> dict[str, dict]:
    """The parameters portal admins set for every subject, by warning type (the rest are built in)."""
    return {row.kind: row.params for row in WarningThreshold.objects.filter(scope=ThresholdScope.DEFAULT)}


def subscribable_kinds(user) -> list[str]:
    """The warning types a user chooses channels for: those of topics and groups, and for portal admins also the
    cluster machinery's (which only they hear about)."""
    admin = access.is_portal_admin(user)
    return [kind for kind in WarningKind.values if admin or not is_cluster_kind(kind)]


def chosen_channels(user, kinds: list[str], defaults: list[Channel]) -> tuple[dict[str, set[int]], set[str]]:
    """The channel ids each of ``kinds`` tells the user through now, and the kinds on the ``defaults`` (the user
    chose nothing for them)."""
    chosen: dict[str, set[int]] = {}
    for subscription in WarningSubscription.objects.filter(user=user, kind__in=kinds).prefetch_related("channels"):
        chosen[subscription.kind] = {channel.pk for channel in subscription.channels.all()}
    by_default = {kind for kind in kinds if kind not in chosen}
    for kind in by_default:
        chosen[kind] = {channel.pk for channel in defaults}
    return chosen, by_default
