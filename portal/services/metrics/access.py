"""Who may scrape ``/metrics``: a live scrape token (:mod:`.tokens`, ``Authorization: Bearer``) or a client address
inside ``METRICS_ALLOWED_NETWORKS``; anyone else is refused. The figures name every topic, group and broker of every
cluster, so nothing is open by default (the list is empty unless configured). A signed-in portal user is no
scraper: the page would otherwise leak every team's figures to any account."""

from __future__ import annotations

import ipaddress
from enum import Enum

from django.conf import settings

from portal.services.metrics import tokens


class Verdict(Enum):
    ALLOWED = "allowed"
    NO_CREDENTIALS = "no credentials"  # answered 401, with the scheme to use
    REFUSED = "refused"  # a token that is not (or no longer) valid: 403


def bearer(header: str) -> str | None:
    scheme, _, value = header.partition(" ")
    return value.strip() if scheme.lower() == "bearer" and value.strip() else None


def in_allowed_networks(address: str) -> bool:
    try:
        client = ipaddress.ip_address(address)
    except ValueError:
        return False
    return any(client in ipaddress.ip_network(net, strict=False) for net in settings.METRICS_ALLOWED_NETWORKS)


def judge(authorization: str, remote_addr: str) -> Verdict:
    secret = bearer(authorization)
    if secret is not None:
        return Verdict.ALLOWED if tokens.check(secret) is not None else Verdict.REFUSED
    if in_allowed_networks(remote_addr):
        return Verdict.ALLOWED
    return Verdict.NO_CREDENTIALS
