"""Issuing, revoking and checking the read-only tokens a Prometheus server scrapes ``/metrics`` with.

A token is ``mqm_`` followed by 43 URL-safe characters (32 random bytes), sent as ``Authorization: Bearer <token>``
(what Prometheus's ``authorization`` scrape setting sends). Only its SHA-256 digest is stored. Only portal admins
issue and revoke them; both are audited (``metricstoken.issued`` / ``metricstoken.revoked``).
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

from portal.models import MetricsScrapeToken
from portal.models.people import is_portal_admin
from portal.services import audit

SCHEME = "mqm_"
PREFIX_LENGTH = len(SCHEME) + 8
# How stale ``last_used_at`` may get before a scrape refreshes it (a write per scrape would be a write every 15 s).
LAST_USED_RESOLUTION = dt.timedelta(minutes=5)


@dataclass(frozen=True)
class IssuedToken:
    """A token just issued: the stored row and the full token, which exists only here."""

    token: MetricsScrapeToken
    secret: str


def digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def issue(*, by, label: str = "") -> IssuedToken:
    if not is_portal_admin(by):
        raise PermissionDenied
    secret = SCHEME + secrets.token_urlsafe(32)
    token = MetricsScrapeToken(
        label=label.strip(), prefix=secret[:PREFIX_LENGTH], secret_hash=digest(secret), created_by=by
    )
    token.full_clean()
    with transaction.atomic():
        token.save()
        audit.record(by, "metricstoken.issued", token, after=audit.snapshot(token))
    return IssuedToken(token, secret)


def revoke(token: MetricsScrapeToken, *, by) -> MetricsScrapeToken:
    """Revoke a token at once: the next scrape with it is refused. Revoking a revoked token is an error."""
    if not is_portal_admin(by):
        raise PermissionDenied
    with transaction.atomic():
        locked = MetricsScrapeToken.objects.select_for_update().get(pk=token.pk)
        if not locked.is_active:
            raise ValidationError(_("This token is already revoked."))
        before = audit.snapshot(locked)
        locked.revoked_at = timezone.now()
        locked.save(update_fields=["revoked_at"])
        audit.record(by, "metricstoken.revoked", locked, before=before, after=audit.snapshot(locked))
    return locked


def check(secret: str) -> MetricsScrapeToken | None:
    """The live token ``secret`` is, or None; marks it used (at most every :data:`LAST_USED_RESOLUTION`)."""
    if not secret.startswith(SCHEME):
        return None
    token = MetricsScrapeToken.objects.active().filter(secret_hash=digest(secret)).first()
    if token is None:
        return None
    now = timezone.now()
    if token.last_used_at is None or now - token.last_used_at >= LAST_USED_RESOLUTION:
        MetricsScrapeToken.objects.filter(pk=token.pk).update(last_used_at=now)
    return token
