"""How a page asks for an operation on messages or a consumer group: a portal admin's is carried out at once
(``act_directly``: submitted and approved in one audited call), anyone else's is filed as an application for an
admin to approve. Either way the user lands on the application's page, which shows the outcome or the wait."""

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.shortcuts import redirect
from django.utils.translation import gettext as _

from portal.models.people import is_portal_admin
from portal.services.cluster_ops import ClusterOperationError
from portal.services.messages.direct import file_or_act


def apply_or_act(request, kind, *, payload: dict, reason: str = "", team=None, **target):
    """:func:`file_or_act` for a page: the redirect to the application's page, or None after putting the
    service's error in the page's messages."""
    user = request.user
    try:
        application = file_or_act(user, kind, payload=payload, reason=reason, team=team, **target)
    except ValidationError as error:
        messages.error(request, " ".join(error.messages))
        return None
    except ClusterOperationError as error:
        messages.error(request, str(error))
        return None
    if is_portal_admin(user):
        messages.success(request, _("Done: application #%(id)s records it.") % {"id": application.pk})
    else:
        messages.success(
            request,
            _("Application #%(id)s submitted; an admin carries it out when approving it.") % {"id": application.pk},
        )
    return redirect("application-detail", application.pk)
