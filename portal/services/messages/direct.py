"""A portal admin acting on messages or a consumer group directly: the application is filed and approved in one
call, so the action has the same validation, the same idempotent act and the same audit trail (submitted, approved,
and the operation's own entry) as one a team applied for."""

from __future__ import annotations

from django.core.exceptions import PermissionDenied, ValidationError
from django.utils.translation import gettext_lazy as _

from portal import access
from portal.models import Application
from portal.models.people import is_portal_admin
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


def file_or_act(user, kind, *, payload: dict, reason: str = "", team=None, **target) -> Application:
    """File ``kind`` about ``target`` (``topic=`` or ``consumer_group=``) as an application for ``team`` (by
    default the target's owning team), or carry it out at once for a portal admin."""
    if is_portal_admin(user):
        return act_directly(user, kind, team=team, payload=payload, reason=reason, **target)
    if team is None:
        team = next(entry.team for entry in target.values() if entry is not None)
    return submit(user, kind=kind, team=team, cluster=None, payload=payload, reason=reason, **target)
