"""What the producer-group page adds about the group's producers: their reported sends (latency, exceptions,
clients; :func:`portal.web.monitoring.producer_group_monitoring`), and the tokens they report with, which the owning
team issues and revokes here (:mod:`portal.services.producer_tokens`). A token is shown in full once, on the page
that answers its issue; afterwards only its prefix is."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_POST

from portal import access
from portal.models import ProducerGroup
from portal.services import producer_tokens
from portal.web import monitoring
from portal.web.entries import visible_entry


def group_page_context(request, group) -> dict:
    """The producer-group page's charts, clients and exceptions, and (for those who manage them) its tokens."""
    window = monitoring.requested_window(request)
    producers = monitoring.producer_group_monitoring(
        group, window, client=request.GET.get("client", ""), broker=request.GET.get("broker", "")
    )
    can_manage = access.can_manage_producer_tokens(request.user, group)
    return {
        "window": window,
        "charts": producers.charts,
        "producers": producers,
        "can_manage_tokens": can_manage,
        "tokens": group.tokens.select_related("created_by", "revoked_by") if can_manage else [],
    }


def _managed_group(request, pk) -> ProducerGroup:
    group = visible_entry(ProducerGroup, request.user, pk)
    if not access.can_manage_producer_tokens(request.user, group):
        raise PermissionDenied
    return group


@never_cache  # the answer holds the full token
@login_required
@require_POST
def producer_token_issue(request, pk):
    group = _managed_group(request, pk)
    try:
        issued = producer_tokens.issue(group, by=request.user, label=request.POST.get("label", ""))
    except ValidationError as error:
        messages.error(request, " ".join(error.messages))
        return redirect("producer-group-detail", group.pk)
    return render(request, "portal/producer_token_issued.html", {"group": group, "issued": issued})


@login_required
@require_POST
def producer_token_revoke(request, pk, token_pk):
    group = _managed_group(request, pk)
    token = get_object_or_404(group.tokens, pk=token_pk)
    try:
        producer_tokens.revoke(token, by=request.user)
    except ValidationError as error:
        messages.error(request, " ".join(error.messages))
    else:
        messages.success(request, _("Token %(prefix)s… revoked.") % {"prefix": token.prefix})
    return redirect("producer-group-detail", group.pk)
