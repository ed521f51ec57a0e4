"""Personal API tokens: the ``Authorization: Token <key>`` a user's scripts call the API with (DRF's authtoken).

A token lives API_TOKEN_TTL_DAYS from its creation and then stops working (the API says it expired); its owner
rotates it (a new key at once, the old one dead) from the settings page or the API, or revokes it. Changing the
password or deactivating the account revokes it, so a leaked token does not outlive the credentials it came from.

Machine credentials are not these: a producer group's report tokens (:mod:`portal.services.producer_tokens`) belong
to the group, not to a person, do not expire, and are issued and revoked by the owning team.
"""

from __future__ import annotations

import datetime as dt

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import transaction
from django.db.models.signals import post_save
from django.dispatch import receiver
from django.utils import timezone
from rest_framework.authtoken.models import Token


def expires_at(token: Token) -> dt.datetime:
    return token.created + dt.timedelta(days=settings.API_TOKEN_TTL_DAYS)


def is_expired(token: Token, now: dt.datetime | None = None) -> bool:
    return (now or timezone.now()) >= expires_at(token)


def current(user) -> Token | None:
    """The user's token, live or expired; None if there is none."""
    return Token.objects.filter(user=user).first()


@transaction.atomic
def obtain(user) -> Token:
    """The user's live token, a new one if there was none or it had expired (what logging in to the API gives)."""
    token = Token.objects.select_for_update().filter(user=user).first()
    if token is not None and not is_expired(token):
        return token
    return rotate(user)


@transaction.atomic
def rotate(user) -> Token:
    """A new token for the user; the previous one stops working at once."""
    revoke(user)
    return Token.objects.create(user=user)


def revoke(user) -> None:
    Token.objects.filter(user=user).delete()


@receiver(post_save, sender=get_user_model(), dispatch_uid="api_tokens.revoke_on_credential_change")
def _revoke_on_credential_change(sender, instance, raw=False, **kwargs) -> None:
    """Whoever saves the user (the users page, ``manage.py changepassword``, Django's password views): a password
    just set (``set_password`` leaves it in ``_password`` until the save ends; rehashing on login does not) or an
    inactive account ends the token."""
    if not raw and (instance._password is not None or not instance.is_active):
        revoke(instance)
