"""Issuing, revoking and checking the tokens a consumer group's SDK clients report their consumption and read the
group's settings with (``mqc_…``): the consumer kind of :mod:`portal.services.client_tokens`, audited as
``consumertoken.issued`` / ``.revoked``, managed by the same people as producer tokens (the owning team, admins)."""

from __future__ import annotations

import datetime as dt

from portal import access
from portal.models import ConsumerGroup, ConsumerToken
from portal.services import client_tokens
from portal.services.client_tokens import IssuedToken

KIND = client_tokens.TokenKind(ConsumerToken, "mqc_", "consumertoken", access.can_manage_client_tokens)


def issue(group: ConsumerGroup, *, by, label: str = "") -> IssuedToken:
    return client_tokens.issue(KIND, group, by=by, label=label)


def revoke(token: ConsumerToken, *, by) -> ConsumerToken:
    return client_tokens.revoke(KIND, token, by=by)


def authenticate(secret: str, now: dt.datetime | None = None) -> ConsumerToken | None:
    return client_tokens.authenticate(KIND, secret, now)
