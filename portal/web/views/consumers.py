"""What the consumer-group page adds about the group's SDK consumers: their reported consumption (TPS, failures,
p50/p99 consume time per topic and client; :func:`stats.queries.consumers.group_consumption`), the consumption
throttle they apply (:mod:`portal.services.consumer_settings`), and the tokens they report with
(:mod:`portal.web.views.client_tokens`)."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.shortcuts import redirect
from django.utils.translation import gettext as _
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_POST

from portal import access
from portal.models import ConsumerGroup
from portal.services import consumer_settings, consumer_tokens
from portal.web.entries import visible_entry
from portal.web.forms import ConsumerThrottleForm
from portal.web.views import client_tokens
from stats.queries.consumers import group_consumption

TOKEN_PAGES = client_tokens.TokenPages(
    consumer_tokens.KIND, ConsumerGroup, "consumer-group-detail", "consumer-tokens", "Consumer"
)


def group_page_context(request, group, window) -> dict:
    can_change = access.can_change(request.user, group)
    return {
        "consumption": group_consumption(group.cluster_id, group.name, window.since, window.until),
        "throttle_form": ConsumerThrottleForm(instance=group) if can_change else None,
        **client_tokens.tokens_context(request.user, group),
    }


@login_required
@require_POST
def consumer_group_throttle(request, pk):
    group = visible_entry(ConsumerGroup, request.user, pk)
    if not access.can_change(request.user, group):
        raise PermissionDenied
    form = ConsumerThrottleForm(request.POST, instance=ConsumerGroup(pk=group.pk))
    if not form.is_valid():
        messages.error(request, " ".join(error for errors in form.errors.values() for error in errors))
        return redirect("consumer-group-detail", group.pk)
    try:
        consumer_settings.set_throttle(group, form.cleaned_data["consume_throttle_tps"], by=request.user)
    except ValidationError as error:
        messages.error(request, " ".join(error.messages))
    else:
        messages.success(request, _("Consumption throttle saved: the group's SDK consumers apply it within a minute."))
    return redirect("consumer-group-detail", group.pk)


@never_cache  # the answer holds the full token
@login_required
@require_POST
def consumer_token_issue(request, pk):
    return client_tokens.issue(request, TOKEN_PAGES, pk)


@login_required
@require_POST
def consumer_token_revoke(request, pk, token_pk):
    return client_tokens.revoke(request, TOKEN_PAGES, pk, token_pk)
