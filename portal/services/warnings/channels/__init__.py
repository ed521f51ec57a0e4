"""Channels: how a user is reached. One ``Channel`` row per configured channel (kind + encrypted JSON config), one
transport class per kind (``TRANSPORTS``); the functions here are what pages, the API and delivery call.

A channel records its last error. A delivery failing permanently (a revoked webhook) disables the channel at once;
transient failures (timeouts, rate limits, a 5xx) do after ``WARNING_CHANNEL_MAX_FAILURES`` in a row. Either way
the owner is told in-app (an in-app channel is never disabled: it cannot fail for the user's reasons).
"""

from __future__ import annotations

import json

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.db.models import F
from django.utils import timezone
from django.utils.text import format_lazy
from django.utils.translation import gettext_lazy as _

from portal import access
from portal.models.warnings import Channel, ChannelKind
from portal.services import notifications
from portal.services.warnings.channels.alertmanager import AlertmanagerTransport
from portal.services.warnings.channels.base import Message, Transport, TransportError
from portal.services.warnings.channels.email import EmailTransport
from portal.services.warnings.channels.in_app import InAppTransport
from portal.services.warnings.channels.webhooks import (
    DingTalkTransport,
    GenericWebhookTransport,
    SlackTransport,
    WeComTransport,
)

TRANSPORTS: dict[str, Transport] = {
    transport.kind: transport
    for transport in (
        InAppTransport(),
        EmailTransport(),
        DingTalkTransport(),
        WeComTransport(),
        SlackTransport(),
        GenericWebhookTransport(),
        AlertmanagerTransport(),
    )
}
# Longest error text kept on a channel or a delivery.
MAX_ERROR_CHARS = 1000

__all__ = [
    "TRANSPORTS",
    "Message",
    "TransportError",
    "check_owner",
    "config_of",
    "create_channel",
    "default_channels",
    "delete_channel",
    "describe",
    "record_failure",
    "record_success",
    "send",
    "set_enabled",
    "update_channel",
]


def config_of(channel: Channel) -> dict:
    return json.loads(channel.config) if channel.config else {}


def describe(channel: Channel) -> str:
    """What may be shown of a channel's configuration (an address, a webhook's host; never a token or secret)."""
    return TRANSPORTS[channel.kind].describe(config_of(channel))


def check_owner(channel: Channel, by) -> None:
    if not access.can_manage_channel(by, channel):
        raise PermissionDenied


def create_channel(owner, *, kind: str, name: str, config: dict) -> Channel:
    """A new channel of ``owner``'s; ValidationError keyed by field (``name``, ``kind``) or config key (``url``,
    ``secret``, ``address``). Users add e-mail and webhook channels; the in-app one is built in."""
    if kind not in TRANSPORTS or kind == ChannelKind.IN_APP:
        raise ValidationError({"kind": _("Choose an e-mail or webhook channel.")})
    if not isinstance(config, dict):
        raise ValidationError({"config": _("Enter the channel's settings.")})
    channel = Channel(owner=owner, kind=kind, name=(name or "").strip())
    channel.config = json.dumps(TRANSPORTS[kind].clean_config(config))
    channel.full_clean()
    channel.save()
    return channel


def update_channel(channel: Channel, *, by, name: str | None = None, config: dict | None = None) -> Channel:
    """Rename or reconfigure a channel. Config keys left out (or a blank secret) keep their stored value, so the
    pages never need to show a secret back to let a user change the name."""
    check_owner(channel, by)
    if name is not None:
        channel.name = name.strip()
    if config is not None:
        stored = config_of(channel)
        merged = {**stored, **{key: value for key, value in config.items() if not (key == "secret" and not value)}}
        channel.config = json.dumps(TRANSPORTS[channel.kind].clean_config(merged))
    channel.full_clean()
    channel.save(update_fields=["name", "config"])
    return channel


def set_enabled(channel: Channel, enabled: bool, *, by) -> Channel:
    """Switch a channel on (clearing its failure count, so a fixed webhook gets a fresh start) or off."""
    check_owner(channel, by)
    channel.enabled = enabled
    channel.disabled_at = None if enabled else timezone.now()
    if enabled:
        channel.consecutive_failures = 0
    channel.save(update_fields=["enabled", "disabled_at", "consecutive_failures"])
    return channel


def default_channels(user) -> list[Channel]:
    """The channels a user without a subscription for a kind is told through: their in-app channel and their
    enabled e-mail channels (one addressed to their account e-mail is created the first time, if they have an
    address and no e-mail channel yet)."""
    in_app, _created = Channel.objects.get_or_create(
        owner=user, kind=ChannelKind.IN_APP, defaults={"name": str(_("In-app notifications"))}
    )
    emails = Channel.objects.filter(owner=user, kind=ChannelKind.EMAIL)
    if user.email and not emails.exists():
        with transaction.atomic():
            # Two deliveries to a new user at once must not make two default e-mail channels (two e-mails each).
            get_user_model().objects.select_for_update().filter(pk=user.pk).first()
            if not emails.exists():
                Channel.objects.create(owner=user, kind=ChannelKind.EMAIL, name=str(_("E-mail")), config="{}")
    return [in_app, *(channel for channel in emails.order_by("pk") if channel.enabled)]


def delete_channel(channel: Channel, *, by) -> None:
    """Remove one of the user's channels (its deliveries stay, without it). The in-app channel cannot go."""
    check_owner(channel, by)
    if channel.kind == ChannelKind.IN_APP:
        raise ValidationError({"kind": _("The in-app channel cannot be deleted; unsubscribe from it instead.")})
    channel.delete()


def send(channel: Channel, message: Message) -> None:
    """Send through the channel's transport (TransportError on failure); no bookkeeping."""
    TRANSPORTS[channel.kind].notify(channel, config_of(channel), message)


def record_success(channel: Channel) -> None:
    Channel.objects.filter(pk=channel.pk).update(consecutive_failures=0, last_success_at=timezone.now())


def record_failure(channel: Channel, error: TransportError) -> bool:
    """Keep the error on the channel and count it; disable the channel after a permanent error or too many in a row
    and tell its owner in-app. Returns whether this call disabled it. Failures that are not the channel's fault
    (the portal's mail server) are not counted."""
    if not error.blame_channel:
        return False
    now = timezone.now()
    message = error.message[:MAX_ERROR_CHARS]
    with transaction.atomic():
        Channel.objects.filter(pk=channel.pk).update(
            last_error=message, last_error_at=now, consecutive_failures=F("consecutive_failures") + 1
        )
        failures = Channel.objects.values_list("consecutive_failures", flat=True).get(pk=channel.pk)
        if channel.kind == ChannelKind.IN_APP or not (
            error.permanent or failures >= settings.WARNING_CHANNEL_MAX_FAILURES
        ):
            return False
        disabled = Channel.objects.filter(pk=channel.pk, enabled=True).update(enabled=False, disabled_at=now)
        if disabled:
            notifications.notify(
                channel.owner,
                format_lazy(_("Your warning channel {name} was disabled"), name=channel.name),
                format_lazy(
                    _("It failed with: {error}. Fix its settings and enable it again on your channels page."),
                    error=message,
                ),
            )
    return bool(disabled)
