"""E-mail through Django's mail framework; the SMTP server comes from the environment (EMAIL_* settings)."""

from __future__ import annotations

import smtplib

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.mail import EmailMessage
from django.core.validators import validate_email
from django.utils.translation import gettext_lazy as _

from portal.models.warnings import ChannelKind
from portal.services.warnings.channels.base import Message, Transport, TransportError


class EmailTransport(Transport):
    """``address``: where to send (blank: the owner's account e-mail, so the default channel follows it)."""

    kind = ChannelKind.EMAIL
    config_fields = ("address",)

    def clean_config(self, config: dict) -> dict:
        super().clean_config(config)
        address = config.get("address") or ""
        if not isinstance(address, str):
            raise ValidationError({"address": _("Enter a valid e-mail address.")})
        address = address.strip()
        if address:
            try:
                validate_email(address)
            except ValidationError as error:
                raise ValidationError({"address": error.messages}) from None
        return {"address": address}

    def describe(self, config: dict) -> str:
        return config.get("address") or str(_("your account's e-mail address"))

    def notify(self, channel, config: dict, message: Message) -> None:
        address = config.get("address") or channel.owner.email
        if not address:
            raise TransportError("no e-mail address: set one on the channel or in your account", permanent=True)
        mail = EmailMessage(message.title, message.text, settings.DEFAULT_FROM_EMAIL, [address])
        try:
            mail.send(fail_silently=False)
        except smtplib.SMTPRecipientsRefused as error:
            codes = [code for code, _reason in error.recipients.values()]
            reasons = "; ".join(
                f"{code} {reason.decode(errors='replace')}" for code, reason in error.recipients.values()
            )
            raise TransportError(
                f"{address} refused: {reasons}", permanent=all(code >= 500 for code in codes)
            ) from None
        except (smtplib.SMTPException, OSError) as error:
            # The portal's mail server failed (down, refused our login, ...): not this user's channel's fault.
            raise TransportError(
                f"mail server {settings.EMAIL_HOST}:{settings.EMAIL_PORT}: {error}", blame_channel=False
            ) from None
