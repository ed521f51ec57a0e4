"""Tokens with which a group's clients (the SDK, ``monitor/sdk``) talk to the portal: what producer tokens
(:mod:`portal.models.producers`) and consumer tokens share, and the consumer group's token itself.

A token belongs to one group and lets its holder only report that group's work and read its client settings. The
owning team issues and revokes tokens on the group's page (:mod:`portal.services.client_tokens`); the full token is
shown once, when it is issued, and only its SHA-256 digest is stored, with a short prefix that lets people tell
tokens apart in lists. A digest is enough protection here: a token is 32 random bytes, so it cannot be guessed from
its digest, unlike a password.
"""

from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _

from portal.models.registry import ConsumerGroup


class ClientTokenQuerySet(models.QuerySet):
    def active(self):
        return self.filter(revoked_at__isnull=True)


class ClientToken(models.Model):
    """The fields of a group's client token; a concrete token adds the group it belongs to as ``group``'s field."""

    label = models.CharField(_("label"), max_length=100, blank=True, help_text=_("Where the token is used."))
    prefix = models.CharField(_("prefix"), max_length=16)
    secret_hash = models.CharField(max_length=64, unique=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(_("issued at"), auto_now_add=True)
    last_used_at = models.DateTimeField(_("last used at"), null=True, blank=True)
    revoked_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    revoked_at = models.DateTimeField(_("revoked at"), null=True, blank=True)

    objects = ClientTokenQuerySet.as_manager()

    class Meta:
        abstract = True
        ordering = ["-created_at", "-id"]

    # The name of the foreign key to the group (``producer_group``, ``consumer_group``).
    group_field = ""

    def __str__(self) -> str:
        return f"{self.prefix}… ({self.group})"

    @property
    def group(self):
        return getattr(self, self.group_field)

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None


class ConsumerToken(ClientToken):
    """A consumer group's token: its SDK consumers report their consumption and read the group's settings with it."""

    consumer_group = models.ForeignKey(
        ConsumerGroup, on_delete=models.CASCADE, related_name="tokens", verbose_name=_("consumer group")
    )

    group_field = "consumer_group"

    class Meta(ClientToken.Meta):
        verbose_name = _("consumer token")
        verbose_name_plural = _("consumer tokens")
