"""Issuing, revoking and checking the tokens a group's clients (the SDK) talk to the portal with: one
implementation for every kind of client token (:class:`TokenKind`: producer tokens in
:mod:`portal.services.producer_tokens`, consumer tokens in :mod:`portal.services.consumer_tokens`).

A token is its kind's scheme (``mqp_``, ``mqc_``) followed by 43 URL-safe characters (32 random bytes). Only its
SHA-256 digest is stored; the first characters (:data:`PREFIX_LENGTH`) are kept in clear so lists can tell tokens
apart. Issuing and revoking are audited (``<kind>.issued`` / ``<kind>.revoked``) in the same transaction.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import secrets
from collections.abc import Callable
from dataclasses import dataclass

from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from portal.models.client_tokens import ClientToken
from portal.services import audit

SCHEME_LENGTH = 4
PREFIX_LENGTH = SCHEME_LENGTH + 8
# How stale ``last_used_at`` may get before a request refreshes it (a write per request would be a write per batch).
LAST_USED_RESOLUTION = dt.timedelta(minutes=5)


@dataclass(frozen=True)
class TokenKind:
    """One kind of client token: its model, the scheme its secrets start with, its audit action's prefix, and who
    may manage a group's tokens of this kind."""

    model: type[ClientToken]
    scheme: str
    audit_action: str
    can_manage: Callable[[object, object], bool]


@dataclass(frozen=True)
class IssuedToken:
    """A token just issued: the stored row and the full token, which exists only here."""

    token: ClientToken
    secret: str


def digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def issue(kind: TokenKind, group, *, by, label: str = "") -> IssuedToken:
    if not kind.can_manage(by, group):
        raise PermissionDenied
    secret = kind.scheme + secrets.token_urlsafe(32)
    token = kind.model(
        **{kind.model.group_field: group},
        label=label.strip(),
        prefix=secret[:PREFIX_LENGTH],
        secret_hash=digest(secret),
        created_by=by,
    )
    token.full_clean()
    with transaction.atomic():
        token.save()
        audit.record(by, f"{kind.audit_action}.issued", token, after=audit.snapshot(token), cluster=group.cluster)
    return IssuedToken(token, secret)


def revoke(kind: TokenKind, token: ClientToken, *, by) -> ClientToken:
    """Revoke a token at once: the next request made with it is refused. Revoking a revoked token is an error."""
    if not kind.can_manage(by, token.group):
        raise PermissionDenied
    with transaction.atomic():
        locked = kind.model.objects.select_for_update().get(pk=token.pk)
        if not locked.is_active:
            raise ValidationError(_("This token is already revoked."))
        before = audit.snapshot(locked)
        locked.revoked_at = timezone.now()
        locked.revoked_by = by
        locked.save(update_fields=["revoked_at", "revoked_by"])
        audit.record(
            by,
            f"{kind.audit_action}.revoked",
            locked,
            before=before,
            after=audit.snapshot(locked),
            cluster=token.group.cluster,
        )
    return locked


def authenticate(kind: TokenKind, secret: str, now: dt.datetime | None = None) -> ClientToken | None:
    """The active token ``secret`` is, with its group and cluster; None for an unknown or revoked one."""
    if not secret.startswith(kind.scheme):
        return None
    token = (
        kind.model.objects.active()
        .select_related(f"{kind.model.group_field}__cluster")
        .filter(secret_hash=digest(secret))
        .first()
    )
    if token is None:
        return None
    now = now or timezone.now()
    if token.last_used_at is None or now - token.last_used_at >= LAST_USED_RESOLUTION:
        kind.model.objects.filter(pk=token.pk).update(last_used_at=now)
        token.last_used_at = now
    return token
