"""Client settings of a consumer group that the SDK's consumers read from the portal (``client-bootstrap``,
:mod:`portal.services.client_bootstrap`) and apply within a minute: today the consumption throttle. Changed by the
owning team (and admins) directly, not through an application: it changes no broker and is undone as easily; the
change is audited (``consumergroup.throttle``)."""

from __future__ import annotations

from django.core.exceptions import PermissionDenied
from django.db import transaction

from portal import access
from portal.models import ConsumerGroup
from portal.services import audit


def set_throttle(group: ConsumerGroup, tps: int | None, *, by) -> ConsumerGroup:
    """Set (or lift, with None) the group's consumption throttle in messages per second."""
    if not access.can_change(by, group):
        raise PermissionDenied
    with transaction.atomic():
        locked = ConsumerGroup.objects.select_for_update().get(pk=group.pk)
        if locked.consume_throttle_tps == tps:
            return locked
        before = audit.snapshot(locked)
        locked.consume_throttle_tps = tps
        locked.full_clean(validate_unique=False)
        locked.save(update_fields=["consume_throttle_tps", "updated_at"])
        audit.record(by, "consumergroup.throttle", locked, before=before, after=audit.snapshot(locked))
    return locked
