"""Issuing, revoking and checking the tokens a producer group's clients report their sends with.

A token is ``mqp_`` followed by 43 URL-safe characters (32 random bytes). Only its SHA-256 digest is stored; the
first characters (:data:`PREFIX_LENGTH`) are kept in clear so lists can tell tokens apart. Issuing and revoking
are audited (``producertoken.issued`` / ``producertoken.revoked``) in the same transaction.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import secrets
from dataclasses import dataclass

from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from portal import access
from portal.models import ProducerGroup, ProducerToken
from portal.services import audit

SCHEME = "mqp_"
PREFIX_LENGTH = len(SCHEME) + 8
# How stale ``last_used_at`` may get before a report refreshes it (a write per report would be a write per batch).
LAST_USED_RESOLUTION = dt.timedelta(minutes=5)


@dataclass(frozen=True)
class IssuedToken:
    """A token just issued: the stored row and the full token, which exists only here."""

    token: ProducerToken
    secret: str


def digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def issue(group: ProducerGroup, *, by, label: str = "") -> IssuedToken:
    if not access.can_manage_producer_tokens(by, group):
        raise PermissionDenied
    secret = SCHEME + secrets.token_urlsafe(32)
    token = ProducerToken(
        producer_group=group,
        label=label.strip(),
        prefix=secret[:PREFIX_LENGTH],
        secret_hash=digest(secret),
        created_by=by,
    )
    token.full_clean()
    with transaction.atomic():
        token.save()
        audit.record(by, "producertoken.issued", token, after=audit.snapshot(token), cluster=group.cluster)
    return IssuedToken(token, secret)


def revoke(token: ProducerToken, *, by) -> ProducerToken:
    """Revoke a token at once: the next report sent with it is refused. Revoking a revoked token is an error."""
    if not access.can_manage_producer_tokens(by, token.producer_group):
        raise PermissionDenied
    with transaction.atomic():
        locked = ProducerToken.objects.select_for_update().get(pk=token.pk)
        if not locked.is_active:
            raise ValidationError(_("This token is already revoked."))
        before = audit.snapshot(locked)
        locked.revoked_at = timezone.now()
        locked.revoked_by = by
        locked.save(update_fields=["revoked_at", "revoked_by"])
        audit.record(
            by,
            "producertoken.revoked",
            locked,
            before=before,
            after=audit.snapshot(locked),
            cluster=token.producer_group.cluster,
        )
    return locked


def authenticate(secret: str, now: dt.datetime | None = None) -> ProducerToken | None:
    """The active token ``secret`` is, with its group and cluster; None for an unknown or revoked one."""
    if not secret.startswith(SCHEME):
        return None
    token = (
        ProducerToken.objects.active()
        .select_related("producer_group__cluster")
        .filter(secret_hash=digest(secret))
        .first()
    )
    if token is None:
        return None
    now = now or timezone.now()
    if token.last_used_at is None or now - token.last_used_at >= LAST_USED_RESOLUTION:
        ProducerToken.objects.filter(pk=token.pk).update(last_used_at=now)
        token.last_used_at = now
    return token
