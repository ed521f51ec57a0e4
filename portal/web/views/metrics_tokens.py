"""The admins' page of the ``/metrics`` scrape tokens: every token (prefix, label, who issued it and when, last
use, revocation), issuing one (shown in full once, on the page that answers the issue) and revoking one, all
through :mod:`portal.services.metrics.tokens`, which checks the admin again and audits. The page also shows what a
Prometheus server needs besides a token: the scrape URL and the networks allowed in without one.

Portal admins only (``access.can_administer``), like the other /manage/ pages."""

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST, require_safe

from portal import access
from portal.models import MetricsScrapeToken
from portal.services.metrics import tokens
from portal.web.admin_views import allowed_if


def scrape_context(request) -> dict:
    return {
        "scrape_url": request.build_absolute_uri(reverse("metrics")),
        "allowed_networks": settings.METRICS_ALLOWED_NETWORKS,
    }


@login_required
@require_safe
@allowed_if(access.can_administer)
def metrics_token_list(request):
    context = scrape_context(request)
    context["tokens"] = MetricsScrapeToken.objects.select_related("created_by")
    return render(request, "portal/admin/metrics_tokens.html", context)


@login_required
@require_POST
@allowed_if(access.can_administer)
def metrics_token_issue(request):
    try:
        issued = tokens.issue(by=request.user, label=request.POST.get("label", ""))
    except ValidationError as error:
        messages.error(request, " ".join(error.messages))
        return redirect("metrics-token-list")
    context = scrape_context(request)
    context["issued"] = issued
    return render(request, "portal/admin/metrics_token_issued.html", context)


@login_required
@require_POST
@allowed_if(access.can_administer)
def metrics_token_revoke(request, pk):
    token = get_object_or_404(MetricsScrapeToken, pk=pk)
    try:
        tokens.revoke(token, by=request.user)
    except ValidationError as error:
        messages.error(request, " ".join(error.messages))
    else:
        messages.success(request, _("Scrape token %(prefix)s… revoked.") % {"prefix": token.prefix})
    return redirect("metrics-token-list")
