"""Issuing, revoking and checking the tokens a producer group's clients report their sends with (``mqp_…``): the
producer kind of :mod:`portal.services.client_tokens`, audited as ``producertoken.issued`` / ``.revoked``."""

from __future__ import annotations

import datetime as dt

from portal import access
from portal.models import ProducerGroup, ProducerToken
from portal.services import client_tokens
from portal.services.client_tokens import IssuedToken

KIND = client_tokens.TokenKind(ProducerToken, "mqp_", "producertoken", access.can_manage_client_tokens)
SCHEME = KIND.scheme
PREFIX_LENGTH = client_tokens.PREFIX_LENGTH


def issue(group: ProducerGroup, *, by, label: str = "") -> IssuedToken:
    return client_tokens.issue(KIND, group, by=by, label=label)


def revoke(token: ProducerToken, *, by) -> ProducerToken:
    return client_tokens.revoke(KIND, token, by=by)


def authenticate(secret: str, now: dt.datetime | None = None) -> ProducerToken | None:
    return client_tokens.authenticate(KIND, secret, now)
