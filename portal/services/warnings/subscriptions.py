"""A user's choices: which channels each warning kind uses, and mutes of single subjects until a time.

What they mean for a delivery is ``recipients.py``'s; these functions only validate and store them.
"""

from __future__ import annotations

import datetime as dt

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from portal.models import Cluster
from portal.models.warnings import Channel, Mute, SubjectType, WarningKind, WarningSubscription

# The longest a mute may last; a forgotten mute must end by itself.
MAX_MUTE = dt.timedelta(days=90)


@transaction.atomic
def subscribe(user, kind: str, channels) -> WarningSubscription:
    """Tell ``user`` about ``kind`` through ``channels`` (their own channels; an empty list: not at all)."""
    if kind not in WarningKind.values:
        raise ValidationError({"kind": _("Unknown warning type.")})
    channels = list(channels)
    if any(channel.owner_id != user.pk for channel in channels):
        raise ValidationError({"channels": _("Choose among your own channels.")})
    subscription, _created = WarningSubscription.objects.get_or_create(user=user, kind=kind)
    subscription.channels.set(channels)
    subscription.save(update_fields=["updated_at"])
    return subscription


def reset(user, kind: str) -> None:
    """Back to the defaults for ``kind`` (in-app and e-mail for what the user owns or looks after)."""
    WarningSubscription.objects.filter(user=user, kind=kind).delete()


def mute(user, *, cluster: Cluster, subject_type: str, subject_name: str, until: dt.datetime, kind: str = "") -> Mute:
    """Silence one subject (a topic, a group, ...) for ``user`` until ``until`` (for one kind, or all kinds)."""
    now = timezone.now()
    errors = {}
    if subject_type not in SubjectType.values:
        errors["subject_type"] = _("Unknown subject type.")
    if kind and kind not in WarningKind.values:
        errors["kind"] = _("Unknown warning type.")
    if until <= now:
        errors["until"] = _("Choose a time in the future.")
    elif until - now > MAX_MUTE:
        errors["until"] = _("A mute can last at most 90 days.")
    if errors:
        raise ValidationError(errors)
    mute = Mute(
        user=user, cluster=cluster, subject_type=subject_type, subject_name=subject_name, until=until, kind=kind
    )
    mute.full_clean()
    mute.save()
    return mute


def unmute(user, mute_id: int) -> int:
    """End one of ``user``'s mutes now; returns how many were removed (0 for another user's mute)."""
    deleted, _by_model = Mute.objects.filter(pk=mute_id, user=user).delete()
    return deleted


def active_mutes(user, now: dt.datetime | None = None):
    return Mute.objects.filter(user=user, until__gt=now or timezone.now()).select_related("cluster")


def channels_of(user):
    return Channel.objects.filter(owner=user).order_by("kind", "name")
