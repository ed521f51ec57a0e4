"""Tokens with which a producer group's clients (the SDK, ``monitor/sdk``) report their sends to the portal.

A token belongs to one producer group and only lets its holder report that group's sends (and ask whether the
group is registered for a topic, and read the cluster's name servers). Issued, stored and revoked like every client
token (:mod:`portal.models.client_tokens`, :mod:`portal.services.client_tokens`).
"""

from django.db import models
from django.utils.translation import gettext_lazy as _

from portal.models.client_tokens import ClientToken
from portal.models.registry import ProducerGroup


class ProducerToken(ClientToken):
    producer_group = models.ForeignKey(
        ProducerGroup, on_delete=models.CASCADE, related_name="tokens", verbose_name=_("producer group")
    )

    group_field = "producer_group"

    class Meta(ClientToken.Meta):
        verbose_name = _("producer token")
        verbose_name_plural = _("producer tokens")
