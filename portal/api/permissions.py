"""DRF permission classes: thin adapters that ask ``portal.access`` (the one gate) and decide nothing themselves.

Status codes follow from DRF: a request without credentials that a permission refuses gets 401 (the token
authenticator comes first, so the response carries ``WWW-Authenticate: Token``); a logged-in user refused here
gets 403; objects outside the user's ``visible_to`` queryset are never found (404).
"""

from rest_framework.permissions import BasePermission

from portal import access


class IsPortalAdmin(BasePermission):
    def has_permission(self, request, view) -> bool:
        return access.can_administer(request.user)


class CanChangeEntry(BasePermission):
    """The owning team (or a portal admin) edits a topic's or group's portal-only fields."""

    def has_object_permission(self, request, view, obj) -> bool:
        return access.can_change(request.user, obj)


class CanManageTeam(BasePermission):
    def has_object_permission(self, request, view, obj) -> bool:
        return access.can_manage_team(request.user, obj)
