"""The audit log: every registry change and every admin action, with who, what, when, and before/after."""

from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _

from portal.models.cluster import Cluster


class AuditEntry(models.Model):
    """Written only through ``portal.services.audit.record``; never updated or deleted by the application.
    ``actor`` is empty for the system (the periodic sync). ``before``/``after`` are JSON snapshots of the changed
    object (empty for a creation / deletion respectively)."""

    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    actor_name = models.CharField(_("actor"), max_length=150, blank=True)
    action = models.CharField(_("action"), max_length=64, db_index=True)
    object_type = models.CharField(_("object type"), max_length=64, db_index=True)
    object_id = models.CharField(_("object id"), max_length=64, blank=True)
    object_repr = models.CharField(_("object"), max_length=300, blank=True)
    cluster = models.ForeignKey(Cluster, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    before = models.JSONField(_("before"), null=True, blank=True)
    after = models.JSONField(_("after"), null=True, blank=True)
    note = models.TextField(_("note"), blank=True)
    created_at = models.DateTimeField(_("when"), auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        verbose_name = _("audit entry")
        verbose_name_plural = _("audit entries")

    def __str__(self) -> str:
        return f"{self.created_at:%Y-%m-%d %H:%M} {self.actor_name or 'system'} {self.action} {self.object_repr}"
