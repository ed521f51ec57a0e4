"""What the shared layout's header needs on every page: which admin links to show, and the pending-approval and
unread notification counts. The counts are queried only when a template reads them."""

from django.utils.functional import SimpleLazyObject

from portal import access
from portal.models import Application
from portal.services import notifications


def portal(request) -> dict:
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {"nav_admin": False}
    return {
        "nav_admin": access.can_administer(user),
        "nav_approvals": access.can_open_approval_queue(user),
        "nav_unread": SimpleLazyObject(lambda: notifications.unread_count(user)),
        "nav_pending": SimpleLazyObject(lambda: Application.objects.decidable_by(user).count()),
    }
