"""A portal admin acting on messages or a consumer group directly: the application is filed and approved in one
call, so the action has the same validation, the same idempotent act and the same audit trail (submitted, approved,
and the operation's own entry) as one a team applied for."""

from __future__ import annotations

from django.core.exceptions import PermissionDenied, ValidationError
from django.utils.translation import gettext_lazy as _

from portal import access
from portal.models import Application
from portal.services.applications import approve, submit


def act_directly(
    admin_user,
    kind: str,
    *,
    payload: dict,
    reason: str = "",
    team=None,
    cluster=None,
    topic=None,
    consumer_group=None,
) -> Application:
    """Submit and approve in one call (portal admins only: PermissionDenied). ``team`` defaults to the target's
    owning team (an unowned target must be adopted first: ValidationError). Raises what ``submit`` and ``approve``
    raise; when the act fails, the application stays pending with its error, to be approved again or rejected."""
    if not access.can_administer(admin_user):
        raise PermissionDenied
    target = topic or consumer_group
    if team is None and target is not None:
        team = target.team
    if team is None:
        raise ValidationError({"team": _("%(name)s has no owning team; adopt it first.") % {"name": target}})
    application = submit(
        admin_user,
        kind=kind,
        team=team,
        cluster=cluster,
        payload=payload,
        reason=reason or str(_("Done directly by a portal admin.")),
        topic=topic,
        consumer_group=consumer_group,
    )
    return approve(application, by=admin_user, reason=str(_("Done directly by a portal admin.")))
