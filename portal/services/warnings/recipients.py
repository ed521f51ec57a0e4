"""Who hears about a warning, and through which channels.

The audience (before anyone's choices):

- a topic's warnings: the members of the topic's owning team and the users associated with the topic (its
  producers and consumers from other teams, ``TopicAssociation``);
- a consumer group's or producer group's warnings: the members of the group's owning team;
- the cluster machinery's (name servers, brokers, slaves, servers): portal admins;
- portal admins also hear any other warning kind they have explicitly subscribed to (channels chosen for it).

This is the same set of people ``portal.access.own_warnings`` lists the warning for. Then each user's choice for the
warning's kind decides the channels: their ``WarningSubscription`` row if they have one (no channels = not at all),
else the defaults (in-app + e-mail). A user who muted the subject (for this kind or all kinds) until later hears
nothing. Nobody else hears anything; inactive accounts never do.
"""

from __future__ import annotations

import dataclasses
import datetime as dt

from django.contrib.auth import get_user_model
from django.db.models import Q

from portal import access
from portal.models import TopicAssociation
from portal.models.warnings import (
    Channel,
    Mute,
    SubjectType,
    Warning,
    WarningSubscription,
    is_cluster_kind,
)
from portal.services.warnings.channels import default_channels


@dataclasses.dataclass
class Recipient:
    user: object
    channels: list[Channel]


def audience(warning: Warning) -> list:
    """The active users the warning concerns, by id (see the module docstring)."""
    users = get_user_model().objects.filter(is_active=True)
    if is_cluster_kind(warning.kind):
        concerned = Q(is_staff=True)
    else:
        entry = access.warning_entry(warning)
        concerned = Q(pk__in=[])
        if entry is not None and entry.team_id is not None:
            concerned |= Q(memberships__team_id=entry.team_id)
        if warning.subject_type == SubjectType.TOPIC and entry is not None:
            concerned |= Q(pk__in=TopicAssociation.objects.filter(topic=entry).values("user_id"))
        subscribed = WarningSubscription.objects.filter(kind=warning.kind, channels__isnull=False)
        concerned |= Q(is_staff=True, pk__in=subscribed.values("user_id"))
    return list(users.filter(concerned).distinct().order_by("pk"))


def muted_user_ids(warning: Warning, now: dt.datetime) -> set[int]:
    return set(
        Mute.objects.filter(
            cluster_id=warning.cluster_id,
            subject_type=warning.subject_type,
            subject_name=warning.subject_name,
            until__gt=now,
        )
        .filter(Q(kind="") | Q(kind=warning.kind))
        .values_list("user_id", flat=True)
    )


def recipients(warning: Warning, now: dt.datetime) -> list[Recipient]:
    """Who to tell about ``warning`` at ``now``, each with the channels to use (disabled ones included: delivery
    records them as skipped, so the user can see why nothing arrived)."""
    users = audience(warning)
    muted = muted_user_ids(warning, now)
    subscriptions = {
        subscription.user_id: subscription
        for subscription in WarningSubscription.objects.filter(
            user__in=[user.pk for user in users], kind=warning.kind
        ).prefetch_related("channels")
    }
    result = []
    for user in users:
        if user.pk in muted:
            continue
        subscription = subscriptions.get(user.pk)
        if subscription is None:
            channels = default_channels(user)
        else:
            channels = sorted(
                (channel for channel in subscription.channels.all() if channel.owner_id == user.pk),
                key=lambda channel: channel.pk,
            )
        if channels:
            result.append(Recipient(user, channels))
    return result
