"""Read-only tokens with which a Prometheus server scrapes ``/metrics`` (:mod:`portal.services.metrics`).

A scrape token belongs to no person and no team: it is a machine credential of the whole installation, issued and
revoked by portal admins (the Manage menu's scrape-token page or ``manage.py metricstoken``), and it opens
``/metrics`` and nothing else. As with producer tokens (:mod:`portal.models.producers`), the full token is shown
once, when it is issued; only its SHA-256 digest is stored, with a short prefix in clear that lets people tell
tokens apart.
"""

from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _


class MetricsScrapeTokenQuerySet(models.QuerySet):
    def active(self):
        return self.filter(revoked_at__isnull=True)


class MetricsScrapeToken(models.Model):
    label = models.CharField(_("label"), max_length=100, blank=True, help_text=_("Which Prometheus uses it."))
    prefix = models.CharField(_("prefix"), max_length=16)
    secret_hash = models.CharField(max_length=64, unique=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(_("issued at"), auto_now_add=True)
    last_used_at = models.DateTimeField(_("last used at"), null=True, blank=True)
    revoked_at = models.DateTimeField(_("revoked at"), null=True, blank=True)

    objects = MetricsScrapeTokenQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-id"]
        verbose_name = _("metrics scrape token")
        verbose_name_plural = _("metrics scrape tokens")

    def __str__(self) -> str:
        return f"{self.prefix}… ({self.label})" if self.label else f"{self.prefix}…"

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None
