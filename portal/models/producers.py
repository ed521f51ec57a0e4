"""Tokens with which a producer group's clients (the SDK, ``monitor/sdk``) report their sends to the portal.

A token belongs to one producer group and only lets its holder report that group's sends (and ask whether the
group is registered for a topic). The owning team issues and revokes tokens on the group's page
(:mod:`portal.services.producer_tokens`); the full token is shown once, when it is issued, and only its SHA-256
digest is stored, with a short prefix that lets people tell tokens apart in lists. A digest is enough protection
here: a token is 32 random bytes, so it cannot be guessed from its digest, unlike a password.
"""

from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _

from portal.models.registry import ProducerGroup


class ProducerTokenQuerySet(models.QuerySet):
    def active(self):
        return self.filter(revoked_at__isnull=True)


class ProducerToken(models.Model):
    producer_group = models.ForeignKey(
        ProducerGroup, on_delete=models.CASCADE, related_name="tokens", verbose_name=_("producer group")
    )
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

    objects = ProducerTokenQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-id"]
        verbose_name = _("producer token")
        verbose_name_plural = _("producer tokens")

    def __str__(self) -> str:
        return f"{self.prefix}… ({self.producer_group})"

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None
